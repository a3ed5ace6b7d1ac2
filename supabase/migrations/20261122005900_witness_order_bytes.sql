-- Which of a device's witnesses of a seq gives way when it holds four (docs/trust-log.md,
-- "Witnesses"): the oldest and, among equally old ones, the higher signature byte by byte, as the
-- embedded remote and `WitnessRules` order them and the WitnessAdmission vectors say. The order
-- followed the database's collation before this: on a database created with a language's
-- collation (en_US, ICU) 'a' sorts before 'B', so a server there let another witness go than the
-- rule. The text edit must find the text it expects (it refuses to run otherwise) and is skipped
-- when already applied. Both schema variants get this file.
DO $$
DECLARE
    fn text := 'private.publish_witness(uuid, text, text)';
    src text := pg_get_functiondef(fn::regprocedure);
    old text := $old$ORDER BY x.created_at DESC, x.signature OFFSET 3$old$;
    new text := $new$ORDER BY x.created_at DESC, x.signature COLLATE "C" OFFSET 3$new$;
BEGIN
    IF position(new IN src) > 0 THEN RETURN; END IF;
    IF position(old IN src) = 0 THEN
        RAISE EXCEPTION '% no longer orders a seq''s witnesses as this migration expects: update it', fn;
    END IF;
    EXECUTE replace(src, old, new);
END
$$;
