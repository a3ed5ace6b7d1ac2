-- Devices, repositories and sessions, with the columns deployed clients send and read
-- (shared/spec/remote-schema.md). Stricter than the deployed schema only where that cannot
-- change what a client sends or reads.

CREATE TYPE public.device_type AS ENUM (
    'mac-desktop', 'win-desktop', 'linux-desktop', 'ios-tablet', 'ios-phone',
    'android-tablet', 'android-phone', 'web-browser'
);
CREATE TYPE public.device_role AS ENUM ('trust_root', 'trusted_executor', 'temporary_viewer');
CREATE TYPE public.repository_status AS ENUM ('active', 'archived');
CREATE TYPE public.coding_session_status AS ENUM ('active', 'paused', 'ended');

CREATE TABLE public.devices (
    id uuid PRIMARY KEY,
    user_id uuid NOT NULL,
    name text NOT NULL,
    device_type public.device_type NOT NULL,
    hostname text,
    is_active boolean NOT NULL DEFAULT true,
    last_seen_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    device_role public.device_role DEFAULT 'trusted_executor',
    public_key text,
    is_primary_trust_root boolean NOT NULL DEFAULT false,
    verified_at timestamptz,
    is_trusted boolean NOT NULL DEFAULT false,
    has_seen_trust_prompt boolean NOT NULL DEFAULT false,
    apns_token text,
    apns_environment text DEFAULT 'sandbox' CHECK (apns_environment IN ('sandbox', 'production')),
    push_enabled boolean NOT NULL DEFAULT false,
    apns_token_updated_at timestamptz,
    capabilities jsonb DEFAULT '{}'::jsonb,
    -- A web browser can never be trusted.
    CONSTRAINT devices_web_browser_never_trusted CHECK (NOT (is_trusted AND device_type = 'web-browser'))
);
CREATE INDEX devices_user_id ON public.devices (user_id);
-- At most one primary trust root per user.
CREATE UNIQUE INDEX devices_one_primary_trust_root ON public.devices (user_id) WHERE is_primary_trust_root;

CREATE TABLE public.repositories (
    id uuid PRIMARY KEY,
    user_id uuid NOT NULL,
    device_id uuid NOT NULL,
    name text NOT NULL,
    local_path text NOT NULL,
    remote_url text,
    default_branch text,
    parent_repository_id uuid REFERENCES public.repositories (id) ON DELETE SET NULL,
    is_worktree boolean NOT NULL DEFAULT false,
    worktree_branch text,
    status public.repository_status DEFAULT 'active',
    last_synced_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT repositories_device_id_local_path_key UNIQUE (device_id, local_path)
);
-- Pulls page by (updated_at, id) within one user.
CREATE INDEX repositories_user_updated ON public.repositories (user_id, updated_at, id);

CREATE TABLE public.agent_coding_sessions (
    id uuid PRIMARY KEY,
    user_id uuid NOT NULL,
    device_id uuid NOT NULL,
    repository_id uuid NOT NULL REFERENCES public.repositories (id) ON DELETE CASCADE,
    title text,
    session_pid integer,
    session_started_at timestamptz NOT NULL,
    session_ended_at timestamptz,
    status public.coding_session_status DEFAULT 'active',
    current_branch text,
    working_directory text,
    last_heartbeat_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    is_worktree boolean NOT NULL DEFAULT false,
    worktree_path text
);
CREATE INDEX agent_coding_sessions_user_updated ON public.agent_coding_sessions (user_id, updated_at, id);
CREATE INDEX agent_coding_sessions_repository ON public.agent_coding_sessions (repository_id);
CREATE INDEX agent_coding_sessions_device ON public.agent_coding_sessions (device_id);
