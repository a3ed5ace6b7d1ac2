-- Rules E, step (a) (docs/trust-log.md, "Where the spec is silent"): the UUIDs an entry names are
-- part of its shape. The header's `user_id` and author, and a genesis body's `user_id`, must be
-- canonical lowercase UUIDs, else 22023, as the reader refuses them at `parse`. Before this, an
-- uppercase copy of the caller's own id reached step (b) and was answered 42501, as if it named
-- another user, and an uppercase author was stored.
--
-- One mechanism, not a copy of the rules: the checking function keeps its body under a new name,
-- and `private.tl_check` becomes this check followed by it. Both schema variants get this file.
ALTER FUNCTION private.tl_check(
    uuid, integer, integer, text, text, bigint, bytea, bigint, bytea, boolean
) RENAME TO tl_check_rules;

CREATE FUNCTION private.tl_canonical_uuid(value bytea) RETURNS boolean
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    -- `escape` encoding, not convert_from: a NUL byte (which convert_from refuses with 22021)
    -- becomes text that cannot match, so every malformed UUID is 22023.
    SELECT length(value) = 36
        AND encode(value, 'escape') ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
$$;

CREATE FUNCTION private.tl_check(
    caller uuid, named_epoch integer, epoch_status integer, entry text, backup text, head_seq bigint,
    head_hash bytea, head_created_at bigint, head_proof bytea, check_window boolean
) RETURNS private.tl_checked
    LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
    b bytea := private.tl_decode(entry, 4406);
BEGIN
    -- Text that does not decode, or is too short to hold these fields, is refused by the rules'
    -- own step (a), with the same code.
    IF b IS NOT NULL AND length(b) >= 182 AND (
        NOT private.tl_canonical_uuid(substring(b FROM 22 FOR 36))
        OR NOT private.tl_canonical_uuid(substring(b FROM 112 FOR 36))
        OR (get_byte(b, 102) = 1 AND length(b) >= 182 + 65
            AND NOT private.tl_canonical_uuid(substring(b FROM 183 + 29 FOR 36)))) THEN
        RAISE EXCEPTION 'the entry''s user or author is not a canonical lowercase UUID' USING ERRCODE = '22023';
    END IF;
    RETURN private.tl_check_rules(
        caller, named_epoch, epoch_status, entry, backup, head_seq, head_hash, head_created_at, head_proof,
        check_window);
END
$$;

REVOKE ALL ON FUNCTION private.tl_canonical_uuid(bytea) FROM PUBLIC;
REVOKE ALL ON FUNCTION private.tl_check(
    uuid, integer, integer, text, text, bigint, bytea, bigint, bytea, boolean
) FROM PUBLIC;
