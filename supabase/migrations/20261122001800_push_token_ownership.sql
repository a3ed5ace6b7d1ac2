-- A push token moves between users only once its owner gave it up (security round 3, finding 6).
--
-- register_push_token moved a token that another user had registered to the caller
-- (ON CONFLICT ... SET user_id = EXCLUDED.user_id): anyone who learned a token (an earlier
-- session on the same phone, a leaked database) could take it over, so that its owner stopped
-- receiving pushes while the taker queued silent pushes of its choosing to the owner's phone; and
-- the answer's `reassigned` told any caller whether a token string was registered at all.
--
-- Now a token held by another user moves only when that row is no longer valid: its owner
-- invalidated it (invalidate_push_token, as an app does when it signs out) or the delivery
-- worker marked it invalid when APNs answered that the token is unregistered. While it is valid,
-- the call changes nothing for it, and its answer is the same as a registration's, so the caller
-- learns nothing about other users' tokens. (A token proven to be in the caller's hands, by
-- answering a challenge push sent to it, would be the other way to move one; it is not built.)
-- Moves between the caller's own devices are unchanged.

CREATE OR REPLACE FUNCTION public.register_push_token(
    device_id uuid, token text, token_type text DEFAULT NULL, platform text DEFAULT NULL, environment text DEFAULT NULL,
    activity_id text DEFAULT NULL, session_id uuid DEFAULT NULL, previous_token text DEFAULT NULL
) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_device uuid := register_push_token.device_id;
    v_token text := register_push_token.token;
    v_type text := coalesce(register_push_token.token_type, 'device');
    v_platform text := coalesce(register_push_token.platform, 'ios');
    v_environment text := coalesce(register_push_token.environment, 'production');
    v_activity text := register_push_token.activity_id;
    v_session uuid := register_push_token.session_id;
    v_previous text := register_push_token.previous_token;
    existing record;
    invalidated integer := 0;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'register_push_token needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF v_token IS NULL OR v_token !~ '^[A-Za-z0-9._:-]+$' OR length(v_token) > 512 THEN
        RAISE EXCEPTION 'token must be 1 to 512 characters of A-Z a-z 0-9 . _ : -' USING ERRCODE = '22023';
    END IF;
    IF v_type NOT IN ('device', 'live_activity') THEN RAISE EXCEPTION 'token_type must be device or live_activity' USING ERRCODE = '22023'; END IF;
    IF v_environment NOT IN ('development', 'production') THEN
        RAISE EXCEPTION 'environment must be development or production' USING ERRCODE = '22023';
    END IF;
    IF v_platform !~ '^[a-z]{1,20}$' THEN RAISE EXCEPTION 'platform must be 1 to 20 lowercase letters' USING ERRCODE = '22023'; END IF;
    IF v_type = 'live_activity' AND (v_activity IS NULL OR v_session IS NULL) THEN
        RAISE EXCEPTION 'a live_activity token needs activity_id and session_id' USING ERRCODE = '22023';
    END IF;
    IF v_type = 'device' AND (v_activity IS NOT NULL OR v_session IS NOT NULL) THEN
        RAISE EXCEPTION 'a device token takes no activity_id or session_id' USING ERRCODE = '22023';
    END IF;
    IF v_activity IS NOT NULL AND (length(v_activity) NOT BETWEEN 1 AND 200 OR v_activity ~ '[[:cntrl:]]') THEN
        RAISE EXCEPTION 'activity_id must be 1 to 200 characters without control characters' USING ERRCODE = '22023';
    END IF;
    IF v_previous IS NOT NULL AND (v_previous !~ '^[A-Za-z0-9._:-]+$' OR length(v_previous) > 512) THEN
        RAISE EXCEPTION 'previous_token must be 1 to 512 characters of A-Z a-z 0-9 . _ : -' USING ERRCODE = '22023';
    END IF;
    IF v_device IS NULL OR NOT EXISTS (SELECT 1 FROM public.devices d WHERE d.id = v_device AND d.user_id = caller) THEN
        RAISE EXCEPTION 'the device is not one of yours' USING ERRCODE = '42501';
    END IF;
    IF v_session IS NOT NULL AND NOT EXISTS (SELECT 1 FROM public.agent_coding_sessions s WHERE s.id = v_session AND s.user_id = caller) THEN
        RAISE EXCEPTION 'the session is not one of yours' USING ERRCODE = '42501';
    END IF;

    IF v_previous IS NOT NULL AND v_previous <> v_token THEN
        UPDATE public.push_tokens t SET is_valid = false WHERE t.token = v_previous AND t.user_id = caller AND t.is_valid;
        GET DIAGNOSTICS invalidated = ROW_COUNT;
    END IF;
    SELECT t.user_id, t.is_valid INTO existing FROM public.push_tokens t WHERE t.token = v_token FOR UPDATE;
    -- Another user's valid token stays theirs; the answer does not say so.
    IF existing.user_id IS NOT NULL AND existing.user_id <> caller AND existing.is_valid THEN
        RETURN jsonb_build_object('previousInvalidated', invalidated > 0);
    END IF;
    INSERT INTO public.push_tokens AS t (user_id, device_id, token, token_type, activity_id, session_id, platform, environment, is_valid)
        VALUES (caller, v_device, v_token, v_type, v_activity, v_session, v_platform, v_environment, true)
        ON CONFLICT ON CONSTRAINT push_tokens_token_key DO UPDATE
        SET user_id = EXCLUDED.user_id, device_id = EXCLUDED.device_id, token_type = EXCLUDED.token_type,
            activity_id = EXCLUDED.activity_id, session_id = EXCLUDED.session_id, platform = EXCLUDED.platform,
            environment = EXCLUDED.environment, is_valid = true;
    RETURN jsonb_build_object('previousInvalidated', invalidated > 0);
END
$$;
