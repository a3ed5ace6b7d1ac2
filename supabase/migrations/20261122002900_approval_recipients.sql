-- Approvals reach, and are answered by, only the devices the trust log vouches for
-- (docs/approvals.md, "Who is asked, who may answer"). Before this, a revoked device still got
-- approval alerts and clearings, the timeout clearing also went to the requester's own token, and
-- the first answer from any device row of the user ended the question, whether or not the device
-- was ever certified.
--
-- The server cannot check a signature, but it can read the log it keeps: only a holder of the
-- identity seed can append (rules E's append chain), so the certify and revoke bodies it holds are
-- the ones every client verifies. private.trust_log_devices is that reading, kept by a trigger on
-- every stored entry: per user and epoch, the devices certified (a genesis's author, a certify)
-- and revoked (a revoke, a succession's revocations). A revocation is never undone. An entry the
-- server cannot read (a body that does not parse) marks the epoch '*': then no device of it is
-- trusted (fail closed, as a client's verifier fails closed). A user without a log trusts nobody.
-- Only the project's own schema has approvals; the deployed variant takes only the part between
-- the 'deployed variant' markers below (device credentials need the server's reading of the log).

-- deployed variant: begin (the server's reading of the log, which device credentials need too)
CREATE TABLE private.trust_log_devices (
    user_id uuid NOT NULL,
    epoch integer NOT NULL,
    -- A canonical lowercase device id, or '*' for an epoch with an entry the server could not read.
    device_id text NOT NULL,
    certified_seq bigint,
    revoked_seq bigint,
    PRIMARY KEY (user_id, epoch, device_id)
);
ALTER TABLE private.trust_log_devices ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON private.trust_log_devices FROM PUBLIC, anon, authenticated, service_role;

-- The device id a trust.md statement body names (prefix, NUL, user_id, NUL, device_id, ...), when
-- the body has the prefix and names the caller; else NULL.
CREATE FUNCTION private.tl_statement_device(body bytea, prefix text, caller uuid) RETURNS text
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT CASE WHEN length(body) >= length(prefix) + 74
                 AND substring(body FROM 1 FOR length(prefix) + 1) = convert_to(prefix, 'UTF8') || '\x00'::bytea
                 AND substring(body FROM length(prefix) + 2 FOR 36) = convert_to(caller::text, 'UTF8')
                 AND get_byte(body, length(prefix) + 37) = 0
                 AND convert_from(substring(body FROM length(prefix) + 39 FOR 36), 'LATIN1')
                     ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
           THEN convert_from(substring(body FROM length(prefix) + 39 FOR 36), 'LATIN1') END
$$;

-- Records one device's certification or revocation at seq; a NULL device marks the epoch '*'.
CREATE FUNCTION private.tl_mark_device(caller uuid, epoch integer, device text, seq bigint, revoked boolean)
    RETURNS void
    LANGUAGE sql VOLATILE SET search_path = '' AS $$
    INSERT INTO private.trust_log_devices AS d (user_id, epoch, device_id, certified_seq, revoked_seq)
    VALUES (caller, epoch, coalesce(device, '*'), CASE WHEN NOT revoked THEN seq END, CASE WHEN revoked THEN seq END)
    ON CONFLICT (user_id, epoch, device_id) DO UPDATE
        SET revoked_seq = coalesce(d.revoked_seq, excluded.revoked_seq);
$$;

-- Reads the devices one stored entry certifies or revokes (trust-log.md, "Bytes"; trust.md's
-- statements). Never raises: what it cannot read marks the epoch '*'.
CREATE FUNCTION private.tl_record_devices(caller uuid, epoch integer, seq bigint, entry text) RETURNS void
    LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
    b bytea;
    t integer;
    body bytea;
    n integer;
    at integer;
    len integer;
BEGIN
    BEGIN
        b := decode(entry, 'base64');
        t := get_byte(b, 102);
        body := substring(b FROM 183 FOR get_byte(b, 180) * 256 + get_byte(b, 181));
        IF t = 1 THEN
            PERFORM private.tl_mark_device(caller, epoch,
                private.tl_statement_device(substring(body FROM 169), 'unbound-device-certificate-v1', caller), seq, false);
        ELSIF t = 2 THEN
            PERFORM private.tl_mark_device(caller, epoch,
                private.tl_statement_device(body, 'unbound-device-certificate-v1', caller), seq, false);
        ELSIF t = 3 THEN
            PERFORM private.tl_mark_device(caller, epoch,
                private.tl_statement_device(body, 'unbound-device-revocation-v1', caller), seq, true);
        ELSIF t = 4 THEN
            -- prefix (31) user_id (36) NUL old_pk new_pk new_anchor (96) reason new_recovery_pk (33):
            -- n_rev at offset 197, then n_rev x len16(revocation body).
            n := get_byte(body, 197);
            at := 198;
            FOR i IN 1..n LOOP
                len := get_byte(body, at) * 256 + get_byte(body, at + 1);
                PERFORM private.tl_mark_device(caller, epoch,
                    private.tl_statement_device(substring(body FROM at + 3 FOR len), 'unbound-device-revocation-v1', caller),
                    seq, true);
                at := at + 2 + len;
            END LOOP;
        END IF;
    EXCEPTION WHEN OTHERS THEN
        PERFORM private.tl_mark_device(caller, epoch, NULL, seq, true);
    END;
END
$$;

CREATE FUNCTION private.trust_log_devices_record() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    PERFORM private.tl_record_devices(NEW.user_id, NEW.epoch, NEW.seq, NEW.entry);
    RETURN NULL;
END
$$;
CREATE TRIGGER trust_log_devices AFTER INSERT ON public.trust_log
    FOR EACH ROW EXECUTE FUNCTION private.trust_log_devices_record();

DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT user_id, epoch, seq, entry FROM public.trust_log ORDER BY user_id, epoch, seq LOOP
        PERFORM private.tl_record_devices(r.user_id, r.epoch, r.seq, r.entry);
    END LOOP;
END
$$;

-- The epoch in force: the current one, or a pending reset whose 72 hours have passed.
CREATE FUNCTION private.trust_epoch(caller uuid) RETURNS integer
    LANGUAGE sql STABLE SET search_path = '' AS $$
    SELECT CASE WHEN s.pending_epoch IS NOT NULL AND s.pending_created_at + 259200 <= floor(extract(epoch FROM now()))
                THEN s.pending_epoch ELSE s.current_epoch END
    FROM private.trust_log_state s WHERE s.user_id = caller
$$;

-- Whether the log in force certifies `device` and does not revoke it (and the server could read
-- every entry of it). False for a user without a log.
CREATE FUNCTION private.is_trusted_device(caller uuid, device uuid) RETURNS boolean
    LANGUAGE sql STABLE SET search_path = '' AS $$
    SELECT coalesce(bool_or(d.device_id = device::text AND d.certified_seq IS NOT NULL AND d.revoked_seq IS NULL)
                    AND NOT bool_or(d.device_id = '*'), false)
    FROM private.trust_log_devices d
    WHERE d.user_id = caller AND d.epoch = private.trust_epoch(caller) AND d.device_id IN (device::text, '*')
$$;

-- deployed variant: end

-- The alert of a new request: as before, but only to trusted devices other than the requester.
CREATE OR REPLACE FUNCTION private.queue_approval_alerts(caller uuid, request uuid) RETURNS integer
    LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
    r public.approval_requests%ROWTYPE;
    base jsonb;
    queued integer;
BEGIN
    SELECT * INTO r FROM public.approval_requests a WHERE a.id = request;
    base := jsonb_build_object(
        'aps', jsonb_build_object(
            'alert', jsonb_build_object('title', 'Approval needed', 'body', 'An agent session is waiting for you'),
            'sound', 'default', 'category', 'APPROVAL_REQUEST', 'interruption-level', 'time-sensitive',
            'mutable-content', 1, 'badge', 0),
        'type', 'approval', 'requestId', r.id::text, 'sessionId', r.session_id::text,
        'requesterDeviceId', r.requester_device_id::text, 'generation', r.generation, 'expiresAt', r.expires_at,
        'sealed', r.body);
    -- The badge's digits never bring a payload over the limit it was measured with (at most 6 more bytes).
    IF octet_length(base::text) + 6 > 4096 THEN base := base - 'sealed'; END IF;
    INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload)
        SELECT caller, t.device_id, t.token, 'alert', 10, 'approval-request-' || r.id::text,
               jsonb_set(jsonb_set(base, '{aps,badge}', to_jsonb(private.approval_badge(caller, t.device_id))),
                         '{aps,interruption-level}',
                         to_jsonb(CASE WHEN (private.notification_settings_of(t.device_id)).enable_time_sensitive
                                       THEN 'time-sensitive' ELSE 'active' END))
        FROM public.push_tokens t
        WHERE t.user_id = caller AND t.token_type = 'device' AND t.is_valid AND t.device_id <> r.requester_device_id
          AND private.is_trusted_device(caller, t.device_id) AND private.may_queue_push(t.device_id, 'alert')
        ORDER BY t.token
        ON CONFLICT (token, collapse_id) WHERE collapse_id LIKE 'approval-%' DO NOTHING;
    GET DIAGNOSTICS queued = ROW_COUNT;
    RETURN queued;
END
$$;

-- A request's clearing push: as before, but only to trusted devices, never the requester's
-- (it had no alert) nor except_device's (the one that answered).
CREATE OR REPLACE FUNCTION private.queue_approval_clearing(caller uuid, request uuid, reason text, except_device uuid)
    RETURNS integer
    LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
    queued integer;
    requester uuid := (SELECT a.requester_device_id FROM public.approval_requests a WHERE a.id = request);
BEGIN
    INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload)
        SELECT caller, t.device_id, t.token, 'background', 5, 'approval-' || request::text,
               jsonb_build_object('aps', jsonb_build_object('content-available', 1,
                                                            'badge', private.approval_badge(caller, t.device_id)),
                                  'clearApprovalId', request::text, 'reason', reason)
        FROM public.push_tokens t
        WHERE t.user_id = caller AND t.token_type = 'device' AND t.is_valid AND t.device_id IS DISTINCT FROM except_device
          AND t.device_id IS DISTINCT FROM requester AND private.is_trusted_device(caller, t.device_id)
          AND private.may_queue_push(t.device_id, 'clearing')
        ORDER BY t.token
        ON CONFLICT (token, collapse_id) WHERE collapse_id LIKE 'approval-%' DO NOTHING;
    GET DIAGNOSTICS queued = ROW_COUNT;
    RETURN queued;
END
$$;

-- An answer is taken only from a device the log in force certifies and does not revoke. Checked
-- as the decision is written: a refused answer rolls back whole, and the question stays open for
-- the genuine one. Signed-in callers only: the service role is the server itself.
CREATE FUNCTION private.approval_answer_device_trusted() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    IF NEW.status IN ('approved', 'denied') AND OLD.status = 'pending' AND auth.uid() IS NOT NULL THEN
        IF NOT private.is_trusted_device(NEW.user_id, NEW.decided_by_device_id) THEN
            RAISE EXCEPTION 'the answering device is not certified in your trust log, or is revoked'
                USING ERRCODE = '42501';
        END IF;
        -- The decision names the device that answers (approvals.md: its device_id at byte 140).
        IF convert_from(substring(decode(NEW.decision_body, 'base64') FROM 141 FOR 36), 'LATIN1')
           <> NEW.decided_by_device_id::text THEN
            RAISE EXCEPTION 'the decision names another device than the one answering' USING ERRCODE = '22023';
        END IF;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER approval_requests_answer_trusted BEFORE UPDATE OF status ON public.approval_requests
    FOR EACH ROW EXECUTE FUNCTION private.approval_answer_device_trusted();

REVOKE ALL ON FUNCTION private.tl_statement_device(bytea, text, uuid), private.tl_mark_device(uuid, integer, text, bigint, boolean),
    private.tl_record_devices(uuid, integer, bigint, text), private.trust_log_devices_record(), private.trust_epoch(uuid),
    private.is_trusted_device(uuid, uuid), private.approval_answer_device_trusted() FROM PUBLIC;
