-- What a Supabase project provides and plain PostgreSQL lacks: the API roles, the auth schema
-- with auth.uid(), and a minimal user store for the test server's /auth/v1 endpoints.
-- Applied only to the throwaway test cluster; NEVER to a real Supabase project.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'anon') THEN
        CREATE ROLE anon NOLOGIN NOINHERIT;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'authenticated') THEN
        CREATE ROLE authenticated NOLOGIN NOINHERIT;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'service_role') THEN
        CREATE ROLE service_role NOLOGIN NOINHERIT BYPASSRLS;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'authenticator') THEN
        CREATE ROLE authenticator LOGIN NOINHERIT;
    END IF;
    -- The /auth/v1 endpoints connect as this role; the API roles cannot touch auth.* tables.
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'supabase_auth_admin') THEN
        CREATE ROLE supabase_auth_admin LOGIN NOINHERIT;
    END IF;
END
$$;
GRANT anon, authenticated, service_role TO authenticator;
-- A statement that runs away is cancelled even if a request could reset its own timeout.
ALTER ROLE authenticator SET statement_timeout = '15s';
ALTER ROLE supabase_auth_admin SET statement_timeout = '10s';

CREATE EXTENSION IF NOT EXISTS pgcrypto;

CREATE SCHEMA IF NOT EXISTS auth;

-- Supabase's auth.uid(): the JWT's sub, from the claims PostgREST sets per request.
CREATE OR REPLACE FUNCTION auth.uid() RETURNS uuid LANGUAGE sql STABLE AS $$
    SELECT nullif(current_setting('request.jwt.claims', true)::json ->> 'sub', '')::uuid
$$;
CREATE OR REPLACE FUNCTION auth.role() RETURNS text LANGUAGE sql STABLE AS $$
    SELECT current_setting('request.jwt.claims', true)::json ->> 'role'
$$;
CREATE OR REPLACE FUNCTION auth.jwt() RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT coalesce(current_setting('request.jwt.claims', true), '{}')::jsonb
$$;

CREATE TABLE IF NOT EXISTS auth.users (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    email text NOT NULL UNIQUE,
    encrypted_password text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS auth.refresh_tokens (
    token text PRIMARY KEY,
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    revoked boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- The session a refresh token belongs to (GoTrue's session_id claim): kept across refreshes, so
-- that logout with scope "others" ends every session but the caller's.
ALTER TABLE auth.refresh_tokens ADD COLUMN IF NOT EXISTS session_id uuid;
-- When the sign-in a refresh token descends from happened (Unix seconds): refreshed tokens carry
-- it in their amr claim, as GoTrue's do.
ALTER TABLE auth.refresh_tokens ADD COLUMN IF NOT EXISTS signed_in_at bigint;

-- How that sign-in happened (GoTrue's amr method: `password`, `magiclink`, `otp`, `recovery`...):
-- refreshed tokens name it too.
ALTER TABLE auth.refresh_tokens ADD COLUMN IF NOT EXISTS sign_in_method text;
-- One-time sign-in tokens (magic links, email codes, recovery and invite links), as GoTrue's
-- admin/generate_link issues them and /verify spends them: only their SHA-256 (hex) is kept.
CREATE TABLE IF NOT EXISTS auth.one_time_tokens (
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    token_hash text NOT NULL,
    token_type text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, token_hash)
);

-- Sessions, as GoTrue keeps them: one per sign-in, kept across refreshes (the JWT's session_id).
-- Deleting one ends it: its refresh tokens go with it (a refresh then fails), as on Supabase,
-- where the trust log's revocations end a revoked device's sessions this way.
CREATE TABLE IF NOT EXISTS auth.sessions (
    id uuid PRIMARY KEY,
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now()
);
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'refresh_tokens_session_id_fkey') THEN
        DELETE FROM auth.refresh_tokens r WHERE r.session_id IS NULL
            OR NOT EXISTS (SELECT 1 FROM auth.sessions s WHERE s.id = r.session_id);
        ALTER TABLE auth.refresh_tokens ADD CONSTRAINT refresh_tokens_session_id_fkey
            FOREIGN KEY (session_id) REFERENCES auth.sessions (id) ON DELETE CASCADE;
    END IF;
END
$$;

-- refresh_tokens.token holds the SHA-256 (hex) of each token, never the token itself.
GRANT USAGE ON SCHEMA auth TO anon, authenticated, service_role, authenticator, supabase_auth_admin;
GRANT EXECUTE ON FUNCTION auth.uid(), auth.role(), auth.jwt() TO anon, authenticated, service_role;
REVOKE ALL ON auth.users, auth.refresh_tokens, auth.sessions, auth.one_time_tokens
    FROM PUBLIC, anon, authenticated, service_role, authenticator;
GRANT SELECT, INSERT, UPDATE ON auth.users, auth.refresh_tokens TO supabase_auth_admin;
GRANT SELECT, INSERT, DELETE ON auth.sessions TO supabase_auth_admin;
GRANT SELECT, INSERT, UPDATE, DELETE ON auth.one_time_tokens TO supabase_auth_admin;

-- Supabase's default privileges: every table, sequence and function a migration creates in
-- public is granted to anon, authenticated and service_role in full. The migrations must narrow
-- them (a column grant beside a table-level one restricts nothing), so the test cluster grants
-- them too.
ALTER DEFAULT PRIVILEGES FOR ROLE postgres IN SCHEMA public GRANT ALL ON TABLES TO anon, authenticated, service_role;
ALTER DEFAULT PRIVILEGES FOR ROLE postgres IN SCHEMA public GRANT ALL ON SEQUENCES TO anon, authenticated, service_role;
ALTER DEFAULT PRIVILEGES FOR ROLE postgres IN SCHEMA public GRANT ALL ON FUNCTIONS TO anon, authenticated, service_role;
