-- The envelope digest kept per session instead of hashed at every call (issue 14).
--
-- session_secret_digest (20261122001100) hashed every envelope row of the owner's sessions at
-- each push: ~0.4 s of PostgreSQL time for 100,000 rows, paid by a push that changes nothing.
-- Each session's part of the digest is now kept in a table the secrets table's statement
-- triggers maintain as rows are written, so the function reads one row per session:
--
--   agent_coding_session_secret_digests(session_id, pairs, h1, h2)
--     pairs  = the session's envelope rows
--     h1, h2 = XOR over those rows of row_hash bytes 0-7 and 8-15 (as before), signed int8
--
-- XOR is its own inverse, so an inserted row XORs its hash in, a deleted row XORs it out, and an
-- updated row does both. The function's result is unchanged, byte for byte.
--
-- The table is nobody's to read or write: row-level security with no policy, no grants. Only
-- the SECURITY DEFINER trigger function writes it and only session_secret_digest reads it.
-- Each trigger applies its changes in session order, so two writers that touch the same
-- sessions take the digest rows' locks in the same order and cannot deadlock on them. A
-- session's rows go when the session goes (its envelopes cascade, the DELETE trigger brings the
-- count to zero, the row is removed).

CREATE TABLE public.agent_coding_session_secret_digests (
    session_id uuid PRIMARY KEY,
    pairs integer NOT NULL,
    h1 bigint NOT NULL,
    h2 bigint NOT NULL
);
ALTER TABLE public.agent_coding_session_secret_digests ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON public.agent_coding_session_secret_digests FROM PUBLIC, anon, authenticated;

-- Applies (session_id, pairs delta, h1, h2) changes, in session order.
CREATE FUNCTION public.session_secret_digest_apply() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO public.agent_coding_session_secret_digests AS d (session_id, pairs, h1, h2)
        SELECT n.session_id, count(*)::integer, bit_xor(n.h1), bit_xor(n.h2)
        FROM (SELECT r.session_id, ('x' || substr(m.h, 1, 16))::bit(64)::bigint AS h1, ('x' || substr(m.h, 17, 16))::bit(64)::bigint AS h2
              FROM new_rows r CROSS JOIN LATERAL (SELECT md5(r.session_id::text || ':' || r.device_id::text || ':' || r.ephemeral_public_key) AS h) m) n
        GROUP BY n.session_id ORDER BY n.session_id
        ON CONFLICT (session_id) DO UPDATE SET pairs = d.pairs + excluded.pairs, h1 = d.h1 # excluded.h1, h2 = d.h2 # excluded.h2;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO public.agent_coding_session_secret_digests AS d (session_id, pairs, h1, h2)
        SELECT n.session_id, -count(*)::integer, bit_xor(n.h1), bit_xor(n.h2)
        FROM (SELECT r.session_id, ('x' || substr(m.h, 1, 16))::bit(64)::bigint AS h1, ('x' || substr(m.h, 17, 16))::bit(64)::bigint AS h2
              FROM old_rows r CROSS JOIN LATERAL (SELECT md5(r.session_id::text || ':' || r.device_id::text || ':' || r.ephemeral_public_key) AS h) m) n
        GROUP BY n.session_id ORDER BY n.session_id
        ON CONFLICT (session_id) DO UPDATE SET pairs = d.pairs + excluded.pairs, h1 = d.h1 # excluded.h1, h2 = d.h2 # excluded.h2;
        DELETE FROM public.agent_coding_session_secret_digests d
        WHERE d.pairs <= 0 AND d.session_id IN (SELECT session_id FROM old_rows);
    ELSE
        INSERT INTO public.agent_coding_session_secret_digests AS d (session_id, pairs, h1, h2)
        SELECT n.session_id, sum(n.delta)::integer, bit_xor(n.h1), bit_xor(n.h2)
        FROM (SELECT r.session_id, r.delta, ('x' || substr(m.h, 1, 16))::bit(64)::bigint AS h1, ('x' || substr(m.h, 17, 16))::bit(64)::bigint AS h2
              FROM (SELECT o.session_id, o.device_id, o.ephemeral_public_key, -1 AS delta FROM old_rows o
                    UNION ALL
                    SELECT w.session_id, w.device_id, w.ephemeral_public_key, 1 FROM new_rows w) r
              CROSS JOIN LATERAL (SELECT md5(r.session_id::text || ':' || r.device_id::text || ':' || r.ephemeral_public_key) AS h) m) n
        GROUP BY n.session_id ORDER BY n.session_id
        ON CONFLICT (session_id) DO UPDATE SET pairs = d.pairs + excluded.pairs, h1 = d.h1 # excluded.h1, h2 = d.h2 # excluded.h2;
        DELETE FROM public.agent_coding_session_secret_digests d
        WHERE d.pairs <= 0 AND d.session_id IN (SELECT session_id FROM old_rows);
    END IF;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION public.session_secret_digest_apply() FROM PUBLIC;

-- One trigger per event: a trigger with transition tables fires for one event only. An upsert
-- (INSERT ... ON CONFLICT DO UPDATE) fires the INSERT trigger for the rows it inserted and the
-- UPDATE trigger for the rows it updated.
CREATE TRIGGER agent_coding_session_secrets_digest_insert AFTER INSERT ON public.agent_coding_session_secrets
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.session_secret_digest_apply();
CREATE TRIGGER agent_coding_session_secrets_digest_update AFTER UPDATE ON public.agent_coding_session_secrets
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.session_secret_digest_apply();
CREATE TRIGGER agent_coding_session_secrets_digest_delete AFTER DELETE ON public.agent_coding_session_secrets
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.session_secret_digest_apply();

-- The rows written before the triggers.
INSERT INTO public.agent_coding_session_secret_digests (session_id, pairs, h1, h2)
SELECT s.session_id, count(*)::integer,
       bit_xor(('x' || substr(m.h, 1, 16))::bit(64)::bigint), bit_xor(('x' || substr(m.h, 17, 16))::bit(64)::bigint)
FROM public.agent_coding_session_secrets s
CROSS JOIN LATERAL (SELECT md5(s.session_id::text || ':' || s.device_id::text || ':' || s.ephemeral_public_key) AS h) m
GROUP BY s.session_id;

-- The same result as before, from the kept digests: one row per session of the owner.
CREATE OR REPLACE FUNCTION public.session_secret_digest(owner_device_id uuid, buckets integer)
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
        SELECT ('x' || substr(md5(lower(c.id::text)), 1, 4))::bit(16)::integer % v_buckets AS b,
               sum(d.pairs)::integer, bit_xor(d.h1), bit_xor(d.h2)
        FROM public.agent_coding_sessions c
        JOIN public.agent_coding_session_secret_digests d ON d.session_id = c.id
        WHERE c.user_id = caller AND c.device_id = v_owner AND d.pairs > 0
        GROUP BY b
        ORDER BY b;
END
$$;
