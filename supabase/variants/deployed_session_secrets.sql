-- The secrets table exactly as deployed databases have it, for the integration tests:
-- device_id is text with no foreign key, and encrypted_secret is bytea, into which writers send
-- base64 text (the bytea trap: it reads back as \x + hex of that text). Applied instead of
-- migrations/20261122000200_session_secrets.sql, and without the updated_at triggers.

CREATE TABLE public.agent_coding_session_secrets (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id uuid NOT NULL REFERENCES public.agent_coding_sessions (id) ON DELETE CASCADE,
    device_id text NOT NULL,
    ephemeral_public_key text NOT NULL DEFAULT '',
    encrypted_secret bytea NOT NULL,
    created_at timestamptz DEFAULT now(),
    UNIQUE (session_id, device_id)
);
