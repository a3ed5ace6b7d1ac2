-- A claim fair across users (docs/push-worker.md, "Claim order"): one account's backlog no
-- longer delays another account's push by more than a moment.
--
-- Start-time fair queuing by user. Each row gets fair_at when it is queued: now, or 1 ms after
-- the same user's latest pending row if that is later. A user who queues faster than 1,000 rows
-- a second pushes their own rows' fair_at into the future, and a row of another user, queued
-- now, sorts before them. The worker claims in (priority DESC, greatest(fair_at,
-- next_attempt_at, not_before), id) order: one ordered index scan as before, so the claim costs what it did; nothing is held back when nothing else
-- waits (the order changes, not the rate), and an account's own alerts still go before its own
-- background pushes. A row not due yet (a throttled live-activity update, a retry, a hold-back)
-- sorts at the time it is due, so rows waiting out a delay never sit at the head of the claim's
-- index; fair_at itself stays the user's virtual clock. clock_timestamp(), not now(): a long transaction's rows
-- do not jump the queue. (Two transactions of one user at once may give equal values; the id
-- orders them.)
-- Only the project's own schema has the worker's columns; the deployed variant skips this file.

ALTER TABLE public.push_outbox ADD COLUMN fair_at timestamptz NOT NULL DEFAULT now();

-- The user's latest pending fair_at, read by the trigger below.
CREATE INDEX push_outbox_user_fair ON public.push_outbox (user_id, fair_at DESC)
    WHERE delivered_at IS NULL AND failed_at IS NULL;

-- Rows queued earlier in the same statement are visible here (a BEFORE ROW trigger sees the
-- rows its statement already inserted), so a batch insert spaces its own rows too.
CREATE FUNCTION private.push_outbox_fair_at() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    NEW.fair_at := greatest(clock_timestamp(), (
        SELECT o.fair_at + interval '1 millisecond' FROM public.push_outbox o
        WHERE o.user_id = NEW.user_id AND o.delivered_at IS NULL AND o.failed_at IS NULL
        ORDER BY o.fair_at DESC LIMIT 1));
    RETURN NEW;
END
$$;
CREATE TRIGGER push_outbox_fair_at BEFORE INSERT ON public.push_outbox
    FOR EACH ROW EXECUTE FUNCTION private.push_outbox_fair_at();
REVOKE ALL ON FUNCTION private.push_outbox_fair_at() FROM PUBLIC;

-- Due rows, in the new claim order.
DROP INDEX public.push_outbox_due;
CREATE INDEX push_outbox_due ON public.push_outbox (priority DESC, (greatest(fair_at, next_attempt_at, not_before)), id)
    WHERE delivered_at IS NULL AND failed_at IS NULL;
