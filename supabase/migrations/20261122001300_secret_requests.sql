-- On-demand secret requests (coordination.md): a phone whose pull finds a session without an
-- envelope for itself inserts one row per such session; the desktop that owns the session seals
-- the envelope under its recipient and trust policy and marks the row fulfilled. Deployed phones
-- ask over a message channel (um.secret.request.v1); here the request is a row.
--
-- One open request per (session, requester): a partial unique index refuses a duplicate with
-- 23505, which the client counts as "already asked". Row-level security: a user reads and writes
-- only rows with their own user_id, naming only their own session and device. A requester may
-- insert and delete; anyone of the user's devices may set fulfilled_at (the owning desktop does).
-- Applied to both schema variants: the table is new, and nothing else changes.

CREATE TABLE public.session_secret_requests (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id uuid NOT NULL,
    session_id uuid NOT NULL REFERENCES public.agent_coding_sessions (id) ON DELETE CASCADE,
    requester_device_id uuid NOT NULL REFERENCES public.devices (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    fulfilled_at timestamptz
);
CREATE UNIQUE INDEX session_secret_requests_open
    ON public.session_secret_requests (session_id, requester_device_id) WHERE fulfilled_at IS NULL;
CREATE INDEX session_secret_requests_user_open ON public.session_secret_requests (user_id) WHERE fulfilled_at IS NULL;

ALTER TABLE public.session_secret_requests ENABLE ROW LEVEL SECURITY;
CREATE POLICY session_secret_requests_owner ON public.session_secret_requests FOR ALL TO authenticated
    USING (user_id = (SELECT auth.uid()))
    WITH CHECK (user_id = (SELECT auth.uid())
                AND public.not_anothers_device(requester_device_id::text)
                AND public.not_anothers_session(session_id));

GRANT SELECT, DELETE ON public.session_secret_requests TO authenticated;
GRANT INSERT (id, user_id, session_id, requester_device_id, created_at) ON public.session_secret_requests TO authenticated;
GRANT UPDATE (fulfilled_at) ON public.session_secret_requests TO authenticated;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.session_secret_requests TO service_role;
