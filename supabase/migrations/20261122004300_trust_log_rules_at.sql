-- Rules E with the server's clock as an argument, so the trust-log vectors (which carry the
-- server time `now` each refusal or acceptance assumes) run against this SQL itself, not only
-- against the Swift rules (docs/trust-log.md, "The remote"; Tests: TrustLogSQLVectorTests).
--
-- One body: `private.tl_check_at` is rule (a)'s canonical-UUID check (migration 4100) and the
-- rules of `private.tl_check_rules` (migration 2500), unchanged but for the time: `now_s` is the
-- server's clock in Unix seconds, NULL where the 600 s window does not apply (an imported legacy
-- history). `private.tl_check` keeps its signature and reads the clock once; the renamed body
-- from 4100 goes. Both schema variants get this file.
CREATE FUNCTION private.tl_check_at(
    caller uuid, named_epoch integer, epoch_status integer, entry text, backup text, head_seq bigint,
    head_hash bytea, head_created_at bigint, head_proof bytea, now_s numeric
) RETURNS private.tl_checked
    LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
    b bytea := private.tl_decode(entry, 4406);
    r private.tl_checked;
    v_len integer;
    v_signatures integer;
    v_body bytea;
    v_body_user bytea;
    v_me bytea := convert_to(caller::text, 'UTF8');
    v_prev bytea;
    v_proof bytea;
    v_seq numeric;
    v_created numeric;
    v_offset integer;
    v_zero bytea := decode(repeat('00', 32), 'hex');
    v_backup bytea;
BEGIN
    -- (a) shape
    IF b IS NULL OR length(b) < 182 OR substring(b FROM 1 FOR 21) <> convert_to('unbound-trust-log-v1', 'UTF8') || '\x00'::bytea
       OR get_byte(b, 57) <> 0 OR get_byte(b, 147) <> 0 THEN
        RAISE EXCEPTION 'the entry is not canonical base64 of a trust-log entry' USING ERRCODE = '22023';
    END IF;
    IF NOT private.tl_canonical_uuid(substring(b FROM 22 FOR 36))
       OR NOT private.tl_canonical_uuid(substring(b FROM 112 FOR 36))
       OR (get_byte(b, 102) = 1 AND length(b) >= 182 + 65
           AND NOT private.tl_canonical_uuid(substring(b FROM 183 + 29 FOR 36))) THEN
        RAISE EXCEPTION 'the entry''s user or author is not a canonical lowercase UUID' USING ERRCODE = '22023';
    END IF;
    v_len := get_byte(b, 180) * 256 + get_byte(b, 181);
    r.type := get_byte(b, 102);
    v_signatures := CASE WHEN r.type IN (1, 4) THEN 128 ELSE 64 END;
    IF v_len < 1 OR v_len > 4096 OR length(b) <> 182 + v_len + v_signatures THEN
        RAISE EXCEPTION 'the entry''s length is not the one its body and type give' USING ERRCODE = '22023';
    END IF;
    v_body := substring(b FROM 183 FOR v_len);
    IF r.type = 1 THEN
        IF length(v_body) < 168 OR substring(v_body FROM 1 FOR 29) <> convert_to('unbound-trust-log-genesis-v1', 'UTF8') || '\x00'::bytea
           OR get_byte(v_body, 65) <> 0 OR get_byte(v_body, 166) * 256 + get_byte(v_body, 167) <> length(v_body) - 168 THEN
            RAISE EXCEPTION 'the genesis body does not parse' USING ERRCODE = '22023';
        END IF;
        v_body_user := substring(v_body FROM 30 FOR 36);
        r.prior_epoch := private.tl_u32(v_body, 130);
        r.genesis_key := substring(v_body FROM 67 FOR 32);
        r.genesis_certificate := substring(v_body FROM 169);
    ELSIF r.type = 6 THEN
        IF length(v_body) <> 98 OR substring(v_body FROM 1 FOR 24) <> convert_to('unbound-reset-answer-v1', 'UTF8') || '\x00'::bytea
           OR convert_from(substring(v_body FROM 25 FOR 36), 'LATIN1') !~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
           OR get_byte(v_body, 60) <> 0 OR get_byte(v_body, 97) NOT IN (1, 2) THEN
            RAISE EXCEPTION 'the reset answer does not parse' USING ERRCODE = '22023';
        END IF;
        v_body_user := substring(v_body FROM 25 FOR 36);
        r.answer_epoch := private.tl_u32(v_body, 61);
        r.answer_hash := substring(v_body FROM 66 FOR 32);
        r.answer_verdict := get_byte(v_body, 97);
    END IF;
    -- (b) the user
    IF substring(b FROM 22 FOR 36) <> v_me OR (v_body_user IS NOT NULL AND v_body_user <> v_me) THEN
        RAISE EXCEPTION 'the entry names another user' USING ERRCODE = '42501';
    END IF;
    -- (c) the epoch
    IF epoch_status = 1 THEN RAISE EXCEPTION 'the epoch is pending or closed' USING ERRCODE = '55000'; END IF;
    r.epoch := private.tl_u32(b, 58);
    IF epoch_status <> 0 OR r.epoch <> named_epoch THEN
        RAISE EXCEPTION 'the entry names another epoch than the current one' USING ERRCODE = '22023';
    END IF;
    -- (d) the position
    v_seq := private.tl_u64(b, 62);
    v_prev := substring(b FROM 71 FOR 32);
    v_proof := substring(b FROM 149 FOR 32);
    IF head_seq IS NOT NULL THEN
        IF v_seq <> head_seq + 1 OR v_prev <> head_hash THEN
            RAISE EXCEPTION 'the entry is not at the head (seq %): read again and rebuild', head_seq + 1 USING ERRCODE = '40001';
        END IF;
    ELSIF v_seq <> 0 OR v_prev <> v_zero OR v_proof <> v_zero THEN
        RAISE EXCEPTION 'the epoch is empty: the entry must be its genesis at seq 0' USING ERRCODE = '40001';
    END IF;
    -- (e) the bound
    IF v_seq >= 10000 THEN RAISE EXCEPTION 'an epoch holds at most 10,000 entries' USING ERRCODE = '22023'; END IF;
    r.seq := v_seq::bigint;
    -- (f) types by position
    IF (r.seq = 0 AND r.type <> 1) OR (r.seq > 0 AND r.type NOT BETWEEN 2 AND 6) THEN
        RAISE EXCEPTION 'entry type % is not allowed at seq %', r.type, r.seq USING ERRCODE = '22023';
    END IF;
    r.author := convert_from(substring(b FROM 112 FOR 36), 'LATIN1');
    IF r.seq >= 9000 AND r.type NOT IN (3, 4, 6) THEN
        v_offset := 59;
        IF r.type = 2 THEN v_offset := 67; END IF;
        IF r.type NOT IN (2, 5) OR length(v_body) < v_offset + 36
           OR substring(v_body FROM v_offset + 1 FOR 36) <> substring(b FROM 112 FOR 36) THEN
            RAISE EXCEPTION 'from seq 9,000 only revocations, successions, reset answers and recovery' USING ERRCODE = '55000';
        END IF;
    END IF;
    -- (g) time
    v_created := private.tl_u64(b, 103);
    IF now_s IS NOT NULL AND (v_created < now_s - 600 OR v_created > now_s + 600) THEN
        RAISE EXCEPTION 'created_at is more than 600 s from the server''s clock' USING ERRCODE = '22023';
    END IF;
    IF head_seq IS NOT NULL AND v_created < head_created_at THEN
        RAISE EXCEPTION 'created_at is before the head''s' USING ERRCODE = '22023';
    END IF;
    IF v_created >= 9223372036854775808 THEN RAISE EXCEPTION 'created_at is out of range' USING ERRCODE = '22023'; END IF;
    r.created_at := v_created::bigint;
    -- (h) the append chain
    IF head_seq IS NOT NULL AND sha256(v_proof) <> head_proof THEN
        RAISE EXCEPTION 'the append proof does not extend the chain' USING ERRCODE = '22023';
    END IF;
    -- (i) the backup
    IF backup IS NOT NULL THEN
        v_backup := private.tl_decode(backup, 113);
        IF length(backup) <> 152 OR v_backup IS NULL OR length(v_backup) <> 113 OR get_byte(v_backup, 0) <> 2 THEN
            RAISE EXCEPTION 'the backup is not 152 characters of a v2 backup' USING ERRCODE = '22023';
        END IF;
    END IF;
    r.last_proof := v_proof;
    IF r.type = 1 THEN r.last_proof := substring(v_body FROM 99 FOR 32); END IF;
    IF r.type = 4 THEN
        IF length(v_body) < 164 THEN RAISE EXCEPTION 'the succession body is too short' USING ERRCODE = '22023'; END IF;
        r.last_proof := substring(v_body FROM 133 FOR 32);
    END IF;
    r.hash := sha256(convert_to('unbound-trust-log-hash-v1', 'UTF8') || '\x00'::bytea || b);
    RETURN r;
END
$$;

CREATE OR REPLACE FUNCTION private.tl_check(
    caller uuid, named_epoch integer, epoch_status integer, entry text, backup text, head_seq bigint,
    head_hash bytea, head_created_at bigint, head_proof bytea, check_window boolean
) RETURNS private.tl_checked
    LANGUAGE sql STABLE SET search_path = '' AS $$
    SELECT private.tl_check_at(
        caller, named_epoch, epoch_status, entry, backup, head_seq, head_hash, head_created_at, head_proof,
        CASE WHEN check_window THEN floor(extract(epoch FROM now())) END)
$$;

DROP FUNCTION private.tl_check_rules(
    uuid, integer, integer, text, text, bigint, bytea, bigint, bytea, boolean
);

REVOKE ALL ON FUNCTION private.tl_check_at(
    uuid, integer, integer, text, text, bigint, bytea, bigint, bytea, numeric
) FROM PUBLIC;
