-- The envelope digest a push compares instead of listing every pair (sync.md, "Reconciliation
-- that scales"): for every non-empty bucket of the caller's envelope rows whose session belongs
-- to owner_device_id, the row count and two XORs of the rows' MD5.
--
--   bucket(session_id) = (first two bytes of MD5(lowercase session_id text), big-endian) mod buckets
--   row_hash           = MD5(session_id || ':' || device_id || ':' || ephemeral_public_key)
--   h1, h2             = XOR over the bucket's rows of row_hash bytes 0-7 and 8-15, as signed int8
--
-- SECURITY DEFINER with search_path pinned, asking auth.uid() itself: as an invoker, the
-- secrets table's row-level security added a subquery per row. It reads only the caller's rows
-- and returns nothing but counts and hashes. Each session's bucket is computed once, not once
-- per envelope.

CREATE FUNCTION public.session_secret_digest(owner_device_id uuid, buckets integer)
    RETURNS TABLE (bucket integer, pairs integer, h1 bigint, h2 bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_owner uuid := session_secret_digest.owner_device_id;
    v_buckets integer := session_secret_digest.buckets;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'session_secret_digest needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF v_buckets IS NULL OR v_buckets < 1 OR v_buckets > 65536 OR (v_buckets & (v_buckets - 1)) <> 0 THEN
        RAISE EXCEPTION 'buckets must be a power of two from 1 to 65536' USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
        WITH owned AS (
            SELECT c.id, ('x' || substr(md5(lower(c.id::text)), 1, 4))::bit(16)::integer % v_buckets AS b
            FROM public.agent_coding_sessions c
            WHERE c.user_id = caller AND c.device_id = v_owner
        )
        SELECT o.b, count(*)::integer,
               bit_xor(('x' || substr(m.h, 1, 16))::bit(64)::bigint), bit_xor(('x' || substr(m.h, 17, 16))::bit(64)::bigint)
        FROM owned o
        JOIN public.agent_coding_session_secrets s ON s.session_id = o.id
        CROSS JOIN LATERAL (SELECT md5(s.session_id::text || ':' || s.device_id::text || ':' || s.ephemeral_public_key) AS h) m
        GROUP BY o.b
        ORDER BY o.b;
END
$$;

REVOKE ALL ON FUNCTION public.session_secret_digest(uuid, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.session_secret_digest(uuid, integer) TO authenticated, service_role;
