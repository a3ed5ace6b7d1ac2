-- Agent hooks (docs/agent-hooks.md, "Questions with choices"): an agent's multiple-choice question
-- (AskUserQuestion) answered from the phone. The question is an agent_questions row as before
-- (its plaintext, sealed, holds the choices); the answer is the answering device's signed choice,
-- sealed under a key derived from the session secret, so the server can neither read it nor
-- write one that opens under another device's name. The server keeps one answer per device (the
-- first); the asking desktop opens and verifies them and takes the first that holds, then closes
-- the question (close_question 'answered'), which clears the prompts.
--
-- Only a device the user's trust log certifies and has not revoked may answer, never the asker,
-- and only while the question is pending. The server cannot check the signature: the desktop
-- does. Only the project's own schema has questions; the deployed variant skips this file.

CREATE TABLE public.agent_question_answers (
    question_id uuid NOT NULL REFERENCES public.agent_questions (id) ON DELETE CASCADE,
    user_id uuid NOT NULL,
    device_id uuid NOT NULL,
    answer text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (question_id, device_id)
);
CREATE INDEX agent_question_answers_user ON public.agent_question_answers (user_id);
ALTER TABLE public.agent_question_answers ENABLE ROW LEVEL SECURITY;
CREATE POLICY agent_question_answers_read ON public.agent_question_answers FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()));
GRANT SELECT ON public.agent_question_answers TO authenticated;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.agent_question_answers TO service_role;

-- Records device_id's sealed answer to a pending question of the caller's. Answers
-- {"accepted", "status"}: accepted false for a question no longer pending, or when the device
-- answered it before with another answer (the first stays).
CREATE FUNCTION public.answer_question(question_id uuid, device_id uuid, answer text) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_question uuid := answer_question.question_id;
    v_device uuid := answer_question.device_id;
    v_answer text := answer_question.answer;
    q public.agent_questions%ROWTYPE;
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
    IF q.status = 'pending' AND q.expires_at <= floor(extract(epoch FROM now()))::bigint THEN q.status := 'expired'; END IF;
    IF q.status <> 'pending' THEN
        RETURN jsonb_build_object('accepted', false, 'status', q.status);
    END IF;
    INSERT INTO public.agent_question_answers (question_id, user_id, device_id, answer)
        VALUES (v_question, caller, v_device, v_answer)
        ON CONFLICT ON CONSTRAINT agent_question_answers_pkey DO NOTHING;
    IF FOUND THEN
        RETURN jsonb_build_object('accepted', true, 'status', 'pending');
    END IF;
    SELECT a.answer INTO kept FROM public.agent_question_answers a
        WHERE a.question_id = v_question AND a.device_id = v_device;
    RETURN jsonb_build_object('accepted', kept = v_answer, 'status', 'pending');
END
$$;
REVOKE ALL ON FUNCTION public.answer_question(uuid, uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.answer_question(uuid, uuid, text) TO authenticated, service_role;
