-- Where an alert went, as pure functions (docs/notifications.md, "Nothing silently lost"; issue
-- 68). Only the project's own schema has alert deliveries; the deployed variant skips this file.
--
-- private.alert_deliveries (public.alert_deliveries' body since *_device_scoped_calls.sql)
-- decided inline what an outbox row says of its device, which row speaks for a device (a tie of
-- rank and time was left to chance; the newer row now speaks), and why
-- a device without a row was not reached. The decisions move into IMMUTABLE functions of their
-- arguments alone, which testvectors/remote-rules-v1.json calls with every case, expecting the
-- answers of DeliveryRules in the RemoteRules module (which the embedded remote runs). The
-- reader keeps its name, signature, checks and answer, but for that tie: where chance chose a
-- row, the newer row now speaks (its reason, attempts, apnsReason and updatedAt).

-- One outbox row's outcome and the reason shown with it: 'delivered'; else, once failed,
-- 'dropped' (closed at claim, never sent: `last_error` begins 'dropped: ', the reason is the rest)
-- or 'failed' (the reason is `last_error`); else 'sent' once tried, or 'queued'. Only a closed row
-- has a reason.
CREATE FUNCTION private.rule_delivery_outcome(
    delivered boolean, failed boolean, last_error text, attempts integer, OUT outcome text, OUT reason text
)
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT CASE WHEN delivered THEN 'delivered'
                WHEN failed AND starts_with(last_error, 'dropped: ') THEN 'dropped'
                WHEN failed THEN 'failed'
                WHEN attempts >= 1 THEN 'sent'
                ELSE 'queued' END,
           CASE WHEN delivered THEN NULL
                WHEN failed AND starts_with(last_error, 'dropped: ') THEN substr(last_error, 10)
                WHEN failed THEN last_error END
$$;
REVOKE ALL ON FUNCTION private.rule_delivery_outcome(boolean, boolean, text, integer) FROM PUBLIC;

-- How far a row's outcome went: delivered 5, sent 4, queued 3, failed 2, dropped 1, anything
-- else 0.
CREATE FUNCTION private.rule_delivery_rank(outcome text) RETURNS integer
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT CASE outcome WHEN 'delivered' THEN 5 WHEN 'sent' THEN 4 WHEN 'queued' THEN 3
                        WHEN 'failed' THEN 2 WHEN 'dropped' THEN 1 ELSE 0 END
$$;
REVOKE ALL ON FUNCTION private.rule_delivery_rank(text) FROM PUBLIC;

-- Which of a device's rows speaks for it: the one with the greatest key, [rank, updated_at (epoch
-- seconds), id]: the row whose outcome went furthest, of those the one that changed last, of
-- those the newer row (rows queued by one statement share their time).
CREATE FUNCTION private.rule_delivery_key(outcome text, updated_at numeric, id bigint) RETURNS numeric[]
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT ARRAY[private.rule_delivery_rank(outcome)::numeric, updated_at, id::numeric]
$$;
REVOKE ALL ON FUNCTION private.rule_delivery_key(text, numeric, bigint) FROM PUBLIC;

-- Why a device with no row of the alert was not reached: 'off' with 'setting off' when its
-- setting for the kind is off now; else 'unreachable' with the first that holds of 'registered
-- later' (a valid token newer than the alert), 'token invalid' (no valid token), 'not trusted'
-- (the trust log in force does not certify it), else 'not queued' (a setting or a limit then).
CREATE FUNCTION private.rule_unreached(
    setting_off boolean, registered_later boolean, valid_token boolean, trusted boolean,
    OUT outcome text, OUT reason text
)
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT CASE WHEN setting_off THEN 'off' ELSE 'unreachable' END,
           CASE WHEN setting_off THEN 'setting off'
                WHEN registered_later THEN 'registered later'
                WHEN NOT valid_token THEN 'token invalid'
                WHEN NOT trusted THEN 'not trusted'
                ELSE 'not queued' END
$$;
REVOKE ALL ON FUNCTION private.rule_unreached(boolean, boolean, boolean, boolean) FROM PUBLIC;

CREATE OR REPLACE FUNCTION private.alert_deliveries(alert_id uuid) RETURNS jsonb
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
        SELECT o.id, o.device_id, o.attempts, o.last_reason, d.outcome, d.reason,
               coalesce(o.delivered_at, o.failed_at, o.created_at) AS updated_at
        FROM public.push_outbox o,
             LATERAL private.rule_delivery_outcome(
                 o.delivered_at IS NOT NULL, o.failed_at IS NOT NULL, o.last_error, o.attempts) d
        WHERE o.user_id = caller AND o.collapse_id = v_collapse
    ), ranked AS (
        SELECT DISTINCT ON (x.device_id) x.*
        FROM rows x
        ORDER BY x.device_id, private.rule_delivery_key(x.outcome, extract(epoch FROM x.updated_at), x.id) DESC
    ), devices AS (
        SELECT d.id, d.name, d.device_type FROM public.devices d
        WHERE d.user_id = caller AND d.id <> r.requester_device_id
          AND (EXISTS (SELECT 1 FROM public.push_tokens t
                       WHERE t.device_id = d.id AND t.user_id = caller AND t.token_type = 'device')
               OR EXISTS (SELECT 1 FROM ranked k WHERE k.device_id = d.id))
    )
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'deviceId', d.id, 'deviceName', d.name, 'deviceType', d.device_type,
               'outcome', coalesce(k.outcome, u.outcome), 'reason', coalesce(k.reason, u.reason),
               'apnsReason', k.last_reason, 'attempts', k.attempts, 'updatedAt', k.updated_at)
             ORDER BY d.name COLLATE "C", d.id), '[]'::jsonb)
        INTO entries
        FROM devices d LEFT JOIN ranked k ON k.device_id = d.id
        LEFT JOIN LATERAL (
            SELECT w.outcome, w.reason FROM private.rule_unreached(
                private.alert_decision(d.id, v_kind, r.session_id) = 'off',
                EXISTS (SELECT 1 FROM public.push_tokens t
                        WHERE t.device_id = d.id AND t.user_id = caller AND t.token_type = 'device'
                          AND t.is_valid AND t.created_at > r.created_at),
                EXISTS (SELECT 1 FROM public.push_tokens t
                        WHERE t.device_id = d.id AND t.user_id = caller AND t.token_type = 'device' AND t.is_valid),
                private.is_trusted_device(caller, d.id)) w
            WHERE k.device_id IS NULL) u ON true;
    IF r.created_at < now() - interval '7 days' THEN entries := '[]'::jsonb; END IF;
    RETURN jsonb_build_object(
        'alertId', r.id, 'kind', v_kind,
        'final', NOT EXISTS (SELECT 1 FROM jsonb_array_elements(entries) e
                             WHERE e ->> 'outcome' IN ('queued', 'sent')),
        'devices', entries);
END
$$;
