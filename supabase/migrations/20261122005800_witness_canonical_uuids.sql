-- A witness's UUIDs and ranges are part of its shape (docs/trust-log.md, "Where the spec is
-- silent"), as an entry's are since 004100: the user_id and device_id a witness body names must be
-- canonical lowercase UUIDs, its epoch at least 1, its seq under 10,000 and its seen_at under
-- 2^63, else 22023, as the reader refuses them at `parse` and the embedded remote answers. Before
-- this, an uppercase copy of the caller's own id failed the comparison with the caller's text and
-- was answered 42501, as if it named another user or device, and so was a witness out of range
-- that named another device.
--
-- The check joins the shape's 22023 in place; the rest of the function is unchanged. Both schema
-- variants get this file.
DO $$
DECLARE
    fn text := 'private.publish_witness(uuid, text, text)';
    src text := pg_get_functiondef(fn::regprocedure);
    old text := $old$OR length(private.tl_decode(publish_witness.signature, 64)) <> 64 THEN$old$;
    new text := $new$OR length(private.tl_decode(publish_witness.signature, 64)) <> 64
       OR NOT private.tl_canonical_uuid(substring(b FROM 30 FOR 36))
       OR NOT private.tl_canonical_uuid(substring(b FROM 67 FOR 36))
       OR private.tl_u32(b, 103) < 1 OR private.tl_u64(b, 107) >= 10000
       OR private.tl_u64(b, 147) >= 9223372036854775808 THEN$new$;
BEGIN
    IF position('tl_canonical_uuid' IN src) > 0 THEN RETURN; END IF;
    IF position(old IN src) = 0 THEN
        RAISE EXCEPTION '% no longer checks a witness''s shape as this migration expects: update it', fn;
    END IF;
    EXECUTE replace(src, old, new);
END
$$;
