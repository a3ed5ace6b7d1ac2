-- Where a registered push token goes, as a pure function, and every registration checked before
-- it is placed (docs/coordination.md, "Push tokens"; issue 68). Only the project's own schema has
-- register_push_token; the deployed variant skips this file.
--
-- Who keeps a token was decided in two places: public.register_push_token returned early, before
-- any argument was checked, when another device held the token validly, and
-- private.register_push_token kept another user's valid token. So a registration with a wrong
-- argument (a platform of `iOS`, a malformed previous token, a session id that is not a UUID) was
-- refused for a token nobody held and answered as a success for one another device held: anyone
-- signed in could learn whether a token string was registered, which the answer must never say.
-- The embedded remote checked first and then placed. Now both check every argument first and then
-- ask one rule, private.rule_push_token_placement, which testvectors/remote-rules-v1.json holds to
-- PushTokenRules.placement in the RemoteRules module (which the embedded remote runs).

-- Where a registration's token goes, given who holds it now: `held_by` 'none', 'this_device',
-- 'another_device' (of the caller) or 'another_user', and whether that row is valid. A valid token
-- another device holds stays where it is ('stays'); otherwise the registration writes it
-- ('register'). Anything else stays: a token never moves on an answer the rule cannot give.
CREATE FUNCTION private.rule_push_token_placement(held_by text, is_valid boolean) RETURNS text
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT CASE WHEN held_by IN ('none', 'this_device') THEN 'register'
                WHEN held_by IN ('another_device', 'another_user') AND NOT is_valid THEN 'register'
                ELSE 'stays' END
$$;
REVOKE ALL ON FUNCTION private.rule_push_token_placement(text, boolean) FROM PUBLIC;

-- private.register_push_token: the caller's previous token is invalidated only on this device, and
-- the token is placed by the rule (it kept only another user's valid token before; the wrapper kept
-- the rest).
DO $$
DECLARE
    fn text := 'private.register_push_token(uuid, text, text, text, text, text, uuid, text)';
    src text := pg_get_functiondef(fn::regprocedure);
    old_previous text := 'WHERE t.token = v_previous AND t.user_id = caller AND t.is_valid;';
    old_existing text := $old$    SELECT t.user_id, t.is_valid INTO existing FROM public.push_tokens t WHERE t.token = v_token FOR UPDATE;
    -- Another user's valid token stays theirs; the answer does not say so.
    IF existing.user_id IS NOT NULL AND existing.user_id <> caller AND existing.is_valid THEN$old$;
    new_existing text := $new$    SELECT t.user_id, t.device_id, t.is_valid INTO existing FROM public.push_tokens t WHERE t.token = v_token FOR UPDATE;
    -- Another device's valid token (another user's included) stays where it is; the answer does not say so.
    IF private.rule_push_token_placement(
           CASE WHEN existing.device_id IS NULL THEN 'none' WHEN existing.device_id = v_device THEN 'this_device'
                WHEN existing.user_id = caller THEN 'another_device' ELSE 'another_user' END,
           existing.is_valid) <> 'register' THEN$new$;
BEGIN
    IF position(old_previous IN src) = 0 OR position(old_existing IN src) = 0 THEN
        RAISE EXCEPTION '% no longer places a token as this migration expects: update it', fn;
    END IF;
    src := replace(src, old_previous, 'WHERE t.token = v_previous AND t.user_id = caller AND t.device_id = v_device AND t.is_valid;');
    EXECUTE replace(src, old_existing, new_existing);
END
$$;

-- public.register_push_token: the acting device, then everything else in private.register_push_token,
-- which checks every argument before it reads or places a token.
CREATE OR REPLACE FUNCTION public.register_push_token(
    device_id text, token text, token_type text DEFAULT NULL, platform text DEFAULT NULL, environment text DEFAULT NULL,
    activity_id text DEFAULT NULL, session_id text DEFAULT NULL, previous_token text DEFAULT NULL
) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    v_device uuid := private.acting_device(register_push_token.device_id, false);
BEGIN
    RETURN private.register_push_token(v_device, register_push_token.token, register_push_token.token_type,
        register_push_token.platform, register_push_token.environment, register_push_token.activity_id,
        private.uuid_arg(register_push_token.session_id, 'session_id'), register_push_token.previous_token);
END
$$;
