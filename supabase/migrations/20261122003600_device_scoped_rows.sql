-- Device-scoped rows, round 2 (docs/trust.md, "Device credentials"): what the review of the
-- device credentials found still open to a token holder with a device of its own.
-- - A pairing request is read and deleted only by the device that asked, or by a device the
--   log certifies (the root settling joiners); a secret request is marked served only by the
--   session's own desktop, and deleted only by it or by the device that asked.
-- - `devices.apns_token` is the push path's (the service role's), not the user's other devices':
--   a device reads every column of the user's devices but that one.
-- - `anon` (no signed-in user) can do nothing in `public`.
-- - A login cannot mint devices without end: at most 20 new ones per user an hour.
-- Supabase grants anon and authenticated every privilege on what a migration creates in public
-- (its default privileges): a column grant restricts nothing beside a table-level grant, so each
-- table with column grants loses its table-level ones first. Both variants run this file.

-- Pairing requests.
DROP POLICY pairing_requests_owner ON public.pairing_requests;
CREATE POLICY pairing_requests_read ON public.pairing_requests FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid())
           AND (device_id = (SELECT private.credential_device()) OR (SELECT private.calling_device()) IS NOT NULL));
CREATE POLICY pairing_requests_insert ON public.pairing_requests FOR INSERT TO authenticated
    WITH CHECK (user_id = (SELECT auth.uid()) AND device_id = (SELECT private.credential_device()));
CREATE POLICY pairing_requests_delete ON public.pairing_requests FOR DELETE TO authenticated
    USING (user_id = (SELECT auth.uid())
           AND (device_id = (SELECT private.credential_device()) OR (SELECT private.calling_device()) IS NOT NULL));
REVOKE UPDATE ON public.pairing_requests FROM authenticated;

-- Secret requests.
DROP POLICY session_secret_requests_owner ON public.session_secret_requests;
CREATE POLICY session_secret_requests_read ON public.session_secret_requests FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()) AND (SELECT private.credential_device()) IS NOT NULL);
CREATE POLICY session_secret_requests_insert ON public.session_secret_requests FOR INSERT TO authenticated
    WITH CHECK (user_id = (SELECT auth.uid()) AND private.not_anothers_session(session_id)
                AND (requester_device_id = (SELECT private.credential_device())
                     OR EXISTS (SELECT 1 FROM public.agent_coding_sessions s WHERE s.id = session_secret_requests.session_id
                                AND s.device_id = (SELECT private.credential_device()))));
CREATE POLICY session_secret_requests_settle ON public.session_secret_requests FOR UPDATE TO authenticated
    USING (user_id = (SELECT auth.uid())
           AND EXISTS (SELECT 1 FROM public.agent_coding_sessions s WHERE s.id = session_secret_requests.session_id
                       AND s.device_id = (SELECT private.calling_device())))
    WITH CHECK (user_id = (SELECT auth.uid()));
CREATE POLICY session_secret_requests_delete ON public.session_secret_requests FOR DELETE TO authenticated
    USING (user_id = (SELECT auth.uid())
           AND (requester_device_id = (SELECT private.credential_device())
                OR EXISTS (SELECT 1 FROM public.agent_coding_sessions s WHERE s.id = session_secret_requests.session_id
                           AND s.device_id = (SELECT private.calling_device()))));
REVOKE INSERT, UPDATE ON public.session_secret_requests FROM authenticated;
GRANT INSERT (id, user_id, session_id, requester_device_id, created_at) ON public.session_secret_requests TO authenticated;
GRANT UPDATE (fulfilled_at) ON public.session_secret_requests TO authenticated;

-- Devices: the columns a device owns, and every column but the APNs token to read.
REVOKE SELECT, INSERT, UPDATE ON public.devices FROM authenticated;
GRANT INSERT (id, user_id, name, device_type, hostname, public_key, is_active, last_seen_at,
              apns_token, apns_environment, push_enabled, apns_token_updated_at, capabilities)
    ON public.devices TO authenticated;
GRANT UPDATE (id, user_id, name, device_type, hostname, public_key, is_active, last_seen_at,
              apns_token, apns_environment, push_enabled, apns_token_updated_at, capabilities)
    ON public.devices TO authenticated;
DO $$
DECLARE
    readable text;
BEGIN
    SELECT string_agg(quote_ident(c.column_name), ', ' ORDER BY c.ordinal_position) INTO readable
    FROM information_schema.columns c
    WHERE c.table_schema = 'public' AND c.table_name = 'devices' AND c.column_name <> 'apns_token';
    EXECUTE format('GRANT SELECT (%s) ON public.devices TO authenticated', readable);
END
$$;

-- anon: nothing in public, now or later.
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM anon;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM anon;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA public FROM anon;
ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON TABLES FROM anon;
ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON SEQUENCES FROM anon;
ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON FUNCTIONS FROM anon;
-- Functions that moved from public to private kept the grants they were created with.
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA private FROM anon;
REVOKE ALL ON FUNCTION private.append_trust_entries(integer, bigint, text[], text[]),
    private.start_trust_log(text[], text[]), private.request_identity_reset(text, text, text, text)
    FROM service_role;

-- At most 20 new devices per user an hour (devices the log revoked since do not count): a login
-- cannot mint devices without end, and a stolen one leaves nothing behind that outlasts the hour
-- (a cap on live devices would let it fill every place for good). Past it: 54000, hint
-- 'device-limit'. Checked where credentials are written, so register_device and every later
-- writer keep it.
CREATE FUNCTION private.device_credentials_room() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    IF NEW.ended_at IS NOT NULL THEN RETURN NEW; END IF;
    -- One new device per user at a time, so that two cannot both take the last place.
    PERFORM pg_advisory_xact_lock(hashtextextended('register_device_user:' || NEW.user_id::text, 0));
    IF (SELECT count(*) FROM private.device_credentials c
        WHERE c.user_id = NEW.user_id AND c.ended_at IS NULL AND c.registered_at > now() - interval '1 hour') >= 20 THEN
        RAISE EXCEPTION 'this account registered 20 new devices in the last hour: try again later'
            USING ERRCODE = '54000', HINT = 'device-limit';
    END IF;
    RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION private.device_credentials_room() FROM PUBLIC;
CREATE TRIGGER device_credentials_room BEFORE INSERT ON private.device_credentials
    FOR EACH ROW EXECUTE FUNCTION private.device_credentials_room();
