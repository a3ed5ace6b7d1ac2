-- Only the requesting desktop may cancel its request, and a decision it refused does not end the
-- question (docs/approvals.md, "Who is asked, who may answer").
--
-- The server cannot tell which device calls (every device of a user holds the same kind of
-- login) and cannot check a signature, but it can check a hash preimage, as the trust log's
-- append chain does. The desktop picks 32 random bytes per request (the control, kept in its
-- memory) and sends SHA-256 of them with request_approval; cancel_approval and reopen_approval
-- then take the control itself. A token holder can read the hash, never the control. A request
-- stored without a hash (an older client) is cancelled as before, by any caller of the user.
--
-- reopen_approval: the desktop refused the recorded decision (its signature does not verify,
-- the device was not certified at the head it names...). The decision is dropped, the request is
-- pending again, its pushes are queued afresh (the clearing had removed the prompt), and the
-- genuine answer can be recorded. At most 20 times a request. Only the project's own schema has
-- approvals; the deployed variant skips this file.

ALTER TABLE public.approval_requests
    ADD COLUMN control_hash bytea CHECK (control_hash IS NULL OR length(control_hash) = 32),
    ADD COLUMN reopened integer NOT NULL DEFAULT 0;

DROP FUNCTION public.request_approval(uuid, uuid, uuid, text, integer, bigint);
CREATE FUNCTION public.request_approval(
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
    IF get_byte(raw, 0) <> 1 OR (get_byte(raw, 1)::bigint << 24 | get_byte(raw, 2) << 16 | get_byte(raw, 3) << 8 | get_byte(raw, 4))
           <> v_generation THEN
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

-- Whether `control` proves the requester: the request has no hash (an older client), or the
-- control is canonical base64 of 32 bytes whose SHA-256 is the hash.
CREATE FUNCTION private.approval_control_ok(hash bytea, control text) RETURNS boolean
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT hash IS NULL OR (private.is_canonical_base64(control, 32, 32) AND sha256(decode(control, 'base64')) = hash)
$$;

DROP FUNCTION public.cancel_approval(uuid);
CREATE FUNCTION public.cancel_approval(request_id uuid, control text DEFAULT NULL) RETURNS jsonb
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
    IF NOT private.approval_control_ok(request.control_hash, cancel_approval.control) THEN
        RAISE EXCEPTION 'only the requesting device may cancel this request' USING ERRCODE = '42501';
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

CREATE FUNCTION public.reopen_approval(request_id uuid, decision_signature text, control text) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_request uuid := reopen_approval.request_id;
    request public.approval_requests%ROWTYPE;
    queued integer;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'reopen_approval needs a signed-in user' USING ERRCODE = '42501'; END IF;
    SELECT * INTO request FROM public.approval_requests r WHERE r.id = v_request FOR UPDATE;
    IF NOT FOUND OR request.user_id <> caller THEN
        RAISE EXCEPTION 'the request is not one of yours' USING ERRCODE = '42501';
    END IF;
    IF request.control_hash IS NULL OR NOT private.approval_control_ok(request.control_hash, reopen_approval.control) THEN
        RAISE EXCEPTION 'only the requesting device may reopen this request' USING ERRCODE = '42501';
    END IF;
    IF request.expires_at <= floor(extract(epoch FROM now()))::bigint AND request.status = 'pending' THEN
        request.status := 'expired';
    END IF;
    -- Only the decision the desktop refused: a later one (it may be genuine) stays.
    IF request.status NOT IN ('approved', 'denied') OR request.expires_at <= floor(extract(epoch FROM now()))::bigint
       OR request.decision_signature IS DISTINCT FROM reopen_approval.decision_signature THEN
        RETURN jsonb_build_object('reopened', false, 'status', request.status, 'devicesNotified', 0);
    END IF;
    IF request.reopened >= 20 THEN
        RAISE EXCEPTION 'a request is reopened at most 20 times' USING ERRCODE = '54000';
    END IF;
    UPDATE public.approval_requests r
        SET status = 'pending', decided_by_device_id = NULL, decided_at = NULL, decision_body = NULL,
            decision_signature = NULL, reopened = r.reopened + 1
        WHERE r.id = v_request;
    DELETE FROM public.push_outbox o WHERE o.user_id = caller
        AND o.collapse_id IN ('approval-request-' || v_request::text, 'approval-' || v_request::text);
    queued := private.queue_approval_alerts(caller, v_request);
    RETURN jsonb_build_object('reopened', true, 'status', 'pending', 'devicesNotified', queued);
END
$$;

-- clear_approval as before, but never for an approval request (any form of its id).
CREATE OR REPLACE FUNCTION public.clear_approval(request_id text, exclude_device_token text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_request text := clear_approval.request_id;
    v_exclude text := clear_approval.exclude_device_token;
    notified integer;
    v_id uuid;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'clear_approval needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF v_request IS NULL OR length(v_request) NOT BETWEEN 1 AND 200 OR v_request ~ '[[:cntrl:]]' THEN
        RAISE EXCEPTION 'request_id must be 1 to 200 characters without control characters' USING ERRCODE = '22023';
    END IF;
    -- An approval request is cleared by its answer or its cancellation (which needs the
    -- requester's control), never by this call: it would dismiss the prompt everywhere.
    BEGIN
        v_id := v_request::uuid;
    EXCEPTION WHEN invalid_text_representation THEN
        v_id := NULL;
    END;
    IF v_id IS NOT NULL AND EXISTS (SELECT 1 FROM public.approval_requests r WHERE r.id = v_id) THEN
        RAISE EXCEPTION 'an approval request is cleared by its answer or its cancellation' USING ERRCODE = '42501';
    END IF;
    INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload)
        SELECT caller, t.device_id, t.token, 'background', 5, 'approval-' || v_request,
               jsonb_build_object('aps', jsonb_build_object('content-available', 1,
                                                            'badge', private.approval_badge(caller, t.device_id)),
                                  'clearApprovalId', v_request, 'reason', 'approved_on_other_device')
        FROM public.push_tokens t
        WHERE t.user_id = caller AND t.token_type = 'device' AND t.is_valid AND t.token IS DISTINCT FROM v_exclude
          AND private.may_queue_push(t.device_id, 'clearing')
        ORDER BY t.token
        ON CONFLICT (token, collapse_id) WHERE collapse_id LIKE 'approval-%' DO NOTHING;
    SELECT count(*) INTO notified FROM public.push_tokens t
        WHERE t.user_id = caller AND t.token_type = 'device' AND t.is_valid AND t.token IS DISTINCT FROM v_exclude;
    RETURN jsonb_build_object('success', true, 'devicesNotified', notified);
END
$$;

REVOKE ALL ON FUNCTION public.request_approval(uuid, uuid, uuid, text, integer, bigint, text),
    public.cancel_approval(uuid, text), public.reopen_approval(uuid, text, text),
    private.approval_control_ok(bytea, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.request_approval(uuid, uuid, uuid, text, integer, bigint, text),
    public.cancel_approval(uuid, text), public.reopen_approval(uuid, text, text) TO authenticated, service_role;
