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
