-- Every device-scoped call proves its device (docs/trust.md, "Device credentials"): the
-- functions of approvals, questions, alerts, push tokens, presence and the feeds act for the
-- calling device (private.acting_device) and no longer for a device id the request names.
--
-- Each function as it was moves to `private` under its name (its body names its arguments by it) (its own checks stay:
-- the user's rows, the shapes, the states), and a `public` function of the old name and
-- arguments proves the device first, then calls it:
-- - a device acts only in its own name: it answers, registers tokens, sets its settings, claims
--   a session's activity and pulls only as itself; it reads only its own push tokens;
-- - requests, questions, their cancellation, reopening and closing, touch_session_activity,
--   task alerts and delivery reports come only from the session's own desktop;
-- - answers, claims, alerts and everything that reads approvals, questions, envelopes or the
--   outbox need a device the trust log certifies (when the user has a log); a revoked device
--   reads and writes nothing;
-- - every id argument is a canonical lowercase UUID or 22023 (the wrappers take text).
-- Only the project's own schema has these functions; the deployed variant skips this file.

-- 42501 unless `device` is the desktop of `session` (a session of the caller's).
CREATE FUNCTION private.require_session_desktop(session uuid, device uuid) RETURNS void
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    IF session IS NOT NULL AND device IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM public.agent_coding_sessions s WHERE s.id = session AND s.user_id = auth.uid() AND s.device_id = device) THEN
        RAISE EXCEPTION 'only the session''s own desktop may make this call' USING ERRCODE = '42501';
    END IF;
END
$$;
REVOKE ALL ON FUNCTION private.require_session_desktop(uuid, uuid) FROM PUBLIC;

-- Each public.<name>(args) moves to private.<name>(args), callable by nobody but its owner.
DO $$
DECLARE
    f record;
BEGIN
    FOR f IN SELECT * FROM (VALUES
        ('answer_approval', 'uuid, uuid, text, text, text'),
        ('cancel_approval', 'uuid, text'),
        ('reopen_approval', 'uuid, text, text'),
        ('clear_approval', 'text, text'),
        ('alert_deliveries', 'uuid'),
        ('ask_question', 'uuid, uuid, uuid, text, integer, bigint'),
        ('answer_question', 'uuid, uuid, text'),
        ('close_question', 'uuid, text'),
        ('notify_session_event', 'uuid, uuid, text'),
        ('claim_session_activity', 'uuid, uuid, text'),
        ('touch_session_activity', 'uuid, uuid'),
        ('register_push_token', 'uuid, text, text, text, text, text, uuid, text'),
        ('invalidate_push_token', 'text'),
        ('push_token_status', 'uuid'),
        ('set_notification_settings', 'uuid, boolean, boolean, boolean, boolean, boolean, boolean, boolean, boolean, boolean, boolean'),
        ('sync_changes', 'timestamptz'),
        ('sync_pull_changes', 'uuid, timestamptz, integer'),
        ('sync_pull_envelopes', 'uuid, uuid, uuid, integer'),
        ('session_secret_digest', 'uuid, integer'),
        ('session_secret_recipient_digest', 'uuid, integer')
    ) AS v (name, args) LOOP
        EXECUTE format('ALTER FUNCTION public.%I(%s) SET SCHEMA private', f.name, f.args);
        EXECUTE format('REVOKE ALL ON FUNCTION private.%I(%s) FROM PUBLIC, anon, authenticated, service_role',
                       f.name, f.args);
    END LOOP;
END
$$;

-- private.ask_question answered where its alert went through public.alert_deliveries(uuid),
-- which has just moved: it calls the moved one.
DO $$
DECLARE
    src text := pg_get_functiondef('private.ask_question(uuid, uuid, uuid, text, integer, bigint)'::regprocedure);
BEGIN
    IF position('public.alert_deliveries(v_question)' IN src) = 0 THEN
        RAISE EXCEPTION 'private.ask_question no longer reads public.alert_deliveries(v_question): update this migration';
    END IF;
    EXECUTE replace(src, 'public.alert_deliveries(v_question)', 'private.alert_deliveries(v_question)');
END
$$;

-- Approvals. public.request_approval(uuid, ...) was already a wrapper of private.request_approval
-- (*_notifications_2.sql) that adds where the alert went: this one replaces it.
DROP FUNCTION public.request_approval(uuid, uuid, uuid, text, integer, bigint, text);
CREATE FUNCTION public.request_approval(
    session_id text, request_id text, requester_device_id text, body text, generation integer, expires_at bigint,
    control_hash text DEFAULT NULL
) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    v_device uuid := private.acting_device(request_approval.requester_device_id, true);
    v_session uuid := private.uuid_arg(request_approval.session_id, 'session_id');
    v_request uuid := private.uuid_arg(request_approval.request_id, 'request_id');
    answer jsonb;
BEGIN
    PERFORM private.require_session_desktop(v_session, v_device);
    answer := private.request_approval(v_session, v_request, v_device, request_approval.body,
        request_approval.generation, request_approval.expires_at, request_approval.control_hash);
    RETURN answer || jsonb_build_object('devices', private.alert_deliveries(v_request) -> 'devices');
END
$$;

CREATE FUNCTION public.answer_approval(request_id text, device_id text, verdict text, decision_body text, decision_signature text)
    RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    RETURN private.answer_approval(private.uuid_arg(answer_approval.request_id, 'request_id'),
        private.acting_device(answer_approval.device_id, true), answer_approval.verdict, answer_approval.decision_body,
        answer_approval.decision_signature);
END
$$;

-- 42501 unless the calling (certified) device asked `request` (an approval or a question).
CREATE FUNCTION private.require_asker(request uuid) RETURNS void
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    c uuid := private.caller_device(true);
BEGIN
    IF request IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM public.approval_requests a WHERE a.id = request AND a.requester_device_id = c)
       AND NOT EXISTS (SELECT 1 FROM public.agent_questions q WHERE q.id = request AND q.requester_device_id = c)
       AND (EXISTS (SELECT 1 FROM public.approval_requests a WHERE a.id = request)
            OR EXISTS (SELECT 1 FROM public.agent_questions q WHERE q.id = request)) THEN
        RAISE EXCEPTION 'only the desktop that asked may make this call' USING ERRCODE = '42501';
    END IF;
END
$$;
REVOKE ALL ON FUNCTION private.require_asker(uuid) FROM PUBLIC;

CREATE FUNCTION public.cancel_approval(request_id text, control text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    v_request uuid := private.uuid_arg(cancel_approval.request_id, 'request_id');
BEGIN
    PERFORM private.require_asker(v_request);
    RETURN private.cancel_approval(v_request, cancel_approval.control);
END
$$;

CREATE FUNCTION public.reopen_approval(request_id text, decision_signature text, control text) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    v_request uuid := private.uuid_arg(reopen_approval.request_id, 'request_id');
BEGIN
    PERFORM private.require_asker(v_request);
    RETURN private.reopen_approval(v_request, reopen_approval.decision_signature, reopen_approval.control);
END
$$;

-- clear_approval: from a certified device, for an id in one spelling, and only to certified devices.
CREATE FUNCTION public.clear_approval(request_id text, exclude_device_token text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    caller uuid := auth.uid();
    v_request uuid;
    result jsonb;
BEGIN
    -- The id's spelling first (22023), as the embedded remote checks it, then the caller.
    v_request := private.uuid_arg(clear_approval.request_id, 'request_id');
    IF v_request IS NULL THEN RAISE EXCEPTION 'request_id is required' USING ERRCODE = '22023'; END IF;
    PERFORM private.caller_device(true);
    result := private.clear_approval(v_request::text, clear_approval.exclude_device_token);
    -- What was queued for a device the log does not vouch for (a revoked or never-paired one) goes.
    IF private.has_trust_log(caller) THEN
        DELETE FROM public.push_outbox o
            WHERE o.user_id = caller AND o.collapse_id = 'approval-' || v_request::text AND o.delivered_at IS NULL
              AND NOT private.is_trusted_device(caller, o.device_id);
    END IF;
    RETURN result;
END
$$;

CREATE FUNCTION public.alert_deliveries(alert_id text) RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    v_alert uuid := private.uuid_arg(alert_deliveries.alert_id, 'alert_id');
BEGIN
    PERFORM private.require_asker(v_alert);
    RETURN private.alert_deliveries(v_alert);
END
$$;

-- Questions.
CREATE FUNCTION public.ask_question(
    session_id text, question_id text, requester_device_id text, body text, generation integer, expires_at bigint
) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    v_device uuid := private.acting_device(ask_question.requester_device_id, true);
    v_session uuid := private.uuid_arg(ask_question.session_id, 'session_id');
BEGIN
    PERFORM private.require_session_desktop(v_session, v_device);
    RETURN private.ask_question(v_session, private.uuid_arg(ask_question.question_id, 'question_id'), v_device,
        ask_question.body, ask_question.generation, ask_question.expires_at);
END
$$;

CREATE FUNCTION public.answer_question(question_id text, device_id text, answer text) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    RETURN private.answer_question(private.uuid_arg(answer_question.question_id, 'question_id'),
        private.acting_device(answer_question.device_id, true), answer_question.answer);
END
$$;

CREATE FUNCTION public.close_question(question_id text, status text) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    v_question uuid := private.uuid_arg(close_question.question_id, 'question_id');
BEGIN
    PERFORM private.require_asker(v_question);
    RETURN private.close_question(v_question, close_question.status);
END
$$;

-- Task alerts and presence.
CREATE FUNCTION public.notify_session_event(session_id text, device_id text, kind text) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    RETURN private.notify_session_event(private.uuid_arg(notify_session_event.session_id, 'session_id'),
        private.acting_device(notify_session_event.device_id, true), notify_session_event.kind);
END
$$;

CREATE FUNCTION public.claim_session_activity(session_id text, device_id text, client_type text) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    RETURN private.claim_session_activity(private.uuid_arg(claim_session_activity.session_id, 'session_id'),
        private.acting_device(claim_session_activity.device_id, true), claim_session_activity.client_type);
END
$$;

CREATE FUNCTION public.touch_session_activity(session_id text, device_id text) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    v_device uuid := private.acting_device(touch_session_activity.device_id, true);
    v_session uuid := private.uuid_arg(touch_session_activity.session_id, 'session_id');
BEGIN
    PERFORM private.require_session_desktop(v_session, v_device);
    RETURN private.touch_session_activity(v_session, v_device);
END
$$;

-- Push tokens and notification settings: a device's own, registered or not yet certified.
CREATE FUNCTION public.register_push_token(
    device_id text, token text, token_type text DEFAULT NULL, platform text DEFAULT NULL, environment text DEFAULT NULL,
    activity_id text DEFAULT NULL, session_id text DEFAULT NULL, previous_token text DEFAULT NULL
) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    v_device uuid := private.acting_device(register_push_token.device_id, false);
    v_previous text;
BEGIN

    -- Only the device's own previous token is invalidated; another's is passed over, and the
    -- answer is the one an unknown token gets (it does not say whose it is).
    IF EXISTS (SELECT 1 FROM public.push_tokens t
               WHERE t.token = register_push_token.previous_token AND t.device_id = v_device) THEN
        v_previous := register_push_token.previous_token;
    END IF;
    -- Another device's valid token stays where it is (it moves once invalidated): only the
    -- caller's previous token is invalidated, and the answer is the one a fresh registration gets.
    IF EXISTS (SELECT 1 FROM public.push_tokens t
               WHERE t.token = register_push_token.token AND t.device_id <> v_device AND t.is_valid) THEN
        UPDATE public.push_tokens t SET is_valid = false, updated_at = now()
            WHERE t.token = v_previous AND v_previous <> register_push_token.token AND t.device_id = v_device AND t.is_valid;
        RETURN jsonb_build_object('previousInvalidated', FOUND);
    END IF;
    RETURN private.register_push_token(v_device, register_push_token.token, register_push_token.token_type,
        register_push_token.platform, register_push_token.environment, register_push_token.activity_id,
        private.uuid_arg(register_push_token.session_id, 'session_id'), v_previous);
END
$$;

CREATE FUNCTION public.invalidate_push_token(token text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    v_device uuid := private.caller_device(false);
BEGIN
    -- Another device's token is left alone, with the answer an unknown token gets.
    IF EXISTS (SELECT 1 FROM public.push_tokens t WHERE t.token = invalidate_push_token.token AND t.device_id <> v_device) THEN
        RETURN false;
    END IF;
    RETURN private.invalidate_push_token(invalidate_push_token.token);
END
$$;

CREATE FUNCTION public.push_token_status(device_id text) RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    RETURN private.push_token_status(private.acting_device(push_token_status.device_id, false));
END
$$;

CREATE FUNCTION public.set_notification_settings(
    device_id text, enable_live_activities boolean DEFAULT NULL, enable_background_notifications boolean DEFAULT NULL,
    show_notification_details boolean DEFAULT NULL, enable_time_sensitive boolean DEFAULT NULL,
    alert_approvals boolean DEFAULT NULL, alert_questions boolean DEFAULT NULL, alert_task_complete boolean DEFAULT NULL,
    alert_task_failed boolean DEFAULT NULL, alert_task_paused boolean DEFAULT NULL, quiet_while_active boolean DEFAULT NULL
) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    RETURN private.set_notification_settings(private.acting_device(set_notification_settings.device_id, false),
        set_notification_settings.enable_live_activities, set_notification_settings.enable_background_notifications,
        set_notification_settings.show_notification_details, set_notification_settings.enable_time_sensitive,
        set_notification_settings.alert_approvals, set_notification_settings.alert_questions,
        set_notification_settings.alert_task_complete, set_notification_settings.alert_task_failed,
        set_notification_settings.alert_task_paused, set_notification_settings.quiet_while_active);
END
$$;

-- The feeds and the digests: as the calling device. A device the log does not certify (one
-- being paired) gets the metadata, never envelopes or approvals.
CREATE FUNCTION public.sync_changes(since timestamptz DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    result jsonb;
BEGIN
    PERFORM private.caller_device(false);
    result := private.sync_changes(sync_changes.since);
    IF private.calling_device() IS NULL THEN
        result := result || jsonb_build_object('approvals', '[]'::jsonb, 'questions', '[]'::jsonb);
    END IF;
    RETURN result;
END
$$;

CREATE FUNCTION public.sync_pull_changes(device_id text, since timestamptz DEFAULT NULL, row_limit integer DEFAULT 500)
    RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    v_device uuid := private.acting_device(sync_pull_changes.device_id, false);
    result jsonb := private.sync_pull_changes(v_device, sync_pull_changes.since, sync_pull_changes.row_limit);
BEGIN
    IF private.calling_device() IS NULL THEN
        result := result || jsonb_build_object('approvals', '[]'::jsonb,
            'envelopes', CASE WHEN result -> 'envelopes' = 'null'::jsonb THEN 'null'::jsonb ELSE '[]'::jsonb END);
    END IF;
    RETURN result;
END
$$;

CREATE FUNCTION public.sync_pull_envelopes(device_id text, after text DEFAULT NULL, before text DEFAULT NULL,
                                           row_limit integer DEFAULT 1000) RETURNS json
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    RETURN private.sync_pull_envelopes(private.acting_device(sync_pull_envelopes.device_id, true),
        private.uuid_arg(sync_pull_envelopes.after, 'after'), private.uuid_arg(sync_pull_envelopes.before, 'before'),
        sync_pull_envelopes.row_limit);
END
$$;

CREATE FUNCTION public.session_secret_digest(owner_device_id text, buckets integer)
    RETURNS TABLE (bucket integer, pairs integer, h1 bigint, h2 bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    RETURN QUERY SELECT * FROM private.session_secret_digest(
        private.acting_device(session_secret_digest.owner_device_id, true), session_secret_digest.buckets);
END
$$;

CREATE FUNCTION public.session_secret_recipient_digest(device_id text, buckets integer)
    RETURNS TABLE (bucket integer, pairs integer, h1 bigint, h2 bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    RETURN QUERY SELECT * FROM private.session_secret_recipient_digest(
        private.acting_device(session_secret_recipient_digest.device_id, true), session_secret_recipient_digest.buckets);
END
$$;

REVOKE ALL ON FUNCTION
    public.request_approval(text, text, text, text, integer, bigint, text), public.answer_approval(text, text, text, text, text),
    public.cancel_approval(text, text), public.reopen_approval(text, text, text), public.clear_approval(text, text),
    public.alert_deliveries(text), public.ask_question(text, text, text, text, integer, bigint),
    public.answer_question(text, text, text), public.close_question(text, text), public.notify_session_event(text, text, text),
    public.claim_session_activity(text, text, text), public.touch_session_activity(text, text),
    public.register_push_token(text, text, text, text, text, text, text, text), public.invalidate_push_token(text),
    public.push_token_status(text),
    public.set_notification_settings(text, boolean, boolean, boolean, boolean, boolean, boolean, boolean, boolean, boolean, boolean),
    public.sync_changes(timestamptz), public.sync_pull_changes(text, timestamptz, integer),
    public.sync_pull_envelopes(text, text, text, integer), public.session_secret_digest(text, integer),
    public.session_secret_recipient_digest(text, integer)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    public.request_approval(text, text, text, text, integer, bigint, text), public.answer_approval(text, text, text, text, text),
    public.cancel_approval(text, text), public.reopen_approval(text, text, text), public.clear_approval(text, text),
    public.alert_deliveries(text), public.ask_question(text, text, text, text, integer, bigint),
    public.answer_question(text, text, text), public.close_question(text, text), public.notify_session_event(text, text, text),
    public.claim_session_activity(text, text, text), public.touch_session_activity(text, text),
    public.register_push_token(text, text, text, text, text, text, text, text), public.invalidate_push_token(text),
    public.push_token_status(text),
    public.set_notification_settings(text, boolean, boolean, boolean, boolean, boolean, boolean, boolean, boolean, boolean, boolean),
    public.sync_changes(timestamptz), public.sync_pull_changes(text, timestamptz, integer),
    public.sync_pull_envelopes(text, text, text, integer), public.session_secret_digest(text, integer),
    public.session_secret_recipient_digest(text, integer)
    TO authenticated;

-- The tables of this schema alone: a device reads its own push tokens, settings and outbox rows;
-- approvals, questions, answers and the outbox only a certified device; presence any
-- registered device.
DROP POLICY push_tokens_read ON public.push_tokens;
CREATE POLICY push_tokens_read ON public.push_tokens FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()) AND device_id = (SELECT private.credential_device()));
DROP POLICY push_outbox_read ON public.push_outbox;
CREATE POLICY push_outbox_read ON public.push_outbox FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()) AND (SELECT private.calling_device()) IS NOT NULL);
DROP POLICY notification_settings_owner ON public.notification_settings;
CREATE POLICY notification_settings_read ON public.notification_settings FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()) AND (SELECT private.credential_device()) IS NOT NULL);
CREATE POLICY notification_settings_write ON public.notification_settings FOR ALL TO authenticated
    USING (user_id = (SELECT auth.uid()) AND device_id = (SELECT private.credential_device()))
    WITH CHECK (user_id = (SELECT auth.uid()) AND device_id = (SELECT private.credential_device()));
DROP POLICY session_active_clients_read ON public.session_active_clients;
CREATE POLICY session_active_clients_read ON public.session_active_clients FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()) AND (SELECT private.credential_device()) IS NOT NULL);
DROP POLICY approval_requests_read ON public.approval_requests;
CREATE POLICY approval_requests_read ON public.approval_requests FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()) AND (SELECT private.calling_device()) IS NOT NULL);
DROP POLICY agent_questions_read ON public.agent_questions;
CREATE POLICY agent_questions_read ON public.agent_questions FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()) AND (SELECT private.calling_device()) IS NOT NULL);
DROP POLICY agent_question_answers_read ON public.agent_question_answers;
CREATE POLICY agent_question_answers_read ON public.agent_question_answers FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()) AND (SELECT private.calling_device()) IS NOT NULL);
