-- Notifications round 2, first step (docs/notifications.md, "Round 2"): an approval's alert
-- says which session it is about and where a tap goes, and each phone shows it in its own
-- language, with nothing of the question in it.
--
-- - private.notification_config: one row, the deep-link scheme of this deployment, changed by
--   the database owner (UPDATE private.notification_config SET deep_link_scheme = 'myapp'), not
--   visible to PostgREST. The next alerts carry the new scheme.
-- - The approval alert gains `title-loc-key` and `loc-key` (the app's strings; `title` and
--   `body` stay the generic English), `thread-id` (the session id: iOS groups a session's
--   alerts) and `deepLink` (<scheme>://session/<session id>/approval/<request id>). No `loc-args`:
--   any argument would be content.
-- - notification_settings gains a setting per alert kind and quiet_while_active;
--   set_notification_settings takes them; private.alert_decision decides, per token's device, how
--   an alert is queued; touch_session_activity keeps a claim fresh while a session is on screen.
-- Only the project's own schema has approvals; the deployed variant skips this file.

CREATE TABLE private.notification_config (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    deep_link_scheme text NOT NULL DEFAULT 'codingbridge' CHECK (deep_link_scheme ~ '^[a-z][a-z0-9+.-]{0,31}$')
);
INSERT INTO private.notification_config DEFAULT VALUES;
REVOKE ALL ON private.notification_config FROM PUBLIC;

-- The deep-link scheme in force ('codingbridge' should the row be gone).
CREATE FUNCTION private.deep_link_scheme() RETURNS text
    LANGUAGE sql STABLE SET search_path = '' AS $$
    SELECT coalesce((SELECT c.deep_link_scheme FROM private.notification_config c WHERE c.id), 'codingbridge')
$$;
REVOKE ALL ON FUNCTION private.deep_link_scheme() FROM PUBLIC;

-- Per-device control (docs/notifications.md, "Round 2"): a setting per kind, and quiet while
-- another device is active on the session.
ALTER TABLE public.notification_settings
    ADD COLUMN alert_approvals boolean NOT NULL DEFAULT true,
    ADD COLUMN alert_questions boolean NOT NULL DEFAULT true,
    ADD COLUMN alert_task_complete boolean NOT NULL DEFAULT true,
    ADD COLUMN alert_task_failed boolean NOT NULL DEFAULT true,
    ADD COLUMN alert_task_paused boolean NOT NULL DEFAULT true,
    ADD COLUMN quiet_while_active boolean NOT NULL DEFAULT true;

CREATE OR REPLACE FUNCTION private.notification_settings_of(device uuid) RETURNS public.notification_settings
    LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
    settings public.notification_settings%ROWTYPE;
BEGIN
    SELECT * INTO settings FROM public.notification_settings s WHERE s.device_id = device;
    IF NOT FOUND THEN
        settings.device_id := device;
        settings.enable_live_activities := true;
        settings.enable_background_notifications := true;
        settings.show_notification_details := false;
        settings.enable_time_sensitive := true;
        settings.alert_approvals := true;
        settings.alert_questions := true;
        settings.alert_task_complete := true;
        settings.alert_task_failed := true;
        settings.alert_task_paused := true;
        settings.quiet_while_active := true;
    END IF;
    RETURN settings;
END
$$;

-- One signature: PostgREST never sees two candidates.
DROP FUNCTION public.set_notification_settings(uuid, boolean, boolean, boolean, boolean);
CREATE FUNCTION public.set_notification_settings(
    device_id uuid, enable_live_activities boolean DEFAULT NULL, enable_background_notifications boolean DEFAULT NULL,
    show_notification_details boolean DEFAULT NULL, enable_time_sensitive boolean DEFAULT NULL,
    alert_approvals boolean DEFAULT NULL, alert_questions boolean DEFAULT NULL,
    alert_task_complete boolean DEFAULT NULL, alert_task_failed boolean DEFAULT NULL,
    alert_task_paused boolean DEFAULT NULL, quiet_while_active boolean DEFAULT NULL
) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_device uuid := set_notification_settings.device_id;
    before public.notification_settings;
    after public.notification_settings%ROWTYPE;
    open_before integer;
    ended integer := 0;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'set_notification_settings needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF v_device IS NULL OR NOT EXISTS (SELECT 1 FROM public.devices d WHERE d.id = v_device AND d.user_id = caller) THEN
        RAISE EXCEPTION 'the device is not one of yours' USING ERRCODE = '42501';
    END IF;
    before := private.notification_settings_of(v_device);
    open_before := (SELECT count(*) FROM public.push_tokens p
                    WHERE p.user_id = caller AND p.device_id = v_device AND p.token_type = 'live_activity' AND p.is_valid
                      AND private.live_activity_open(p.token));
    INSERT INTO public.notification_settings AS s (device_id, user_id, enable_live_activities,
            enable_background_notifications, show_notification_details, enable_time_sensitive,
            alert_approvals, alert_questions, alert_task_complete, alert_task_failed, alert_task_paused,
            quiet_while_active)
        VALUES (v_device, caller,
                coalesce(set_notification_settings.enable_live_activities, before.enable_live_activities),
                coalesce(set_notification_settings.enable_background_notifications, before.enable_background_notifications),
                coalesce(set_notification_settings.show_notification_details, before.show_notification_details),
                coalesce(set_notification_settings.enable_time_sensitive, before.enable_time_sensitive),
                coalesce(set_notification_settings.alert_approvals, before.alert_approvals),
                coalesce(set_notification_settings.alert_questions, before.alert_questions),
                coalesce(set_notification_settings.alert_task_complete, before.alert_task_complete),
                coalesce(set_notification_settings.alert_task_failed, before.alert_task_failed),
                coalesce(set_notification_settings.alert_task_paused, before.alert_task_paused),
                coalesce(set_notification_settings.quiet_while_active, before.quiet_while_active))
        ON CONFLICT ON CONSTRAINT notification_settings_pkey DO UPDATE
        SET enable_live_activities = EXCLUDED.enable_live_activities,
            enable_background_notifications = EXCLUDED.enable_background_notifications,
            show_notification_details = EXCLUDED.show_notification_details,
            enable_time_sensitive = EXCLUDED.enable_time_sensitive,
            alert_approvals = EXCLUDED.alert_approvals, alert_questions = EXCLUDED.alert_questions,
            alert_task_complete = EXCLUDED.alert_task_complete, alert_task_failed = EXCLUDED.alert_task_failed,
            alert_task_paused = EXCLUDED.alert_task_paused, quiet_while_active = EXCLUDED.quiet_while_active
        RETURNING * INTO after;
    ended := open_before - (SELECT count(*) FROM public.push_tokens p
                            WHERE p.user_id = caller AND p.device_id = v_device AND p.token_type = 'live_activity'
                              AND p.is_valid AND private.live_activity_open(p.token));
    RETURN jsonb_build_object(
        'deviceId', v_device, 'enableLiveActivities', after.enable_live_activities,
        'enableBackgroundNotifications', after.enable_background_notifications,
        'showNotificationDetails', after.show_notification_details,
        'enableTimeSensitive', after.enable_time_sensitive,
        'alertApprovals', after.alert_approvals, 'alertQuestions', after.alert_questions,
        'alertTaskComplete', after.alert_task_complete, 'alertTaskFailed', after.alert_task_failed,
        'alertTaskPaused', after.alert_task_paused, 'quietWhileActive', after.quiet_while_active,
        'liveActivitiesEnded', ended);
END
$$;
REVOKE ALL ON FUNCTION public.set_notification_settings(uuid, boolean, boolean, boolean, boolean, boolean, boolean,
    boolean, boolean, boolean, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.set_notification_settings(uuid, boolean, boolean, boolean, boolean, boolean, boolean,
    boolean, boolean, boolean, boolean) TO authenticated, service_role;

-- How an alert of `kind` for `device` about `session` is queued, decided once when queueing:
-- 'off' (the device's setting for the kind is off: nothing), 'suppressed' (a task kind while
-- another device is active on the session and quiet_while_active: nothing), 'passive' (an
-- approval or a question then: queued without sound, priority 5; a blocked agent must reach
-- someone) or 'alert'. Active elsewhere: the session's session_active_clients row names another
-- device, active in the last 60 seconds.
CREATE FUNCTION private.alert_decision(device uuid, kind text, session uuid) RETURNS text
    LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
    settings public.notification_settings := private.notification_settings_of(device);
    enabled boolean;
    elsewhere boolean;
BEGIN
    enabled := CASE kind
        WHEN 'approval' THEN settings.alert_approvals
        WHEN 'question' THEN settings.alert_questions
        WHEN 'task_complete' THEN settings.alert_task_complete
        WHEN 'task_failed' THEN settings.alert_task_failed
        WHEN 'task_paused' THEN settings.alert_task_paused
        ELSE true END;
    IF NOT enabled THEN RETURN 'off'; END IF;
    elsewhere := EXISTS (SELECT 1 FROM public.session_active_clients a
                         WHERE a.session_id = session AND a.device_id <> device
                           AND a.last_activity_at >= now() - interval '60 seconds');
    IF settings.quiet_while_active AND elsewhere THEN
        RETURN CASE WHEN kind IN ('approval', 'question') THEN 'passive' ELSE 'suppressed' END;
    END IF;
    RETURN 'alert';
END
$$;
REVOKE ALL ON FUNCTION private.alert_decision(uuid, text, uuid) FROM PUBLIC;

-- Keeps a claim fresh while the session is on screen (every 30 s): refreshes last_activity_at
-- only when `device_id` holds the session, never takes over, queues nothing.
CREATE FUNCTION public.touch_session_activity(session_id uuid, device_id uuid) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_session uuid := touch_session_activity.session_id;
    v_device uuid := touch_session_activity.device_id;
    touched integer;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'touch_session_activity needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF v_session IS NULL OR NOT EXISTS (SELECT 1 FROM public.agent_coding_sessions s WHERE s.id = v_session AND s.user_id = caller) THEN
        RAISE EXCEPTION 'the session is not one of yours' USING ERRCODE = '42501';
    END IF;
    IF v_device IS NULL OR NOT EXISTS (SELECT 1 FROM public.devices d WHERE d.id = v_device AND d.user_id = caller) THEN
        RAISE EXCEPTION 'the device is not one of yours' USING ERRCODE = '42501';
    END IF;
    UPDATE public.session_active_clients a SET last_activity_at = now(), updated_at = now()
        WHERE a.session_id = v_session AND a.device_id = v_device AND a.user_id = caller;
    GET DIAGNOSTICS touched = ROW_COUNT;
    RETURN jsonb_build_object('holder', touched > 0);
END
$$;
REVOKE ALL ON FUNCTION public.touch_session_activity(uuid, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.touch_session_activity(uuid, uuid) TO authenticated;

-- The alert of a new request: as in *_approval_recipients.sql, with the round-2 members.
CREATE OR REPLACE FUNCTION private.queue_approval_alerts(caller uuid, request uuid) RETURNS integer
    LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
    r public.approval_requests%ROWTYPE;
    base jsonb;
    queued integer;
BEGIN
    SELECT * INTO r FROM public.approval_requests a WHERE a.id = request;
    base := jsonb_build_object(
        'aps', jsonb_build_object(
            'alert', jsonb_build_object(
                'title', 'Approval needed', 'body', 'An agent session is waiting for you',
                'title-loc-key', 'notification.approval.title',
                'loc-key', 'notification.approval.body.generic'),
            'sound', 'default', 'category', 'APPROVAL_REQUEST', 'thread-id', r.session_id::text,
            'interruption-level', 'time-sensitive', 'mutable-content', 1, 'badge', 0),
        'type', 'approval', 'requestId', r.id::text, 'sessionId', r.session_id::text,
        'deepLink', private.deep_link_scheme() || '://session/' || r.session_id::text || '/approval/' || r.id::text,
        'requesterDeviceId', r.requester_device_id::text, 'generation', r.generation, 'expiresAt', r.expires_at,
        'sealed', r.body);
    -- The badge's digits never bring a payload over the limit it was measured with (at most 6 more bytes).
    IF octet_length(base::text) + 6 > 4096 THEN base := base - 'sealed'; END IF;
    -- Each token's device decides once (private.alert_decision): off, nothing; passive (another
    -- device is active on the session), no sound and priority 5; else as before.
    INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload)
        SELECT caller, d.device_id, d.token, 'alert', CASE WHEN d.decision = 'passive' THEN 5 ELSE 10 END,
               'approval-request-' || r.id::text,
               CASE WHEN d.decision = 'passive'
                    THEN jsonb_set(jsonb_set(base, '{aps,badge}', to_jsonb(private.approval_badge(caller, d.device_id))),
                                   '{aps,interruption-level}', '"passive"') #- '{aps,sound}'
                    ELSE jsonb_set(jsonb_set(base, '{aps,badge}', to_jsonb(private.approval_badge(caller, d.device_id))),
                                   '{aps,interruption-level}',
                                   to_jsonb(CASE WHEN (private.notification_settings_of(d.device_id)).enable_time_sensitive
                                                 THEN 'time-sensitive' ELSE 'active' END)) END
        FROM (SELECT t.device_id, t.token, private.alert_decision(t.device_id, 'approval', r.session_id) AS decision
              FROM public.push_tokens t
              WHERE t.user_id = caller AND t.token_type = 'device' AND t.is_valid AND t.device_id <> r.requester_device_id
                AND private.is_trusted_device(caller, t.device_id) AND private.may_queue_push(t.device_id, 'alert')) d
        WHERE d.decision <> 'off'
        ORDER BY d.token
        ON CONFLICT (token, collapse_id) WHERE collapse_id LIKE 'approval-%' DO NOTHING;
    GET DIAGNOSTICS queued = ROW_COUNT;
    RETURN queued;
END
$$;

-- Nothing silently lost (docs/notifications.md, "Round 2"): where an approval's or a question's
-- alert went, device by device, for the asker. An approval or question id of the caller's, else
-- 42501 whether it exists or not. One entry per device of the caller but the asker's that has a device token row (valid
-- or not) or an outbox row for the alert, by name then id; never a token. The outcome is that of
-- the device's most advanced row (delivered > sent > queued > failed > dropped), else its state
-- now: off (the kind's setting is off) or unreachable (no valid token now: 'token invalid'; a
-- valid token newer than the alert: 'registered later'; a device the trust log does not
-- certify: 'not trusted'; else, a setting or limit at the time: 'not queued'). Past the outbox's retention (7 days)
-- `devices` is [].
CREATE FUNCTION public.alert_deliveries(alert_id uuid) RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    caller uuid := auth.uid();
    r record;
    v_kind text := 'approval';
    v_collapse text;
    entries jsonb;
BEGIN
    SELECT a.id, a.session_id, a.requester_device_id, a.created_at INTO r
        FROM public.approval_requests a WHERE a.id = alert_id AND a.user_id = caller;
    IF NOT FOUND THEN
        v_kind := 'question';
        SELECT q.id, q.session_id, q.requester_device_id, q.created_at INTO r
            FROM public.agent_questions q WHERE q.id = alert_id AND q.user_id = caller;
    END IF;
    IF caller IS NULL OR NOT FOUND THEN
        RAISE EXCEPTION 'not an approval or question of yours' USING ERRCODE = '42501';
    END IF;
    v_collapse := CASE v_kind WHEN 'approval' THEN 'approval-request-' ELSE 'question-' END || r.id::text;
    WITH rows AS (
        SELECT o.device_id, o.attempts, o.last_reason,
               CASE WHEN o.delivered_at IS NOT NULL THEN 'delivered'
                    WHEN o.failed_at IS NOT NULL AND o.last_error LIKE 'dropped: %' THEN 'dropped'
                    WHEN o.failed_at IS NOT NULL THEN 'failed'
                    WHEN o.attempts >= 1 THEN 'sent' ELSE 'queued' END AS outcome,
               CASE WHEN o.failed_at IS NOT NULL AND o.last_error LIKE 'dropped: %' THEN substr(o.last_error, 10)
                    WHEN o.failed_at IS NOT NULL THEN o.last_error END AS reason,
               coalesce(o.delivered_at, o.failed_at, o.created_at) AS updated_at
        FROM public.push_outbox o
        WHERE o.user_id = caller AND o.collapse_id = v_collapse
    ), ranked AS (
        SELECT DISTINCT ON (x.device_id) x.*
        FROM rows x
        ORDER BY x.device_id, CASE x.outcome WHEN 'delivered' THEN 5 WHEN 'sent' THEN 4 WHEN 'queued' THEN 3
                                             WHEN 'failed' THEN 2 ELSE 1 END DESC, x.updated_at DESC
    ), devices AS (
        SELECT d.id, d.name, d.device_type FROM public.devices d
        WHERE d.user_id = caller AND d.id <> r.requester_device_id
          AND (EXISTS (SELECT 1 FROM public.push_tokens t
                       WHERE t.device_id = d.id AND t.user_id = caller AND t.token_type = 'device')
               OR EXISTS (SELECT 1 FROM ranked k WHERE k.device_id = d.id))
    )
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'deviceId', d.id, 'deviceName', d.name, 'deviceType', d.device_type,
               'outcome', coalesce(k.outcome, CASE
                   WHEN private.alert_decision(d.id, v_kind, r.session_id) = 'off' THEN 'off'
                   ELSE 'unreachable' END),
               'reason', CASE WHEN k.device_id IS NOT NULL THEN k.reason
                   WHEN private.alert_decision(d.id, v_kind, r.session_id) = 'off' THEN 'setting off'
                   WHEN EXISTS (SELECT 1 FROM public.push_tokens t
                                WHERE t.device_id = d.id AND t.user_id = caller AND t.token_type = 'device'
                                  AND t.is_valid AND t.created_at > r.created_at) THEN 'registered later'
                   WHEN NOT EXISTS (SELECT 1 FROM public.push_tokens t
                                    WHERE t.device_id = d.id AND t.user_id = caller AND t.token_type = 'device'
                                      AND t.is_valid) THEN 'token invalid'
                   WHEN NOT private.is_trusted_device(caller, d.id) THEN 'not trusted'
                   ELSE 'not queued' END,
               'apnsReason', k.last_reason, 'attempts', k.attempts, 'updatedAt', k.updated_at)
             ORDER BY d.name COLLATE "C", d.id), '[]'::jsonb)
        INTO entries
        FROM devices d LEFT JOIN ranked k ON k.device_id = d.id;
    IF r.created_at < now() - interval '7 days' THEN entries := '[]'::jsonb; END IF;
    RETURN jsonb_build_object(
        'alertId', r.id, 'kind', v_kind,
        'final', NOT EXISTS (SELECT 1 FROM jsonb_array_elements(entries) e
                             WHERE e ->> 'outcome' IN ('queued', 'sent')),
        'devices', entries);
END
$$;
REVOKE ALL ON FUNCTION public.alert_deliveries(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.alert_deliveries(uuid) TO authenticated;

-- request_approval answers where its alert went (alert_deliveries' `devices`), so "nobody can be
-- reached" is known at once. The request itself is recorded as before, by the function of
-- *_approval_control.sql, moved out of PostgREST's reach.
-- (Its name stays: its body names its arguments by it.)
ALTER FUNCTION public.request_approval(uuid, uuid, uuid, text, integer, bigint, text) SET SCHEMA private;
REVOKE ALL ON FUNCTION private.request_approval(uuid, uuid, uuid, text, integer, bigint, text)
    FROM PUBLIC, authenticated, service_role;
-- Its body's generation is read as the trust log reads a u32 (private.tl_u32): the earlier
-- expression, `b1::bigint << 24 | b2 << 16 | ...` without brackets, shifted left to right (the
-- operators share one precedence) and refused every generation from 65,536 on.
CREATE OR REPLACE FUNCTION private.request_approval(
    session_id uuid, request_id uuid, requester_device_id uuid, body text, generation integer, expires_at bigint,
    control_hash text DEFAULT NULL
) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_session uuid := request_approval.session_id;
    v_request uuid := request_approval.request_id;
    v_device uuid := request_approval.requester_device_id;
    v_body text := request_approval.body;
    v_generation integer := request_approval.generation;
    v_expires bigint := request_approval.expires_at;
    v_now bigint := floor(extract(epoch FROM now()))::bigint;
    raw bytea;
    v_control bytea;
    existing public.approval_requests%ROWTYPE;
    queued integer;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'request_approval needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF v_session IS NULL OR NOT EXISTS (SELECT 1 FROM public.agent_coding_sessions s WHERE s.id = v_session AND s.user_id = caller) THEN
        RAISE EXCEPTION 'the session is not one of yours' USING ERRCODE = '42501';
    END IF;
    IF v_device IS NULL OR NOT EXISTS (SELECT 1 FROM public.devices d WHERE d.id = v_device AND d.user_id = caller) THEN
        RAISE EXCEPTION 'the device is not one of yours' USING ERRCODE = '42501';
    END IF;
    IF v_request IS NULL THEN RAISE EXCEPTION 'request_id is required' USING ERRCODE = '22023'; END IF;
    IF v_generation IS NULL OR v_generation < 1 THEN
        RAISE EXCEPTION 'generation must be 1 to 2147483647' USING ERRCODE = '22023';
    END IF;
    IF v_expires IS NULL OR v_expires < v_now + 5 OR v_expires > v_now + 600 THEN
        RAISE EXCEPTION 'expires_at must be 5 to 600 seconds from now' USING ERRCODE = '22023';
    END IF;
    -- 0x01 || generation || nonce || at least the JSON's braces and the tag; at most 4,096 bytes of JSON.
    IF NOT private.is_canonical_base64(v_body, 1 + 4 + 12 + 2 + 16, 1 + 4 + 12 + 4096 + 16) THEN
        RAISE EXCEPTION 'body must be canonical base64 of a sealed request' USING ERRCODE = '22023';
    END IF;
    raw := decode(v_body, 'base64');
    IF get_byte(raw, 0) <> 1 OR private.tl_u32(raw, 1) <> v_generation THEN
        RAISE EXCEPTION 'the body''s version or generation is not the request''s' USING ERRCODE = '22023';
    END IF;

    IF request_approval.control_hash IS NOT NULL THEN
        IF NOT private.is_canonical_base64(request_approval.control_hash, 32, 32) THEN
            RAISE EXCEPTION 'control_hash must be canonical base64 of 32 bytes' USING ERRCODE = '22023';
        END IF;
        v_control := decode(request_approval.control_hash, 'base64');
    END IF;

    SELECT * INTO existing FROM public.approval_requests r WHERE r.id = v_request FOR UPDATE;
    IF FOUND THEN
        IF existing.user_id <> caller THEN RAISE EXCEPTION 'the request is not one of yours' USING ERRCODE = '42501'; END IF;
        IF existing.body <> v_body OR existing.session_id <> v_session OR existing.requester_device_id <> v_device
           OR existing.generation <> v_generation OR existing.expires_at <> v_expires
           OR existing.control_hash IS DISTINCT FROM v_control THEN
            RAISE EXCEPTION 'another request has this id' USING ERRCODE = '23505';
        END IF;
        SELECT count(*) INTO queued FROM public.push_outbox o
            WHERE o.user_id = caller AND o.collapse_id = 'approval-request-' || v_request::text;
        RETURN jsonb_build_object('requestId', v_request, 'expiresAt', v_expires, 'devicesNotified', queued);
    END IF;

    INSERT INTO public.approval_requests (id, user_id, session_id, requester_device_id, body, generation, expires_at,
                                          control_hash)
        VALUES (v_request, caller, v_session, v_device, v_body, v_generation, v_expires, v_control);
    queued := private.queue_approval_alerts(caller, v_request);
    RETURN jsonb_build_object('requestId', v_request, 'expiresAt', v_expires, 'devicesNotified', queued);
END
$$;

CREATE FUNCTION public.request_approval(
    session_id uuid, request_id uuid, requester_device_id uuid, body text, generation integer, expires_at bigint,
    control_hash text DEFAULT NULL
) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    answer jsonb;
BEGIN
    answer := private.request_approval(session_id, request_id, requester_device_id, body, generation,
                                              expires_at, control_hash);
    RETURN answer || jsonb_build_object('devices', public.alert_deliveries(request_id) -> 'devices');
END
$$;
REVOKE ALL ON FUNCTION public.request_approval(uuid, uuid, uuid, text, integer, bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.request_approval(uuid, uuid, uuid, text, integer, bigint, text) TO authenticated, service_role;

-- Task alerts (docs/notifications.md, "Round 2"): task_complete, task_failed and task_paused,
-- for every valid device token of the user's trusted devices but those of the session's
-- desktop, decided per token's device (private.alert_decision: off and suppressed queue
-- nothing) and coalesced per token and session: while now() < P.not_before + 60 s, P being the
-- token's newest row with collapse id session-<sid>, an alert of P's kind is not queued; another
-- kind replaces P's payload if P still waits (pending, unleased, never tried), else is queued
-- due at P.not_before + 60 s. At most one task alert per session and token a minute, never the
-- same one twice within it, and the latest state always arrives. Answers the counts of tokens.
CREATE FUNCTION private.queue_task_alerts(caller uuid, session uuid, kind text) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
    s public.agent_coding_sessions%ROWTYPE;
    v_payload jsonb;
    t record;
    decision text;
    p public.push_outbox%ROWTYPE;
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
        IF FOUND AND now() < p.not_before + interval '60 seconds' THEN
            IF p.payload ->> 'type' = kind THEN coalesced := coalesced + 1; CONTINUE; END IF;
            IF p.delivered_at IS NULL AND p.failed_at IS NULL AND p.attempts = 0
               AND (p.lease_until IS NULL OR p.lease_until < now()) THEN
                UPDATE public.push_outbox o SET payload = v_payload WHERE o.id = p.id;
            ELSE
                INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload,
                                                not_before)
                    VALUES (caller, t.device_id, t.token, 'alert', 10, v_collapse, v_payload,
                            p.not_before + interval '60 seconds');
            END IF;
        ELSE
            INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload)
                VALUES (caller, t.device_id, t.token, 'alert', 10, v_collapse, v_payload);
        END IF;
        queued := queued + 1;
    END LOOP;
    RETURN jsonb_build_object('queued', queued, 'coalesced', coalesced, 'suppressed', suppressed, 'off', turned_off);
END
$$;
REVOKE ALL ON FUNCTION private.queue_task_alerts(uuid, uuid, text) FROM PUBLIC;

-- The session's own transitions raise the task kinds: runtime status from running or waiting to
-- idle (task_complete), from anything else to error (task_failed); status from active to paused
-- (task_paused). A session's first runtime status (OLD null) raises nothing.
CREATE FUNCTION private.session_status_alerts() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    old_status text := OLD.runtime_status -> 'coding_session' ->> 'status';
    new_status text := NEW.runtime_status -> 'coding_session' ->> 'status';
BEGIN
    -- An alert over the user's push budget (54000) is dropped: the write that raised it commits.
    BEGIN
        IF OLD.runtime_status IS NOT NULL AND NEW.runtime_status IS NOT NULL THEN
            IF new_status = 'idle' AND old_status IN ('running', 'waiting') THEN
                PERFORM private.queue_task_alerts(NEW.user_id, NEW.id, 'task_complete');
            ELSIF new_status = 'error' AND old_status IS DISTINCT FROM 'error' THEN
                PERFORM private.queue_task_alerts(NEW.user_id, NEW.id, 'task_failed');
            END IF;
        END IF;
        IF OLD.status = 'active' AND NEW.status = 'paused' THEN
            PERFORM private.queue_task_alerts(NEW.user_id, NEW.id, 'task_paused');
        END IF;
    EXCEPTION WHEN program_limit_exceeded THEN
        NULL;
    END;
    RETURN NULL;
END
$$;
CREATE TRIGGER agent_coding_sessions_status_alerts
    AFTER UPDATE OF runtime_status, status ON public.agent_coding_sessions
    FOR EACH ROW EXECUTE FUNCTION private.session_status_alerts();

-- Raises a task alert on request, from the desktop running the session: `device_id` must be the
-- session's device, both the caller's, else 42501; `kind` task_complete, task_failed or
-- task_paused, else 22023. Answers the counts of device tokens.
CREATE FUNCTION public.notify_session_event(session_id uuid, device_id uuid, kind text) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_session uuid := notify_session_event.session_id;
    v_device uuid := notify_session_event.device_id;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'notify_session_event needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF v_device IS NULL OR NOT EXISTS (SELECT 1 FROM public.devices d WHERE d.id = v_device AND d.user_id = caller) THEN
        RAISE EXCEPTION 'the device is not one of yours' USING ERRCODE = '42501';
    END IF;
    IF v_session IS NULL OR NOT EXISTS (SELECT 1 FROM public.agent_coding_sessions s
                                        WHERE s.id = v_session AND s.user_id = caller AND s.device_id = v_device) THEN
        RAISE EXCEPTION 'the session is not one of yours on this device' USING ERRCODE = '42501';
    END IF;
    IF kind IS NULL OR kind NOT IN ('task_complete', 'task_failed', 'task_paused') THEN
        RAISE EXCEPTION 'kind must be task_complete, task_failed or task_paused' USING ERRCODE = '22023';
    END IF;
    RETURN private.queue_task_alerts(caller, v_session, kind);
END
$$;
REVOKE ALL ON FUNCTION public.notify_session_event(uuid, uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.notify_session_event(uuid, uuid, text) TO authenticated;

-- Questions, sealed (docs/notifications.md, "Questions, sealed"): an agent's question to the
-- person, sealed as an approval request is (its own labels), asked by the desktop running the
-- session; alerts as an approval's (category AGENT_QUESTION, collapse question-<id>, never
-- suppressed: a blocked agent must reach someone); closed by the asker once the agent has its
-- answer (which travels in the session's own channel) or gave up; expired by expire_approvals().
CREATE TABLE public.agent_questions (
    id uuid PRIMARY KEY,
    user_id uuid NOT NULL,
    session_id uuid NOT NULL REFERENCES public.agent_coding_sessions (id) ON DELETE CASCADE,
    requester_device_id uuid NOT NULL,
    body text NOT NULL,
    generation integer NOT NULL CHECK (generation >= 1),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at bigint NOT NULL,
    status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'answered', 'cancelled', 'expired')),
    closed_at timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agent_questions_user ON public.agent_questions (user_id, updated_at);
CREATE INDEX agent_questions_pending ON public.agent_questions (expires_at) WHERE status = 'pending';
CREATE TRIGGER agent_questions_updated_at BEFORE INSERT OR UPDATE ON public.agent_questions
    FOR EACH ROW EXECUTE FUNCTION public.set_updated_at();
ALTER TABLE public.agent_questions ENABLE ROW LEVEL SECURITY;
CREATE POLICY agent_questions_read ON public.agent_questions FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()));
GRANT SELECT ON public.agent_questions TO authenticated;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.agent_questions TO service_role;

-- Each question's alert and clearing push once per token.
CREATE UNIQUE INDEX push_outbox_question_once ON public.push_outbox (token, collapse_id)
    WHERE collapse_id LIKE 'question-%';

-- The badge counts the device's pending, unexpired approvals and questions another device asked.
CREATE OR REPLACE FUNCTION private.approval_badge(caller uuid, device uuid) RETURNS integer
    LANGUAGE sql STABLE SET search_path = '' AS $$
    SELECT (SELECT count(*)::integer FROM public.approval_requests a
            WHERE a.user_id = caller AND a.status = 'pending' AND a.requester_device_id <> device
              AND a.expires_at > floor(extract(epoch FROM now()))::bigint)
         + (SELECT count(*)::integer FROM public.agent_questions q
            WHERE q.user_id = caller AND q.status = 'pending' AND q.requester_device_id <> device
              AND q.expires_at > floor(extract(epoch FROM now()))::bigint)
$$;

-- A question's alert expires with the question.
CREATE OR REPLACE FUNCTION private.push_outbox_expiry() RETURNS trigger
    LANGUAGE plpgsql SET search_path = '' AS $$
BEGIN
    IF NEW.expires_at IS NULL THEN
        IF NEW.push_type = 'alert' AND NEW.collapse_id LIKE 'approval-request-%' THEN
            NEW.expires_at := (SELECT to_timestamp(r.expires_at) FROM public.approval_requests r
                               WHERE r.id::text = substr(NEW.collapse_id, 18));
        ELSIF NEW.push_type = 'alert' AND NEW.collapse_id LIKE 'question-%'
              AND NEW.collapse_id NOT LIKE 'question-clear-%' THEN
            NEW.expires_at := (SELECT to_timestamp(q.expires_at) FROM public.agent_questions q
                               WHERE q.id::text = substr(NEW.collapse_id, 10));
        END IF;
        IF NEW.expires_at IS NULL AND NEW.push_type <> 'liveactivity' THEN
            NEW.expires_at := NEW.created_at + interval '1 hour';
        END IF;
    END IF;
    RETURN NEW;
END
$$;

-- The alert of a new question, as an approval's: for every valid device token of the user's
-- trusted devices but the asker's; passive when quiet (never suppressed), off when the
-- device's questions are off.
CREATE FUNCTION private.queue_question_alerts(caller uuid, question uuid) RETURNS integer
    LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
    q public.agent_questions%ROWTYPE;
    base jsonb;
    queued integer;
BEGIN
    SELECT * INTO q FROM public.agent_questions a WHERE a.id = question;
    base := jsonb_build_object(
        'aps', jsonb_build_object(
            'alert', jsonb_build_object(
                'title', 'Your agent has a question', 'body', 'An agent session is waiting for your answer',
                'title-loc-key', 'notification.question.title',
                'loc-key', 'notification.question.body.generic'),
            'sound', 'default', 'category', 'AGENT_QUESTION', 'thread-id', q.session_id::text,
            'interruption-level', 'time-sensitive', 'mutable-content', 1, 'badge', 0),
        'type', 'question', 'requestId', q.id::text, 'sessionId', q.session_id::text,
        'deepLink', private.deep_link_scheme() || '://session/' || q.session_id::text || '/question/' || q.id::text,
        'requesterDeviceId', q.requester_device_id::text, 'generation', q.generation, 'expiresAt', q.expires_at,
        'sealed', q.body);
    IF octet_length(base::text) + 6 > 4096 THEN base := base - 'sealed'; END IF;
    INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload)
        SELECT caller, d.device_id, d.token, 'alert', CASE WHEN d.decision = 'passive' THEN 5 ELSE 10 END,
               'question-' || q.id::text,
               CASE WHEN d.decision = 'passive'
                    THEN jsonb_set(jsonb_set(base, '{aps,badge}', to_jsonb(private.approval_badge(caller, d.device_id))),
                                   '{aps,interruption-level}', '"passive"') #- '{aps,sound}'
                    ELSE jsonb_set(jsonb_set(base, '{aps,badge}', to_jsonb(private.approval_badge(caller, d.device_id))),
                                   '{aps,interruption-level}',
                                   to_jsonb(CASE WHEN (private.notification_settings_of(d.device_id)).enable_time_sensitive
                                                 THEN 'time-sensitive' ELSE 'active' END)) END
        FROM (SELECT t.device_id, t.token, private.alert_decision(t.device_id, 'question', q.session_id) AS decision
              FROM public.push_tokens t
              WHERE t.user_id = caller AND t.token_type = 'device' AND t.is_valid AND t.device_id <> q.requester_device_id
                AND private.is_trusted_device(caller, t.device_id) AND private.may_queue_push(t.device_id, 'alert')) d
        WHERE d.decision <> 'off'
        ORDER BY d.token
        ON CONFLICT (token, collapse_id) WHERE collapse_id LIKE 'question-%' DO NOTHING;
    GET DIAGNOSTICS queued = ROW_COUNT;
    RETURN queued;
END
$$;

-- A question's end, for every valid device token of the user's trusted devices but the asker's
-- (never suppressed): the prompt goes, the badge is the new count.
CREATE FUNCTION private.queue_question_clearing(caller uuid, question uuid, reason text) RETURNS integer
    LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
    queued integer;
    asker uuid := (SELECT q.requester_device_id FROM public.agent_questions q WHERE q.id = question);
BEGIN
    INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload)
        SELECT caller, t.device_id, t.token, 'background', 5, 'question-clear-' || question::text,
               jsonb_build_object('aps', jsonb_build_object('content-available', 1,
                                                            'badge', private.approval_badge(caller, t.device_id)),
                                  'clearQuestionId', question::text, 'reason', reason)
        FROM public.push_tokens t
        WHERE t.user_id = caller AND t.token_type = 'device' AND t.is_valid AND t.device_id IS DISTINCT FROM asker
          AND private.is_trusted_device(caller, t.device_id)
        ORDER BY t.token
        ON CONFLICT (token, collapse_id) WHERE collapse_id LIKE 'question-%' DO NOTHING;
    GET DIAGNOSTICS queued = ROW_COUNT;
    RETURN queued;
END
$$;
REVOKE ALL ON FUNCTION private.queue_question_alerts(uuid, uuid), private.queue_question_clearing(uuid, uuid, text)
    FROM PUBLIC;

-- Asks: idempotent for the same question (23505 for another under its id); expires 60 s to a day
-- from now. Answers {"questionId", "expiresAt", "devicesNotified", "devices"}.
CREATE FUNCTION public.ask_question(
    session_id uuid, question_id uuid, requester_device_id uuid, body text, generation integer, expires_at bigint
) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_session uuid := ask_question.session_id;
    v_question uuid := ask_question.question_id;
    v_device uuid := ask_question.requester_device_id;
    v_body text := ask_question.body;
    v_generation integer := ask_question.generation;
    v_expires bigint := ask_question.expires_at;
    v_now bigint := floor(extract(epoch FROM now()))::bigint;
    raw bytea;
    existing public.agent_questions%ROWTYPE;
    queued integer;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'ask_question needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF v_session IS NULL OR NOT EXISTS (SELECT 1 FROM public.agent_coding_sessions s WHERE s.id = v_session AND s.user_id = caller) THEN
        RAISE EXCEPTION 'the session is not one of yours' USING ERRCODE = '42501';
    END IF;
    IF v_device IS NULL OR NOT EXISTS (SELECT 1 FROM public.devices d WHERE d.id = v_device AND d.user_id = caller) THEN
        RAISE EXCEPTION 'the device is not one of yours' USING ERRCODE = '42501';
    END IF;
    IF v_question IS NULL THEN RAISE EXCEPTION 'question_id is required' USING ERRCODE = '22023'; END IF;
    IF v_generation IS NULL OR v_generation < 1 THEN
        RAISE EXCEPTION 'generation must be 1 to 2147483647' USING ERRCODE = '22023';
    END IF;
    IF v_expires IS NULL OR v_expires < v_now + 60 OR v_expires > v_now + 86400 THEN
        RAISE EXCEPTION 'expires_at must be 60 to 86,400 seconds from now' USING ERRCODE = '22023';
    END IF;
    IF NOT private.is_canonical_base64(v_body, 1 + 4 + 12 + 2 + 16, 1 + 4 + 12 + 4096 + 16) THEN
        RAISE EXCEPTION 'body must be canonical base64 of a sealed question' USING ERRCODE = '22023';
    END IF;
    raw := decode(v_body, 'base64');
    IF get_byte(raw, 0) <> 1 OR private.tl_u32(raw, 1) <> v_generation THEN
        RAISE EXCEPTION 'the body''s version or generation is not the question''s' USING ERRCODE = '22023';
    END IF;
    SELECT * INTO existing FROM public.agent_questions q WHERE q.id = v_question FOR UPDATE;
    IF FOUND THEN
        IF existing.user_id <> caller THEN RAISE EXCEPTION 'the question is not one of yours' USING ERRCODE = '42501'; END IF;
        IF existing.body <> v_body OR existing.session_id <> v_session OR existing.requester_device_id <> v_device
           OR existing.generation <> v_generation OR existing.expires_at <> v_expires THEN
            RAISE EXCEPTION 'another question has this id' USING ERRCODE = '23505';
        END IF;
        SELECT count(*) INTO queued FROM public.push_outbox o
            WHERE o.user_id = caller AND o.collapse_id = 'question-' || v_question::text;
    ELSE
        INSERT INTO public.agent_questions (id, user_id, session_id, requester_device_id, body, generation, expires_at)
            VALUES (v_question, caller, v_session, v_device, v_body, v_generation, v_expires);
        queued := private.queue_question_alerts(caller, v_question);
    END IF;
    RETURN jsonb_build_object('questionId', v_question, 'expiresAt', v_expires, 'devicesNotified', queued,
                              'devices', public.alert_deliveries(v_question) -> 'devices');
END
$$;

-- Closes a pending question (answered or cancelled) with its clearing pushes; a closed one
-- changes nothing. Answers {"closed", "status", "devicesNotified"}.
CREATE FUNCTION public.close_question(question_id uuid, status text) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_question uuid := close_question.question_id;
    v_status text := close_question.status;
    q public.agent_questions%ROWTYPE;
    queued integer;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'close_question needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF v_status IS NULL OR v_status NOT IN ('answered', 'cancelled') THEN
        RAISE EXCEPTION 'status must be answered or cancelled' USING ERRCODE = '22023';
    END IF;
    SELECT * INTO q FROM public.agent_questions a WHERE a.id = v_question FOR UPDATE;
    IF NOT FOUND OR q.user_id <> caller THEN
        RAISE EXCEPTION 'the question is not one of yours' USING ERRCODE = '42501';
    END IF;
    IF q.status = 'pending' AND q.expires_at <= floor(extract(epoch FROM now()))::bigint THEN q.status := 'expired'; END IF;
    IF q.status <> 'pending' THEN
        RETURN jsonb_build_object('closed', false, 'status', q.status, 'devicesNotified', 0);
    END IF;
    UPDATE public.agent_questions a SET status = v_status, closed_at = now() WHERE a.id = v_question;
    queued := private.queue_question_clearing(caller, v_question, v_status);
    RETURN jsonb_build_object('closed', true, 'status', v_status, 'devicesNotified', queued);
END
$$;
REVOKE ALL ON FUNCTION public.ask_question(uuid, uuid, uuid, text, integer, bigint),
    public.close_question(uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.ask_question(uuid, uuid, uuid, text, integer, bigint),
    public.close_question(uuid, text) TO authenticated, service_role;

-- expire_approvals() also expires questions (reason timeout); it still answers the approvals'
-- count (missed approvals).
CREATE OR REPLACE FUNCTION public.expire_approvals() RETURNS integer
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    request record;
    expired integer := 0;
BEGIN
    FOR request IN
        UPDATE public.approval_requests r SET status = 'expired'
        WHERE r.status = 'pending' AND r.expires_at <= floor(extract(epoch FROM now()))::bigint
        RETURNING r.id, r.user_id
    LOOP
        PERFORM private.queue_approval_clearing(request.user_id, request.id, 'timeout', NULL);
        expired := expired + 1;
    END LOOP;
    FOR request IN
        UPDATE public.agent_questions q SET status = 'expired', closed_at = now()
        WHERE q.status = 'pending' AND q.expires_at <= floor(extract(epoch FROM now()))::bigint
        RETURNING q.id, q.user_id
    LOOP
        PERFORM private.queue_question_clearing(request.user_id, request.id, 'timeout');
    END LOOP;
    RETURN expired;
END
$$;

-- The change feed carries the caller's questions as it carries approvals (changed since the cursor;
-- every pending one on a first call).
CREATE OR REPLACE FUNCTION public.sync_changes(since timestamptz DEFAULT NULL)
    RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    caller uuid := auth.uid();
    v_since timestamptz := sync_changes.since;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'sync_changes needs a signed-in user' USING ERRCODE = '42501'; END IF;
    RETURN jsonb_build_object(
        'server_time', now(),
        'devices', coalesce((SELECT jsonb_agg(to_jsonb(d) ORDER BY d.updated_at, d.id) FROM public.devices d
                             WHERE d.user_id = caller AND (v_since IS NULL OR d.updated_at > v_since)), '[]'::jsonb),
        'secret_requests', coalesce((SELECT jsonb_agg(to_jsonb(r) ORDER BY r.created_at, r.id) FROM public.session_secret_requests r
                                     WHERE r.user_id = caller AND r.fulfilled_at IS NULL), '[]'::jsonb),
        'statements', (SELECT md5(coalesce(string_agg(s.kind || ':' || s.device_id::text || ':' || s.signature, ',' ORDER BY s.kind, s.device_id), ''))
                       FROM (SELECT 'c' AS kind, c.device_id, c.signature FROM public.device_certificates c WHERE c.user_id = caller
                             UNION ALL
                             SELECT 'r', v.device_id, v.signature FROM public.device_revocations v WHERE v.user_id = caller) s),
        'trustLog', private.trust_log_head_of(caller),
        'approvals', coalesce((SELECT jsonb_agg(to_jsonb(a) ORDER BY a.updated_at, a.id) FROM public.approval_requests a
                               WHERE a.user_id = caller AND (CASE WHEN v_since IS NULL THEN a.status = 'pending' ELSE a.updated_at > v_since END)),
                              '[]'::jsonb),
        'questions', coalesce((SELECT jsonb_agg(to_jsonb(q) ORDER BY q.updated_at, q.id) FROM public.agent_questions q
                               WHERE q.user_id = caller AND (CASE WHEN v_since IS NULL THEN q.status = 'pending' ELSE q.updated_at > v_since END)),
                              '[]'::jsonb)
    );
END
$$;

-- The figures that prove notifications work (docs/notifications.md, "Metrics"): one object per
-- UTC day, newest first, all users, no ids. Approvals and questions by the day they were asked;
-- alerts by the day they closed; outbox figures cover its retention only. For the operator and
-- the worker (`push-worker report`), never a signed-in user.
CREATE FUNCTION public.notification_report(days integer DEFAULT 7) RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    v_days integer := notification_report.days;
BEGIN
    -- All users' figures: never for a signed-in user or the anon key, whatever default
    -- privileges a deployment grants on new functions.
    IF coalesce(auth.role(), '') IN ('anon', 'authenticated') THEN
        RAISE EXCEPTION 'notification_report is for the service role and the delivery worker' USING ERRCODE = '42501';
    END IF;
    IF v_days IS NULL OR v_days < 1 OR v_days > 31 THEN
        RAISE EXCEPTION 'days must be 1 to 31' USING ERRCODE = '22023';
    END IF;
    RETURN (
        WITH d AS (
            SELECT (date_trunc('day', now() AT TIME ZONE 'UTC') - make_interval(days => g))::date AS day
            FROM generate_series(0, v_days - 1) g
        ), a AS (
            SELECT (r.created_at AT TIME ZONE 'UTC')::date AS day, r.status,
                   extract(epoch FROM r.decided_at - r.created_at)::float8 AS answer_seconds
            FROM public.approval_requests r
            WHERE r.created_at >= now() - make_interval(days => v_days + 1)
        ), q AS (
            SELECT (x.created_at AT TIME ZONE 'UTC')::date AS day, x.status
            FROM public.agent_questions x
            WHERE x.created_at >= now() - make_interval(days => v_days + 1)
        ), o AS (
            SELECT (coalesce(o.delivered_at, o.failed_at) AT TIME ZONE 'UTC')::date AS day, o.push_type,
                   o.delivered_at IS NOT NULL AS delivered, o.last_error LIKE 'dropped: %' AS dropped,
                   extract(epoch FROM o.delivered_at - greatest(o.created_at, o.not_before))::float8 AS latency,
                   o.payload -> 'aps' ->> 'event' AS event
            FROM public.push_outbox o
            WHERE (o.delivered_at IS NOT NULL OR o.failed_at IS NOT NULL)
              AND coalesce(o.delivered_at, o.failed_at) >= now() - make_interval(days => v_days + 1)
        )
        SELECT coalesce(jsonb_agg(jsonb_build_object(
            'day', to_char(d.day, 'YYYY-MM-DD'),
            'approvalsAsked', (SELECT count(*) FROM a WHERE a.day = d.day),
            'approvalsAnswered', (SELECT count(*) FROM a WHERE a.day = d.day AND a.status IN ('approved', 'denied')),
            'approvalsMissed', (SELECT count(*) FROM a WHERE a.day = d.day AND a.status = 'expired'),
            'approvalsCancelled', (SELECT count(*) FROM a WHERE a.day = d.day AND a.status = 'cancelled'),
            'answerSecondsMedian', (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY a.answer_seconds) FROM a
                                    WHERE a.day = d.day AND a.status IN ('approved', 'denied')),
            'questionsAsked', (SELECT count(*) FROM q WHERE q.day = d.day),
            'questionsMissed', (SELECT count(*) FROM q WHERE q.day = d.day AND q.status = 'expired'),
            'alertsDelivered', (SELECT count(*) FROM o WHERE o.day = d.day AND o.push_type = 'alert' AND o.delivered),
            'alertsFailed', (SELECT count(*) FROM o WHERE o.day = d.day AND o.push_type = 'alert' AND NOT o.delivered
                                                   AND NOT o.dropped),
            'alertsDropped', (SELECT count(*) FROM o WHERE o.day = d.day AND o.push_type = 'alert' AND o.dropped),
            'alertLatencyMedian', (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY o.latency) FROM o
                                   WHERE o.day = d.day AND o.push_type = 'alert' AND o.delivered),
            'alertLatencyP95', (SELECT percentile_cont(0.95) WITHIN GROUP (ORDER BY o.latency) FROM o
                                WHERE o.day = d.day AND o.push_type = 'alert' AND o.delivered),
            'liveActivitiesStarted', (SELECT count(*) FROM public.push_tokens t WHERE t.token_type = 'live_activity'
                                        AND (t.created_at AT TIME ZONE 'UTC')::date = d.day),
            'liveActivitiesEnded', (SELECT count(*) FROM o WHERE o.day = d.day AND o.push_type = 'liveactivity'
                                      AND o.delivered AND o.event = 'end')
        ) ORDER BY d.day DESC), '[]'::jsonb) FROM d
    );
END
$$;
REVOKE ALL ON FUNCTION public.notification_report(integer) FROM PUBLIC, anon, authenticated;
GRANT EXECUTE ON FUNCTION public.notification_report(integer) TO service_role, push_worker;

-- Questions are bounded as approval requests are (*_delivery_limits.sql): at most 5 pending,
-- unexpired questions per session and 20 per user.
CREATE FUNCTION private.question_limits() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    v_now bigint := extract(epoch FROM now())::bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('agent_questions:' || NEW.user_id::text, 0));
    IF (SELECT count(*) FROM public.agent_questions q
         WHERE q.session_id = NEW.session_id AND q.status = 'pending' AND q.expires_at > v_now) >= 5 THEN
        RAISE EXCEPTION 'a session has at most 5 pending questions: close one or let it expire first'
            USING ERRCODE = '54000';
    END IF;
    IF (SELECT count(*) FROM public.agent_questions q
         WHERE q.user_id = NEW.user_id AND q.status = 'pending' AND q.expires_at > v_now) >= 20 THEN
        RAISE EXCEPTION 'a user has at most 20 pending questions: close one or let it expire first'
            USING ERRCODE = '54000';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER agent_questions_limits BEFORE INSERT ON public.agent_questions
    FOR EACH ROW EXECUTE FUNCTION private.question_limits();

-- The push budget (*_delivery_limits.sql) does not count the clearing of one of the user's own
-- questions either: each question clears each token once (a unique key), and closing must
-- always commit.
CREATE OR REPLACE FUNCTION private.push_outbox_rate() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    IF auth.uid() IS NULL OR NEW.push_type = 'liveactivity' THEN RETURN NEW; END IF;
    IF NEW.collapse_id LIKE 'approval-%' AND EXISTS (
        SELECT 1 FROM public.approval_requests r
         WHERE r.id::text = lower(substring(NEW.collapse_id FROM 10)) AND r.user_id = NEW.user_id) THEN
        RETURN NEW;
    END IF;
    IF NEW.collapse_id LIKE 'question-clear-%' AND EXISTS (
        SELECT 1 FROM public.agent_questions q
         WHERE q.id::text = lower(substring(NEW.collapse_id FROM 16)) AND q.user_id = NEW.user_id) THEN
        RETURN NEW;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('push_outbox:' || NEW.user_id::text, 0));
    IF (SELECT count(*) FROM public.push_outbox o
         WHERE o.user_id = NEW.user_id AND o.created_at > now() - interval '1 minute'
           AND o.push_type <> 'liveactivity') >= 600 THEN
        RAISE EXCEPTION 'at most 600 pushes a minute are queued for one user: try again in a minute'
            USING ERRCODE = '54000';
    END IF;
    RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION private.question_limits() FROM PUBLIC;
