-- Device trust the client verifies (docs/trust.md): the user's identity key, device
-- certificates and revocations signed by it, and pairing requests.
--
-- The server stores these rows and cannot forge them: every client verifies each certificate
-- and revocation against the identity key it pinned, and each pairing request's MAC against a
-- secret the server never saw. So the column checks here are loose on purpose (lengths and
-- shapes only): a forged or damaged row must reach the client, which refuses and reports it.
--
-- Row-level security: a user reads and writes only rows with their own user_id, and a
-- certificate may name only one of the user's own devices. The identity key is insert-only
-- (its primary key refuses a second one with 23505; no UPDATE or DELETE is granted), and a
-- revocation cannot be deleted by a user. Applied to both schema variants: the tables are new,
-- and nothing else changes.

CREATE TABLE public.user_identity_keys (
    user_id uuid PRIMARY KEY,
    public_key text NOT NULL CHECK (length(public_key) BETWEEN 1 AND 100),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE public.device_certificates (
    device_id uuid PRIMARY KEY REFERENCES public.devices (id) ON DELETE CASCADE,
    user_id uuid NOT NULL,
    body text NOT NULL CHECK (length(body) BETWEEN 1 AND 2048),
    signature text NOT NULL CHECK (length(signature) BETWEEN 1 AND 200),
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX device_certificates_user ON public.device_certificates (user_id);

CREATE TABLE public.device_revocations (
    device_id uuid PRIMARY KEY,
    user_id uuid NOT NULL,
    body text NOT NULL CHECK (length(body) BETWEEN 1 AND 2048),
    signature text NOT NULL CHECK (length(signature) BETWEEN 1 AND 200),
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX device_revocations_user ON public.device_revocations (user_id);

CREATE TABLE public.pairing_requests (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id uuid NOT NULL,
    invite_id text NOT NULL CHECK (length(invite_id) BETWEEN 1 AND 64),
    device_id uuid NOT NULL,
    x25519_public_key text NOT NULL CHECK (length(x25519_public_key) BETWEEN 1 AND 100),
    ed25519_public_key text NOT NULL CHECK (length(ed25519_public_key) BETWEEN 1 AND 100),
    mac text NOT NULL CHECK (length(mac) BETWEEN 1 AND 100),
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX pairing_requests_user ON public.pairing_requests (user_id);

ALTER TABLE public.user_identity_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.device_certificates ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.device_revocations ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.pairing_requests ENABLE ROW LEVEL SECURITY;

CREATE POLICY user_identity_keys_owner ON public.user_identity_keys FOR ALL TO authenticated
    USING (user_id = (SELECT auth.uid())) WITH CHECK (user_id = (SELECT auth.uid()));
CREATE POLICY device_certificates_owner ON public.device_certificates FOR ALL TO authenticated
    USING (user_id = (SELECT auth.uid()))
    WITH CHECK (user_id = (SELECT auth.uid()) AND public.not_anothers_device(device_id::text));
CREATE POLICY device_revocations_owner ON public.device_revocations FOR ALL TO authenticated
    USING (user_id = (SELECT auth.uid()))
    WITH CHECK (user_id = (SELECT auth.uid()) AND public.not_anothers_device(device_id::text));
CREATE POLICY pairing_requests_owner ON public.pairing_requests FOR ALL TO authenticated
    USING (user_id = (SELECT auth.uid()))
    WITH CHECK (user_id = (SELECT auth.uid()) AND public.not_anothers_device(device_id::text));

GRANT SELECT, INSERT ON public.user_identity_keys TO authenticated;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.device_certificates TO authenticated;
GRANT SELECT, INSERT, UPDATE ON public.device_revocations TO authenticated;
GRANT SELECT, INSERT, DELETE ON public.pairing_requests TO authenticated;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.user_identity_keys, public.device_certificates,
    public.device_revocations, public.pairing_requests TO service_role;
