-- Approvals end to end (approvals.md): the server carries an encrypted question and a signed
-- answer, and can neither read nor forge them.
--
-- approval_requests holds what the desktop sealed (body: base64 of 0x01 || generation || nonce ||
-- ChaCha20-Poly1305 under a key derived from the session secret) and, once answered, the
-- answering device's signed decision. Users read their own rows; every write goes through the
-- functions below (SECURITY DEFINER, search_path '', auth.uid() and every id checked as in
-- coordination), which check shapes and ownership only: the signature is the desktop's to check.
--
-- Pushes: a request queues, for every valid device token of the user's other devices, an alert
-- with generic lock-screen text and the sealed body (left out when the payload would pass
-- 4,096 bytes), collapse id approval-request-<id>; its end (answered, cancelled, expired) queues
-- the clearing push of coordination.md, collapse id approval-<id>, with the reason. The outbox's
-- unique (token, collapse_id) for approval-* rows keeps each once per token.
--
-- Errors: 42501 for a session, device or request that is not the caller's; 22023 for a value out
-- of range or shape; 23505 for a request id already used with another body.

CREATE TABLE public.approval_requests (
    id uuid PRIMARY KEY,
    user_id uuid NOT NULL,
    session_id uuid NOT NULL REFERENCES public.agent_coding_sessions (id) ON DELETE CASCADE,
    requester_device_id uuid NOT NULL,
    body text NOT NULL,
    generation integer NOT NULL CHECK (generation >= 1),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at bigint NOT NULL,
    status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'denied', 'expired', 'cancelled')),
    decided_by_device_id uuid,
    decided_at timestamptz,
    decision_body text,
    decision_signature text,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX approval_requests_user ON public.approval_requests (user_id, updated_at);
CREATE INDEX approval_requests_pending ON public.approval_requests (expires_at) WHERE status = 'pending';

CREATE TRIGGER approval_requests_updated_at BEFORE INSERT OR UPDATE ON public.approval_requests
    FOR EACH ROW EXECUTE FUNCTION public.set_updated_at();

ALTER TABLE public.approval_requests ENABLE ROW LEVEL SECURITY;
CREATE POLICY approval_requests_read ON public.approval_requests FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()));
GRANT SELECT ON public.approval_requests TO authenticated;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.approval_requests TO service_role;

-- Whether text is padded, canonical standard base64 of at least `min_bytes` and at most
-- `max_bytes` bytes (PostgreSQL's decode accepts line breaks and other forms: they are refused).
CREATE FUNCTION private.is_canonical_base64(value text, min_bytes integer, max_bytes integer) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE SET search_path = '' AS $$
DECLARE
    raw bytea;
BEGIN
    IF value IS NULL OR value !~ '^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$' THEN RETURN false; END IF;
    raw := decode(value, 'base64');
    RETURN length(raw) BETWEEN min_bytes AND max_bytes AND replace(encode(raw, 'base64'), E'\n', '') = value;
END
$$;

-- The clearing push of coordination.md for every valid device token of the user but `except_device`'s.
CREATE FUNCTION private.queue_approval_clearing(caller uuid, request uuid, reason text, except_device uuid) RETURNS integer
    LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
    queued integer;
BEGIN
    INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload)
        SELECT caller, t.device_id, t.token, 'background', 5, 'approval-' || request::text,
               jsonb_build_object('aps', jsonb_build_object('content-available', 1), 'clearApprovalId', request::text,
                                  'reason', reason)
        FROM public.push_tokens t
        WHERE t.user_id = caller AND t.token_type = 'device' AND t.is_valid AND t.device_id IS DISTINCT FROM except_device
        ORDER BY t.token
        ON CONFLICT (token, collapse_id) WHERE collapse_id LIKE 'approval-%' DO NOTHING;
    GET DIAGNOSTICS queued = ROW_COUNT;
    RETURN queued;
END
$$;

CREATE FUNCTION public.request_approval(
    session_id uuid, request_id uuid, requester_device_id uuid, body text, generation integer, expires_at bigint
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
    existing public.approval_requests%ROWTYPE;
    payload jsonb;
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
    IF get_byte(raw, 0) <> 1 OR (get_byte(raw, 1)::bigint << 24 | get_byte(raw, 2) << 16 | get_byte(raw, 3) << 8 | get_byte(raw, 4))
           <> v_generation THEN
        RAISE EXCEPTION 'the body''s version or generation is not the request''s' USING ERRCODE = '22023';
    END IF;

    SELECT * INTO existing FROM public.approval_requests r WHERE r.id = v_request FOR UPDATE;
    IF FOUND THEN
        IF existing.user_id <> caller THEN RAISE EXCEPTION 'the request is not one of yours' USING ERRCODE = '42501'; END IF;
        IF existing.body <> v_body OR existing.session_id <> v_session OR existing.requester_device_id <> v_device
           OR existing.generation <> v_generation OR existing.expires_at <> v_expires THEN
            RAISE EXCEPTION 'another request has this id' USING ERRCODE = '23505';
        END IF;
        SELECT count(*) INTO queued FROM public.push_outbox o
            WHERE o.user_id = caller AND o.collapse_id = 'approval-request-' || v_request::text;
        RETURN jsonb_build_object('requestId', v_request, 'expiresAt', v_expires, 'devicesNotified', queued);
    END IF;

    INSERT INTO public.approval_requests (id, user_id, session_id, requester_device_id, body, generation, expires_at)
        VALUES (v_request, caller, v_session, v_device, v_body, v_generation, v_expires);
    payload := jsonb_build_object(
        'aps', jsonb_build_object(
            'alert', jsonb_build_object('title', 'Approval needed', 'body', 'An agent session is waiting for you'),
            'sound', 'default', 'category', 'APPROVAL_REQUEST', 'interruption-level', 'time-sensitive', 'mutable-content', 1),
        'type', 'approval', 'requestId', v_request::text, 'sessionId', v_session::text,
        'requesterDeviceId', v_device::text, 'generation', v_generation, 'expiresAt', v_expires, 'sealed', v_body);
    IF octet_length(payload::text) > 4096 THEN payload := payload - 'sealed'; END IF;
    INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload)
        SELECT caller, t.device_id, t.token, 'alert', 10, 'approval-request-' || v_request::text, payload
        FROM public.push_tokens t
        WHERE t.user_id = caller AND t.token_type = 'device' AND t.is_valid AND t.device_id <> v_device
        ORDER BY t.token
        ON CONFLICT (token, collapse_id) WHERE collapse_id LIKE 'approval-%' DO NOTHING;
    GET DIAGNOSTICS queued = ROW_COUNT;
    RETURN jsonb_build_object('requestId', v_request, 'expiresAt', v_expires, 'devicesNotified', queued);
END
$$;

CREATE FUNCTION public.answer_approval(
    request_id uuid, device_id uuid, verdict text, decision_body text, decision_signature text
) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_request uuid := answer_approval.request_id;
    v_device uuid := answer_approval.device_id;
    v_verdict text := answer_approval.verdict;
    v_now bigint := floor(extract(epoch FROM now()))::bigint;
    request public.approval_requests%ROWTYPE;
    v_status text;
    queued integer;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'answer_approval needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF v_device IS NULL OR NOT EXISTS (SELECT 1 FROM public.devices d WHERE d.id = v_device AND d.user_id = caller) THEN
        RAISE EXCEPTION 'the device is not one of yours' USING ERRCODE = '42501';
    END IF;
    IF v_verdict IS NULL OR v_verdict NOT IN ('approve', 'deny') THEN
        RAISE EXCEPTION 'verdict must be approve or deny' USING ERRCODE = '22023';
    END IF;
    IF NOT private.is_canonical_base64(answer_approval.decision_body, 29 + 4 * 37 + 1 + 32 + 32 + 8, 29 + 4 * 37 + 1 + 32 + 32 + 8)
       OR NOT private.is_canonical_base64(answer_approval.decision_signature, 64, 64) THEN
        RAISE EXCEPTION 'decision_body and decision_signature must be canonical base64 of a decision and its signature'
            USING ERRCODE = '22023';
    END IF;
    -- The row lock orders answers: the first to take it decides, the others see its decision.
    SELECT * INTO request FROM public.approval_requests r WHERE r.id = v_request FOR UPDATE;
    IF NOT FOUND OR request.user_id <> caller THEN
        RAISE EXCEPTION 'the request is not one of yours' USING ERRCODE = '42501';
    END IF;
    IF request.requester_device_id = v_device THEN
        RAISE EXCEPTION 'the requesting device cannot answer its own request' USING ERRCODE = '22023';
    END IF;
    -- Past its time a pending request reads as expired; the answer changes nothing (its clearing
    -- push is expire_approvals' to queue).
    IF request.status = 'pending' AND request.expires_at <= v_now THEN
        request.status := 'expired';
    END IF;
    IF request.status <> 'pending' THEN
        RETURN jsonb_build_object('accepted', false, 'status', request.status, 'decidedBy', request.decided_by_device_id);
    END IF;
    v_status := CASE v_verdict WHEN 'approve' THEN 'approved' ELSE 'denied' END;
    UPDATE public.approval_requests r
        SET status = v_status, decided_by_device_id = v_device, decided_at = now(),
            decision_body = answer_approval.decision_body, decision_signature = answer_approval.decision_signature
        WHERE r.id = v_request;
    queued := private.queue_approval_clearing(
        caller, v_request, CASE v_verdict WHEN 'approve' THEN 'approved_on_other_device' ELSE 'denied_on_other_device' END, v_device);
    RETURN jsonb_build_object('accepted', true, 'status', v_status, 'decidedBy', v_device, 'devicesNotified', queued);
END
$$;

CREATE FUNCTION public.cancel_approval(request_id uuid) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_request uuid := cancel_approval.request_id;
    request public.approval_requests%ROWTYPE;
    queued integer := 0;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'cancel_approval needs a signed-in user' USING ERRCODE = '42501'; END IF;
    SELECT * INTO request FROM public.approval_requests r WHERE r.id = v_request FOR UPDATE;
    IF NOT FOUND OR request.user_id <> caller THEN
        RAISE EXCEPTION 'the request is not one of yours' USING ERRCODE = '42501';
    END IF;
    IF request.status = 'pending' AND request.expires_at <= floor(extract(epoch FROM now()))::bigint THEN
        request.status := 'expired';
    END IF;
    IF request.status <> 'pending' THEN
        RETURN jsonb_build_object('cancelled', false, 'status', request.status, 'devicesNotified', 0);
    END IF;
    UPDATE public.approval_requests r SET status = 'cancelled' WHERE r.id = v_request;
    queued := private.queue_approval_clearing(caller, v_request, 'cancelled', request.requester_device_id);
    RETURN jsonb_build_object('cancelled', true, 'status', 'cancelled', 'devicesNotified', queued);
END
$$;

-- Every pending request past its time becomes expired, with its clearing pushes (reason
-- timeout). Idempotent; run by the delivery worker on each pass (or pg_cron).
CREATE FUNCTION public.expire_approvals() RETURNS integer
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
    RETURN expired;
END
$$;

REVOKE ALL ON FUNCTION private.is_canonical_base64(text, integer, integer),
    private.queue_approval_clearing(uuid, uuid, text, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION public.request_approval(uuid, uuid, uuid, text, integer, bigint),
    public.answer_approval(uuid, uuid, text, text, text), public.cancel_approval(uuid), public.expire_approvals() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.request_approval(uuid, uuid, uuid, text, integer, bigint),
    public.answer_approval(uuid, uuid, text, text, text), public.cancel_approval(uuid) TO authenticated, service_role;
GRANT EXECUTE ON FUNCTION public.expire_approvals() TO service_role;

-- The change feed also carries the caller's approval requests changed since the cursor (all
-- pending ones on a first call): a watching phone sees a new question, a waiting desktop its
-- answer, without another request.
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
        'approvals', coalesce((SELECT jsonb_agg(to_jsonb(a) ORDER BY a.updated_at, a.id) FROM public.approval_requests a
                               WHERE a.user_id = caller AND (CASE WHEN v_since IS NULL THEN a.status = 'pending' ELSE a.updated_at > v_since END)),
                              '[]'::jsonb)
    );
END
$$;
