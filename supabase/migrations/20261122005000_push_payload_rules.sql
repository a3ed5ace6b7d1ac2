-- What an alert and a live-activity event carry, as pure functions (notifications-2.md,
-- "Payloads"; docs/notifications.md; issue 68). Only the project's own schema queues these; the
-- deployed variant skips this file.
--
-- queue_approval_alerts, queue_question_alerts, queue_task_alerts and live_activity_payload built
-- their payloads inline. The members move into IMMUTABLE functions of their arguments, which
-- testvectors/remote-rules-v1.json calls with every case, expecting the payloads of PushPayloads
-- in the RemoteRules module (which the embedded remote runs). The callers keep their names,
-- signatures, checks and effects; the approval's and the question's share what they select
-- (private.request_alert_rows; its OFFSET 0 fences keep PostgreSQL from evaluating a token's
-- decision and payload more than once).
--
-- One answer changes: an approval's or question's `sealed` was left out when the payload's jsonb
-- text (which puts a space after every ':' and ',') passed 4,090 bytes; it is now measured
-- compactly, as the push worker sends it, so a body some 30 bytes longer than before is kept.

-- The length in bytes of `value` written compactly (no space anywhere outside strings), as the
-- push worker and the embedded remote write it.
CREATE FUNCTION private.rule_compact_length(value jsonb) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE SET search_path = '' AS $$
BEGIN
    RETURN CASE jsonb_typeof(value)
        WHEN 'object' THEN 2 + coalesce((SELECT sum(octet_length(to_jsonb(e.key)::text) + 1
                                                    + private.rule_compact_length(e.value)) + count(*) - 1
                                         FROM jsonb_each(value) e), 0)
        WHEN 'array' THEN 2 + coalesce((SELECT sum(private.rule_compact_length(e.value)) + count(*) - 1
                                        FROM jsonb_array_elements(value) e(value)), 0)
        ELSE octet_length(value::text) END;
END
$$;
REVOKE ALL ON FUNCTION private.rule_compact_length(jsonb) FROM PUBLIC;

-- An alert kind's generic text and the keys of the app's strings for it (NULL: not a kind).
CREATE FUNCTION private.rule_alert_text(kind text) RETURNS jsonb
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT jsonb_build_object('title', t.title, 'body', t.body, 'title-loc-key', 'notification.' || t.title_key,
                              'loc-key', 'notification.' || t.body_key)
    FROM (VALUES
        ('approval', 'Approval needed', 'An agent session is waiting for you', 'approval.title', 'approval.body.generic'),
        ('question', 'Your agent has a question', 'An agent session is waiting for your answer', 'question.title',
         'question.body.generic'),
        ('task_complete', 'Task complete', 'An agent session finished working', 'complete.title', 'complete.body.generic'),
        ('task_failed', 'Task failed', 'An agent session stopped with an error', 'error.title', 'error.body.generic'),
        ('task_paused', 'Task paused', 'An agent session is paused; open it to continue', 'paused.title', 'paused.body')
    ) AS t(kind, title, body, title_key, body_key)
    WHERE t.kind = rule_alert_text.kind
$$;
REVOKE ALL ON FUNCTION private.rule_alert_text(text) FROM PUBLIC;

-- The alert of `kind` about `session` for one device, or NULL when its `decision` queues nothing
-- (private.rule_alert_priority) or an approval or question comes without its `request`. A task
-- kind's is the same for every device: active, with sound, no badge. An approval's or question's
-- carries the request's fields, the device's `badge`, and 'time-sensitive' ('active' without
-- `time_sensitive`), or 'passive' and no sound for a passive decision; `sealed` is left out when
-- the payload, measured compactly with badge 0 and 'time-sensitive', leaves less than 6 bytes
-- (a badge's other digits) below 4,096.
CREATE FUNCTION private.rule_alert_payload(
    kind text, session uuid, scheme text, request uuid, requester uuid, generation bigint, expires_at bigint,
    sealed text, decision text, time_sensitive boolean, badge integer
) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE SET search_path = '' AS $$
DECLARE
    link text := scheme || '://session/' || session::text;
    payload jsonb;
BEGIN
    IF private.rule_alert_priority(decision) IS NULL THEN RETURN NULL; END IF;
    IF kind IN ('task_complete', 'task_failed', 'task_paused') THEN
        RETURN jsonb_build_object(
            'aps', jsonb_build_object('alert', private.rule_alert_text(kind), 'sound', 'default',
                                      'category', 'SESSION_STATUS', 'thread-id', session::text,
                                      'interruption-level', 'active', 'mutable-content', 1),
            'type', kind, 'sessionId', session::text, 'deepLink', link);
    END IF;
    IF kind IS NULL OR kind NOT IN ('approval', 'question') OR request IS NULL THEN RETURN NULL; END IF;
    payload := jsonb_build_object(
        'aps', jsonb_build_object('alert', private.rule_alert_text(kind), 'sound', 'default',
                                  'category', CASE kind WHEN 'question' THEN 'AGENT_QUESTION' ELSE 'APPROVAL_REQUEST' END,
                                  'thread-id', session::text, 'interruption-level', 'time-sensitive',
                                  'mutable-content', 1, 'badge', 0),
        'type', kind, 'requestId', request::text, 'sessionId', session::text,
        'deepLink', link || '/' || kind || '/' || request::text, 'requesterDeviceId', requester::text,
        'generation', generation, 'expiresAt', expires_at, 'sealed', sealed);
    IF private.rule_compact_length(payload) + 6 > 4096 THEN payload := payload - 'sealed'; END IF;
    payload := jsonb_set(payload, '{aps,badge}', to_jsonb(badge));
    IF decision = 'passive' THEN
        RETURN jsonb_set(payload, '{aps,interruption-level}', '"passive"') #- '{aps,sound}';
    END IF;
    RETURN jsonb_set(payload, '{aps,interruption-level}',
                     to_jsonb(CASE WHEN time_sensitive THEN 'time-sensitive' ELSE 'active' END));
END
$$;
REVOKE ALL ON FUNCTION private.rule_alert_payload(text, uuid, text, uuid, uuid, bigint, bigint, text, text, boolean, integer)
    FROM PUBLIC;

-- A live-activity event at `stamp` (Unix seconds) for a session started at `started_at` (NULL:
-- now), showing `status` and `operation` (NULL: the session's `runtime_operation` with
-- `show_details`, else 'Working') and the session's `todo` (a runtime status's todo_progress; its
-- current task only with `show_details`). Stale 300 s later; an end is dismissed 900 s later.
CREATE FUNCTION private.rule_live_activity_payload(
    stamp bigint, event text, status text, operation text, show_details boolean, runtime_operation text, todo jsonb,
    started_at bigint
) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE SET search_path = '' AS $$
DECLARE
    state jsonb := jsonb_build_object(
        'status', status,
        'currentOperation', CASE WHEN operation IS NOT NULL THEN operation
                                 WHEN show_details THEN coalesce(runtime_operation, 'Working')
                                 ELSE 'Working' END,
        'elapsedSeconds', greatest(0, stamp - coalesce(started_at, stamp)));
    aps jsonb;
BEGIN
    IF todo IS NOT NULL THEN
        state := state || jsonb_build_object('todoProgress', jsonb_build_object(
            'completed', (todo ->> 'completed')::integer, 'total', (todo ->> 'total')::integer,
            'currentTask', CASE WHEN show_details THEN coalesce(todo ->> 'current_task', '') ELSE '' END));
    END IF;
    aps := jsonb_build_object('timestamp', stamp, 'event', event, 'content-state', state, 'stale-date', stamp + 300);
    IF event = 'end' THEN aps := aps || jsonb_build_object('dismissal-date', stamp + 900); END IF;
    RETURN jsonb_build_object('aps', aps);
END
$$;
REVOKE ALL ON FUNCTION private.rule_live_activity_payload(bigint, text, text, text, boolean, text, jsonb, bigint)
    FROM PUBLIC;

CREATE OR REPLACE FUNCTION private.live_activity_payload(
    session public.agent_coding_sessions, device uuid, event text, status text, operation text
) RETURNS jsonb
    LANGUAGE plpgsql STABLE SET search_path = '' AS $$
BEGIN
    RETURN private.rule_live_activity_payload(
        floor(extract(epoch FROM now()))::bigint, event, status, operation,
        (private.notification_settings_of(device)).show_notification_details,
        session.runtime_status -> 'coding_session' ->> 'current_operation',
        session.runtime_status -> 'coding_session' -> 'todo_progress',
        floor(extract(epoch FROM session.session_started_at))::bigint);
END
$$;

-- The alert rows of a new approval request or question (`kind`) for every valid device token of
-- the user's other trusted devices whose settings allow an alert: each token's device decides once
-- (private.alert_decision: off, nothing; passive when another device is active on the session),
-- and the payload is private.rule_alert_payload's for that decision, settings and badge.
CREATE FUNCTION private.request_alert_rows(
    caller uuid, kind text, request uuid, session uuid, requester uuid, generation bigint, expires_at bigint,
    sealed text
) RETURNS TABLE (device_id uuid, token text, priority integer, payload jsonb)
    LANGUAGE sql STABLE SET search_path = '' AS $$
    SELECT d.device_id, d.token, private.rule_alert_priority(d.decision), d.payload
    FROM (SELECT t.device_id, t.token, a.decision,
                 private.rule_alert_payload(kind, session, private.deep_link_scheme(), request, requester, generation,
                     expires_at, sealed, a.decision,
                     (private.notification_settings_of(t.device_id)).enable_time_sensitive,
                     private.approval_badge(caller, t.device_id)) AS payload
          FROM public.push_tokens t,
               LATERAL (SELECT private.alert_decision(t.device_id, kind, session) AS decision OFFSET 0) a
          WHERE t.user_id = caller AND t.token_type = 'device' AND t.is_valid AND t.device_id <> requester
            AND private.is_trusted_device(caller, t.device_id) AND private.may_queue_push(t.device_id, 'alert')
          OFFSET 0) d
    WHERE d.payload IS NOT NULL
    ORDER BY d.token
$$;
REVOKE ALL ON FUNCTION private.request_alert_rows(uuid, text, uuid, uuid, uuid, bigint, bigint, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION private.queue_approval_alerts(caller uuid, request uuid) RETURNS integer
    LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
    queued integer;
BEGIN
    INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload)
        SELECT caller, x.device_id, x.token, 'alert', x.priority, 'approval-request-' || r.id::text, x.payload
        FROM public.approval_requests r,
             private.request_alert_rows(caller, 'approval', r.id, r.session_id, r.requester_device_id, r.generation,
                                        r.expires_at, r.body) x
        WHERE r.id = request
        ORDER BY x.token
        ON CONFLICT (token, collapse_id) WHERE collapse_id LIKE 'approval-%' DO NOTHING;
    GET DIAGNOSTICS queued = ROW_COUNT;
    RETURN queued;
END
$$;

CREATE OR REPLACE FUNCTION private.queue_question_alerts(caller uuid, question uuid) RETURNS integer
    LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
    queued integer;
BEGIN
    INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload)
        SELECT caller, x.device_id, x.token, 'alert', x.priority, 'question-' || q.id::text, x.payload
        FROM public.agent_questions q,
             private.request_alert_rows(caller, 'question', q.id, q.session_id, q.requester_device_id, q.generation,
                                        q.expires_at, q.body) x
        WHERE q.id = question
        ORDER BY x.token
        ON CONFLICT (token, collapse_id) WHERE collapse_id LIKE 'question-%' DO NOTHING;
    GET DIAGNOSTICS queued = ROW_COUNT;
    RETURN queued;
END
$$;

-- queue_task_alerts builds its payload once (a task kind's is the same for every device that gets
-- one); the rest of its text stays as it is. A kind that is not a task kind (no caller passes one:
-- notify_session_event checks it, the triggers take it from the rules) once got the paused text;
-- now it has no payload, and its insert fails on push_outbox.payload's NOT NULL.
DO $$
DECLARE
    fn text := 'private.queue_task_alerts(uuid, uuid, text)';
    src text := pg_get_functiondef(fn::regprocedure);
    head text := '    v_payload := jsonb_build_object(';
    tail text := '''deepLink'', private.deep_link_scheme() || ''://session/'' || session::text);';
BEGIN
    IF position(head IN src) = 0 OR position(tail IN src) < position(head IN src) THEN
        RAISE EXCEPTION '% no longer builds its payload as this migration expects: update it', fn;
    END IF;
    EXECUTE substr(src, 1, position(head IN src) - 1)
        || '    v_payload := private.rule_alert_payload(kind, session, private.deep_link_scheme(), NULL, NULL, NULL, NULL,'
        || ' NULL, ''alert'', false, 0);'
        || substr(src, position(tail IN src) + length(tail));
END
$$;
