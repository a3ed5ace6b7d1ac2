-- Whether a device may register its credential, as pure functions (docs/trust.md, "Device
-- credentials"; issue 68). Both variants: device credentials are deployed.
--
-- public.register_device decided inline, and the trigger private.device_credentials_room held
-- the hour's room; the embedded remote decided the same in Swift. The decisions move into
-- IMMUTABLE functions of their arguments, which testvectors/remote-rules-v1.json calls with every
-- case, expecting the answers and words of CredentialRules in the RemoteRules module (which the
-- embedded remote runs). The callers keep their names, signatures, locks and effects; the refusals
-- keep their codes and hints and take the embedded remote's words, which say what to do next.
--
-- The vectors found the embedded remote registering a device the trust log had revoked before
-- its file had credentials (the SQL refused it): it reads the log's revocations now.

-- What a registration does: 'known' (the device's credential is registered already), 'register'
-- (a new row), or the refusal's code ('not_yours', 'revoked', 'credential_taken',
-- 'credential_of_another'). `registered`: a row holds the device's id (`mine`, `ended`,
-- `same_credential` describe it; unread otherwise); `device_of_another`: its device row is another
-- user's; `revoked_in_log`: a revoke or succession of any epoch named it; `credential_in_use`:
-- another row holds the credential presented.
CREATE FUNCTION private.rule_device_registration(
    registered boolean, mine boolean, ended boolean, same_credential boolean, device_of_another boolean,
    revoked_in_log boolean, credential_in_use boolean, OUT answer text
)
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT CASE
        WHEN registered THEN CASE WHEN NOT mine THEN 'not_yours' WHEN ended THEN 'revoked'
                                  WHEN same_credential THEN 'known' ELSE 'credential_taken' END
        WHEN device_of_another THEN 'not_yours'
        WHEN revoked_in_log THEN 'revoked'
        WHEN credential_in_use THEN 'credential_of_another'
        ELSE 'register' END
$$;
REVOKE ALL ON FUNCTION private.rule_device_registration(boolean, boolean, boolean, boolean, boolean, boolean, boolean)
    FROM PUBLIC;

-- Whether a user who registered `registered_in_last_hour` devices (not ended) in the last hour may
-- register one more: 20 an hour.
CREATE FUNCTION private.rule_new_device_room(registered_in_last_hour integer) RETURNS boolean
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT registered_in_last_hour < 20
$$;
REVOKE ALL ON FUNCTION private.rule_new_device_room(integer) FROM PUBLIC;

-- A refusal's words, SQLSTATE (`state`) and hint by its code (also 'limit').
CREATE FUNCTION private.rule_device_refusal(code text, OUT message text, OUT state text, OUT hint text)
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT w.message, CASE WHEN w.code = 'limit' THEN '54000' ELSE '42501' END, w.hint
    FROM (VALUES
        ('not_yours', 'the device is not one of yours', NULL),
        ('revoked', 'this device was revoked: the account takes nothing more from it; pair a new store '
                    || '(`sync-cli init` in another directory, then `sync-cli trust join`)', 'device-revoked'),
        ('credential_taken', 'another credential is registered for this device''s id, so the remote cannot tell '
                             || 'this device from whoever registered it: revoke this device from a trusted one '
                             || '(`sync-cli trust revoke`) and pair a new store', 'device-credential-taken'),
        ('credential_of_another', 'this credential belongs to another device', NULL),
        ('limit', 'this account registered too many new devices in the last hour: try again later (if you did '
                  || 'not register them, someone holds your login: change your password)', 'device-limit')
    ) AS w(code, message, hint)
    WHERE w.code = rule_device_refusal.code
$$;
REVOKE ALL ON FUNCTION private.rule_device_refusal(text) FROM PUBLIC;

-- Raises the refusal `code` names.
CREATE FUNCTION private.raise_device_refusal(code text) RETURNS void
    LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
    w record;
BEGIN
    SELECT * INTO w FROM private.rule_device_refusal(code);
    IF w.hint IS NULL THEN RAISE EXCEPTION '%', w.message USING ERRCODE = w.state; END IF;
    RAISE EXCEPTION '%', w.message USING ERRCODE = w.state, HINT = w.hint;
END
$$;
REVOKE ALL ON FUNCTION private.raise_device_refusal(text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION private.device_credentials_room() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    IF NEW.ended_at IS NOT NULL THEN RETURN NEW; END IF;
    -- One new device per user at a time, so that two cannot both take the last place.
    PERFORM pg_advisory_xact_lock(hashtextextended('register_device_user:' || NEW.user_id::text, 0));
    IF NOT private.rule_new_device_room((SELECT count(*)::integer FROM private.device_credentials c
                                         WHERE c.user_id = NEW.user_id AND c.ended_at IS NULL
                                           AND c.registered_at > now() - interval '1 hour')) THEN
        PERFORM private.raise_device_refusal('limit');
    END IF;
    RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION public.register_device(device_id text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = ''
    AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v uuid := private.uuid_arg(register_device.device_id, 'device_id');
    h bytea := private.request_credential_hash();
    v_session uuid;
    existing private.device_credentials%ROWTYPE;
    created boolean := false;
    found_existing boolean;
    r record;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'register_device needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF v IS NULL THEN RAISE EXCEPTION 'device_id is required' USING ERRCODE = '22023'; END IF;
    IF h IS NULL THEN
        RAISE EXCEPTION 'register_device needs the x-device-credential header: 64 lowercase hex digits'
            USING ERRCODE = '22023';
    END IF;
    BEGIN
        v_session := nullif(auth.jwt() ->> 'session_id', '')::uuid;
    EXCEPTION WHEN invalid_text_representation THEN
        v_session := NULL;
    END;
    -- One registration per device at a time: the second of two waits, then finds the first's.
    PERFORM pg_advisory_xact_lock(hashtextextended('register_device:' || v::text, 0));
    SELECT * INTO existing FROM private.device_credentials c WHERE c.device_id = v;
    found_existing := FOUND;
    SELECT * INTO r FROM private.rule_device_registration(
        found_existing, existing.user_id = caller, existing.ended_at IS NOT NULL, existing.hash = h,
        EXISTS (SELECT 1 FROM public.devices d WHERE d.id = v AND d.user_id <> caller),
        EXISTS (SELECT 1 FROM private.trust_log_devices t
                WHERE t.user_id = caller AND t.device_id = v::text AND t.revoked_seq IS NOT NULL),
        EXISTS (SELECT 1 FROM private.device_credentials c WHERE c.hash = h));
    -- Fail closed: anything but these two is a refusal (a NULL answer too).
    IF r.answer IS DISTINCT FROM 'known' AND r.answer IS DISTINCT FROM 'register' THEN
        PERFORM private.raise_device_refusal(coalesce(r.answer, 'not_yours'));
    END IF;
    IF r.answer = 'register' THEN
        INSERT INTO private.device_credentials (device_id, user_id, hash) VALUES (v, caller, h);
        created := true;
    END IF;
    IF v_session IS NOT NULL THEN
        INSERT INTO private.device_logins (device_id, auth_session) VALUES (v, v_session) ON CONFLICT DO NOTHING;
    END IF;
    RETURN jsonb_build_object('deviceId', v, 'registered', created,
                              'trusted', NOT private.has_trust_log(caller) OR private.is_trusted_device(caller, v));
END
$$;



