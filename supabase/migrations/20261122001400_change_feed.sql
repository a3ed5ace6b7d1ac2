-- The change feed a watching device polls (sync.md, "Watch mode"): what changed since a cursor,
-- in one request whatever the size.
--
--   server_time      the database's clock when asked: the caller's next cursor (minus an overlap)
--   devices          the caller's device rows whose updated_at is after `since` (all when null)
--   secret_requests  the caller's open session_secret_requests rows
--   statements       MD5 over every certificate and revocation row of the caller (their device
--                    ids and signatures): a change says "reload trust", nothing more
--
-- Read-only; SECURITY DEFINER with search_path pinned and auth.uid() asked here, like the
-- envelope digest, so it reads only the caller's rows. A deployment without it (the deployed
-- variant) answers 404 PGRST202 and the client polls the tables one by one instead.

CREATE FUNCTION public.sync_changes(since timestamptz DEFAULT NULL)
    RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    caller uuid := auth.uid();
    v_since timestamptz := sync_changes.since;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'sync_changes needs a signed-in user' USING ERRCODE = '42501'; END IF;
    RETURN jsonb_build_object(
        'server_time', now(),
        'devices', coalesce((SELECT jsonb_agg(to_jsonb(d) ORDER BY d.updated_at, d.id) FROM public.devices d
                             WHERE d.user_id = caller AND (v_since IS NULL OR d.updated_at > v_since)), '[]'::jsonb),
        'secret_requests', coalesce((SELECT jsonb_agg(to_jsonb(r) ORDER BY r.created_at, r.id) FROM public.session_secret_requests r
                                     WHERE r.user_id = caller AND r.fulfilled_at IS NULL), '[]'::jsonb),
        'statements', (SELECT md5(coalesce(string_agg(s.kind || ':' || s.device_id::text || ':' || s.signature, ',' ORDER BY s.kind, s.device_id), ''))
                       FROM (SELECT 'c' AS kind, c.device_id, c.signature FROM public.device_certificates c WHERE c.user_id = caller
                             UNION ALL
                             SELECT 'r', v.device_id, v.signature FROM public.device_revocations v WHERE v.user_id = caller) s)
    );
END
$$;

REVOKE ALL ON FUNCTION public.sync_changes(timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.sync_changes(timestamptz) TO authenticated, service_role;
