-- How a live-activity event is queued, as a pure function (docs/notifications.md, "Throttle" and
-- "End"; issue 68). Only the project's own schema has live activities; the deployed variant skips
-- this file.
--
-- private.queue_live_activity (*_delivery_round_5.sql) decided inline whether an event replaces
-- the token's waiting row and when its row is due. The decision moves into an IMMUTABLE function
-- of its arguments alone, which testvectors/remote-rules-v1.json calls with every case, expecting
-- the answers of LiveActivityQueueing in the RemoteRules module (which the embedded remote runs).
-- The reader keeps its name, signature, checks, locks and effects.

-- Where a live-activity event goes (`is_end`: an end, else an update): `replaces` the token's
-- waiting row when one waits (`waiting_due_in`: seconds from now until it is due, negative once
-- due; NULL: none waits), else a row is inserted. `due`: 'waiting' (the waiting row's time kept:
-- an update, or an end whose waiting row is already due), 'now', or 'after_previous'
-- (`after_previous` seconds, 15, after the token's latest row was due, `previous_due_in` seconds
-- from now, when that is later than now; an update only).
CREATE FUNCTION private.rule_live_activity_due(
    is_end boolean, waiting_due_in double precision, previous_due_in double precision,
    OUT replaces boolean, OUT due text, OUT after_previous double precision
)
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT waiting_due_in IS NOT NULL, d, CASE WHEN d = 'after_previous' THEN 15::double precision END
    FROM (SELECT CASE WHEN waiting_due_in IS NOT NULL THEN
                          CASE WHEN NOT is_end OR waiting_due_in <= 0 THEN 'waiting' ELSE 'now' END
                      WHEN is_end OR previous_due_in IS NULL OR previous_due_in + 15 <= 0 THEN 'now'
                      ELSE 'after_previous' END AS d) decided
$$;
REVOKE ALL ON FUNCTION private.rule_live_activity_due(boolean, double precision, double precision) FROM PUBLIC;

-- A live-activity update over the user's live-activity budget is dropped, as before: the status
-- write that raised it commits, and the next update carries the latest state. An end is never
-- refused.
CREATE OR REPLACE FUNCTION private.queue_live_activity(caller uuid, device uuid, token text, event text, payload jsonb, priority integer)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
    waiting public.push_outbox%ROWTYPE;
    previous timestamptz;
    placed record;
BEGIN
    IF event <> 'end' AND NOT private.may_queue_push(device, 'liveactivity') THEN RETURN false; END IF;
    -- After an end, nothing: the activity is over.
    IF EXISTS (SELECT 1 FROM public.push_outbox o WHERE o.token = queue_live_activity.token
               AND o.push_type = 'liveactivity' AND o.payload -> 'aps' ->> 'event' = 'end') THEN
        RETURN false;
    END IF;
    SELECT * INTO waiting FROM public.push_outbox o
        WHERE o.token = queue_live_activity.token AND o.push_type = 'liveactivity' AND o.delivered_at IS NULL
          AND o.failed_at IS NULL AND (o.lease_until IS NULL OR o.lease_until < now())
        ORDER BY o.id DESC LIMIT 1 FOR UPDATE;
    SELECT max(o.not_before) INTO previous FROM public.push_outbox o
        WHERE o.token = queue_live_activity.token AND o.push_type = 'liveactivity';
    -- (Without a waiting row, `waiting` is all NULL: its due time reads as none.)
    SELECT r.replaces, r.due, r.after_previous INTO placed FROM private.rule_live_activity_due(
        event = 'end', extract(epoch FROM waiting.not_before - now())::double precision,
        extract(epoch FROM previous - now())::double precision) r;
    IF placed.replaces THEN
        UPDATE public.push_outbox o SET payload = queue_live_activity.payload, priority = queue_live_activity.priority,
            not_before = CASE placed.due WHEN 'waiting' THEN o.not_before ELSE now() END
            WHERE o.id = waiting.id;
        RETURN true;
    END IF;
    BEGIN
        INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload, not_before)
            VALUES (caller, device, token, 'liveactivity', priority, NULL, payload,
                    CASE placed.due WHEN 'after_previous' THEN previous + make_interval(secs => placed.after_previous)
                         ELSE now() END);
    EXCEPTION WHEN program_limit_exceeded THEN
        RETURN false;
    END;
    RETURN true;
END
$$;
