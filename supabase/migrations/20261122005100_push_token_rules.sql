-- Which push-token registration is refused before a row is read, as a pure function
-- (docs/coordination.md, "Push tokens"; issue 68). Only the project's own schema has
-- private.register_push_token; the deployed variant skips this file.
--
-- private.register_push_token checked its arguments inline. The checks move into an IMMUTABLE
-- function of its arguments, which testvectors/remote-rules-v1.json calls with every case,
-- expecting the answers and words of PushTokenRules in the RemoteRules module (which the embedded
-- remote runs). The reader keeps its name, signature, order of checks, words and effects.
--
-- An activity id's control characters were `[[:cntrl:]]`, in the function and in the column's
-- CHECK, which follows the database's locale (under glibc's UTF-8 locales it also holds U+2028 and
-- U+2029); both are now U+0001 to U+001F and U+007F to U+009F (Unicode's Cc; PostgreSQL text holds
-- no U+0000) under every locale. Under the test stack's locale the old class and the new agree on
-- every vector. (The vectors found the embedded remote counting an activity id's
-- length in grapheme clusters where PostgreSQL counts characters: 202 characters that show as 101
-- were taken there and refused here. It counts Unicode scalars now.)

-- Existing rows are checked again: one that only the old locale's class let in stops the migration
-- (under glibc's UTF-8 locales the old class refused every character the new one refuses).
-- The class is the rule's, spelled out here rather than called: a CHECK runs with the privileges of
-- whoever writes the row (the push worker invalidates tokens), and no API role may execute
-- private functions.
ALTER TABLE public.push_tokens DROP CONSTRAINT push_tokens_activity_id_check,
    ADD CONSTRAINT push_tokens_activity_id_check
        CHECK (activity_id IS NULL OR (length(activity_id) BETWEEN 1 AND 200
                                       AND activity_id !~ '[\u0001-\u001f\u007f-\u009f]'));

-- The first argument a registration gets wrong, `refused` ('token', 'token_type', 'environment',
-- 'platform', 'live_activity_fields', 'device_fields', 'activity_id', 'previous_token'), and what
-- the refusal says; both NULL: none. A NULL token_type, platform or environment is its default.
CREATE FUNCTION private.rule_push_token_refusal(
    token text, token_type text, platform text, environment text, activity_id text, has_session boolean,
    previous_token text, OUT refused text, OUT message text
)
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT c.refused, m.message
    FROM (SELECT CASE
        WHEN token IS NULL OR token !~ '^[A-Za-z0-9._:-]+$' OR length(token) > 512 THEN 'token'
        WHEN coalesce(token_type, 'device') NOT IN ('device', 'live_activity') THEN 'token_type'
        WHEN coalesce(environment, 'production') NOT IN ('development', 'production') THEN 'environment'
        WHEN coalesce(platform, 'ios') !~ '^[a-z]{1,20}$' THEN 'platform'
        WHEN coalesce(token_type, 'device') = 'live_activity' AND (activity_id IS NULL OR NOT has_session)
            THEN 'live_activity_fields'
        WHEN coalesce(token_type, 'device') = 'device' AND (activity_id IS NOT NULL OR has_session) THEN 'device_fields'
        WHEN activity_id IS NOT NULL
             AND (length(activity_id) NOT BETWEEN 1 AND 200 OR activity_id ~ '[\u0001-\u001f\u007f-\u009f]')
            THEN 'activity_id'
        WHEN previous_token IS NOT NULL AND (previous_token !~ '^[A-Za-z0-9._:-]+$' OR length(previous_token) > 512)
            THEN 'previous_token'
        END AS refused) c
    LEFT JOIN (VALUES
        ('token', 'token must be 1 to 512 characters of A-Z a-z 0-9 . _ : -'),
        ('token_type', 'token_type must be device or live_activity'),
        ('environment', 'environment must be development or production'),
        ('platform', 'platform must be 1 to 20 lowercase letters'),
        ('live_activity_fields', 'a live_activity token needs activity_id and session_id'),
        ('device_fields', 'a device token takes no activity_id or session_id'),
        ('activity_id', 'activity_id must be 1 to 200 characters without control characters'),
        ('previous_token', 'previous_token must be 1 to 512 characters of A-Z a-z 0-9 . _ : -')
    ) AS m(code, message) ON m.code = c.refused
$$;
REVOKE ALL ON FUNCTION private.rule_push_token_refusal(text, text, text, text, text, boolean, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION private.register_push_token(
    device_id uuid, token text, token_type text DEFAULT NULL, platform text DEFAULT NULL, environment text DEFAULT NULL,
    activity_id text DEFAULT NULL, session_id uuid DEFAULT NULL, previous_token text DEFAULT NULL
) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = ''
    AS $_$
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
    refusal record;
    invalidated integer := 0;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'register_push_token needs a signed-in user' USING ERRCODE = '42501'; END IF;
    SELECT * INTO refusal FROM private.rule_push_token_refusal(v_token, v_type, v_platform, v_environment, v_activity,
                                                                  v_session IS NOT NULL, v_previous);
    IF refusal.refused IS NOT NULL THEN RAISE EXCEPTION '%', refusal.message USING ERRCODE = '22023'; END IF;
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
$_$;



