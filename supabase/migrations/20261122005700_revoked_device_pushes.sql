-- A revoked device's pushes end with it (trust.md, "Revocation ends access"). Only the project's
-- own schema has push tokens; the deployed variant skips this file.
--
-- private.end_revoked_device ends a revoked device's credential, logins, row and envelopes, but
-- left its push tokens valid. New alerts already went only to devices the log certifies, but two
-- things still reached a stolen, revoked phone: the rows queued for its tokens before the
-- revocation (an approval's alert, with its sealed body), which the worker went on sending; and
-- live-activity updates, which were queued for every valid live-activity token of a session, with
-- the session's status and, with details on, its current operation.
--
-- 1. The revocation marks every push token of the device invalid, in its own transaction: the
--    worker drops what was queued for them at claim (`dropped: token invalid`), and nothing new
--    is queued for them. (A row the worker had already claimed is sent.)
--
--    The trigger is deferred to the commit, after every device the entry revokes has been ended
--    by private.end_revoked_device, which takes each one's register_device lock. Updating one
--    device's tokens before taking the next device's lock would let a registration holding that
--    lock wait on a token row (a token moving between the two devices) while the revocation
--    waits on the lock: a deadlock, raised inside the trust log's recording, which turns any
--    error into a poisoned log. At the commit all the locks are held, and an error there fails
--    the append as a whole (the client sends it again) without poisoning anything.
CREATE FUNCTION private.end_revoked_device_pushes() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO ''
    AS $$
BEGIN
    IF NEW.revoked_seq IS NULL OR NEW.device_id = '*' THEN RETURN NULL; END IF;
    IF TG_OP = 'UPDATE' AND OLD.revoked_seq IS NOT NULL THEN RETURN NULL; END IF;
    -- Scoped to the log's user: a log naming another user's device ends none of its tokens.
    UPDATE public.push_tokens t SET is_valid = false
        WHERE t.user_id = NEW.user_id AND t.device_id = NEW.device_id::uuid AND t.is_valid;
    RETURN NULL;
END
$$;

REVOKE ALL ON FUNCTION private.end_revoked_device_pushes() FROM PUBLIC;

CREATE CONSTRAINT TRIGGER trust_log_devices_revoked_pushes
    AFTER INSERT OR UPDATE OF revoked_seq ON private.trust_log_devices
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION private.end_revoked_device_pushes();

-- 2. Devices revoked before this migration: their credentials ended (only a revocation ends one).
UPDATE public.push_tokens t SET is_valid = false
    FROM private.device_credentials c
    WHERE c.device_id = t.device_id AND c.user_id = t.user_id AND c.ended_at IS NOT NULL AND t.is_valid;

-- 3-5 rewrite three functions in place, each a text edit that must find the text it expects
-- (it refuses to run otherwise) and is skipped when already applied.
DO $$
DECLARE
    e record;
    src text;
BEGIN
    FOR e IN SELECT * FROM (VALUES
        -- 3. A registration racing the revocation: public.register_push_token checked the
        --    credential before the revocation committed and wrote its token after the
        --    revocation's update, which left a revoked device with a valid token. It now takes
        --    the revocation's lock first, then asks again whether the credential is live: a
        --    revocation in flight is waited for and then refuses the call, and a revocation that
        --    comes later finds the token and ends it.
        ('public.register_push_token(text, text, text, text, text, text, text, text)',
         $was$BEGIN
    RETURN private.register_push_token($was$,
         $is$BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('register_device:' || v_device::text, 0));
    PERFORM private.acting_device(register_push_token.device_id, false);
    RETURN private.register_push_token($is$),
        -- 4. Live activities go only to a device the trust log vouches for, once the user has a
        --    log (to any of the user's devices before), as clearings do: a device registered
        --    with a login alone (never certified) could register a live-activity token and
        --    follow every session's status.
        ('private.queue_live_activity(uuid, uuid, text, text, jsonb, integer)',
         $was$    IF event <> 'end' AND NOT private.may_queue_push(device, 'liveactivity') THEN RETURN false; END IF;
$was$,
         $is$    IF event <> 'end' AND NOT private.may_queue_push(device, 'liveactivity') THEN RETURN false; END IF;
    IF private.has_trust_log(caller) AND NOT private.is_trusted_device(caller, device) THEN RETURN false; END IF;
$is$),
        -- 5. Why a device without a row of an alert was not reached: `not trusted` now comes
        --    before `token invalid` (DeliveryRules.unreached; remote-rules-v1.json, Unreached). A
        --    revoked device is both, since its revocation ends its tokens, and `not trusted` is
        --    what the user can act on.
        ('private.rule_unreached(boolean, boolean, boolean, boolean)',
         $was$                WHEN NOT valid_token THEN 'token invalid'
                WHEN NOT trusted THEN 'not trusted'
$was$,
         $is$                WHEN NOT trusted THEN 'not trusted'
                WHEN NOT valid_token THEN 'token invalid'
$is$)
    ) AS edit(fn, was, becomes)
    LOOP
        src := pg_get_functiondef(e.fn::regprocedure);
        CONTINUE WHEN position(e.becomes IN src) > 0;
        IF position(e.was IN src) = 0 THEN
            RAISE EXCEPTION '% no longer reads as this migration expects: update it', e.fn;
        END IF;
        EXECUTE replace(src, e.was, e.becomes);
    END LOOP;
END
$$;
