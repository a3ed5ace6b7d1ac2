-- What the trust log's writing calls refuse of an entry that passed rules E, for where it goes, as
-- a pure function (issue 68). Both schema variants get this file: each has the trust log.
--
-- private.start_trust_log refused epoch 1's genesis naming a prior epoch other than 0;
-- private.request_identity_reset a reset's genesis not naming the current epoch (1 while none is)
-- as its prior, an accept while no epoch is current, and an accept that does not name this reset;
-- private.tl_append an accept among appended entries and a veto that names no pending reset. Each
-- was an inline IF. The decisions move into private.rule_trust_placement_refusal, IMMUTABLE, a
-- function of its arguments alone, which testvectors/remote-rules-v1.json (TrustPlacement) calls
-- with every case, expecting the answers and words of TrustLogCallRules.placementRefusal in the
-- RemoteRules module (which the embedded remote runs); the three functions ask it through
-- private.tl_refuse_placement, which raises what it says. They keep their names, signatures,
-- order of checks and effects.

-- Why an entry is refused where it goes (`placement`: start, reset, accept or append), with the
-- SQLSTATE and words it is raised with; all NULL when it is not. `prior_epoch`: a genesis's;
-- `current_epoch`: NULL while none is current; `with_accept`: a reset comes with an accept;
-- `verdict`: a reset answer's byte (1 veto, 2 accept), NULL for another type; `names_reset`: the
-- answer names the reset it answers (this one for an accept, the pending one for an append),
-- NULL as false. An unknown placement is refused.
CREATE FUNCTION private.rule_trust_placement_refusal(
    placement text, prior_epoch integer, current_epoch integer, with_accept boolean, verdict integer,
    names_reset boolean, OUT reason text, OUT sql_state text, OUT message text
)
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT r.reason, w.sql_state, w.message
    FROM (SELECT CASE placement
        WHEN 'start' THEN CASE WHEN prior_epoch IS DISTINCT FROM 0 THEN 'genesis_prior' END
        WHEN 'reset' THEN CASE WHEN prior_epoch IS DISTINCT FROM coalesce(current_epoch, 1) THEN 'reset_prior'
                               WHEN with_accept AND current_epoch IS NULL THEN 'no_current_epoch' END
        WHEN 'accept' THEN CASE WHEN verdict IS DISTINCT FROM 2 OR NOT coalesce(names_reset, false)
                                THEN 'accept_unnamed' END
        WHEN 'append' THEN CASE WHEN verdict = 2 THEN 'accept_appended'
                                WHEN verdict IS NOT NULL AND NOT coalesce(names_reset, false) THEN 'veto_unnamed' END
        ELSE 'unknown_placement' END AS reason) r
    LEFT JOIN (VALUES
        ('genesis_prior', '22023', 'epoch 1''s genesis names prior epoch 0'),
        ('reset_prior', '22023', 'a reset names the current epoch as its prior'),
        ('no_current_epoch', '55000', 'no epoch is current to accept a reset'),
        ('accept_unnamed', '22023', 'the accept must name this reset'),
        ('accept_appended', '22023', 'an accept is appended only with request_identity_reset'),
        ('veto_unnamed', '55000', 'the veto names no pending reset'),
        ('unknown_placement', '22023', 'an entry goes at the start, in a reset, as its accept or in an append')
    ) AS w(reason, sql_state, message) ON w.reason = r.reason
$$;
REVOKE ALL ON FUNCTION private.rule_trust_placement_refusal(text, integer, integer, boolean, integer, boolean)
    FROM PUBLIC;

-- Raises what the rule says of an entry where it goes.
CREATE FUNCTION private.tl_refuse_placement(
    placement text, prior_epoch integer, current_epoch integer, with_accept boolean, verdict integer,
    names_reset boolean
) RETURNS void
    LANGUAGE plpgsql IMMUTABLE SET search_path = '' AS $$
DECLARE
    r record;
BEGIN
    SELECT * INTO r FROM private.rule_trust_placement_refusal(placement, prior_epoch, current_epoch, with_accept,
                                                                verdict, names_reset);
    IF r.sql_state IS NOT NULL THEN RAISE EXCEPTION '%', r.message USING ERRCODE = r.sql_state; END IF;
END
$$;
REVOKE ALL ON FUNCTION private.tl_refuse_placement(text, integer, integer, boolean, integer, boolean) FROM PUBLIC;

-- The three functions ask the rule: text edits that must find the text they expect (each refuses
-- to run otherwise) and are skipped when already applied.
DO $$
DECLARE
    edit record;
    src text;
BEGIN
    FOR edit IN SELECT * FROM (VALUES
        ('private.start_trust_log(text[], text[])',
         $was$    IF c.prior_epoch <> 0 THEN RAISE EXCEPTION 'epoch 1''s genesis names prior epoch 0' USING ERRCODE = '22023'; END IF;
$was$,
         $is$    PERFORM private.tl_refuse_placement('start', c.prior_epoch, NULL, false, NULL, NULL);
$is$),
        ('private.request_identity_reset(text, text, text, text)',
         $was$    IF c.prior_epoch <> coalesce(s.current_epoch, 1) THEN
        RAISE EXCEPTION 'a reset names the current epoch as its prior' USING ERRCODE = '22023';
    END IF;
    IF request_identity_reset.accept IS NOT NULL THEN
        IF s.current_epoch IS NULL THEN RAISE EXCEPTION 'no epoch is current to accept a reset' USING ERRCODE = '55000'; END IF;
$was$,
         $is$    PERFORM private.tl_refuse_placement('reset', c.prior_epoch, s.current_epoch,
                                        request_identity_reset.accept IS NOT NULL, NULL, NULL);
    IF request_identity_reset.accept IS NOT NULL THEN
$is$),
        ('private.request_identity_reset(text, text, text, text)',
         $was$        IF a.type <> 6 OR a.answer_verdict <> 2 OR a.answer_epoch <> v_epoch OR a.answer_hash <> c.hash THEN
            RAISE EXCEPTION 'the accept must name this reset' USING ERRCODE = '22023';
        END IF;
$was$,
         $is$        PERFORM private.tl_refuse_placement('accept', NULL, NULL, false,
                                            CASE WHEN a.type = 6 THEN a.answer_verdict END,
                                            a.answer_epoch = v_epoch AND a.answer_hash = c.hash);
$is$),
        ('private.tl_append(uuid, private.trust_log_state, integer, integer, text[], text[])',
         $was$            IF c.answer_verdict = 2 THEN
                RAISE EXCEPTION 'an accept is appended only with request_identity_reset' USING ERRCODE = '22023';
            END IF;
            IF s.pending_epoch IS NULL OR c.answer_epoch <> s.pending_epoch OR c.answer_hash <> s.pending_hash THEN
                RAISE EXCEPTION 'the veto names no pending reset' USING ERRCODE = '55000';
            END IF;
$was$,
         $is$            PERFORM private.tl_refuse_placement('append', NULL, NULL, false, c.answer_verdict,
                                                c.answer_epoch = s.pending_epoch AND c.answer_hash = s.pending_hash);
$is$)
    ) AS e(fn, was, becomes) LOOP
        src := pg_get_functiondef(edit.fn::regprocedure);
        CONTINUE WHEN position(edit.becomes IN src) > 0;
        IF position(edit.was IN src) = 0 THEN
            RAISE EXCEPTION '% no longer reads as this migration expects: update it', edit.fn;
        END IF;
        EXECUTE replace(src, edit.was, edit.becomes);
    END LOOP;
END
$$;
