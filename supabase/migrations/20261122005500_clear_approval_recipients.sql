-- clear_approval queues for, and counts, only the devices the user's trust log vouches for
-- (docs/approvals.md, "Who is asked, who may answer"; issue 68). Only the project's own schema has
-- clear_approval; the deployed variant skips this file.
--
-- private.clear_approval queued a clearing for every valid device token of the user and counted
-- them all; public.clear_approval then deleted what it had queued for a device the log does not
-- vouch for (a revoked or never-paired one), but answered the count from before. So with a revoked
-- device holding a valid token, `devicesNotified` said one more than went out, where the embedded
-- remote counted only the devices it queued for. Now the private function selects the same
-- recipients the embedded remote does (every device when the user has no log, else the devices
-- the log vouches for), in its insert and in its count. The wrapper keeps its delete: it still
-- takes back what an earlier call queued, undelivered, for a device revoked since.
DO $$
DECLARE
    fn text := 'private.clear_approval(text, text)';
    src text := pg_get_functiondef(fn::regprocedure);
    old text := 't.token IS DISTINCT FROM v_exclude';
BEGIN
    -- Once in the insert, once in the count.
    IF (length(src) - length(replace(src, old, ''))) / length(old) <> 2 THEN
        RAISE EXCEPTION '% no longer selects its recipients as this migration expects: update it', fn;
    END IF;
    EXECUTE replace(src, old, old || ' AND (NOT private.has_trust_log(caller) OR private.is_trusted_device(caller, t.device_id))');
END
$$;
