-- Approval decisions become version 2 (docs/approvals.md): the signed decision carries
-- the answering device's pinned trust-log head (epoch, seq, hash: 44 bytes more), which the asking
-- desktop checks against its own verified log. Every desktop refuses version 1, so the server
-- takes only a version-2 decision's length (the signature it cannot check; the desktop does).
-- Only the project's own schema has approvals; the deployed variant skips this file.

CREATE OR REPLACE FUNCTION public.answer_approval(
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
    IF NOT private.is_canonical_base64(answer_approval.decision_body, 29 + 4 * 37 + 1 + 32 + 32 + 8 + 44, 29 + 4 * 37 + 1 + 32 + 32 + 8 + 44)
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
