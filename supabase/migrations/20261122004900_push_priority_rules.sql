-- The priority of a queued alert and of a live-activity event, as pure functions
-- (docs/notifications.md; issue 68). Only the project's own schema queues these; the deployed
-- variant skips this file.
--
-- Five functions wrote their priority inline: queue_approval_alerts and queue_question_alerts
-- (5 for a passive alert, else 10), queue_task_alerts (10), session_live_activity (10 for an
-- update to waiting_approval, else 5) and end_live_activities (10). The numbers move into
-- IMMUTABLE functions of their arguments, which testvectors/remote-rules-v1.json calls with every
-- case, expecting the answers of NotificationRules.priority and LiveActivityQueueing.priority in
-- the RemoteRules module (which the embedded remote runs). Each function's text is rewritten in
-- place, as *_device_scoped_calls.sql rewrote ask_question: a text that is no longer there stops
-- the migration rather than leaving a copy of the rule behind.

-- The priority of an alert queued under `decision`: 10 for 'alert', 5 for 'passive' (it comes
-- without sound); NULL for 'off' and 'suppressed', which queue nothing.
CREATE FUNCTION private.rule_alert_priority(decision text) RETURNS integer
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT CASE decision WHEN 'alert' THEN 10 WHEN 'passive' THEN 5 END
$$;
REVOKE ALL ON FUNCTION private.rule_alert_priority(text) FROM PUBLIC;

-- The priority of a live-activity event: 10 for an end (`is_end`) and for an update to
-- 'waiting_approval', 5 for other updates.
CREATE FUNCTION private.rule_live_activity_priority(is_end boolean, status text) RETURNS integer
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT CASE WHEN is_end OR status = 'waiting_approval' THEN 10 ELSE 5 END
$$;
REVOKE ALL ON FUNCTION private.rule_live_activity_priority(boolean, text) FROM PUBLIC;

DO $$
DECLARE
    f record;
    src text;
BEGIN
    FOR f IN SELECT * FROM (VALUES
        ('private.queue_approval_alerts(uuid, uuid)', 'CASE WHEN d.decision = ''passive'' THEN 5 ELSE 10 END',
         'private.rule_alert_priority(d.decision)'),
        ('private.queue_question_alerts(uuid, uuid)', 'CASE WHEN d.decision = ''passive'' THEN 5 ELSE 10 END',
         'private.rule_alert_priority(d.decision)'),
        ('private.queue_task_alerts(uuid, uuid, text)', '''alert'', 10, v_collapse',
         '''alert'', private.rule_alert_priority(decision), v_collapse'),
        ('private.session_live_activity()', 'CASE WHEN status = ''waiting_approval'' THEN 10 ELSE 5 END',
         'private.rule_live_activity_priority(false, status)'),
        ('private.end_live_activities(uuid, uuid, uuid, text, text)', 'operation), 10) THEN',
         'operation), private.rule_live_activity_priority(true, NULL)) THEN')
    ) AS v(fn, old, new) LOOP
        src := pg_get_functiondef(f.fn::regprocedure);
        IF position(f.old IN src) = 0 THEN
            RAISE EXCEPTION '% no longer holds %: update this migration', f.fn, f.old;
        END IF;
        EXECUTE replace(src, f.old, f.new);
    END LOOP;
END
$$;
