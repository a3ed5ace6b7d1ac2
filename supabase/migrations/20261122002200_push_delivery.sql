-- Push delivery: the outbox as the push worker's queue (push-worker, docs/push-worker.md).
--
-- A row is pending while delivered_at and failed_at are both NULL. The worker claims due rows
-- in one short transaction (FOR UPDATE SKIP LOCKED), setting a lease and attempts + 1, sends
-- after it commits, and writes the outcome fenced by leased_by: a worker whose lease ran out
-- and was taken over writes nothing. A crashed worker's rows come back when the lease ends.
-- Closed rows: delivered (delivered_at), dead (failed_at, last_reason the answer's reason or
-- 'expired' or 'attempts'), dropped without a request (failed_at, last_reason 'dropped: ...').

ALTER TABLE public.push_outbox
    ADD COLUMN next_attempt_at timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN lease_until timestamptz,
    ADD COLUMN leased_by text CHECK (leased_by IS NULL OR length(leased_by) <= 200),
    -- The apns-id header: the same on every retry, so APNs and the phone can tell a duplicate.
    ADD COLUMN apns_id uuid NOT NULL DEFAULT gen_random_uuid(),
    ADD COLUMN expires_at timestamptz,
    ADD COLUMN failed_at timestamptz,
    ADD COLUMN last_status integer,
    ADD COLUMN last_reason text CHECK (last_reason IS NULL OR length(last_reason) <= 200);

-- Due rows, in claim order.
CREATE INDEX push_outbox_due ON public.push_outbox (priority DESC, next_attempt_at, id)
    WHERE delivered_at IS NULL AND failed_at IS NULL;
-- Retention: closed rows by age.
CREATE INDEX push_outbox_closed ON public.push_outbox (coalesce(delivered_at, failed_at))
    WHERE delivered_at IS NOT NULL OR failed_at IS NOT NULL;

-- When a row stops being worth sending: an approval's alert when the approval expires, any
-- other silent push an hour after it was queued. Live-activity rows have none (the throttle
-- replaces a waiting update; the last one stands).
CREATE FUNCTION private.push_outbox_expiry() RETURNS trigger
    LANGUAGE plpgsql SET search_path = '' AS $$
BEGIN
    IF NEW.expires_at IS NULL THEN
        IF NEW.push_type = 'alert' AND NEW.collapse_id LIKE 'approval-request-%' THEN
            NEW.expires_at := (SELECT to_timestamp(r.expires_at) FROM public.approval_requests r
                               WHERE r.id::text = substr(NEW.collapse_id, 18));
        END IF;
        IF NEW.expires_at IS NULL AND NEW.push_type <> 'liveactivity' THEN
            NEW.expires_at := NEW.created_at + interval '1 hour';
        END IF;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER push_outbox_expiry BEFORE INSERT ON public.push_outbox
    FOR EACH ROW EXECUTE FUNCTION private.push_outbox_expiry();

-- One notification per inserting statement wakes the worker (LISTEN push_outbox).
CREATE FUNCTION private.push_outbox_notify() RETURNS trigger
    LANGUAGE plpgsql SET search_path = '' AS $$
BEGIN
    PERFORM pg_notify('push_outbox', '');
    RETURN NULL;
END
$$;
CREATE TRIGGER push_outbox_notify AFTER INSERT ON public.push_outbox
    FOR EACH STATEMENT EXECUTE FUNCTION private.push_outbox_notify();

-- The throttle of notifications.md, now that rows can be in flight: a waiting update is one
-- nobody has claimed (no live lease) and that is still pending. A row being sent is never
-- rewritten under the worker; the new state then waits its 15 seconds behind it.
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
    INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload, not_before)
        VALUES (caller, device, token, 'liveactivity', priority, NULL, payload,
                CASE WHEN event = 'end' OR previous IS NULL THEN now()
                     ELSE greatest(now(), previous + interval '15 seconds') END);
    RETURN true;
END
$$;

-- The worker's role: exactly what it needs. It logs in through a member role a deployment
-- creates (`CREATE ROLE push_sender LOGIN PASSWORD '...' IN ROLE push_worker`), never as
-- service_role.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'push_worker') THEN
        CREATE ROLE push_worker NOLOGIN;
    END IF;
END
$$;
GRANT USAGE ON SCHEMA public TO push_worker;
GRANT SELECT, DELETE ON public.push_outbox TO push_worker;
GRANT UPDATE (next_attempt_at, lease_until, leased_by, attempts, delivered_at, failed_at, last_status, last_reason,
              last_error) ON public.push_outbox TO push_worker;
GRANT SELECT (token, user_id, device_id, token_type, environment, is_valid, updated_at) ON public.push_tokens TO push_worker;
GRANT UPDATE (is_valid) ON public.push_tokens TO push_worker;
CREATE POLICY push_outbox_worker ON public.push_outbox FOR ALL TO push_worker USING (true) WITH CHECK (true);
CREATE POLICY push_tokens_worker ON public.push_tokens FOR ALL TO push_worker USING (true) WITH CHECK (true);
GRANT EXECUTE ON FUNCTION public.expire_approvals() TO push_worker;
