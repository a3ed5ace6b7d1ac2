-- The trust log (docs/trust-log.md): one append-only, hash-chained, signed history of each user's
-- device trust, which every device verifies in full and pins. It replaces the trust tables of
-- 20261122001200_device_trust.sql and the backup row of 20261122002100_identity_backups.sql as
-- the source of trust; those become read-only (older clients keep reading them).
--
-- The server cannot check a signature. What it checks of every entry (rules E below) is enough
-- that nobody holding a login can change what a client trusts: an entry goes only at the head of
-- the current epoch, and only with the next preimage of the append chain, which only a holder of
-- the identity seed can compute. No API role (service_role included) may insert, update or delete
-- a row of either table: writes go only through the SECURITY DEFINER functions here, each under a
-- row lock of the user's state. Applied to both schema variants.

CREATE TABLE public.trust_log (
    user_id uuid NOT NULL,
    epoch integer NOT NULL CHECK (epoch >= 1),
    seq bigint NOT NULL CHECK (seq >= 0 AND seq < 10000),
    entry text NOT NULL,
    backup text,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, epoch, seq)
);

CREATE TABLE public.trust_log_witnesses (
    user_id uuid NOT NULL,
    device_id uuid NOT NULL,
    epoch integer NOT NULL,
    seq bigint NOT NULL,
    body text NOT NULL,
    signature text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, device_id, epoch, seq)
);

ALTER TABLE public.trust_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.trust_log_witnesses ENABLE ROW LEVEL SECURITY;
CREATE POLICY trust_log_read ON public.trust_log FOR SELECT TO authenticated USING (user_id = (SELECT auth.uid()));
CREATE POLICY trust_log_witnesses_read ON public.trust_log_witnesses FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()));
REVOKE ALL ON public.trust_log, public.trust_log_witnesses FROM PUBLIC, anon, authenticated, service_role;
GRANT SELECT ON public.trust_log, public.trust_log_witnesses TO authenticated, service_role;

-- Per user: the current epoch, the highest epoch ever used (a vetoed number is never reused), the
-- pending reset, and when the last reset was asked for. Per epoch: its head and last proof.
CREATE SCHEMA IF NOT EXISTS private;
CREATE TABLE private.trust_log_state (
    user_id uuid PRIMARY KEY,
    current_epoch integer,
    highest_epoch integer NOT NULL DEFAULT 0,
    pending_epoch integer,
    pending_hash bytea,
    pending_created_at bigint,
    last_reset_request timestamptz
);
CREATE TABLE private.trust_log_heads (
    user_id uuid NOT NULL,
    epoch integer NOT NULL,
    seq bigint NOT NULL,
    hash bytea NOT NULL,
    created_at bigint NOT NULL,
    last_proof bytea NOT NULL,
    PRIMARY KEY (user_id, epoch)
);
ALTER TABLE private.trust_log_state ENABLE ROW LEVEL SECURITY;
ALTER TABLE private.trust_log_heads ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON private.trust_log_state, private.trust_log_heads FROM PUBLIC, anon, authenticated, service_role;

-- No token may change the legacy trust rows any more, or erase a revocation.
REVOKE INSERT, UPDATE, DELETE ON public.user_identity_keys, public.device_certificates, public.device_revocations,
    public.identity_key_backups FROM PUBLIC, anon, authenticated, service_role;
DROP FUNCTION public.reset_identity();

-- Standard base64, padded and canonical, of at most max_bytes: the bytes, or NULL.
CREATE FUNCTION private.tl_decode(value text, max_bytes integer) RETURNS bytea
    LANGUAGE plpgsql IMMUTABLE SET search_path = '' AS $$
DECLARE
    v_bytes bytea;
BEGIN
    IF value IS NULL OR length(value) = 0 OR length(value) % 4 <> 0 OR length(value) > (max_bytes + 2) / 3 * 4
       OR value !~ '^[A-Za-z0-9+/]*={0,2}$' THEN
        RETURN NULL;
    END IF;
    v_bytes := decode(value, 'base64');
    IF translate(encode(v_bytes, 'base64'), E'\n', '') <> value THEN RETURN NULL; END IF;
    RETURN v_bytes;
END
$$;

CREATE FUNCTION private.tl_u32(b bytea, at integer) RETURNS bigint
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT (get_byte(b, at)::bigint << 24) | (get_byte(b, at + 1)::bigint << 16) | (get_byte(b, at + 2)::bigint << 8)
           | get_byte(b, at + 3)::bigint
$$;

-- Eight big-endian bytes as numeric (a time or seq may not fit a signed bigint).
CREATE FUNCTION private.tl_u64(b bytea, at integer) RETURNS numeric
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT private.tl_u32(b, at)::numeric * 4294967296 + private.tl_u32(b, at + 4)::numeric
$$;

-- The JWT's amr says the user signed in (with a password or another method) in the last 600 s.
CREATE FUNCTION private.tl_fresh_sign_in() RETURNS boolean
    LANGUAGE sql STABLE SET search_path = '' AS $$
    SELECT CASE WHEN jsonb_typeof(auth.jwt() -> 'amr') = 'array' THEN EXISTS (
        SELECT 1 FROM jsonb_array_elements(auth.jwt() -> 'amr') a
        WHERE jsonb_typeof(a) = 'object' AND jsonb_typeof(a -> 'timestamp') = 'number'
          AND (a ->> 'timestamp')::numeric >= extract(epoch FROM now()) - 600)
    ELSE false END
$$;

-- What the server reads of an entry that passed rules E.
CREATE TYPE private.tl_checked AS (
    epoch integer, seq bigint, type integer, created_at bigint, hash bytea, last_proof bytea, prior_epoch integer,
    answer_epoch integer, answer_hash bytea, answer_verdict integer, genesis_key bytea, genesis_certificate bytea,
    author text
);

-- Rules E (docs/trust-log.md, "The remote"), in order, the first failure deciding the code:
-- (a) shape 22023, (b) the user 42501, (c) the epoch 55000/22023, (d) the position 40001, (e) the
-- bound 22023, (f) types by position 22023 (the seq 9,000 reserve 55000), (g) time 22023, (h) the
-- append chain 22023, (i) the backup 22023. A head of NULL seq means the epoch is empty.
-- epoch_status says what the named epoch is: 0 the one to write, 1 pending or closed, 2 neither.
CREATE FUNCTION private.tl_check(
    caller uuid, named_epoch integer, epoch_status integer, entry text, backup text, head_seq bigint,
    head_hash bytea, head_created_at bigint, head_proof bytea, check_window boolean
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
    v_now numeric := floor(extract(epoch FROM now()));
    v_offset integer;
    v_zero bytea := decode(repeat('00', 32), 'hex');
    v_backup bytea;
BEGIN
    -- (a) shape
    IF b IS NULL OR length(b) < 182 OR substring(b FROM 1 FOR 21) <> convert_to('unbound-trust-log-v1', 'UTF8') || '\x00'::bytea
       OR get_byte(b, 57) <> 0 OR get_byte(b, 147) <> 0 THEN
        RAISE EXCEPTION 'the entry is not canonical base64 of a trust-log entry' USING ERRCODE = '22023';
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
    IF check_window AND (v_created < v_now - 600 OR v_created > v_now + 600) THEN
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

-- The caller's state row, locked; a pending reset whose 72 hours passed is made current first
-- (its prior epoch is then closed: only the current epoch takes appends).
CREATE FUNCTION private.tl_lock(caller uuid) RETURNS private.trust_log_state
    LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
    s private.trust_log_state;
BEGIN
    INSERT INTO private.trust_log_state (user_id) VALUES (caller) ON CONFLICT (user_id) DO NOTHING;
    SELECT * INTO s FROM private.trust_log_state WHERE user_id = caller FOR UPDATE;
    IF s.pending_epoch IS NOT NULL AND s.pending_created_at + 259200 <= floor(extract(epoch FROM now())) THEN
        UPDATE private.trust_log_state SET current_epoch = s.pending_epoch, pending_epoch = NULL, pending_hash = NULL,
            pending_created_at = NULL WHERE user_id = caller RETURNING * INTO s;
    END IF;
    RETURN s;
END
$$;

-- Stores one checked entry and moves its epoch's head.
CREATE FUNCTION private.tl_store(caller uuid, c private.tl_checked, entry text, backup text) RETURNS void
    LANGUAGE sql VOLATILE SET search_path = '' AS $$
    INSERT INTO public.trust_log (user_id, epoch, seq, entry, backup) VALUES (caller, c.epoch, c.seq, entry, backup);
    INSERT INTO private.trust_log_heads AS h (user_id, epoch, seq, hash, created_at, last_proof)
    VALUES (caller, c.epoch, c.seq, c.hash, c.created_at, c.last_proof)
    ON CONFLICT (user_id, epoch) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, created_at = excluded.created_at,
        last_proof = excluded.last_proof;
$$;

-- Appends entries after the head of the current epoch; a reset answer among them must veto the
-- pending reset (which it cancels).
CREATE FUNCTION private.tl_append(caller uuid, s private.trust_log_state, named integer, first_index integer,
                                  entries text[], backups text[]) RETURNS private.tl_checked
    LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
    h private.trust_log_heads;
    c private.tl_checked;
    v_status integer := CASE
        WHEN named = s.current_epoch THEN 0
        WHEN named = s.pending_epoch OR named < s.current_epoch
             OR EXISTS (SELECT 1 FROM private.trust_log_heads x WHERE x.user_id = caller AND x.epoch = named) THEN 1
        ELSE 2 END;
BEGIN
    FOR i IN first_index .. coalesce(array_length(entries, 1), 0) LOOP
        SELECT * INTO h FROM private.trust_log_heads x WHERE x.user_id = caller AND x.epoch = named;
        c := private.tl_check(caller, named, v_status, entries[i], backups[i], h.seq, h.hash, h.created_at,
                              h.last_proof, true);
        IF c.type = 6 THEN
            IF c.answer_verdict = 2 THEN
                RAISE EXCEPTION 'an accept is appended only with request_identity_reset' USING ERRCODE = '22023';
            END IF;
            IF s.pending_epoch IS NULL OR c.answer_epoch <> s.pending_epoch OR c.answer_hash <> s.pending_hash THEN
                RAISE EXCEPTION 'the veto names no pending reset' USING ERRCODE = '55000';
            END IF;
            UPDATE private.trust_log_state SET pending_epoch = NULL, pending_hash = NULL, pending_created_at = NULL
                WHERE user_id = caller RETURNING * INTO s;
            DELETE FROM private.trust_log_heads x WHERE x.user_id = caller AND x.epoch = c.answer_epoch;
        END IF;
        PERFORM private.tl_store(caller, c, entries[i], backups[i]);
    END LOOP;
    RETURN c;
END
$$;

CREATE FUNCTION private.tl_result(c private.tl_checked) RETURNS jsonb
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT jsonb_build_object('epoch', c.epoch, 'seq', c.seq, 'hash', encode(c.hash, 'hex'))
$$;

CREATE FUNCTION public.append_trust_entries(epoch integer, first_seq bigint, entries text[], backups text[] DEFAULT NULL)
    RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    caller uuid := auth.uid();
    s private.trust_log_state;
    h private.trust_log_heads;
    v_count integer := coalesce(array_length(append_trust_entries.entries, 1), 0);
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'append_trust_entries needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF v_count NOT BETWEEN 1 AND 8 OR (append_trust_entries.backups IS NOT NULL
                                       AND coalesce(array_length(append_trust_entries.backups, 1), 0) <> v_count) THEN
        RAISE EXCEPTION 'append 1 to 8 entries, with as many backups (or none)' USING ERRCODE = '22023';
    END IF;
    s := private.tl_lock(caller);
    IF s.current_epoch IS NOT NULL AND append_trust_entries.epoch = s.current_epoch THEN
        SELECT * INTO h FROM private.trust_log_heads x WHERE x.user_id = caller AND x.epoch = s.current_epoch;
        IF append_trust_entries.first_seq IS DISTINCT FROM h.seq + 1 THEN
            RAISE EXCEPTION 'first_seq is not the head''s next (%): read again and rebuild', h.seq + 1 USING ERRCODE = '40001';
        END IF;
    END IF;
    RETURN private.tl_result(private.tl_append(
        caller, s, append_trust_entries.epoch, 1, append_trust_entries.entries,
        coalesce(append_trust_entries.backups, array_fill(NULL::text, ARRAY[v_count]))));
END
$$;

-- A certificate body's device id, X25519 key, Ed25519 key and device type (NULL if it does not parse).
CREATE FUNCTION private.tl_certificate_fields(b bytea) RETURNS text
    LANGUAGE plpgsql IMMUTABLE SET search_path = '' AS $$
DECLARE
    v_type_len integer;
BEGIN
    IF b IS NULL OR length(b) < 30 + 37 + 37 + 64 + 2 + 8
       OR substring(b FROM 1 FOR 30) <> convert_to('unbound-device-certificate-v1', 'UTF8') || '\x00'::bytea THEN
        RETURN NULL;
    END IF;
    v_type_len := get_byte(b, 168);
    IF length(b) < 169 + v_type_len + 1 THEN RETURN NULL; END IF;
    RETURN encode(substring(b FROM 68 FOR 36), 'hex') || ':' || encode(substring(b FROM 105 FOR 64), 'hex') || ':'
        || encode(substring(b FROM 170 FOR v_type_len), 'hex');
END
$$;

CREATE FUNCTION public.start_trust_log(entries text[], backups text[] DEFAULT NULL)
    RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    caller uuid := auth.uid();
    s private.trust_log_state;
    c private.tl_checked;
    v_count integer := coalesce(array_length(start_trust_log.entries, 1), 0);
    v_backups text[];
    v_legacy text;
    v_row bytea;
    v_new bytea;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'start_trust_log needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF NOT private.tl_fresh_sign_in() THEN
        RAISE EXCEPTION 'sign in again, then retry (starting a trust log needs a sign-in in the last 10 minutes)'
            USING ERRCODE = '28000';
    END IF;
    s := private.tl_lock(caller);
    IF s.current_epoch IS NOT NULL THEN
        RAISE EXCEPTION 'this user already has a trust log (identityExists)' USING ERRCODE = '23505';
    END IF;
    IF v_count NOT BETWEEN 1 AND 9 OR (start_trust_log.backups IS NOT NULL
                                       AND coalesce(array_length(start_trust_log.backups, 1), 0) <> v_count) THEN
        RAISE EXCEPTION 'start with a genesis and up to 8 entries, with as many backups (or none)' USING ERRCODE = '22023';
    END IF;
    v_backups := coalesce(start_trust_log.backups, array_fill(NULL::text, ARRAY[v_count]));
    c := private.tl_check(caller, 1, 0, start_trust_log.entries[1], v_backups[1], NULL, NULL, NULL, NULL, true);
    IF c.prior_epoch <> 0 THEN RAISE EXCEPTION 'epoch 1''s genesis names prior epoch 0' USING ERRCODE = '22023'; END IF;
    SELECT k.public_key INTO v_legacy FROM public.user_identity_keys k WHERE k.user_id = caller;
    IF v_legacy IS NOT NULL THEN
        -- A user with a legacy identity migrates with it: the legacy key, a root that the legacy
        -- tables certify and do not revoke, with the same keys and type, then a succession.
        SELECT private.tl_decode(d.body, 2048) INTO v_row FROM public.device_certificates d
         WHERE d.user_id = caller AND d.device_id::text = c.author;
        IF private.tl_decode(v_legacy, 32) IS DISTINCT FROM c.genesis_key OR v_row IS NULL
           OR EXISTS (SELECT 1 FROM public.device_revocations v WHERE v.user_id = caller AND v.device_id::text = c.author)
           OR private.tl_certificate_fields(v_row) IS DISTINCT FROM private.tl_certificate_fields(c.genesis_certificate)
           OR private.tl_certificate_fields(v_row) IS NULL OR v_count < 2 THEN
            RAISE EXCEPTION 'a legacy identity starts its log with its key, a certified root, then a succession'
                USING ERRCODE = '22023';
        END IF;
        v_new := private.tl_decode(start_trust_log.entries[2], 4406);
        IF v_new IS NULL OR length(v_new) < 103 OR get_byte(v_new, 102) <> 4 THEN
            RAISE EXCEPTION 'a legacy identity''s log goes on with a succession' USING ERRCODE = '22023';
        END IF;
    END IF;
    PERFORM private.tl_store(caller, c, start_trust_log.entries[1], v_backups[1]);
    UPDATE private.trust_log_state SET current_epoch = 1, highest_epoch = greatest(highest_epoch, 1)
        WHERE user_id = caller RETURNING * INTO s;
    IF v_count > 1 THEN c := private.tl_append(caller, s, 1, 2, start_trust_log.entries, v_backups); END IF;
    RETURN private.tl_result(c);
END
$$;

CREATE FUNCTION public.request_identity_reset(entry text, backup text DEFAULT NULL, accept text DEFAULT NULL,
                                              accept_backup text DEFAULT NULL)
    RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    caller uuid := auth.uid();
    s private.trust_log_state;
    h private.trust_log_heads;
    c private.tl_checked;
    a private.tl_checked;
    v_epoch integer;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'request_identity_reset needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF NOT private.tl_fresh_sign_in() THEN
        RAISE EXCEPTION 'sign in again, then retry (a reset needs a sign-in in the last 10 minutes)' USING ERRCODE = '28000';
    END IF;
    s := private.tl_lock(caller);
    IF s.current_epoch IS NULL AND s.highest_epoch = 0
       AND NOT EXISTS (SELECT 1 FROM public.user_identity_keys k WHERE k.user_id = caller) THEN
        RAISE EXCEPTION 'this user has no identity to reset: start one with trust init' USING ERRCODE = '55000';
    END IF;
    IF s.pending_epoch IS NOT NULL THEN RAISE EXCEPTION 'a reset is already pending' USING ERRCODE = '55000'; END IF;
    IF request_identity_reset.accept IS NULL AND s.last_reset_request > now() - interval '86400 seconds' THEN
        RAISE EXCEPTION 'a reset was asked for in the last 24 hours' USING ERRCODE = '55000';
    END IF;
    v_epoch := greatest(2, s.highest_epoch + 1);
    c := private.tl_check(caller, v_epoch, 0, request_identity_reset.entry, request_identity_reset.backup,
                          NULL, NULL, NULL, NULL, true);
    IF c.prior_epoch <> coalesce(s.current_epoch, 1) THEN
        RAISE EXCEPTION 'a reset names the current epoch as its prior' USING ERRCODE = '22023';
    END IF;
    IF request_identity_reset.accept IS NOT NULL THEN
        IF s.current_epoch IS NULL THEN RAISE EXCEPTION 'no epoch is current to accept a reset' USING ERRCODE = '55000'; END IF;
        SELECT * INTO h FROM private.trust_log_heads x WHERE x.user_id = caller AND x.epoch = s.current_epoch;
        a := private.tl_check(caller, s.current_epoch, 0, request_identity_reset.accept,
                              request_identity_reset.accept_backup, h.seq, h.hash, h.created_at, h.last_proof, true);
        IF a.type <> 6 OR a.answer_verdict <> 2 OR a.answer_epoch <> v_epoch OR a.answer_hash <> c.hash THEN
            RAISE EXCEPTION 'the accept must name this reset' USING ERRCODE = '22023';
        END IF;
        PERFORM private.tl_store(caller, a, request_identity_reset.accept, request_identity_reset.accept_backup);
        PERFORM private.tl_store(caller, c, request_identity_reset.entry, request_identity_reset.backup);
        UPDATE private.trust_log_state SET current_epoch = v_epoch, highest_epoch = v_epoch, last_reset_request = now()
            WHERE user_id = caller;
    ELSE
        PERFORM private.tl_store(caller, c, request_identity_reset.entry, request_identity_reset.backup);
        UPDATE private.trust_log_state SET highest_epoch = v_epoch, pending_epoch = v_epoch, pending_hash = c.hash,
            pending_created_at = c.created_at, last_reset_request = now() WHERE user_id = caller;
    END IF;
    RETURN private.tl_result(c) || jsonb_build_object('pending', request_identity_reset.accept IS NULL,
                                                        'effectiveAt', CASE WHEN request_identity_reset.accept IS NULL
                                                                            THEN c.created_at + 259200 END);
END
$$;

CREATE FUNCTION public.publish_witness(device_id uuid, body text, signature text)
    RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    caller uuid := auth.uid();
    s private.trust_log_state;
    h private.trust_log_heads;
    b bytea := private.tl_decode(publish_witness.body, 155);
    v_epoch bigint;
    v_seq numeric;
    v_seen numeric;
    v_now numeric := floor(extract(epoch FROM now()));
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'publish_witness needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF b IS NULL OR length(b) <> 155 OR substring(b FROM 1 FOR 29) <> convert_to('unbound-trust-log-witness-v1', 'UTF8') || '\x00'::bytea
       OR get_byte(b, 65) <> 0 OR get_byte(b, 102) <> 0 OR private.tl_decode(publish_witness.signature, 64) IS NULL
       OR length(private.tl_decode(publish_witness.signature, 64)) <> 64 THEN
        RAISE EXCEPTION 'the witness is not 155 bytes and a 64-byte signature, in base64' USING ERRCODE = '22023';
    END IF;
    IF substring(b FROM 30 FOR 36) <> convert_to(caller::text, 'UTF8')
       OR substring(b FROM 67 FOR 36) <> convert_to(publish_witness.device_id::text, 'UTF8')
       OR NOT EXISTS (SELECT 1 FROM public.devices d WHERE d.id = publish_witness.device_id AND d.user_id = caller) THEN
        RAISE EXCEPTION 'the witness names another user or a device that is not the caller''s' USING ERRCODE = '42501';
    END IF;
    s := private.tl_lock(caller);
    v_epoch := private.tl_u32(b, 103);
    v_seq := private.tl_u64(b, 107);
    v_seen := private.tl_u64(b, 147);
    SELECT * INTO h FROM private.trust_log_heads x WHERE x.user_id = caller AND x.epoch = s.current_epoch;
    IF s.current_epoch IS NULL OR v_epoch <> s.current_epoch OR v_seq > h.seq
       OR v_seq <= coalesce((SELECT max(w.seq) FROM public.trust_log_witnesses w WHERE w.user_id = caller
                              AND w.device_id = publish_witness.device_id AND w.epoch = s.current_epoch), -1)
       OR v_seen < v_now - 600 OR v_seen > v_now + 600 THEN
        RAISE EXCEPTION 'a witness names the current epoch, a seq up to its head and above the device''s last, and now'
            USING ERRCODE = '22023';
    END IF;
    INSERT INTO public.trust_log_witnesses (user_id, device_id, epoch, seq, body, signature)
    VALUES (caller, publish_witness.device_id, v_epoch, v_seq, publish_witness.body, publish_witness.signature);
    RETURN jsonb_build_object('epoch', v_epoch, 'seq', v_seq);
END
$$;

-- The head of the caller's current epoch, and the highest epoch used: what the feeds carry so
-- that a device whose pin is at this head reads nothing more.
CREATE FUNCTION private.trust_log_head_of(caller uuid) RETURNS jsonb
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = '' AS $$
    SELECT CASE WHEN s.highest_epoch > 0 THEN jsonb_build_object(
        'epoch', s.current_epoch, 'seq', h.seq, 'hash', encode(h.hash, 'hex'), 'highestEpoch', s.highest_epoch,
        'pendingEpoch', CASE WHEN s.pending_epoch IS NOT NULL AND s.pending_created_at + 259200 > floor(extract(epoch FROM now()))
                             THEN s.pending_epoch END)
    END
    FROM private.trust_log_state s
    LEFT JOIN private.trust_log_heads h ON h.user_id = s.user_id AND h.epoch = s.current_epoch
    WHERE s.user_id = caller
$$;

REVOKE ALL ON FUNCTION private.tl_decode(text, integer), private.tl_u32(bytea, integer), private.tl_u64(bytea, integer),
    private.tl_fresh_sign_in(), private.tl_check(uuid, integer, integer, text, text, bigint, bytea, bigint, bytea, boolean),
    private.tl_lock(uuid), private.tl_store(uuid, private.tl_checked, text, text),
    private.tl_append(uuid, private.trust_log_state, integer, integer, text[], text[]),
    private.tl_result(private.tl_checked), private.tl_certificate_fields(bytea), private.trust_log_head_of(uuid)
    FROM PUBLIC;
REVOKE ALL ON FUNCTION public.append_trust_entries(integer, bigint, text[], text[]), public.start_trust_log(text[], text[]),
    public.request_identity_reset(text, text, text, text), public.publish_witness(uuid, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.append_trust_entries(integer, bigint, text[], text[]), public.start_trust_log(text[], text[]),
    public.request_identity_reset(text, text, text, text), public.publish_witness(uuid, text, text) TO authenticated;
