-- Identity recovery (recovery.md): the encrypted backup of the identity seed, one row per user.
-- The body is 0x01 || nonce || ChaCha20-Poly1305 under a key derived from the recovery key the
-- person wrote down: the server stores 61 bytes it cannot open. A user reads, inserts and
-- updates their own row; nobody but the service role deletes one. Applied to both variants.

CREATE TABLE public.identity_key_backups (
    user_id uuid PRIMARY KEY DEFAULT auth.uid(),
    -- Padded standard base64 of 61 bytes: 84 characters (readers check it is canonical).
    body text NOT NULL CHECK (length(body) = 84 AND body ~ '^[A-Za-z0-9+/]{82}==$'),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
-- updated_at moves where the project's updated_at trigger function exists (not on the deployed variant).
DO $$
BEGIN
    IF to_regprocedure('public.set_updated_at()') IS NOT NULL THEN
        CREATE TRIGGER identity_key_backups_updated_at BEFORE INSERT OR UPDATE ON public.identity_key_backups
            FOR EACH ROW EXECUTE FUNCTION public.set_updated_at();
    END IF;
END
$$;
ALTER TABLE public.identity_key_backups ENABLE ROW LEVEL SECURITY;
CREATE POLICY identity_key_backups_read ON public.identity_key_backups FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()));
CREATE POLICY identity_key_backups_insert ON public.identity_key_backups FOR INSERT TO authenticated
    WITH CHECK (user_id = (SELECT auth.uid()));
CREATE POLICY identity_key_backups_update ON public.identity_key_backups FOR UPDATE TO authenticated
    USING (user_id = (SELECT auth.uid())) WITH CHECK (user_id = (SELECT auth.uid()));
GRANT SELECT, INSERT, UPDATE ON public.identity_key_backups TO authenticated;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.identity_key_backups TO service_role;

-- The last resort (recovery.md, `trust reset`): the caller's identity and everything signed by
-- it or kept for it go, so a device of theirs can create a new identity. Every device that
-- pinned the old one then reports identityChanged until it is paired again. A stolen token can
-- do this too: it stops the user's syncs, it gives the thief nothing (no device trusts a new
-- identity it did not pair with).
CREATE FUNCTION public.reset_identity() RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    caller uuid := auth.uid();
    certificates integer;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'reset_identity needs a signed-in user' USING ERRCODE = '42501'; END IF;
    DELETE FROM public.device_certificates c WHERE c.user_id = caller;
    GET DIAGNOSTICS certificates = ROW_COUNT;
    DELETE FROM public.device_revocations r WHERE r.user_id = caller;
    DELETE FROM public.pairing_requests p WHERE p.user_id = caller;
    DELETE FROM public.identity_key_backups b WHERE b.user_id = caller;
    DELETE FROM public.user_identity_keys k WHERE k.user_id = caller;
    RETURN jsonb_build_object('certificatesRemoved', certificates);
END
$$;
REVOKE ALL ON FUNCTION public.reset_identity() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.reset_identity() TO authenticated, service_role;
