-- What changed for one device, in one request: the feed a phone's pull and watch read (sync.md,
-- "Pull"; docs/sync.md, "The pull feed"), beside the desktop's sync_changes.
--
--   sync_pull_changes(device_id, since, row_limit) returns
--     server_time      the database's clock when asked: the caller's next `since` (minus an overlap)
--     repositories     the caller's rows with updated_at after `since` (every row when null), ordered by
--                      (updated_at, id); null when there are more than row_limit (page through the table)
--     sessions         the same for agent_coding_sessions
--     envelopes        the envelope rows addressed to `device_id` of the sessions listed above; null
--                      when sessions is null
--     repository_ids   {"count", "h1", "h2"} over every repository of the caller: the count, and the XOR
--     session_ids      of md5(lowercase id) bytes 0-7 and 8-15 as signed int8 (the same for sessions):
--                      equal to the caller's own, nothing was deleted
--     envelope_rows    the same over every envelope row addressed to `device_id` of the caller's sessions,
--                      of md5(session_id || ':' || device_id || ':' || ephemeral_public_key), the row hash
--                      of session_secret_digest: equal to the caller's own, no envelope changed
--     devices          the caller's device rows changed since `since` (all when null)
--     statements       md5 over the identity key and every certificate and revocation row: a change says
--                      "reload trust", nothing more
--     secret_requests  the open session_secret_requests this device made
--     approvals        approval requests changed since `since` (every pending one when null)
--
--   sync_pull_envelopes(device_id, after, before, row_limit) returns the envelope rows addressed to
--     `device_id` with session_id in (after, before), ordered by session_id, at most row_limit: the
--     listing a first pull pages through. Through the table, row-level security's check of each row's
--     session was planned as a hash of every session of the user, built again for every page (50 ms
--     a page at 100,000 sessions); here the caller is checked once and each row joins its session.
--
--   session_secret_recipient_digest(device_id, buckets) returns, per non-empty bucket of
--     md5(lowercase session_id) (as session_secret_digest), the count and XORs of the row hashes of the
--     envelope rows addressed to `device_id`: where the totals above differ, which sessions to re-read.
--
-- Read-only; SECURITY DEFINER with search_path pinned and auth.uid() asked here, like the other
-- feeds, so they read only the caller's rows. `device_id` must be one of the caller's devices.
-- A deployment without them (the deployed variant) answers 404 PGRST202 and the client pages
-- through the tables instead.
--
-- The three totals are kept, not computed at each call (a phone asks at every watch tick): in
-- pull_digests, one row per user for its repositories and for its sessions, and one per recipient
-- device for the envelope rows addressed to it, maintained by the tables' triggers as rows are
-- written (XOR is its own inverse: a row in XORs its hash in, a row out XORs it out). An envelope
-- row's recipient is always a device of the session's user (the ownership checks), so a device's
-- total is its user's. The envelope rows' hashes are computed once per row for both kept digests:
-- session_secret_digest_apply() is replaced to maintain both. The table and its functions are in
-- the schema PostgREST does not expose (`private`), nobody's to read or write (row-level security
-- without a policy, no grants); only SECURITY DEFINER functions touch it.

CREATE SCHEMA IF NOT EXISTS private;
CREATE TABLE private.pull_digests (
    kind text NOT NULL CHECK (kind IN ('repositories', 'sessions', 'envelopes')),
    -- The user (repositories, sessions), or the recipient device (envelopes).
    owner uuid NOT NULL,
    pairs bigint NOT NULL,
    h1 bigint NOT NULL,
    h2 bigint NOT NULL,
    PRIMARY KEY (kind, owner)
);
ALTER TABLE private.pull_digests ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON private.pull_digests FROM PUBLIC, anon, authenticated;

-- Repositories and sessions: the ids of rows inserted and deleted, in owner order (two writers
-- take the digest rows' locks in the same order).
CREATE FUNCTION private.pull_digest_ids() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    v_kind text := TG_ARGV[0];
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO private.pull_digests AS d (kind, owner, pairs, h1, h2)
        SELECT v_kind, n.user_id, count(*), bit_xor(n.h1), bit_xor(n.h2)
        FROM (SELECT r.user_id, ('x' || substr(m.h, 1, 16))::bit(64)::bigint AS h1, ('x' || substr(m.h, 17, 16))::bit(64)::bigint AS h2
              FROM new_rows r CROSS JOIN LATERAL (SELECT md5(r.id::text) AS h) m) n
        GROUP BY n.user_id ORDER BY n.user_id
        ON CONFLICT (kind, owner) DO UPDATE SET pairs = d.pairs + excluded.pairs, h1 = d.h1 # excluded.h1, h2 = d.h2 # excluded.h2;
    ELSE
        INSERT INTO private.pull_digests AS d (kind, owner, pairs, h1, h2)
        SELECT v_kind, n.user_id, -count(*), bit_xor(n.h1), bit_xor(n.h2)
        FROM (SELECT r.user_id, ('x' || substr(m.h, 1, 16))::bit(64)::bigint AS h1, ('x' || substr(m.h, 17, 16))::bit(64)::bigint AS h2
              FROM old_rows r CROSS JOIN LATERAL (SELECT md5(r.id::text) AS h) m) n
        GROUP BY n.user_id ORDER BY n.user_id
        ON CONFLICT (kind, owner) DO UPDATE SET pairs = d.pairs + excluded.pairs, h1 = d.h1 # excluded.h1, h2 = d.h2 # excluded.h2;
        DELETE FROM private.pull_digests d WHERE d.kind = v_kind AND d.pairs <= 0 AND d.owner IN (SELECT user_id FROM old_rows);
    END IF;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION private.pull_digest_ids() FROM PUBLIC;

-- A row whose id or user changes (the service role only: users cannot move rows): out, then in.
CREATE FUNCTION private.pull_digest_moved() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    v_kind text := TG_ARGV[0];
    v_old text := md5(OLD.id::text);
    v_new text := md5(NEW.id::text);
BEGIN
    INSERT INTO private.pull_digests AS d (kind, owner, pairs, h1, h2)
    VALUES (v_kind, OLD.user_id, -1, ('x' || substr(v_old, 1, 16))::bit(64)::bigint, ('x' || substr(v_old, 17, 16))::bit(64)::bigint)
    ON CONFLICT (kind, owner) DO UPDATE SET pairs = d.pairs + excluded.pairs, h1 = d.h1 # excluded.h1, h2 = d.h2 # excluded.h2;
    INSERT INTO private.pull_digests AS d (kind, owner, pairs, h1, h2)
    VALUES (v_kind, NEW.user_id, 1, ('x' || substr(v_new, 1, 16))::bit(64)::bigint, ('x' || substr(v_new, 17, 16))::bit(64)::bigint)
    ON CONFLICT (kind, owner) DO UPDATE SET pairs = d.pairs + excluded.pairs, h1 = d.h1 # excluded.h1, h2 = d.h2 # excluded.h2;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION private.pull_digest_moved() FROM PUBLIC;

CREATE TRIGGER repositories_pull_digest_insert AFTER INSERT ON public.repositories
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.pull_digest_ids('repositories');
CREATE TRIGGER repositories_pull_digest_delete AFTER DELETE ON public.repositories
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION private.pull_digest_ids('repositories');
CREATE TRIGGER repositories_pull_digest_moved AFTER UPDATE OF id, user_id ON public.repositories
    FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id OR OLD.user_id IS DISTINCT FROM NEW.user_id)
    EXECUTE FUNCTION private.pull_digest_moved('repositories');
CREATE TRIGGER sessions_pull_digest_insert AFTER INSERT ON public.agent_coding_sessions
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.pull_digest_ids('sessions');
CREATE TRIGGER sessions_pull_digest_delete AFTER DELETE ON public.agent_coding_sessions
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION private.pull_digest_ids('sessions');
CREATE TRIGGER sessions_pull_digest_moved AFTER UPDATE OF id, user_id ON public.agent_coding_sessions
    FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id OR OLD.user_id IS DISTINCT FROM NEW.user_id)
    EXECUTE FUNCTION private.pull_digest_moved('sessions');

-- The envelope rows: each row hashed once, for the per-session digest (as before) and the
-- per-recipient one, in one statement each way, in session order then device order.
CREATE OR REPLACE FUNCTION public.session_secret_digest_apply() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    -- A statement trigger sees only the transition tables of its event: one statement per event,
    -- each hashing every row once for both digests.
    IF TG_OP = 'INSERT' THEN
        WITH hashed AS MATERIALIZED (
            SELECT r.session_id, r.device_id, r.delta,
                   ('x' || substr(m.h, 1, 16))::bit(64)::bigint AS h1, ('x' || substr(m.h, 17, 16))::bit(64)::bigint AS h2
            FROM (SELECT w.session_id, w.device_id, w.ephemeral_public_key, 1 AS delta FROM new_rows w) r
            CROSS JOIN LATERAL (SELECT md5(r.session_id::text || ':' || r.device_id::text || ':' || r.ephemeral_public_key) AS h) m
        ), by_session AS (
            INSERT INTO public.agent_coding_session_secret_digests AS d (session_id, pairs, h1, h2)
            SELECT session_id, sum(delta)::integer, bit_xor(h1), bit_xor(h2) FROM hashed GROUP BY session_id ORDER BY session_id
            ON CONFLICT (session_id) DO UPDATE SET pairs = d.pairs + excluded.pairs, h1 = d.h1 # excluded.h1, h2 = d.h2 # excluded.h2
        )
        INSERT INTO private.pull_digests AS d (kind, owner, pairs, h1, h2)
        SELECT 'envelopes', device_id, sum(delta), bit_xor(h1), bit_xor(h2) FROM hashed GROUP BY device_id ORDER BY device_id
        ON CONFLICT (kind, owner) DO UPDATE SET pairs = d.pairs + excluded.pairs, h1 = d.h1 # excluded.h1, h2 = d.h2 # excluded.h2;
    ELSIF TG_OP = 'DELETE' THEN
        WITH hashed AS MATERIALIZED (
            SELECT r.session_id, r.device_id, r.delta,
                   ('x' || substr(m.h, 1, 16))::bit(64)::bigint AS h1, ('x' || substr(m.h, 17, 16))::bit(64)::bigint AS h2
            FROM (SELECT o.session_id, o.device_id, o.ephemeral_public_key, -1 AS delta FROM old_rows o) r
            CROSS JOIN LATERAL (SELECT md5(r.session_id::text || ':' || r.device_id::text || ':' || r.ephemeral_public_key) AS h) m
        ), by_session AS (
            INSERT INTO public.agent_coding_session_secret_digests AS d (session_id, pairs, h1, h2)
            SELECT session_id, sum(delta)::integer, bit_xor(h1), bit_xor(h2) FROM hashed GROUP BY session_id ORDER BY session_id
            ON CONFLICT (session_id) DO UPDATE SET pairs = d.pairs + excluded.pairs, h1 = d.h1 # excluded.h1, h2 = d.h2 # excluded.h2
        )
        INSERT INTO private.pull_digests AS d (kind, owner, pairs, h1, h2)
        SELECT 'envelopes', device_id, sum(delta), bit_xor(h1), bit_xor(h2) FROM hashed GROUP BY device_id ORDER BY device_id
        ON CONFLICT (kind, owner) DO UPDATE SET pairs = d.pairs + excluded.pairs, h1 = d.h1 # excluded.h1, h2 = d.h2 # excluded.h2;
    ELSE
        WITH hashed AS MATERIALIZED (
            SELECT r.session_id, r.device_id, r.delta,
                   ('x' || substr(m.h, 1, 16))::bit(64)::bigint AS h1, ('x' || substr(m.h, 17, 16))::bit(64)::bigint AS h2
            FROM (SELECT o.session_id, o.device_id, o.ephemeral_public_key, -1 AS delta FROM old_rows o
                  UNION ALL SELECT w.session_id, w.device_id, w.ephemeral_public_key, 1 FROM new_rows w) r
            CROSS JOIN LATERAL (SELECT md5(r.session_id::text || ':' || r.device_id::text || ':' || r.ephemeral_public_key) AS h) m
        ), by_session AS (
            INSERT INTO public.agent_coding_session_secret_digests AS d (session_id, pairs, h1, h2)
            SELECT session_id, sum(delta)::integer, bit_xor(h1), bit_xor(h2) FROM hashed GROUP BY session_id ORDER BY session_id
            ON CONFLICT (session_id) DO UPDATE SET pairs = d.pairs + excluded.pairs, h1 = d.h1 # excluded.h1, h2 = d.h2 # excluded.h2
        )
        INSERT INTO private.pull_digests AS d (kind, owner, pairs, h1, h2)
        SELECT 'envelopes', device_id, sum(delta), bit_xor(h1), bit_xor(h2) FROM hashed GROUP BY device_id ORDER BY device_id
        ON CONFLICT (kind, owner) DO UPDATE SET pairs = d.pairs + excluded.pairs, h1 = d.h1 # excluded.h1, h2 = d.h2 # excluded.h2;
    END IF;
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM public.agent_coding_session_secret_digests d
        WHERE d.pairs <= 0 AND d.session_id IN (SELECT session_id FROM old_rows);
        DELETE FROM private.pull_digests d
        WHERE d.kind = 'envelopes' AND d.pairs <= 0 AND d.owner IN (SELECT device_id FROM old_rows);
    END IF;
    RETURN NULL;
END
$$;

-- The rows written before the triggers.
INSERT INTO private.pull_digests (kind, owner, pairs, h1, h2)
SELECT 'repositories', r.user_id, count(*), bit_xor(('x' || substr(m.h, 1, 16))::bit(64)::bigint), bit_xor(('x' || substr(m.h, 17, 16))::bit(64)::bigint)
FROM public.repositories r CROSS JOIN LATERAL (SELECT md5(r.id::text) AS h) m GROUP BY r.user_id;
INSERT INTO private.pull_digests (kind, owner, pairs, h1, h2)
SELECT 'sessions', c.user_id, count(*), bit_xor(('x' || substr(m.h, 1, 16))::bit(64)::bigint), bit_xor(('x' || substr(m.h, 17, 16))::bit(64)::bigint)
FROM public.agent_coding_sessions c CROSS JOIN LATERAL (SELECT md5(c.id::text) AS h) m GROUP BY c.user_id;
INSERT INTO private.pull_digests (kind, owner, pairs, h1, h2)
SELECT 'envelopes', s.device_id, count(*), bit_xor(('x' || substr(m.h, 1, 16))::bit(64)::bigint), bit_xor(('x' || substr(m.h, 17, 16))::bit(64)::bigint)
FROM public.agent_coding_session_secrets s
CROSS JOIN LATERAL (SELECT md5(s.session_id::text || ':' || s.device_id::text || ':' || s.ephemeral_public_key) AS h) m
GROUP BY s.device_id;

-- One kept digest as the feed answers it: {"count", "h1", "h2"}, zeros when there is none.
CREATE FUNCTION private.pull_digest_of(v_kind text, v_owner uuid) RETURNS jsonb
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = '' AS $$
    SELECT coalesce((SELECT jsonb_build_object('count', d.pairs, 'h1', d.h1, 'h2', d.h2) FROM private.pull_digests d
                     WHERE d.kind = v_kind AND d.owner = v_owner),
                    jsonb_build_object('count', 0, 'h1', 0, 'h2', 0))
$$;
REVOKE ALL ON FUNCTION private.pull_digest_of(text, uuid) FROM PUBLIC;

CREATE FUNCTION public.sync_pull_changes(device_id uuid, since timestamptz DEFAULT NULL, row_limit integer DEFAULT 500)
    RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    caller uuid := auth.uid();
    v_device uuid := sync_pull_changes.device_id;
    v_since timestamptz := sync_pull_changes.since;
    v_limit integer := sync_pull_changes.row_limit;
    v_repositories jsonb;
    v_sessions jsonb;
    v_envelopes jsonb;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'sync_pull_changes needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF v_limit IS NULL OR v_limit < 0 OR v_limit > 5000 THEN
        RAISE EXCEPTION 'row_limit must be from 0 to 5000' USING ERRCODE = '22023';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM public.devices d WHERE d.id = v_device AND d.user_id = caller) THEN
        RAISE EXCEPTION 'sync_pull_changes: the device is not one of the caller''s' USING ERRCODE = '42501';
    END IF;

    SELECT CASE WHEN count(*) > v_limit THEN NULL ELSE coalesce(jsonb_agg(to_jsonb(r) ORDER BY r.updated_at, r.id), '[]'::jsonb) END
      INTO v_repositories
      FROM (SELECT * FROM public.repositories x WHERE x.user_id = caller AND (v_since IS NULL OR x.updated_at > v_since)
            ORDER BY x.updated_at, x.id LIMIT v_limit + 1) r;
    SELECT CASE WHEN count(*) > v_limit THEN NULL ELSE coalesce(jsonb_agg(to_jsonb(r) ORDER BY r.updated_at, r.id), '[]'::jsonb) END
      INTO v_sessions
      FROM (SELECT * FROM public.agent_coding_sessions x WHERE x.user_id = caller AND (v_since IS NULL OR x.updated_at > v_since)
            ORDER BY x.updated_at, x.id LIMIT v_limit + 1) r;
    IF v_sessions IS NOT NULL THEN
        SELECT coalesce(jsonb_agg(jsonb_build_object('session_id', s.session_id, 'device_id', s.device_id,
                                                     'ephemeral_public_key', s.ephemeral_public_key,
                                                     'encrypted_secret', s.encrypted_secret) ORDER BY s.session_id), '[]'::jsonb)
          INTO v_envelopes
          FROM public.agent_coding_session_secrets s
          JOIN public.agent_coding_sessions c ON c.id = s.session_id
         WHERE s.device_id = v_device AND c.user_id = caller
           AND s.session_id IN (SELECT (e ->> 'id')::uuid FROM jsonb_array_elements(v_sessions) e);
    END IF;

    RETURN jsonb_build_object(
        'server_time', now(),
        'repositories', v_repositories,
        'sessions', v_sessions,
        'envelopes', v_envelopes,
        'repository_ids', private.pull_digest_of('repositories', caller),
        'session_ids', private.pull_digest_of('sessions', caller),
        'envelope_rows', private.pull_digest_of('envelopes', v_device),
        'devices', coalesce((SELECT jsonb_agg(to_jsonb(d) ORDER BY d.updated_at, d.id) FROM public.devices d
                             WHERE d.user_id = caller AND (v_since IS NULL OR d.updated_at > v_since)), '[]'::jsonb),
        'statements', (SELECT md5(coalesce((SELECT k.public_key FROM public.user_identity_keys k WHERE k.user_id = caller), '') || '|' ||
                                  coalesce(string_agg(s.kind || ':' || s.device_id::text || ':' || s.signature, ',' ORDER BY s.kind, s.device_id), ''))
                       FROM (SELECT 'c' AS kind, c.device_id, c.signature FROM public.device_certificates c WHERE c.user_id = caller
                             UNION ALL
                             SELECT 'r', v.device_id, v.signature FROM public.device_revocations v WHERE v.user_id = caller) s),
        'secret_requests', coalesce((SELECT jsonb_agg(to_jsonb(r) ORDER BY r.created_at, r.id) FROM public.session_secret_requests r
                                     WHERE r.user_id = caller AND r.requester_device_id = v_device AND r.fulfilled_at IS NULL), '[]'::jsonb),
        'approvals', coalesce((SELECT jsonb_agg(to_jsonb(a) ORDER BY a.updated_at, a.id) FROM public.approval_requests a
                               WHERE a.user_id = caller AND (CASE WHEN v_since IS NULL THEN a.status = 'pending' ELSE a.updated_at > v_since END)),
                              '[]'::jsonb)
    );
END
$$;

REVOKE ALL ON FUNCTION public.sync_pull_changes(uuid, timestamptz, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.sync_pull_changes(uuid, timestamptz, integer) TO authenticated, service_role;

-- The recipient's rows in session order: the index the listing and the per-device digest walk.
DROP INDEX public.agent_coding_session_secrets_device;
CREATE INDEX agent_coding_session_secrets_device ON public.agent_coding_session_secrets (device_id, session_id);

CREATE FUNCTION public.sync_pull_envelopes(device_id uuid, after uuid DEFAULT NULL, before uuid DEFAULT NULL,
                                           row_limit integer DEFAULT 1000)
    RETURNS json
    -- A custom plan at every call: a generic one (chosen after five calls on a connection) cannot
    -- start the index scans at `after`, and read every row of the device for each page.
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    caller uuid := auth.uid();
    v_device uuid := sync_pull_envelopes.device_id;
    v_after uuid := sync_pull_envelopes.after;
    v_before uuid := sync_pull_envelopes.before;
    v_limit integer := sync_pull_envelopes.row_limit;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'sync_pull_envelopes needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF v_limit IS NULL OR v_limit < 1 OR v_limit > 5000 THEN
        RAISE EXCEPTION 'row_limit must be from 1 to 5000' USING ERRCODE = '22023';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM public.devices d WHERE d.id = v_device AND d.user_id = caller) THEN
        RAISE EXCEPTION 'sync_pull_envelopes: the device is not one of the caller''s' USING ERRCODE = '42501';
    END IF;
    -- The bounds are on both sides of the join, so that each index scan starts at `after`.
    RETURN coalesce((
        SELECT json_agg(json_build_object('session_id', r.session_id, 'device_id', r.device_id,
                                          'ephemeral_public_key', r.ephemeral_public_key,
                                          'encrypted_secret', r.encrypted_secret) ORDER BY r.session_id)
        FROM (SELECT s.session_id, s.device_id, s.ephemeral_public_key, s.encrypted_secret
              FROM public.agent_coding_session_secrets s
              JOIN public.agent_coding_sessions c ON c.id = s.session_id
              WHERE s.device_id = v_device AND c.user_id = caller
                AND (v_after IS NULL OR (s.session_id > v_after AND c.id > v_after))
                AND (v_before IS NULL OR (s.session_id < v_before AND c.id < v_before))
              ORDER BY s.session_id
              LIMIT v_limit) r), '[]'::json);
END
$$;

REVOKE ALL ON FUNCTION public.sync_pull_envelopes(uuid, uuid, uuid, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.sync_pull_envelopes(uuid, uuid, uuid, integer) TO authenticated, service_role;

CREATE FUNCTION public.session_secret_recipient_digest(device_id uuid, buckets integer)
    RETURNS TABLE (bucket integer, pairs integer, h1 bigint, h2 bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_device uuid := session_secret_recipient_digest.device_id;
    v_buckets integer := session_secret_recipient_digest.buckets;
BEGIN
    IF caller IS NULL THEN
        RAISE EXCEPTION 'session_secret_recipient_digest needs a signed-in user' USING ERRCODE = '42501';
    END IF;
    IF v_buckets IS NULL OR v_buckets < 1 OR v_buckets > 65536 OR (v_buckets & (v_buckets - 1)) <> 0 THEN
        RAISE EXCEPTION 'buckets must be a power of two from 1 to 65536' USING ERRCODE = '22023';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM public.devices d WHERE d.id = v_device AND d.user_id = caller) THEN
        RAISE EXCEPTION 'session_secret_recipient_digest: the device is not one of the caller''s' USING ERRCODE = '42501';
    END IF;
    RETURN QUERY
        SELECT ('x' || substr(md5(s.session_id::text), 1, 4))::bit(16)::integer % v_buckets AS b,
               count(*)::integer,
               bit_xor(('x' || substr(m.h, 1, 16))::bit(64)::bigint), bit_xor(('x' || substr(m.h, 17, 16))::bit(64)::bigint)
        FROM public.agent_coding_session_secrets s
        JOIN public.agent_coding_sessions c ON c.id = s.session_id
        CROSS JOIN LATERAL (SELECT md5(s.session_id::text || ':' || s.device_id::text || ':' || s.ephemeral_public_key) AS h) m
        WHERE s.device_id = v_device AND c.user_id = caller
        GROUP BY b
        ORDER BY b;
END
$$;

REVOKE ALL ON FUNCTION public.session_secret_recipient_digest(uuid, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.session_secret_recipient_digest(uuid, integer) TO authenticated, service_role;
