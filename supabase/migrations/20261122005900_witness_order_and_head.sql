-- Two edits of private.publish_witness, so that it answers as `WitnessRules` (the embedded
-- remote's) and the WitnessAdmission vectors say. Both schema variants get this file.
--
-- 1. Which of a device's witnesses of a seq gives way when it holds four (docs/trust-log.md,
--    "Witnesses"): the oldest and, among equally old ones, the higher signature byte by byte.
--    The order followed the database's collation: on a database created with a language's
--    collation (en_US, ICU) 'a' sorts before 'B', so a server there let another witness go.
-- 2. A current epoch without its head row (no writer leaves one; a restore could) compared the
--    seq with NULL, which let the witness through: it is out of range (22023), as with no log.
--
-- Each edit must find the text it expects (it refuses to run otherwise) and is skipped when
-- already applied.
DO $$
DECLARE
    fn text := 'private.publish_witness(uuid, text, text)';
    e record;
    src text;
BEGIN
    FOR e IN SELECT * FROM (VALUES
        ($o$ORDER BY x.created_at DESC, x.signature OFFSET 3$o$,
         $n$ORDER BY x.created_at DESC, x.signature COLLATE "C" OFFSET 3$n$),
        ($o$OR v_seq > h.seq$o$, $n$OR h.seq IS NULL OR v_seq > h.seq$n$)
    ) AS v(old, new) LOOP
        src := pg_get_functiondef(fn::regprocedure);
        CONTINUE WHEN position(e.new IN src) > 0;
        IF position(e.old IN src) = 0 THEN
            RAISE EXCEPTION '% no longer reads as this migration expects (%): update it', fn, e.old;
        END IF;
        EXECUTE replace(src, e.old, e.new);
    END LOOP;
END
$$;
