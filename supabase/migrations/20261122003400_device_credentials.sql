-- A login is not a device (docs/trust.md, "Device credentials"). Before this, the server knew the
-- user (the JWT) but not the device: any login of a user could act as every device of that
-- user, and revoking a device in the trust log ended none of its logins.
--
-- Each device draws 32 random bytes at init (its credential, kept with its keys) and sends them
-- on every request in the `x-device-credential` header (64 lowercase hex digits; PostgREST hands
-- request headers to SQL as `request.headers`). The server keeps only their SHA-256, registered
-- once per device by `register_device` (first use for a device that existed before). One
-- function names the calling device: the caller's device whose stored hash matches the header,
-- and, when the user has a trust log, which the log in force certifies and does not revoke.
-- Policies call it as `(SELECT private.calling_device())`, an initPlan evaluated once per
-- statement, never once per row.
--
-- When the log revokes a device, its credential ends (it maps to no device, for good), the auth
-- sessions it registered from end (their refresh tokens with them), its row becomes inactive and
-- the envelopes addressed to it go, in the transaction that stores the revocation.
--
-- Both schema variants get this file: it touches only the tables both have.

CREATE TABLE private.device_credentials (
    device_id uuid PRIMARY KEY,
    user_id uuid NOT NULL,
    hash bytea NOT NULL UNIQUE CHECK (length(hash) = 32),
    registered_at timestamptz NOT NULL DEFAULT now(),
    -- Set when the trust log revokes the device; never cleared.
    ended_at timestamptz
);
CREATE INDEX device_credentials_user ON private.device_credentials (user_id);

-- The auth sessions (the JWT's session_id) each credential registered from: what a revocation ends.
CREATE TABLE private.device_logins (
    device_id uuid NOT NULL REFERENCES private.device_credentials (device_id) ON DELETE CASCADE,
    auth_session uuid NOT NULL,
    first_used_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (device_id, auth_session)
);
CREATE INDEX device_logins_session ON private.device_logins (auth_session);
ALTER TABLE private.device_credentials ENABLE ROW LEVEL SECURITY;
ALTER TABLE private.device_logins ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON private.device_credentials, private.device_logins FROM PUBLIC, anon, authenticated, service_role;

-- SHA-256 of the request's credential, or NULL without one of the right form.
CREATE FUNCTION private.request_credential_hash() RETURNS bytea
    LANGUAGE sql STABLE SET search_path = '' AS $$
    SELECT CASE WHEN v ~ '^[0-9a-f]{64}$' THEN sha256(decode(v, 'hex')) END
    FROM (SELECT nullif(current_setting('request.headers', true), '')::json ->> 'x-device-credential' AS v) h
$$;

-- The caller's registered device whose credential the request carries, unless revoked; else NULL.
CREATE FUNCTION private.credential_device() RETURNS uuid
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = '' AS $$
    SELECT c.device_id FROM private.device_credentials c
    WHERE c.hash = private.request_credential_hash() AND c.user_id = auth.uid() AND c.ended_at IS NULL
$$;

-- Whether the user has a trust log: then only the devices it certifies are trusted.
CREATE FUNCTION private.has_trust_log(caller uuid) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = '' AS $$
    SELECT EXISTS (SELECT 1 FROM private.trust_log_state s WHERE s.user_id = caller AND s.highest_epoch > 0)
$$;

-- The calling device: credential_device(), and, for a user with a trust log, certified and not
-- revoked by the log in force. NULL otherwise.
CREATE FUNCTION private.calling_device() RETURNS uuid
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = '' AS $$
    SELECT x.d FROM (SELECT private.credential_device() AS d) x
    WHERE x.d IS NOT NULL AND (NOT private.has_trust_log(auth.uid()) OR private.is_trusted_device(auth.uid(), x.d))
$$;

-- An id argument: a canonical lowercase UUID, or NULL for NULL; anything else is 22023.
CREATE FUNCTION private.uuid_arg(value text, name text) RETURNS uuid
    LANGUAGE plpgsql IMMUTABLE SET search_path = '' AS $$
BEGIN
    IF value IS NULL THEN RETURN NULL; END IF;
    IF value !~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN
        RAISE EXCEPTION '% must be a canonical lowercase UUID', name USING ERRCODE = '22023';
    END IF;
    RETURN value::uuid;
END
$$;

-- The device a call acts for: `named`, which must be the calling device (`trusted`: certified
-- too, when the user has a log). Every device-scoped function starts here.
CREATE FUNCTION private.acting_device(named text, trusted boolean) RETURNS uuid
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    v uuid := private.uuid_arg(named, 'device_id');
    c uuid;
BEGIN
    IF auth.uid() IS NULL THEN RAISE EXCEPTION 'this call needs a signed-in user' USING ERRCODE = '42501'; END IF;
    c := private.credential_device();
    IF c IS NULL THEN
        RAISE EXCEPTION 'this call needs the credential of one of your devices that is not revoked'
            USING ERRCODE = '42501', HINT = 'device-credential-missing';
    END IF;
    IF v IS NULL OR v <> c THEN
        RAISE EXCEPTION 'a device acts only in its own name' USING ERRCODE = '42501';
    END IF;
    IF trusted AND private.calling_device() IS NULL THEN
        RAISE EXCEPTION 'only a device your trust log certifies may make this call' USING ERRCODE = '42501';
    END IF;
    RETURN c;
END
$$;

-- The calling device, or 42501 (`trusted`: certified too, when the user has a log): for calls
-- that name no device.
CREATE FUNCTION private.caller_device(trusted boolean) RETURNS uuid
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    RETURN private.acting_device(private.credential_device()::text, trusted);
END
$$;

-- Registers the request's credential for device_id (once: a device's first run, or an existing
-- device's next one) and records the auth session it is used from. Answers {"deviceId",
-- "registered" (new now), "trusted"}. Refused (42501, each with its hint): a device of another
-- user; a revoked device ('device-revoked'); a device whose slot holds another credential
-- ('device-credential-taken': revoke it from a trusted device and pair a new store).
CREATE FUNCTION public.register_device(device_id text) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v uuid := private.uuid_arg(register_device.device_id, 'device_id');
    h bytea := private.request_credential_hash();
    v_session uuid;
    existing private.device_credentials%ROWTYPE;
    created boolean := false;
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
    IF FOUND THEN
        IF existing.user_id <> caller THEN RAISE EXCEPTION 'the device is not one of yours' USING ERRCODE = '42501'; END IF;
        IF existing.ended_at IS NOT NULL THEN
            RAISE EXCEPTION 'this device was revoked: it can do nothing more; pair a new store'
                USING ERRCODE = '42501', HINT = 'device-revoked';
        END IF;
        IF existing.hash <> h THEN
            RAISE EXCEPTION 'another credential is registered for this device: revoke it from a trusted device and pair this store again'
                USING ERRCODE = '42501', HINT = 'device-credential-taken';
        END IF;
    ELSE
        IF EXISTS (SELECT 1 FROM public.devices d WHERE d.id = v AND d.user_id <> caller) THEN
            RAISE EXCEPTION 'the device is not one of yours' USING ERRCODE = '42501';
        END IF;
        IF EXISTS (SELECT 1 FROM private.trust_log_devices t
                   WHERE t.user_id = caller AND t.device_id = v::text AND t.revoked_seq IS NOT NULL) THEN
            RAISE EXCEPTION 'this device was revoked: it can do nothing more; pair a new store'
                USING ERRCODE = '42501', HINT = 'device-revoked';
        END IF;
        IF EXISTS (SELECT 1 FROM private.device_credentials c WHERE c.hash = h) THEN
            RAISE EXCEPTION 'this credential belongs to another device' USING ERRCODE = '42501';
        END IF;
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
REVOKE ALL ON FUNCTION public.register_device(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.register_device(text) TO authenticated;

-- Ends the auth sessions `ids` (their refresh tokens go with them): Supabase's auth.sessions,
-- where the deployment has it.
CREATE FUNCTION private.end_auth_sessions(ids uuid[]) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    IF ids IS NULL OR cardinality(ids) = 0 OR to_regclass('auth.sessions') IS NULL THEN RETURN; END IF;
    EXECUTE 'DELETE FROM auth.sessions WHERE id = ANY($1)' USING ids;
END
$$;

-- A revocation the server has read ends the device: its credential (a placeholder ended at once
-- when it never registered one), the logins it registered from that no live device shares, its
-- row's activity, and the envelopes addressed to it.
CREATE FUNCTION private.end_revoked_device() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    v uuid;
    ended uuid[];
BEGIN
    IF NEW.revoked_seq IS NULL OR NEW.device_id = '*' THEN RETURN NULL; END IF;
    IF TG_OP = 'UPDATE' AND OLD.revoked_seq IS NOT NULL THEN RETURN NULL; END IF;
    v := NEW.device_id::uuid;
    -- A log may name any id: another user's device is not this user's to end.
    IF EXISTS (SELECT 1 FROM public.devices d WHERE d.id = v AND d.user_id <> NEW.user_id)
       OR EXISTS (SELECT 1 FROM private.device_credentials c WHERE c.device_id = v AND c.user_id <> NEW.user_id) THEN
        RETURN NULL;
    END IF;
    -- register_device takes the same lock: a registration cannot slip in between.
    PERFORM pg_advisory_xact_lock(hashtextextended('register_device:' || v::text, 0));
    INSERT INTO private.device_credentials (device_id, user_id, hash, ended_at)
        VALUES (v, NEW.user_id, sha256(convert_to(gen_random_uuid()::text || clock_timestamp()::text, 'UTF8')), now())
        ON CONFLICT (device_id) DO UPDATE SET ended_at = coalesce(private.device_credentials.ended_at, now())
        WHERE private.device_credentials.user_id = NEW.user_id;
    -- Its logins end, unless a live device the log certifies shares them (a device registered
    -- from a stolen login, never certified, keeps none alive).
    SELECT array_agg(l.auth_session) INTO ended FROM private.device_logins l
        WHERE l.device_id = v
          AND NOT EXISTS (SELECT 1 FROM private.device_logins o JOIN private.device_credentials oc ON oc.device_id = o.device_id
                          WHERE o.auth_session = l.auth_session AND o.device_id <> v AND oc.ended_at IS NULL
                            AND oc.user_id = NEW.user_id AND private.is_trusted_device(NEW.user_id, o.device_id));
    -- The caller (the trust log's recording) turns any error into a poisoned log: ending the
    -- logins must not be able to fail it.
    BEGIN
        PERFORM private.end_auth_sessions(ended);
    EXCEPTION WHEN OTHERS THEN
        RAISE WARNING 'the logins of a revoked device could not be ended: %', SQLERRM;
    END;
    UPDATE public.devices d SET is_active = false WHERE d.id = v AND d.user_id = NEW.user_id AND d.is_active;
    DELETE FROM public.agent_coding_session_secrets s
        WHERE s.session_id IN (SELECT c.id FROM public.agent_coding_sessions c WHERE c.user_id = NEW.user_id)
          AND s.device_id::text = v::text;
    RETURN NULL;
END
$$;
CREATE TRIGGER trust_log_devices_revoked AFTER INSERT OR UPDATE OF revoked_seq ON private.trust_log_devices
    FOR EACH ROW EXECUTE FUNCTION private.end_revoked_device();

-- Devices revoked before this migration: ended now (no credential of theirs can register).
INSERT INTO private.device_credentials (device_id, user_id, hash, ended_at)
    SELECT DISTINCT ON (t.device_id) t.device_id::uuid, t.user_id,
           sha256(convert_to(gen_random_uuid()::text || t.device_id, 'UTF8')), now()
    FROM private.trust_log_devices t WHERE t.revoked_seq IS NOT NULL AND t.device_id <> '*'
      AND NOT EXISTS (SELECT 1 FROM public.devices d WHERE d.id::text = t.device_id AND d.user_id <> t.user_id)
    ON CONFLICT (device_id) DO NOTHING;
UPDATE public.devices d SET is_active = false
    WHERE d.is_active AND EXISTS (SELECT 1 FROM private.trust_log_devices t
                                  WHERE t.user_id = d.user_id AND t.device_id = d.id::text AND t.revoked_seq IS NOT NULL);

REVOKE ALL ON FUNCTION private.request_credential_hash(), private.credential_device(), private.has_trust_log(uuid),
    private.calling_device(), private.uuid_arg(text, text), private.acting_device(text, boolean),
    private.caller_device(boolean), private.end_auth_sessions(uuid[]), private.end_revoked_device() FROM PUBLIC;
-- The policies run as the API role they check: it needs EXECUTE on what they call.
GRANT EXECUTE ON FUNCTION private.credential_device(), private.calling_device() TO authenticated;

-- The tables: every row is read and written only by a registered device of its user (one that
-- is not revoked); a device writes only its own rows; envelopes only from the session's desktop,
-- certified when the user has a log, and read only by a certified device.
DROP POLICY devices_owner ON public.devices;
CREATE POLICY devices_read ON public.devices FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()) AND (SELECT private.credential_device()) IS NOT NULL);
CREATE POLICY devices_insert ON public.devices FOR INSERT TO authenticated
    WITH CHECK (user_id = (SELECT auth.uid()) AND id = (SELECT private.credential_device()));
CREATE POLICY devices_update ON public.devices FOR UPDATE TO authenticated
    USING (user_id = (SELECT auth.uid()) AND id = (SELECT private.credential_device()))
    WITH CHECK (user_id = (SELECT auth.uid()) AND id = (SELECT private.credential_device()));
CREATE POLICY devices_delete ON public.devices FOR DELETE TO authenticated
    USING (user_id = (SELECT auth.uid()) AND id = (SELECT private.credential_device()));

DROP POLICY repositories_owner ON public.repositories;
CREATE POLICY repositories_read ON public.repositories FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()) AND (SELECT private.credential_device()) IS NOT NULL);
CREATE POLICY repositories_write ON public.repositories FOR ALL TO authenticated
    USING (user_id = (SELECT auth.uid()) AND device_id = (SELECT private.credential_device()))
    WITH CHECK (user_id = (SELECT auth.uid()) AND device_id = (SELECT private.credential_device())
                AND (parent_repository_id IS NULL OR private.not_anothers_repository(parent_repository_id)));

DROP POLICY agent_coding_sessions_owner ON public.agent_coding_sessions;
CREATE POLICY agent_coding_sessions_read ON public.agent_coding_sessions FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()) AND (SELECT private.credential_device()) IS NOT NULL);
CREATE POLICY agent_coding_sessions_write ON public.agent_coding_sessions FOR ALL TO authenticated
    USING (user_id = (SELECT auth.uid()) AND device_id = (SELECT private.credential_device()))
    WITH CHECK (user_id = (SELECT auth.uid()) AND device_id = (SELECT private.credential_device())
                AND private.not_anothers_repository(repository_id));

DROP POLICY agent_coding_session_secrets_owner ON public.agent_coding_session_secrets;
CREATE POLICY agent_coding_session_secrets_read ON public.agent_coding_session_secrets FOR SELECT TO authenticated
    USING ((SELECT private.calling_device()) IS NOT NULL
           AND EXISTS (SELECT 1 FROM public.agent_coding_sessions s
                       WHERE s.id = agent_coding_session_secrets.session_id AND s.user_id = (SELECT auth.uid())));
CREATE POLICY agent_coding_session_secrets_write ON public.agent_coding_session_secrets FOR ALL TO authenticated
    USING (EXISTS (SELECT 1 FROM public.agent_coding_sessions s
                   WHERE s.id = agent_coding_session_secrets.session_id AND s.user_id = (SELECT auth.uid())
                     AND s.device_id = (SELECT private.calling_device())))
    WITH CHECK (EXISTS (SELECT 1 FROM public.agent_coding_sessions s
                        WHERE s.id = agent_coding_session_secrets.session_id AND s.user_id = (SELECT auth.uid())
                          AND s.device_id = (SELECT private.calling_device()))
                AND private.not_anothers_device(device_id::text));

DROP POLICY session_secret_requests_owner ON public.session_secret_requests;
CREATE POLICY session_secret_requests_owner ON public.session_secret_requests TO authenticated
    USING (user_id = (SELECT auth.uid()) AND (SELECT private.credential_device()) IS NOT NULL)
    WITH CHECK (user_id = (SELECT auth.uid()) AND private.not_anothers_session(session_id)
                AND (requester_device_id = (SELECT private.credential_device())
                     OR EXISTS (SELECT 1 FROM public.agent_coding_sessions s WHERE s.id = session_secret_requests.session_id
                                AND s.device_id = (SELECT private.credential_device()))));

DROP POLICY pairing_requests_owner ON public.pairing_requests;
CREATE POLICY pairing_requests_owner ON public.pairing_requests TO authenticated
    USING (user_id = (SELECT auth.uid()) AND (SELECT private.credential_device()) IS NOT NULL)
    WITH CHECK (user_id = (SELECT auth.uid()) AND device_id = (SELECT private.credential_device()));

DROP POLICY device_certificates_owner ON public.device_certificates;
CREATE POLICY device_certificates_read ON public.device_certificates FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()) AND (SELECT private.credential_device()) IS NOT NULL);
DROP POLICY device_revocations_owner ON public.device_revocations;
CREATE POLICY device_revocations_read ON public.device_revocations FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()) AND (SELECT private.credential_device()) IS NOT NULL);
DROP POLICY user_identity_keys_owner ON public.user_identity_keys;
CREATE POLICY user_identity_keys_read ON public.user_identity_keys FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()) AND (SELECT private.credential_device()) IS NOT NULL);
DROP POLICY identity_key_backups_read ON public.identity_key_backups;
CREATE POLICY identity_key_backups_read ON public.identity_key_backups FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()) AND (SELECT private.credential_device()) IS NOT NULL);
DROP POLICY trust_log_read ON public.trust_log;
CREATE POLICY trust_log_read ON public.trust_log FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()) AND (SELECT private.credential_device()) IS NOT NULL);
DROP POLICY trust_log_witnesses_read ON public.trust_log_witnesses;
CREATE POLICY trust_log_witnesses_read ON public.trust_log_witnesses FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()) AND (SELECT private.credential_device()) IS NOT NULL);

-- Witnesses: only in the caller's own name. A device's witness for a seq it already witnessed is
-- taken beside the first (the key holds the signature; at most 4 a seq), so a row that got there
-- first cannot shut out the device's genuine one; clients count the highest that verifies.
ALTER TABLE public.trust_log_witnesses DROP CONSTRAINT trust_log_witnesses_pkey;
ALTER TABLE public.trust_log_witnesses ADD PRIMARY KEY (user_id, device_id, epoch, seq, signature);

ALTER FUNCTION public.publish_witness(uuid, text, text) SET SCHEMA private;
REVOKE ALL ON FUNCTION private.publish_witness(uuid, text, text) FROM PUBLIC, authenticated, service_role;
CREATE OR REPLACE FUNCTION private.publish_witness(device_id uuid, body text, signature text)
    RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    caller uuid := auth.uid();
    s private.trust_log_state;
    h private.trust_log_heads;
    b bytea := private.tl_decode(publish_witness.body, 155);
    v_epoch bigint;
    v_seq numeric;
    v_seen numeric;
    v_now numeric := floor(extract(epoch FROM now()));
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'publish_witness needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF b IS NULL OR length(b) <> 155 OR substring(b FROM 1 FOR 29) <> convert_to('unbound-trust-log-witness-v1', 'UTF8') || '\x00'::bytea
       OR get_byte(b, 65) <> 0 OR get_byte(b, 102) <> 0 OR private.tl_decode(publish_witness.signature, 64) IS NULL
       OR length(private.tl_decode(publish_witness.signature, 64)) <> 64 THEN
        RAISE EXCEPTION 'the witness is not 155 bytes and a 64-byte signature, in base64' USING ERRCODE = '22023';
    END IF;
    IF substring(b FROM 30 FOR 36) <> convert_to(caller::text, 'UTF8')
       OR substring(b FROM 67 FOR 36) <> convert_to(publish_witness.device_id::text, 'UTF8') THEN
        RAISE EXCEPTION 'the witness names another user or another device than the caller' USING ERRCODE = '42501';
    END IF;
    s := private.tl_lock(caller);
    v_epoch := private.tl_u32(b, 103);
    v_seq := private.tl_u64(b, 107);
    v_seen := private.tl_u64(b, 147);
    SELECT * INTO h FROM private.trust_log_heads x WHERE x.user_id = caller AND x.epoch = s.current_epoch;
    IF s.current_epoch IS NULL OR v_epoch <> s.current_epoch OR v_seq > h.seq
       OR v_seq < coalesce((SELECT max(w.seq) FROM public.trust_log_witnesses w WHERE w.user_id = caller
                              AND w.device_id = publish_witness.device_id AND w.epoch = s.current_epoch), -1)
       OR v_seen < v_now - 600 OR v_seen > v_now + 600 THEN
        RAISE EXCEPTION 'a witness names the current epoch, a seq up to its head and at least the device''s last, and now'
            USING ERRCODE = '22023';
    END IF;
    IF (SELECT count(*) FROM public.trust_log_witnesses w WHERE w.user_id = caller AND w.device_id = publish_witness.device_id
          AND w.epoch = v_epoch AND w.seq = v_seq) >= 4 THEN
        RAISE EXCEPTION 'a device publishes at most 4 witnesses of one seq' USING ERRCODE = '54000';
    END IF;
    INSERT INTO public.trust_log_witnesses (user_id, device_id, epoch, seq, body, signature)
    VALUES (caller, publish_witness.device_id, v_epoch, v_seq, publish_witness.body, publish_witness.signature)
    ON CONFLICT DO NOTHING;
    RETURN jsonb_build_object('epoch', v_epoch, 'seq', v_seq);
END
$$;
CREATE FUNCTION public.publish_witness(device_id text, body text, signature text) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    RETURN private.publish_witness(private.acting_device(publish_witness.device_id, true),
                                      publish_witness.body, publish_witness.signature);
END
$$;
REVOKE ALL ON FUNCTION public.publish_witness(text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.publish_witness(text, text, text) TO authenticated;

-- The log's appends are signed by a root, which the server checks; they also come from a
-- registered device now, so a login alone (or a revoked device) cannot append a thing.
ALTER FUNCTION public.append_trust_entries(integer, bigint, text[], text[]) SET SCHEMA private;
REVOKE ALL ON FUNCTION private.append_trust_entries(integer, bigint, text[], text[]) FROM PUBLIC, authenticated;
CREATE FUNCTION public.append_trust_entries(epoch integer, first_seq bigint, entries text[], backups text[]) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    PERFORM private.caller_device(false);
    RETURN private.append_trust_entries(append_trust_entries.epoch, append_trust_entries.first_seq,
                                           append_trust_entries.entries, append_trust_entries.backups);
END
$$;
ALTER FUNCTION public.start_trust_log(text[], text[]) SET SCHEMA private;
REVOKE ALL ON FUNCTION private.start_trust_log(text[], text[]) FROM PUBLIC, authenticated;
CREATE FUNCTION public.start_trust_log(entries text[], backups text[]) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    PERFORM private.caller_device(false);
    RETURN private.start_trust_log(start_trust_log.entries, start_trust_log.backups);
END
$$;
ALTER FUNCTION public.request_identity_reset(text, text, text, text) SET SCHEMA private;
REVOKE ALL ON FUNCTION private.request_identity_reset(text, text, text, text) FROM PUBLIC, authenticated;
CREATE FUNCTION public.request_identity_reset(entry text, backup text, accept text, accept_backup text) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    PERFORM private.caller_device(false);
    RETURN private.request_identity_reset(request_identity_reset.entry, request_identity_reset.backup,
                                             request_identity_reset.accept, request_identity_reset.accept_backup);
END
$$;
REVOKE ALL ON FUNCTION public.append_trust_entries(integer, bigint, text[], text[]), public.start_trust_log(text[], text[]),
    public.request_identity_reset(text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.append_trust_entries(integer, bigint, text[], text[]), public.start_trust_log(text[], text[]),
    public.request_identity_reset(text, text, text, text) TO authenticated;
