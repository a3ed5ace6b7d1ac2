-- The notification and task-alert rules as pure functions (docs/notifications.md; issue 68).
-- Only the project's own schema has notification settings and task alerts; the deployed variant
-- skips this file.
--
-- private.alert_decision, private.may_queue_push, private.queue_task_alerts and the trigger
-- function private.session_status_alerts read rows, then decided inline. The decisions move into
-- IMMUTABLE functions of their arguments alone (private.rule_*), so that
-- testvectors/remote-rules-v1.json can call them with every case and expect the answers the
-- Swift rules (the RemoteRules module, which the embedded remote runs) give: a rule changed in
-- one language only fails a vector. The readers keep their names, signatures and effects.

-- How an alert of `kind` goes to a device with `settings`, another device having been active on
-- the session `idle_elsewhere` seconds ago (NULL: none has): 'off' (the kind's setting is off),
-- 'suppressed' (any kind but an approval or a question, quiet_while_active, another device active
-- in the last 60 seconds), 'passive' (an approval or a question then) or 'alert'. A negative idle time (a clock ahead of
-- the server's) counts as active now.
CREATE FUNCTION private.rule_alert_decision(
    kind text, settings public.notification_settings, idle_elsewhere double precision
) RETURNS text
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT CASE
        WHEN NOT CASE kind
            WHEN 'approval' THEN settings.alert_approvals
            WHEN 'question' THEN settings.alert_questions
            WHEN 'task_complete' THEN settings.alert_task_complete
            WHEN 'task_failed' THEN settings.alert_task_failed
            WHEN 'task_paused' THEN settings.alert_task_paused
            ELSE true END THEN 'off'
        WHEN settings.quiet_while_active AND idle_elsewhere IS NOT NULL AND idle_elsewhere <= 60 THEN
            CASE WHEN kind IN ('approval', 'question') THEN 'passive' ELSE 'suppressed' END
        ELSE 'alert'
    END
$$;
REVOKE ALL ON FUNCTION private.rule_alert_decision(text, public.notification_settings, double precision) FROM PUBLIC;

-- Whether a push of `kind` may be queued for a device with `settings`: 'background' (a silent
-- push) and 'liveactivity' (an update) follow their settings; 'handoff', 'clearing', 'alert' (its
-- kind's setting is rule_alert_decision's) and 'liveactivity-end' are never suppressed.
CREATE FUNCTION private.rule_may_queue_push(kind text, settings public.notification_settings) RETURNS boolean
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT CASE kind
        WHEN 'background' THEN settings.enable_background_notifications
        WHEN 'liveactivity' THEN settings.enable_live_activities
        ELSE true
    END
$$;
REVOKE ALL ON FUNCTION private.rule_may_queue_push(text, public.notification_settings) FROM PUBLIC;

CREATE OR REPLACE FUNCTION private.alert_decision(device uuid, kind text, session uuid) RETURNS text
    LANGUAGE sql STABLE SET search_path = '' AS $$
    SELECT private.rule_alert_decision(
        kind, private.notification_settings_of(device),
        (SELECT extract(epoch FROM now() - max(a.last_activity_at))::double precision
         FROM public.session_active_clients a
         WHERE a.session_id = alert_decision.session AND a.device_id <> alert_decision.device))
$$;

CREATE OR REPLACE FUNCTION private.may_queue_push(device uuid, kind text) RETURNS boolean
    LANGUAGE sql STABLE SET search_path = '' AS $$
    SELECT private.rule_may_queue_push(kind, private.notification_settings_of(device))
$$;

-- The kind a change of a session's runtime status raises: 'idle' from 'running' or 'waiting' is
-- task_complete, 'error' from anything else task_failed; a first runtime status (had_status
-- false) or one without a status word raises nothing (NULL).
CREATE FUNCTION private.rule_runtime_task_kind(had_status boolean, old_status text, new_status text) RETURNS text
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT CASE
        WHEN had_status IS NOT TRUE OR new_status IS NULL THEN NULL
        WHEN new_status = 'idle' AND old_status IN ('running', 'waiting') THEN 'task_complete'
        WHEN new_status = 'error' AND old_status IS DISTINCT FROM 'error' THEN 'task_failed'
    END
$$;
REVOKE ALL ON FUNCTION private.rule_runtime_task_kind(boolean, text, text) FROM PUBLIC;

-- The kind a change of a session's own status raises: 'active' to 'paused' is task_paused.
CREATE FUNCTION private.rule_status_task_kind(old_status text, new_status text) RETURNS text
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT CASE WHEN old_status = 'active' AND new_status = 'paused' THEN 'task_paused' END
$$;
REVOKE ALL ON FUNCTION private.rule_status_task_kind(text, text) FROM PUBLIC;

-- How a task alert of `kind` meets the token's newest alert for the session, P (newest_age NULL:
-- it has none; else seconds since P was due, negative while it is due later; newest_waits: P
-- is not delivered, not failed, never attempted and not leased). Within 60 s of P's due time the
-- same kind is coalesced, another kind takes P's place while P waits ('replace'), else is queued
-- due_after_newest seconds after P ('queue_after'); otherwise queued now ('queue').
CREATE FUNCTION private.rule_task_alert_coalescing(
    kind text, newest_kind text, newest_age double precision, newest_waits boolean,
    OUT action text, OUT due_after_newest double precision
)
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT a, CASE WHEN a = 'queue_after' THEN 60::double precision END
    FROM (SELECT CASE
            WHEN newest_age IS NULL OR newest_age >= 60 THEN 'queue'
            WHEN newest_kind IS NOT DISTINCT FROM kind THEN 'coalesce'
            WHEN newest_waits THEN 'replace'
            ELSE 'queue_after'
        END AS a) decided
$$;
REVOKE ALL ON FUNCTION private.rule_task_alert_coalescing(text, text, double precision, boolean) FROM PUBLIC;

CREATE OR REPLACE FUNCTION private.queue_task_alerts(caller uuid, session uuid, kind text) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
    s public.agent_coding_sessions%ROWTYPE;
    v_payload jsonb;
    t record;
    decision text;
    p public.push_outbox%ROWTYPE;
    found_p boolean;
    r record;
    v_collapse text := 'session-' || session::text;
    queued integer := 0;
    coalesced integer := 0;
    suppressed integer := 0;
    turned_off integer := 0;
BEGIN
    SELECT * INTO s FROM public.agent_coding_sessions a WHERE a.id = session AND a.user_id = caller;
    IF NOT FOUND THEN RETURN jsonb_build_object('queued', 0, 'coalesced', 0, 'suppressed', 0, 'off', 0); END IF;
    v_payload := jsonb_build_object(
        'aps', jsonb_build_object(
            'alert', CASE kind
                WHEN 'task_complete' THEN jsonb_build_object(
                    'title', 'Task complete', 'body', 'An agent session finished working',
                    'title-loc-key', 'notification.complete.title', 'loc-key', 'notification.complete.body.generic')
                WHEN 'task_failed' THEN jsonb_build_object(
                    'title', 'Task failed', 'body', 'An agent session stopped with an error',
                    'title-loc-key', 'notification.error.title', 'loc-key', 'notification.error.body.generic')
                ELSE jsonb_build_object(
                    'title', 'Task paused', 'body', 'An agent session is paused; open it to continue',
                    'title-loc-key', 'notification.paused.title', 'loc-key', 'notification.paused.body') END,
            'category', 'SESSION_STATUS', 'thread-id', session::text, 'interruption-level', 'active',
            'sound', 'default', 'mutable-content', 1),
        'type', kind, 'sessionId', session::text,
        'deepLink', private.deep_link_scheme() || '://session/' || session::text);
    FOR t IN SELECT k.device_id, k.token FROM public.push_tokens k
             WHERE k.user_id = caller AND k.token_type = 'device' AND k.is_valid
               AND k.device_id IS DISTINCT FROM s.device_id
               AND private.is_trusted_device(caller, k.device_id) AND private.may_queue_push(k.device_id, 'alert')
             ORDER BY k.token
    LOOP
        decision := private.alert_decision(t.device_id, kind, session);
        IF decision = 'off' THEN turned_off := turned_off + 1; CONTINUE; END IF;
        IF decision = 'suppressed' THEN suppressed := suppressed + 1; CONTINUE; END IF;
        PERFORM pg_advisory_xact_lock(hashtext(t.token), hashtext(session::text));
        -- Locked: a worker claiming P meanwhile (FOR UPDATE SKIP LOCKED) either skips it or has
        -- claimed it first, and then P no longer waits.
        SELECT * INTO p FROM public.push_outbox o WHERE o.token = t.token AND o.collapse_id = v_collapse
            ORDER BY o.not_before DESC, o.id DESC LIMIT 1 FOR UPDATE;
        found_p := FOUND;
        SELECT * INTO r FROM private.rule_task_alert_coalescing(
            kind, CASE WHEN found_p THEN p.payload ->> 'type' END,
            CASE WHEN found_p THEN extract(epoch FROM now() - p.not_before)::double precision END,
            found_p AND p.delivered_at IS NULL AND p.failed_at IS NULL AND p.attempts = 0
                AND (p.lease_until IS NULL OR p.lease_until < now()));
        IF r.action = 'coalesce' THEN coalesced := coalesced + 1; CONTINUE; END IF;
        IF r.action = 'replace' THEN
            UPDATE public.push_outbox o SET payload = v_payload WHERE o.id = p.id;
        ELSIF r.action = 'queue_after' THEN
            INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload,
                                            not_before)
                VALUES (caller, t.device_id, t.token, 'alert', 10, v_collapse, v_payload,
                        p.not_before + make_interval(secs => r.due_after_newest));
        ELSE
            INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload)
                VALUES (caller, t.device_id, t.token, 'alert', 10, v_collapse, v_payload);
        END IF;
        queued := queued + 1;
    END LOOP;
    RETURN jsonb_build_object('queued', queued, 'coalesced', coalesced, 'suppressed', suppressed, 'off', turned_off);
END
$$;

CREATE OR REPLACE FUNCTION private.session_status_alerts() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    runtime_kind text := private.rule_runtime_task_kind(
        OLD.runtime_status IS NOT NULL, OLD.runtime_status -> 'coding_session' ->> 'status',
        NEW.runtime_status -> 'coding_session' ->> 'status');
    status_kind text := private.rule_status_task_kind(OLD.status::text, NEW.status::text);
BEGIN
    -- An alert over the user's push budget (54000) is dropped: the write that raised it commits.
    BEGIN
        IF runtime_kind IS NOT NULL THEN PERFORM private.queue_task_alerts(NEW.user_id, NEW.id, runtime_kind); END IF;
        IF status_kind IS NOT NULL THEN PERFORM private.queue_task_alerts(NEW.user_id, NEW.id, status_kind); END IF;
    EXCEPTION WHEN program_limit_exceeded THEN
        NULL;
    END;
    RETURN NULL;
END
$$;
