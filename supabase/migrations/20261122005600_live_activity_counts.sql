-- A live activity's todo counts read as the engine reads them (notifications.md; issue 68). Only
-- the project's own schema has live activities; the deployed variant skips this file.
--
-- agent_coding_sessions_runtime_status_live takes any number from 0 to 100,000 as a todo count,
-- and jsonb keeps a number as it was written: 2.5, or 2.0. private.rule_live_activity_payload read
-- each count with `::integer`, which raises 22P02 on the text '2.5' and on '2.0', inside the
-- session's trigger, and only while a phone had a live activity open for the session: the
-- desktop's status write failed or not depending on another device, and once such a status was
-- stored, ending the session failed the same way. The engine's reader (RuntimeStatus in SyncModel,
-- which the embedded remote's payloads read through) takes a count's whole part: 2.5 and 2.0 are
-- 2. The rule now reads each count the same way, through numeric and trunc().
DO $$
DECLARE
    fn text := 'private.rule_live_activity_payload(bigint, text, text, text, boolean, text, jsonb, bigint)';
    src text := pg_get_functiondef(fn::regprocedure);
    old text := $old$'completed', (todo ->> 'completed')::integer, 'total', (todo ->> 'total')::integer,$old$;
    new text := $new$'completed', trunc((todo ->> 'completed')::numeric)::integer,
            'total', trunc((todo ->> 'total')::numeric)::integer,$new$;
BEGIN
    IF position(old IN src) = 0 THEN
        RAISE EXCEPTION '% no longer reads its counts as this migration expects: update it', fn;
    END IF;
    EXECUTE replace(src, old, new);
END
$$;
