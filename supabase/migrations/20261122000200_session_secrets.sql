-- Session secrets sealed per recipient device (envelope v1).
--
-- The project's own schema is stricter than the deployed one (see
-- supabase/variants/deployed_session_secrets.sql) in two ways a client cannot notice when
-- sending: device_id is a uuid referencing the recipient device, so a deleted device's
-- envelopes go with it; and encrypted_secret is text, so the base64 every writer sends is
-- stored and read back as base64 instead of falling into the bytea trap.

CREATE TABLE public.agent_coding_session_secrets (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id uuid NOT NULL REFERENCES public.agent_coding_sessions (id) ON DELETE CASCADE,
    device_id uuid NOT NULL REFERENCES public.devices (id) ON DELETE CASCADE,
    ephemeral_public_key text NOT NULL DEFAULT '',
    encrypted_secret text NOT NULL CHECK (encrypted_secret ~ '^[A-Za-z0-9+/]*={0,2}$'),
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT agent_coding_session_secrets_session_device_key UNIQUE (session_id, device_id)
);
CREATE INDEX agent_coding_session_secrets_device ON public.agent_coding_session_secrets (device_id);
