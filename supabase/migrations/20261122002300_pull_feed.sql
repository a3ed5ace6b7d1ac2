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
--   session_secret_recipient_digest(device_id, buckets) returns, per non-empty bucket of
--     md5(lowercase session_id) (as session_secret_digest), the count and XORs of the row hashes of the
--     envelope rows addressed to `device_id`: where the totals above differ, which sessions to re-read.
--
-- Read-only; SECURITY DEFINER with search_path pinned and auth.uid() asked here, like the other
-- feeds, so they read only the caller's rows. `device_id` must be one of the caller's devices.
-- A deployment without them (the deployed variant) answers 404 PGRST202 and the client pages
-- through the tables instead.

CREATE FUNCTION public.sync_pull_changes(device_id uuid, since timestamptz DEFAULT NULL, row_limit integer DEFAULT 500)
    RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
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
        'repository_ids', (SELECT jsonb_build_object('count', count(*),
                                   'h1', coalesce(bit_xor(('x' || substr(m.h, 1, 16))::bit(64)::bigint), 0),
                                   'h2', coalesce(bit_xor(('x' || substr(m.h, 17, 16))::bit(64)::bigint), 0))
                             FROM public.repositories r CROSS JOIN LATERAL (SELECT md5(r.id::text) AS h) m
                            WHERE r.user_id = caller),
        'session_ids', (SELECT jsonb_build_object('count', count(*),
                                'h1', coalesce(bit_xor(('x' || substr(m.h, 1, 16))::bit(64)::bigint), 0),
                                'h2', coalesce(bit_xor(('x' || substr(m.h, 17, 16))::bit(64)::bigint), 0))
                          FROM public.agent_coding_sessions c CROSS JOIN LATERAL (SELECT md5(c.id::text) AS h) m
                         WHERE c.user_id = caller),
        'envelope_rows', (SELECT jsonb_build_object('count', count(*),
                                  'h1', coalesce(bit_xor(('x' || substr(m.h, 1, 16))::bit(64)::bigint), 0),
                                  'h2', coalesce(bit_xor(('x' || substr(m.h, 17, 16))::bit(64)::bigint), 0))
                            FROM public.agent_coding_session_secrets s
                            JOIN public.agent_coding_sessions c ON c.id = s.session_id
                            CROSS JOIN LATERAL (SELECT md5(s.session_id::text || ':' || s.device_id::text || ':' || s.ephemeral_public_key) AS h) m
                           WHERE s.device_id = v_device AND c.user_id = caller),
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
