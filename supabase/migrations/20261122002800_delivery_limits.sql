-- Delivery limits (docs/push-worker.md, docs/approvals.md): one account cannot fill the token
-- table or the push outbox, and so cannot delay anyone else's pushes. A refusal is SQLSTATE 54000
-- (program_limit_exceeded; PostgREST answers 500 and the client reads the code).

-- A device keeps its newest 5 device tokens and 20 live-activity tokens valid: registering
-- another invalidates the oldest (APNs hands out a new token on reinstall or restore, and the
-- old one is dead). A user holds at most 50 valid device tokens; a registration beyond that is
-- refused (live-activity tokens are bounded per device, and ended ones are never invalidated).
-- These hold for what a signed-in user registers; the service role and the worker are not limited.
CREATE FUNCTION private.push_token_limits() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    IF NOT NEW.is_valid OR auth.uid() IS NULL THEN RETURN NEW; END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('push_tokens:' || NEW.user_id::text, 0));
    UPDATE public.push_tokens t SET is_valid = false
     WHERE t.token IN (
         SELECT o.token FROM public.push_tokens o
          WHERE o.device_id = NEW.device_id AND o.token_type = NEW.token_type AND o.is_valid AND o.token <> NEW.token
          ORDER BY o.updated_at DESC, o.token DESC
         OFFSET CASE WHEN NEW.token_type = 'device' THEN 4 ELSE 19 END);
    IF NEW.token_type = 'device' AND (SELECT count(*) FROM public.push_tokens t
         WHERE t.user_id = NEW.user_id AND t.token_type = 'device' AND t.is_valid AND t.token <> NEW.token) >= 50 THEN
        RAISE EXCEPTION 'a user holds at most 50 valid device tokens: remove devices you no longer use'
            USING ERRCODE = '54000';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER push_tokens_limits BEFORE INSERT OR UPDATE OF is_valid, device_id, user_id, token_type
    ON public.push_tokens FOR EACH ROW EXECUTE FUNCTION private.push_token_limits();

-- At most 5 pending, unexpired approval requests per session and 20 per user.
CREATE FUNCTION private.approval_request_limits() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    v_now bigint := extract(epoch FROM now())::bigint;
BEGIN
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
CREATE TRIGGER approval_requests_limits BEFORE INSERT ON public.approval_requests
    FOR EACH ROW EXECUTE FUNCTION private.approval_request_limits();

-- A signed-in user's calls queue at most 600 alert and background pushes a minute (approval
-- alerts, clearings of ids that are not the user's approval requests, background syncs). Live-activity updates have their own throttle (one per
-- token every 15 s) and are not counted; the delivery worker and the service role are not limited.
CREATE INDEX push_outbox_user_created ON public.push_outbox (user_id, created_at);
CREATE FUNCTION private.push_outbox_rate() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    IF auth.uid() IS NULL OR NEW.push_type = 'liveactivity' THEN RETURN NEW; END IF;
    -- The clearing of one of the user's own approval requests is not counted: each request
    -- clears each token once (a unique key), and an answer or a cancellation must always commit.
    IF NEW.collapse_id LIKE 'approval-%' AND EXISTS (
        SELECT 1 FROM public.approval_requests r
         WHERE r.id::text = lower(substring(NEW.collapse_id FROM 10)) AND r.user_id = NEW.user_id) THEN
        RETURN NEW;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('push_outbox:' || NEW.user_id::text, 0));
    IF (SELECT count(*) FROM public.push_outbox o
         WHERE o.user_id = NEW.user_id AND o.created_at > now() - interval '1 minute'
           AND o.push_type <> 'liveactivity') >= 600 THEN
        RAISE EXCEPTION 'at most 600 pushes a minute are queued for one user: try again in a minute'
            USING ERRCODE = '54000';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER push_outbox_rate BEFORE INSERT ON public.push_outbox
    FOR EACH ROW EXECUTE FUNCTION private.push_outbox_rate();

-- clear_approval names a request: one of another user's approval requests is refused (42501).
CREATE FUNCTION private.clear_approval_owner() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    IF NEW.collapse_id LIKE 'approval-%' AND EXISTS (
        SELECT 1 FROM public.approval_requests r
         WHERE r.id::text = lower(substring(NEW.collapse_id FROM 10)) AND r.user_id <> NEW.user_id) THEN
        RAISE EXCEPTION 'that approval request is not yours' USING ERRCODE = '42501';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER push_outbox_clear_owner BEFORE INSERT ON public.push_outbox
    FOR EACH ROW WHEN (NEW.collapse_id LIKE 'approval-%') EXECUTE FUNCTION private.clear_approval_owner();

REVOKE ALL ON FUNCTION private.push_token_limits(), private.approval_request_limits(), private.push_outbox_rate(),
    private.clear_approval_owner() FROM PUBLIC;
