-- A frozen view is bounded in time (docs/trust-log.md, "A frozen view"): a root witnesses its
-- head again at least every hour, also when nothing was appended, and a desktop that is not a
-- root seals and accepts decisions only while a root's witness of its head is under 72 hours
-- old. A device's witnesses of one seq were capped at 4 (54000 beyond): the fifth hour of an
-- unchanged head would have been refused. Now the oldest of the 4 gives way to the newest.
--
-- Both schema variants get this file.
CREATE OR REPLACE FUNCTION private.publish_witness(device_id uuid, body text, signature text)
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
       OR substring(b FROM 67 FOR 36) <> convert_to(publish_witness.device_id::text, 'UTF8') THEN
        RAISE EXCEPTION 'the witness names another user or another device than the caller' USING ERRCODE = '42501';
    END IF;
    s := private.tl_lock(caller);
    v_epoch := private.tl_u32(b, 103);
    v_seq := private.tl_u64(b, 107);
    v_seen := private.tl_u64(b, 147);
    SELECT * INTO h FROM private.trust_log_heads x WHERE x.user_id = caller AND x.epoch = s.current_epoch;
    IF s.current_epoch IS NULL OR v_epoch <> s.current_epoch OR v_seq > h.seq
       OR v_seq < coalesce((SELECT max(w.seq) FROM public.trust_log_witnesses w WHERE w.user_id = caller
                              AND w.device_id = publish_witness.device_id AND w.epoch = s.current_epoch), -1)
       OR v_seen < v_now - 600 OR v_seen > v_now + 600 THEN
        RAISE EXCEPTION 'a witness names the current epoch, a seq up to its head and at least the device''s last, and now'
            USING ERRCODE = '22023';
    END IF;
    -- At most 4 rows a seq: the oldest gives way to the newest, so a root can witness an unchanged
    -- head again every hour (its freshness) and a row that got there first still shuts nothing out.
    -- The same witness again (the same second, the same deterministic signature) changes nothing.
    IF EXISTS (SELECT 1 FROM public.trust_log_witnesses w WHERE w.user_id = caller
                 AND w.device_id = publish_witness.device_id AND w.epoch = v_epoch AND w.seq = v_seq
                 AND w.signature = publish_witness.signature) THEN
        RETURN jsonb_build_object('epoch', v_epoch, 'seq', v_seq);
    END IF;
    DELETE FROM public.trust_log_witnesses w
    WHERE (w.user_id, w.device_id, w.epoch, w.seq, w.signature) IN (
        SELECT x.user_id, x.device_id, x.epoch, x.seq, x.signature FROM public.trust_log_witnesses x
        WHERE x.user_id = caller AND x.device_id = publish_witness.device_id AND x.epoch = v_epoch AND x.seq = v_seq
        ORDER BY x.created_at DESC, x.signature OFFSET 3);
    INSERT INTO public.trust_log_witnesses (user_id, device_id, epoch, seq, body, signature)
    VALUES (caller, publish_witness.device_id, v_epoch, v_seq, publish_witness.body, publish_witness.signature)
    ON CONFLICT DO NOTHING;
    RETURN jsonb_build_object('epoch', v_epoch, 'seq', v_seq);
END
$$;
