-- Delivery round 5 (docs/push-worker.md, "Limits" and "Claim order"). Only the project's own
-- schema has the outbox's worker columns; the deployed variant skips this file.
--
-- 1. The push budget counts what was queued, never what is still queued. It counted the user's
--    rows in push_outbox of the last minute, so deleting rows refunded it: reopen_approval
--    deletes a request's rows before queuing its alerts again, and a loop of answer and reopen
--    queued 3,465 pushes in 65 s. Now each signed-in user's queued rows are counted per second
--    in private.push_budget, a counter only ever added to; the budget is the sum over the last
--    60 s. Alert and background pushes: 600. Live-activity rows, which no budget counted: 300
--    of their own. The clearing of the user's own approval request or question and a live
--    activity's end are counted but never refused (an answer, a cancellation, a close or an end
--    must always commit); what starts a new round of pushes (a new approval request, a new
--    question, a reopening) is refused once the budget is spent, so no loop of clearings goes on.
-- 2. Bounds on what fans pushes out: at most 100 active device rows and 100 valid live-activity
--    tokens per user (device tokens were already bounded: 50).
-- 3. The claim is fair by queue, not by clock. Each row had fair_at = now (or 1 ms after the
--    user's latest), so while all accounts together queued faster than the worker sent, a row
--    queued now waited behind every account's whole backlog (18 s where 0.03 s was expected).
--    Start-time fair queuing with a virtual clock: a new row starts at V, the claim key of the
--    head of its priority's queue (the row the claim takes next, never later than now), or 1 ms
--    after the same user's latest pending row if that is later. A user with nothing waiting
--    starts at the head whatever others queued; a user who floods queues behind their own rows.
--    The claim key is kept in a column, claim_key: fair_at, or for a row with a hold (a
--    not_before or next_attempt_at set in the future: a throttled live-activity update, a task
--    alert's coalescing minute, a retry, a token held back) V plus what is left of the hold, if
--    that is later: holds count in the queue's own time. A due time that is not in the future is
--    no hold, so a row due now is ordered by fair_at alone (as a wall-clock time it would sort
--    after the virtual ones), and a row given back without charge keeps its place. The claim
--    stays one ordered index scan, now over (priority, claim_key, id).

-- 1. The budget.
CREATE TABLE private.push_budget (
    user_id uuid NOT NULL,
    kind text NOT NULL CHECK (kind IN ('push', 'liveactivity')),
    at_second timestamptz NOT NULL,
    queued integer NOT NULL,
    PRIMARY KEY (user_id, kind, at_second)
);
REVOKE ALL ON private.push_budget FROM PUBLIC;

-- The budget of `kind` for one user: 600 alert and background pushes, 300 live-activity rows, in
-- any 60 s.
CREATE FUNCTION private.push_budget_limit(kind text) RETURNS integer
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT CASE kind WHEN 'liveactivity' THEN 300 ELSE 600 END
$$;

-- What `usr` queued of `kind` in the last 60 s: every second that overlaps them (a second
-- counted from its start would let a window of 60 s hold 61 seconds' rows).
CREATE FUNCTION private.push_budget_used(usr uuid, kind text) RETURNS bigint
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = '' AS $$
    SELECT coalesce(sum(b.queued), 0) FROM private.push_budget b
    WHERE b.user_id = usr AND b.kind = push_budget_used.kind AND b.at_second > now() - interval '61 seconds'
$$;

-- 54000 when a signed-in user's push budget is spent: what would start a new round of pushes
-- (an approval request, a question, a reopening) waits until it is not.
CREATE FUNCTION private.require_push_budget(usr uuid) RETURNS void
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    IF auth.uid() IS NOT NULL AND private.push_budget_used(usr, 'push') >= private.push_budget_limit('push') THEN
        RAISE EXCEPTION 'at most 600 pushes a minute are queued for one user: try again in a minute'
            USING ERRCODE = '54000';
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION private.push_outbox_rate() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    v_kind text := CASE WHEN NEW.push_type = 'liveactivity' THEN 'liveactivity' ELSE 'push' END;
    v_inserted boolean;
    v_must_commit boolean;
BEGIN
    IF auth.uid() IS NULL THEN RETURN NEW; END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('push_outbox:' || NEW.user_id::text, 0));
    INSERT INTO private.push_budget AS b (user_id, kind, at_second, queued)
        VALUES (NEW.user_id, v_kind, date_trunc('second', now()), 1)
        ON CONFLICT (user_id, kind, at_second) DO UPDATE SET queued = b.queued + 1
        RETURNING (xmax = 0) INTO v_inserted;
    -- A new second: the user's seconds that left the window go.
    IF v_inserted THEN
        DELETE FROM private.push_budget b
            WHERE b.user_id = NEW.user_id AND b.at_second <= now() - interval '61 seconds';
    END IF;
    v_must_commit := (NEW.push_type = 'liveactivity' AND NEW.payload -> 'aps' ->> 'event' = 'end')
        OR (NEW.collapse_id LIKE 'approval-%' AND EXISTS (
            SELECT 1 FROM public.approval_requests r
             WHERE r.id::text = lower(substring(NEW.collapse_id FROM 10)) AND r.user_id = NEW.user_id))
        OR (NEW.collapse_id LIKE 'question-clear-%' AND EXISTS (
            SELECT 1 FROM public.agent_questions q
             WHERE q.id::text = lower(substring(NEW.collapse_id FROM 16)) AND q.user_id = NEW.user_id));
    IF NOT v_must_commit AND private.push_budget_used(NEW.user_id, v_kind) > private.push_budget_limit(v_kind) THEN
        IF v_kind = 'liveactivity' THEN
            RAISE EXCEPTION 'at most 300 live-activity updates a minute are queued for one user: try again in a minute'
                USING ERRCODE = '54000';
        END IF;
        RAISE EXCEPTION 'at most 600 pushes a minute are queued for one user: try again in a minute'
            USING ERRCODE = '54000';
    END IF;
    RETURN NEW;
END
$$;
-- Counted after the insert: a row that INSERT ... ON CONFLICT DO NOTHING discards (a second
-- clearing of the same request and token) was never queued, and a BEFORE trigger runs for it too.
-- A refusal still rolls the statement back.
DROP TRIGGER push_outbox_rate ON public.push_outbox;
CREATE TRIGGER push_outbox_rate AFTER INSERT ON public.push_outbox
    FOR EACH ROW EXECUTE FUNCTION private.push_outbox_rate();
-- Rows the budget no longer reads (the old trigger counted push_outbox by created_at).
DROP INDEX IF EXISTS public.push_outbox_user_created;

-- What starts a new round of pushes checks the budget first.
CREATE OR REPLACE FUNCTION private.approval_request_limits() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    v_now bigint := extract(epoch FROM now())::bigint;
BEGIN
    PERFORM private.require_push_budget(NEW.user_id);
    PERFORM pg_advisory_xact_lock(hashtextextended('approval_requests:' || NEW.user_id::text, 0));
    IF (SELECT count(*) FROM public.approval_requests r
         WHERE r.session_id = NEW.session_id AND r.status = 'pending' AND r.expires_at > v_now) >= 5 THEN
        RAISE EXCEPTION 'a session has at most 5 pending approval requests: answer, cancel or let one expire first'
            USING ERRCODE = '54000';
    END IF;
    IF (SELECT count(*) FROM public.approval_requests r
         WHERE r.user_id = NEW.user_id AND r.status = 'pending' AND r.expires_at > v_now) >= 20 THEN
        RAISE EXCEPTION 'a user has at most 20 pending approval requests: answer, cancel or let one expire first'
            USING ERRCODE = '54000';
    END IF;
    RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION private.question_limits() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    v_now bigint := extract(epoch FROM now())::bigint;
BEGIN
    PERFORM private.require_push_budget(NEW.user_id);
    PERFORM pg_advisory_xact_lock(hashtextextended('agent_questions:' || NEW.user_id::text, 0));
    IF (SELECT count(*) FROM public.agent_questions q
         WHERE q.session_id = NEW.session_id AND q.status = 'pending' AND q.expires_at > v_now) >= 5 THEN
        RAISE EXCEPTION 'a session has at most 5 pending questions: close one or let it expire first'
            USING ERRCODE = '54000';
    END IF;
    IF (SELECT count(*) FROM public.agent_questions q
         WHERE q.user_id = NEW.user_id AND q.status = 'pending' AND q.expires_at > v_now) >= 20 THEN
        RAISE EXCEPTION 'a user has at most 20 pending questions: close one or let it expire first'
            USING ERRCODE = '54000';
    END IF;
    RETURN NEW;
END
$$;

-- A reopening is refused once the budget is spent, before it deletes anything.
CREATE FUNCTION private.reopen_budget() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    PERFORM private.require_push_budget(NEW.user_id);
    RETURN NEW;
END
$$;
CREATE TRIGGER approval_requests_reopen_budget BEFORE UPDATE OF reopened ON public.approval_requests
    FOR EACH ROW WHEN (NEW.reopened > OLD.reopened) EXECUTE FUNCTION private.reopen_budget();

-- A live-activity update over the user's live-activity budget is dropped, as a task alert over
-- the push budget is (*_notifications_2.sql): the status write that raised it commits, and the
-- next update carries the latest state. An end is never refused.
CREATE OR REPLACE FUNCTION private.queue_live_activity(caller uuid, device uuid, token text, event text, payload jsonb, priority integer)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
    waiting public.push_outbox%ROWTYPE;
    previous timestamptz;
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
    IF FOUND THEN
        UPDATE public.push_outbox o SET payload = queue_live_activity.payload, priority = queue_live_activity.priority,
            not_before = CASE WHEN event = 'end' THEN least(o.not_before, now()) ELSE o.not_before END
            WHERE o.id = waiting.id;
        RETURN true;
    END IF;
    SELECT max(o.not_before) INTO previous FROM public.push_outbox o
        WHERE o.token = queue_live_activity.token AND o.push_type = 'liveactivity';
    BEGIN
        INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload, not_before)
            VALUES (caller, device, token, 'liveactivity', priority, NULL, payload,
                    CASE WHEN event = 'end' OR previous IS NULL THEN now()
                         ELSE greatest(now(), previous + interval '15 seconds') END);
    EXCEPTION WHEN program_limit_exceeded THEN
        RETURN false;
    END;
    RETURN true;
END
$$;

-- 2. Device rows and live-activity tokens per user.
CREATE FUNCTION private.device_row_limit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    -- An upsert of a device the user already has is not a new row (BEFORE INSERT runs for
    -- the proposed row of INSERT ... ON CONFLICT too).
    IF auth.uid() IS NULL OR EXISTS (SELECT 1 FROM public.devices d WHERE d.id = NEW.id) THEN RETURN NEW; END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('devices:' || NEW.user_id::text, 0));
    IF (SELECT count(*) FROM public.devices d WHERE d.user_id = NEW.user_id AND d.is_active) >= 100 THEN
        RAISE EXCEPTION 'a user has at most 100 active devices: revoke the devices you no longer use'
            USING ERRCODE = '54000';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER devices_row_limit BEFORE INSERT ON public.devices
    FOR EACH ROW EXECUTE FUNCTION private.device_row_limit();

CREATE FUNCTION private.live_activity_token_limit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    IF auth.uid() IS NULL OR NOT NEW.is_valid OR NEW.token_type <> 'live_activity' THEN RETURN NEW; END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('push_tokens:' || NEW.user_id::text, 0));
    IF (SELECT count(*) FROM public.push_tokens t
         WHERE t.user_id = NEW.user_id AND t.token_type = 'live_activity' AND t.is_valid AND t.token <> NEW.token) >= 100 THEN
        RAISE EXCEPTION 'a user holds at most 100 valid live-activity tokens: end the live activities you no longer follow'
            USING ERRCODE = '54000';
    END IF;
    RETURN NEW;
END
$$;
-- After push_tokens_limits (triggers of one event run in name order): the device's oldest
-- tokens have given way first.
CREATE TRIGGER push_tokens_live_activity_limit BEFORE INSERT OR UPDATE OF is_valid, device_id, user_id, token_type
    ON public.push_tokens FOR EACH ROW EXECUTE FUNCTION private.live_activity_token_limit();

REVOKE ALL ON FUNCTION private.push_budget_limit(text), private.push_budget_used(uuid, text),
    private.require_push_budget(uuid), private.reopen_budget(), private.device_row_limit(),
    private.live_activity_token_limit() FROM PUBLIC;

-- 3. The fair claim.
ALTER TABLE public.push_outbox ADD COLUMN claim_key timestamptz;

-- V for a row of `priority`: the claim key of the head of that priority's pending queue (the row
-- the claim takes next), never later than `at`.
CREATE FUNCTION private.push_claim_clock(priority integer, at timestamptz) RETURNS timestamptz
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = '' AS $$
    SELECT least(coalesce((SELECT o.claim_key FROM public.push_outbox o
                           WHERE o.delivered_at IS NULL AND o.failed_at IS NULL AND o.priority = push_claim_clock.priority
                           ORDER BY o.priority DESC, o.claim_key, o.id LIMIT 1), at), at)
$$;

-- The claim key: fair_at, or, when a due time is set after `at` (a hold), the virtual time that
-- hold ends at, V plus what is left of it, if that is later. A hold is so counted in the queue's
-- own time: a retry due in 1 s goes about 1 s of claims after the head, not behind every row
-- that starts before the wall clock's next second.
CREATE FUNCTION private.push_claim_key(fair_at timestamptz, next_attempt_at timestamptz, not_before timestamptz,
                                       v timestamptz, at timestamptz) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT CASE WHEN greatest(next_attempt_at, not_before) > at
                THEN greatest(fair_at, v + (greatest(next_attempt_at, not_before) - at))
                ELSE fair_at END
$$;

CREATE OR REPLACE FUNCTION private.push_outbox_fair_at() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    v_now timestamptz := clock_timestamp();
    v_clock timestamptz := private.push_claim_clock(NEW.priority, v_now);
    v_latest timestamptz;
BEGIN
    SELECT o.fair_at INTO v_latest FROM public.push_outbox o
        WHERE o.user_id = NEW.user_id AND o.delivered_at IS NULL AND o.failed_at IS NULL
        ORDER BY o.fair_at DESC LIMIT 1;
    NEW.fair_at := greatest(v_clock, v_latest + interval '1 millisecond');
    NEW.claim_key := private.push_claim_key(NEW.fair_at, NEW.next_attempt_at, NEW.not_before, v_clock, v_now);
    RETURN NEW;
END
$$;

-- A due time changed later (a retry, a hold-back, a live-activity update's throttle, an end
-- that goes at once) moves the key; a due time that is not in the future puts it back at
-- fair_at (a row given back without charge keeps its place).
CREATE FUNCTION private.push_outbox_claim_key() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    v_now timestamptz := clock_timestamp();
BEGIN
    NEW.claim_key := CASE WHEN greatest(NEW.next_attempt_at, NEW.not_before) > v_now
        THEN private.push_claim_key(NEW.fair_at, NEW.next_attempt_at, NEW.not_before,
                                    private.push_claim_clock(NEW.priority, v_now), v_now)
        ELSE NEW.fair_at END;
    RETURN NEW;
END
$$;
CREATE TRIGGER push_outbox_claim_key BEFORE UPDATE OF next_attempt_at, not_before ON public.push_outbox
    FOR EACH ROW
    WHEN (OLD.next_attempt_at IS DISTINCT FROM NEW.next_attempt_at OR OLD.not_before IS DISTINCT FROM NEW.not_before)
    EXECUTE FUNCTION private.push_outbox_claim_key();
REVOKE ALL ON FUNCTION private.push_claim_key(timestamptz, timestamptz, timestamptz, timestamptz, timestamptz),
    private.push_claim_clock(integer, timestamptz),
    private.push_outbox_claim_key() FROM PUBLIC;

UPDATE public.push_outbox o
    SET claim_key = greatest(o.fair_at, o.next_attempt_at, o.not_before);
ALTER TABLE public.push_outbox ALTER COLUMN claim_key SET NOT NULL;

DROP INDEX public.push_outbox_due;
CREATE INDEX push_outbox_due ON public.push_outbox (priority DESC, claim_key, id)
    WHERE delivered_at IS NULL AND failed_at IS NULL;
