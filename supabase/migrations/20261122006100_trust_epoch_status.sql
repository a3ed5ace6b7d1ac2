-- What an append's named epoch is, as a pure function (issue 68). Both schema variants get this
-- file: each has the trust log.
--
-- private.tl_append decided inline whether the epoch an append names is the one to write (0), pending
-- or closed (1: 55000) or neither (2: 22023), the epoch_status that private.tl_check takes. The
-- decision moves into an IMMUTABLE function of its arguments alone, which
-- testvectors/remote-rules-v1.json (TrustEpochStatus) calls with every case, expecting the answers
-- of TrustLogServerRules.epochStatus in the DeviceTrust module (which the embedded remote runs).
-- tl_append keeps its name, signature and effects.

-- 0 when `named` is the current epoch; 1 when it is the pending reset's, before the current one, or
-- has a head (`has_head`); 2 otherwise. A NULL current or pending epoch matches nothing.
CREATE FUNCTION private.rule_trust_epoch_status(named integer, current_epoch integer, pending_epoch integer,
                                                has_head boolean)
    RETURNS integer
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT CASE WHEN named = current_epoch THEN 0
                WHEN named = pending_epoch OR named < current_epoch OR has_head THEN 1
                ELSE 2 END
$$;
REVOKE ALL ON FUNCTION private.rule_trust_epoch_status(integer, integer, integer, boolean) FROM PUBLIC;

-- tl_append asks the rule: a text edit that must find the text it expects (it refuses to run
-- otherwise) and is skipped when already applied.
DO $$
DECLARE
    fn text := 'private.tl_append(uuid, private.trust_log_state, integer, integer, text[], text[])';
    was text := $was$    v_status integer := CASE
        WHEN named = s.current_epoch THEN 0
        WHEN named = s.pending_epoch OR named < s.current_epoch
             OR EXISTS (SELECT 1 FROM private.trust_log_heads x WHERE x.user_id = caller AND x.epoch = named) THEN 1
        ELSE 2 END;
$was$;
    becomes text := $is$    v_status integer := private.rule_trust_epoch_status(named, s.current_epoch, s.pending_epoch,
        EXISTS (SELECT 1 FROM private.trust_log_heads x WHERE x.user_id = caller AND x.epoch = named));
$is$;
    src text := pg_get_functiondef(fn::regprocedure);
BEGIN
    IF position(becomes IN src) > 0 THEN RETURN; END IF;
    IF position(was IN src) = 0 THEN
        RAISE EXCEPTION '% no longer reads as this migration expects: update it', fn;
    END IF;
    EXECUTE replace(src, was, becomes);
END
$$;
