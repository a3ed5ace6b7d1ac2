-- Whether a live-activity event may be queued for a token at all, as a pure function (issue 68).
-- Only the project's own schema has live activities; the deployed variant skips this file.
--
-- private.queue_live_activity asked three things inline before placing an event: an update is
-- refused when the device turned live activities off (an end still goes, so its open activities
-- close); any event is refused for a device the user's trust log does not vouch for, once the
-- user has a log (*_revoked_device_pushes.sql); and nothing follows an end already queued for the
-- token. The decision moves into an IMMUTABLE function of its arguments alone, which
-- testvectors/remote-rules-v1.json (LiveActivityRefusal) calls with every case, expecting the
-- answers of LiveActivityQueueing.refusal in the RemoteRules module (which the embedded remote
-- runs). The reader keeps its name, signature, locks and effects; it now reads all three facts
-- before deciding (each a read of the caller's own rows, none with a lock).

-- Why an event is not queued (`is_end`: an end, else an update; `setting_off`: the device's
-- enable_live_activities is off; `vouched`: whether the user's trust log vouches for the device,
-- NULL when the user has no log; `ended`: an end is queued for the token already), in this order:
-- 'setting_off' (an update only), 'not_vouched', 'ended'; NULL when it may be queued.
CREATE FUNCTION private.rule_live_activity_refusal(is_end boolean, setting_off boolean, vouched boolean, ended boolean)
    RETURNS text
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT CASE WHEN NOT is_end AND setting_off THEN 'setting_off'
                WHEN vouched IS NOT NULL AND NOT vouched THEN 'not_vouched'
                WHEN ended THEN 'ended' END
$$;
REVOKE ALL ON FUNCTION private.rule_live_activity_refusal(boolean, boolean, boolean, boolean) FROM PUBLIC;

-- The reader asks the rule: a text edit that must find the text it expects (it refuses to run
-- otherwise) and is skipped when already applied.
DO $$
DECLARE
    fn text := 'private.queue_live_activity(uuid, uuid, text, text, jsonb, integer)';
    was text := $was$    IF event <> 'end' AND NOT private.may_queue_push(device, 'liveactivity') THEN RETURN false; END IF;
    IF private.has_trust_log(caller) AND NOT private.is_trusted_device(caller, device) THEN RETURN false; END IF;
    -- After an end, nothing: the activity is over.
    IF EXISTS (SELECT 1 FROM public.push_outbox o WHERE o.token = queue_live_activity.token
               AND o.push_type = 'liveactivity' AND o.payload -> 'aps' ->> 'event' = 'end') THEN
        RETURN false;
    END IF;
$was$;
    becomes text := $is$    IF private.rule_live_activity_refusal(event = 'end', NOT private.may_queue_push(device, 'liveactivity'),
           CASE WHEN private.has_trust_log(caller) THEN private.is_trusted_device(caller, device) END,
           EXISTS (SELECT 1 FROM public.push_outbox o WHERE o.token = queue_live_activity.token
                   AND o.push_type = 'liveactivity' AND o.payload -> 'aps' ->> 'event' = 'end')) IS NOT NULL THEN
        RETURN false;
    END IF;
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
