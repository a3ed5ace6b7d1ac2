-- The life of an approval request and of an agent's question as pure functions (docs/approvals.md,
-- docs/notifications.md; issue 68). Only the project's own schema has approvals and questions;
-- the deployed variant skips this file.
--
-- request_approval and ask_question each decided inline which new request to refuse;
-- answer_approval, cancel_approval, reopen_approval, answer_question, close_question and
-- expire_approvals what a call does to a row in a given status. The decisions move into three
-- IMMUTABLE functions of their arguments alone (private.rule_request_refusal,
-- private.rule_approval_transition, private.rule_question_transition), which testvectors/remote-rules-v1.json calls with every
-- case, expecting the answers of the Swift rules (RequestRules in the RemoteRules module, which
-- the embedded remote runs). Who may make a call (the row's owner, a certified device, the
-- requester's control) is still checked first, by each caller; the callers keep their names,
-- signatures, locks and effects.

-- Why a new request of `kind` ('approval' or 'question') is refused, or NULL: 'generation' (not 1
-- to 2147483647), 'expires_at' (`expires_in`, seconds from now, outside 5 to 600 for an approval,
-- 60 to 86,400 for a question) or 'body' (`body_bytes`, NULL when the body is not canonical
-- base64, outside 1 + 4 + 12 + 2 + 16 to 1 + 4 + 12 + 4,096 + 16, or a version or generation in
-- it that `body_header_matches` says is not the request's).
CREATE FUNCTION private.rule_request_refusal(
    kind text, generation bigint, expires_in bigint, body_bytes integer, body_header_matches boolean
) RETURNS text
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT CASE
        WHEN generation IS NULL OR generation < 1 OR generation > 2147483647 THEN 'generation'
        WHEN expires_in IS NULL
             OR expires_in < CASE kind WHEN 'approval' THEN 5 ELSE 60 END
             OR expires_in > CASE kind WHEN 'approval' THEN 600 ELSE 86400 END THEN 'expires_at'
        WHEN body_bytes IS NULL OR body_bytes < 1 + 4 + 12 + 2 + 16 OR body_bytes > 1 + 4 + 12 + 4096 + 16
             OR body_header_matches IS NOT TRUE THEN 'body'
    END
$$;

-- What `event` ('answer', 'cancel', 'reopen', 'expire') does to an approval request in `status`,
-- `expired` saying whether its time has come. `verdict` ('approve' or 'deny') is an answer's;
-- `decision_matches` (whether the refused decision is the one stored) and `reopened` (how often
-- the request was reopened) are a reopen's. `action` is 'takes' (the row becomes `next_status`,
-- and `push` is queued: 'clearing' with `reason`, or 'alerts' again), 'stays' (nothing changes;
-- `next_status` is the row's status as read, a pending row past its time reading as expired) or
-- 'over_limit' (a reopen past the 20th: a refusal).
CREATE FUNCTION private.rule_approval_transition(
    status text, expired boolean, event text, verdict text, decision_matches boolean, reopened integer,
    OUT action text, OUT next_status text, OUT push text, OUT reason text
)
    LANGUAGE plpgsql IMMUTABLE SET search_path = '' AS $$
DECLARE
    reading text := CASE WHEN status = 'pending' AND expired THEN 'expired' ELSE status END;
BEGIN
    action := 'stays'; next_status := reading; push := 'none'; reason := NULL;
    IF event = 'answer' AND reading = 'pending' AND verdict IN ('approve', 'deny') THEN
        action := 'takes'; push := 'clearing';
        next_status := CASE verdict WHEN 'approve' THEN 'approved' ELSE 'denied' END;
        reason := next_status || '_on_other_device';
    ELSIF event = 'cancel' AND reading = 'pending' THEN
        action := 'takes'; next_status := 'cancelled'; push := 'clearing'; reason := 'cancelled';
    -- Only the decision the requester refused, before its time: a later one (it may be genuine)
    -- stays.
    ELSIF event = 'reopen' AND status IN ('approved', 'denied') AND NOT expired AND decision_matches THEN
        IF reopened >= 20 THEN
            action := 'over_limit';
        ELSE
            action := 'takes'; next_status := 'pending'; push := 'alerts';
        END IF;
    ELSIF event = 'expire' AND status = 'pending' AND expired THEN
        action := 'takes'; next_status := 'expired'; push := 'clearing'; reason := 'timeout';
    END IF;
END
$$;

-- What `event` ('answer', 'close', 'expire') does to an agent's question in `status`; `closed_as`
-- ('answered' or 'cancelled') is a close's. The same columns as the approval rule: an answer
-- 'takes' with the question staying pending (the answer is kept, the agent closes it).
CREATE FUNCTION private.rule_question_transition(
    status text, expired boolean, event text, closed_as text,
    OUT action text, OUT next_status text, OUT push text, OUT reason text
)
    LANGUAGE plpgsql IMMUTABLE SET search_path = '' AS $$
DECLARE
    reading text := CASE WHEN status = 'pending' AND expired THEN 'expired' ELSE status END;
BEGIN
    action := 'stays'; next_status := reading; push := 'none'; reason := NULL;
    IF event = 'answer' AND reading = 'pending' THEN
        action := 'takes';
    ELSIF event = 'close' AND reading = 'pending' AND closed_as IN ('answered', 'cancelled') THEN
        action := 'takes'; next_status := closed_as; push := 'clearing'; reason := closed_as;
    ELSIF event = 'expire' AND status = 'pending' AND expired THEN
        action := 'takes'; next_status := 'expired'; push := 'clearing'; reason := 'timeout';
    END IF;
END
$$;

REVOKE ALL ON FUNCTION private.rule_request_refusal(text, bigint, bigint, integer, boolean),
    private.rule_approval_transition(text, boolean, text, text, boolean, integer),
    private.rule_question_transition(text, boolean, text, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION private.answer_approval(
    request_id uuid, device_id uuid, verdict text, decision_body text, decision_signature text
) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_request uuid := answer_approval.request_id;
    v_device uuid := answer_approval.device_id;
    v_verdict text := answer_approval.verdict;
    request public.approval_requests%ROWTYPE;
    outcome record;
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
    outcome := private.rule_approval_transition(request.status, request.expires_at <= floor(extract(epoch FROM now()))::bigint,
        'answer', v_verdict, NULL, NULL);
    IF outcome.action <> 'takes' THEN
        RETURN jsonb_build_object('accepted', false, 'status', outcome.next_status, 'decidedBy', request.decided_by_device_id);
    END IF;
    UPDATE public.approval_requests r
        SET status = outcome.next_status, decided_by_device_id = v_device, decided_at = now(),
            decision_body = answer_approval.decision_body, decision_signature = answer_approval.decision_signature
        WHERE r.id = v_request;
    queued := private.queue_approval_clearing(caller, v_request, outcome.reason, v_device);
    RETURN jsonb_build_object('accepted', true, 'status', outcome.next_status, 'decidedBy', v_device, 'devicesNotified', queued);
END
$$;

CREATE OR REPLACE FUNCTION private.cancel_approval(request_id uuid, control text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_request uuid := cancel_approval.request_id;
    request public.approval_requests%ROWTYPE;
    outcome record;
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
    outcome := private.rule_approval_transition(request.status, request.expires_at <= floor(extract(epoch FROM now()))::bigint,
        'cancel', NULL, NULL, NULL);
    IF outcome.action <> 'takes' THEN
        RETURN jsonb_build_object('cancelled', false, 'status', outcome.next_status, 'devicesNotified', 0);
    END IF;
    UPDATE public.approval_requests r SET status = outcome.next_status WHERE r.id = v_request;
    queued := private.queue_approval_clearing(caller, v_request, outcome.reason, request.requester_device_id);
    RETURN jsonb_build_object('cancelled', true, 'status', outcome.next_status, 'devicesNotified', queued);
END
$$;

CREATE OR REPLACE FUNCTION private.reopen_approval(request_id uuid, decision_signature text, control text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_request uuid := reopen_approval.request_id;
    request public.approval_requests%ROWTYPE;
    outcome record;
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
    outcome := private.rule_approval_transition(request.status, request.expires_at <= floor(extract(epoch FROM now()))::bigint,
        'reopen', NULL, request.decision_signature IS NOT DISTINCT FROM reopen_approval.decision_signature, request.reopened);
    IF outcome.action = 'over_limit' THEN
        RAISE EXCEPTION 'a request is reopened at most 20 times' USING ERRCODE = '54000';
    END IF;
    IF outcome.action <> 'takes' THEN
        RETURN jsonb_build_object('reopened', false, 'status', outcome.next_status, 'devicesNotified', 0);
    END IF;
    UPDATE public.approval_requests r
        SET status = outcome.next_status, decided_by_device_id = NULL, decided_at = NULL, decision_body = NULL,
            decision_signature = NULL, reopened = r.reopened + 1
        WHERE r.id = v_request;
    DELETE FROM public.push_outbox o WHERE o.user_id = caller
        AND o.collapse_id IN ('approval-request-' || v_request::text, 'approval-' || v_request::text);
    queued := private.queue_approval_alerts(caller, v_request);
    RETURN jsonb_build_object('reopened', true, 'status', outcome.next_status, 'devicesNotified', queued);
END
$$;

CREATE OR REPLACE FUNCTION private.answer_question(question_id uuid, device_id uuid, answer text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_question uuid := answer_question.question_id;
    v_device uuid := answer_question.device_id;
    v_answer text := answer_question.answer;
    q public.agent_questions%ROWTYPE;
    outcome record;
    raw bytea;
    kept text;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'answer_question needs a signed-in user' USING ERRCODE = '42501'; END IF;
    SELECT * INTO q FROM public.agent_questions a WHERE a.id = v_question FOR UPDATE;
    IF NOT FOUND OR q.user_id <> caller THEN
        RAISE EXCEPTION 'the question is not one of yours' USING ERRCODE = '42501';
    END IF;
    IF v_device IS NULL OR NOT EXISTS (SELECT 1 FROM public.devices d WHERE d.id = v_device AND d.user_id = caller) THEN
        RAISE EXCEPTION 'the device is not one of yours' USING ERRCODE = '42501';
    END IF;
    IF NOT private.is_trusted_device(caller, v_device) THEN
        RAISE EXCEPTION 'only a device the user''s trust log certifies may answer' USING ERRCODE = '42501';
    END IF;
    IF v_device = q.requester_device_id THEN
        RAISE EXCEPTION 'the asking device cannot answer its own question' USING ERRCODE = '42501';
    END IF;
    -- 0x01 || generation || nonce || at least one byte || the tag; at most 1,024 bytes of plaintext.
    IF NOT private.is_canonical_base64(v_answer, 1 + 4 + 12 + 1 + 16, 1 + 4 + 12 + 1024 + 16) THEN
        RAISE EXCEPTION 'answer must be canonical base64 of a sealed answer' USING ERRCODE = '22023';
    END IF;
    raw := decode(v_answer, 'base64');
    IF get_byte(raw, 0) <> 1 OR private.tl_u32(raw, 1) <> q.generation THEN
        RAISE EXCEPTION 'the answer''s version or generation is not the question''s' USING ERRCODE = '22023';
    END IF;
    outcome := private.rule_question_transition(q.status, q.expires_at <= floor(extract(epoch FROM now()))::bigint,
        'answer', NULL);
    IF outcome.action <> 'takes' THEN
        RETURN jsonb_build_object('accepted', false, 'status', outcome.next_status);
    END IF;
    INSERT INTO public.agent_question_answers (question_id, user_id, device_id, answer)
        VALUES (v_question, caller, v_device, v_answer)
        ON CONFLICT ON CONSTRAINT agent_question_answers_pkey DO NOTHING;
    IF FOUND THEN
        RETURN jsonb_build_object('accepted', true, 'status', outcome.next_status);
    END IF;
    SELECT a.answer INTO kept FROM public.agent_question_answers a
        WHERE a.question_id = v_question AND a.device_id = v_device;
    RETURN jsonb_build_object('accepted', kept = v_answer, 'status', outcome.next_status);
END
$$;

CREATE OR REPLACE FUNCTION private.close_question(question_id uuid, status text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_question uuid := close_question.question_id;
    v_status text := close_question.status;
    q public.agent_questions%ROWTYPE;
    outcome record;
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
    outcome := private.rule_question_transition(q.status, q.expires_at <= floor(extract(epoch FROM now()))::bigint,
        'close', v_status);
    IF outcome.action <> 'takes' THEN
        RETURN jsonb_build_object('closed', false, 'status', outcome.next_status, 'devicesNotified', 0);
    END IF;
    UPDATE public.agent_questions a SET status = outcome.next_status, closed_at = now() WHERE a.id = v_question;
    queued := private.queue_question_clearing(caller, v_question, outcome.reason);
    RETURN jsonb_build_object('closed', true, 'status', outcome.next_status, 'devicesNotified', queued);
END
$$;

-- The pending rows past their time are the index's question; the rules say what each becomes.
CREATE OR REPLACE FUNCTION public.expire_approvals() RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    request record;
    expired integer := 0;
BEGIN
    FOR request IN
        UPDATE public.approval_requests r SET status = t.next_status
        FROM private.rule_approval_transition('pending', true, 'expire', NULL, NULL, NULL) t
        WHERE r.status = 'pending' AND r.expires_at <= floor(extract(epoch FROM now()))::bigint AND t.action = 'takes'
        RETURNING r.id, r.user_id, t.reason
    LOOP
        PERFORM private.queue_approval_clearing(request.user_id, request.id, request.reason, NULL);
        expired := expired + 1;
    END LOOP;
    FOR request IN
        UPDATE public.agent_questions q SET status = t.next_status, closed_at = now()
        FROM private.rule_question_transition('pending', true, 'expire', NULL) t
        WHERE q.status = 'pending' AND q.expires_at <= floor(extract(epoch FROM now()))::bigint AND t.action = 'takes'
        RETURNING q.id, q.user_id, t.reason
    LOOP
        PERFORM private.queue_question_clearing(request.user_id, request.id, request.reason);
    END LOOP;
    RETURN expired;
END
$$;

-- A new request's generation, expiry and sealed body: the rule's answer, in the caller's words.
CREATE FUNCTION private.require_new_request(kind text, generation integer, expires_at bigint, body text) RETURNS void
    LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
    raw bytea;
BEGIN
    IF private.is_canonical_base64(body, 0, 2147483647) THEN raw := decode(body, 'base64'); END IF;
    -- An expiry at or before 1970 is long past: floored at 0, the difference cannot overflow.
    CASE private.rule_request_refusal(kind, generation, greatest(expires_at, 0) - floor(extract(epoch FROM now()))::bigint,
            length(raw), CASE WHEN length(raw) >= 5 THEN get_byte(raw, 0) = 1 AND private.tl_u32(raw, 1) = generation END)
        WHEN 'generation' THEN
            RAISE EXCEPTION 'generation must be 1 to 2147483647' USING ERRCODE = '22023';
        WHEN 'expires_at' THEN
            RAISE EXCEPTION 'expires_at must be % seconds from now', CASE kind WHEN 'approval' THEN '5 to 600' ELSE '60 to 86,400' END
                USING ERRCODE = '22023';
        WHEN 'body' THEN
            RAISE EXCEPTION 'body must be canonical base64 of a sealed % of this generation',
                CASE kind WHEN 'approval' THEN 'request' ELSE 'question' END USING ERRCODE = '22023';
        ELSE NULL;
    END CASE;
END
$$;

REVOKE ALL ON FUNCTION private.require_new_request(text, integer, bigint, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION private.request_approval(session_id uuid, request_id uuid, requester_device_id uuid, body text, generation integer, expires_at bigint, control_hash text DEFAULT NULL::text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_session uuid := request_approval.session_id;
    v_request uuid := request_approval.request_id;
    v_device uuid := request_approval.requester_device_id;
    v_body text := request_approval.body;
    v_generation integer := request_approval.generation;
    v_expires bigint := request_approval.expires_at;
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
    PERFORM private.require_new_request('approval', v_generation, v_expires, v_body);

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

CREATE OR REPLACE FUNCTION private.ask_question(session_id uuid, question_id uuid, requester_device_id uuid, body text, generation integer, expires_at bigint) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_session uuid := ask_question.session_id;
    v_question uuid := ask_question.question_id;
    v_device uuid := ask_question.requester_device_id;
    v_body text := ask_question.body;
    v_generation integer := ask_question.generation;
    v_expires bigint := ask_question.expires_at;
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
    PERFORM private.require_new_request('question', v_generation, v_expires, v_body);
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
                              'devices', private.alert_deliveries(v_question) -> 'devices');
END
$$;
