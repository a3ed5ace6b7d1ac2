-- Notifications a person controls (notifications.md): per-device settings that every function
-- queuing a push reads, live-activity updates from a session's runtime status (throttled to one
-- per token every 15 seconds, the newest state winning, `end` never dropped), and the badge of
-- approval alerts.
--
-- Settings: notification_settings, one row per device (no row = the defaults). A user writes
-- only rows of their own devices (row-level security, the device's owner checked as everywhere
-- here), directly or through set_notification_settings; a trigger ends the device's open live
-- activities whichever way live activities were turned off.
--
-- What reaches a lock screen: approval alerts carry only generic text (approvals.md). A live
-- activity's currentOperation and currentTask come from the runtime status the desktop reported,
-- which this engine writes already passed through the lock-screen sanitiser (the one function
-- with the published vectors); with show_notification_details off they are replaced here by
-- "Working" and "". The server never sanitises: it forwards sanitised text or generic text.
--
-- Throttling: push_outbox.not_before says when a row may be sent. An update for a token with
-- an unsent update waiting replaces that row's state (latest wins) and keeps its time; otherwise
-- it goes 15 seconds after the token's previous update, or now. An `end` replaces a waiting
-- update and may go at once; after an `end`, a token gets nothing more.

CREATE TABLE public.notification_settings (
    device_id uuid PRIMARY KEY REFERENCES public.devices (id) ON DELETE CASCADE,
    user_id uuid NOT NULL DEFAULT auth.uid(),
    enable_live_activities boolean NOT NULL DEFAULT true,
    enable_background_notifications boolean NOT NULL DEFAULT true,
    show_notification_details boolean NOT NULL DEFAULT false,
    enable_time_sensitive boolean NOT NULL DEFAULT true,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX notification_settings_user ON public.notification_settings (user_id);
CREATE TRIGGER notification_settings_updated_at BEFORE INSERT OR UPDATE ON public.notification_settings
    FOR EACH ROW EXECUTE FUNCTION public.set_updated_at();
ALTER TABLE public.notification_settings ENABLE ROW LEVEL SECURITY;
CREATE POLICY notification_settings_owner ON public.notification_settings FOR ALL TO authenticated
    USING (user_id = (SELECT auth.uid()))
    WITH CHECK (user_id = (SELECT auth.uid())
                AND EXISTS (SELECT 1 FROM public.devices d WHERE d.id = device_id AND d.user_id = (SELECT auth.uid())));
GRANT SELECT, INSERT, UPDATE, DELETE ON public.notification_settings TO authenticated;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.notification_settings TO service_role;

ALTER TABLE public.push_outbox ADD COLUMN not_before timestamptz NOT NULL DEFAULT now();
CREATE INDEX push_outbox_live_activity ON public.push_outbox (token, id) WHERE push_type = 'liveactivity';

-- What a live activity may show, as reported (notifications.md): an operation and a task of at
-- most 200 characters without control characters, counts that make sense.
ALTER TABLE public.agent_coding_sessions ADD CONSTRAINT agent_coding_sessions_runtime_status_live CHECK (
    runtime_status IS NULL OR (
        (NOT (runtime_status -> 'coding_session') ? 'current_operation'
         OR (jsonb_typeof(runtime_status -> 'coding_session' -> 'current_operation') = 'string'
             AND char_length(runtime_status -> 'coding_session' ->> 'current_operation') <= 200
             AND runtime_status -> 'coding_session' ->> 'current_operation' !~ '[[:cntrl:]]'))
        AND (NOT (runtime_status -> 'coding_session') ? 'todo_progress'
         OR (jsonb_typeof(runtime_status -> 'coding_session' -> 'todo_progress') = 'object'
             AND jsonb_typeof(runtime_status -> 'coding_session' -> 'todo_progress' -> 'completed') = 'number'
             AND jsonb_typeof(runtime_status -> 'coding_session' -> 'todo_progress' -> 'total') = 'number'
             AND (runtime_status -> 'coding_session' -> 'todo_progress' ->> 'completed')::numeric BETWEEN 0 AND 100000
             AND (runtime_status -> 'coding_session' -> 'todo_progress' ->> 'total')::numeric BETWEEN 0 AND 100000
             AND (NOT (runtime_status -> 'coding_session' -> 'todo_progress') ? 'current_task'
                  OR (jsonb_typeof(runtime_status -> 'coding_session' -> 'todo_progress' -> 'current_task') = 'string'
                      AND char_length(runtime_status -> 'coding_session' -> 'todo_progress' ->> 'current_task') <= 200
                      AND runtime_status -> 'coding_session' -> 'todo_progress' ->> 'current_task' !~ '[[:cntrl:]]'))))
    )
);

-- A device's settings, or the defaults.
CREATE FUNCTION private.notification_settings_of(device uuid) RETURNS public.notification_settings
    LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
    settings public.notification_settings%ROWTYPE;
BEGIN
    SELECT * INTO settings FROM public.notification_settings s WHERE s.device_id = device;
    IF NOT FOUND THEN
        settings.device_id := device;
        settings.enable_live_activities := true;
        settings.enable_background_notifications := true;
        settings.show_notification_details := false;
        settings.enable_time_sensitive := true;
    END IF;
    RETURN settings;
END
$$;

-- Whether a push of `kind` may be queued for `device`: the one rule every queuing function
-- follows. Kinds: 'handoff' and 'clearing' (background, never suppressed: they remove prompts a
-- person could still act on), 'background' (any other silent push), 'alert', 'liveactivity'
-- (an update), 'liveactivity-end' (never suppressed).
CREATE FUNCTION private.may_queue_push(device uuid, kind text) RETURNS boolean
    LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
    settings public.notification_settings := private.notification_settings_of(device);
BEGIN
    RETURN CASE kind
        WHEN 'background' THEN settings.enable_background_notifications
        WHEN 'liveactivity' THEN settings.enable_live_activities
        ELSE true
    END;
END
$$;

-- Queues a silent push of kind 'background' for one token, if the device's settings allow it.
-- Returns whether it was queued.
CREATE FUNCTION private.queue_background_push(caller uuid, device uuid, token text, collapse text, payload jsonb)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
BEGIN
    IF NOT private.may_queue_push(device, 'background') THEN RETURN false; END IF;
    INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload)
        VALUES (caller, device, token, 'background', 5, collapse, payload);
    RETURN true;
END
$$;

-- The device's pending approval requests (another device asked them, unexpired): its badge.
CREATE FUNCTION private.approval_badge(caller uuid, device uuid) RETURNS integer
    LANGUAGE sql STABLE SET search_path = '' AS $$
    SELECT count(*)::integer FROM public.approval_requests a
    WHERE a.user_id = caller AND a.status = 'pending' AND a.requester_device_id <> device
      AND a.expires_at > floor(extract(epoch FROM now()))::bigint
$$;

-- The approval alert, per device: its badge, and `active` instead of `time-sensitive` when the
-- device turned time-sensitive notifications off. request_approval (below) queues through it.
CREATE FUNCTION private.queue_approval_alerts(caller uuid, request uuid) RETURNS integer
    LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
    r public.approval_requests%ROWTYPE;
    base jsonb;
    queued integer;
BEGIN
    SELECT * INTO r FROM public.approval_requests a WHERE a.id = request;
    base := jsonb_build_object(
        'aps', jsonb_build_object(
            'alert', jsonb_build_object('title', 'Approval needed', 'body', 'An agent session is waiting for you'),
            'sound', 'default', 'category', 'APPROVAL_REQUEST', 'interruption-level', 'time-sensitive',
            'mutable-content', 1, 'badge', 0),
        'type', 'approval', 'requestId', r.id::text, 'sessionId', r.session_id::text,
        'requesterDeviceId', r.requester_device_id::text, 'generation', r.generation, 'expiresAt', r.expires_at,
        'sealed', r.body);
    -- The badge's digits never bring a payload over the limit it was measured with (at most 6 more bytes).
    IF octet_length(base::text) + 6 > 4096 THEN base := base - 'sealed'; END IF;
    INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload)
        SELECT caller, t.device_id, t.token, 'alert', 10, 'approval-request-' || r.id::text,
               jsonb_set(jsonb_set(base, '{aps,badge}', to_jsonb(private.approval_badge(caller, t.device_id))),
                         '{aps,interruption-level}',
                         to_jsonb(CASE WHEN (private.notification_settings_of(t.device_id)).enable_time_sensitive
                                       THEN 'time-sensitive' ELSE 'active' END))
        FROM public.push_tokens t
        WHERE t.user_id = caller AND t.token_type = 'device' AND t.is_valid AND t.device_id <> r.requester_device_id
          AND private.may_queue_push(t.device_id, 'alert')
        ORDER BY t.token
        ON CONFLICT (token, collapse_id) WHERE collapse_id LIKE 'approval-%' DO NOTHING;
    GET DIAGNOSTICS queued = ROW_COUNT;
    RETURN queued;
END
$$;

-- request_approval as before, its alerts queued per device by queue_approval_alerts.
CREATE OR REPLACE FUNCTION public.request_approval(
    session_id uuid, request_id uuid, requester_device_id uuid, body text, generation integer, expires_at bigint
) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_session uuid := request_approval.session_id;
    v_request uuid := request_approval.request_id;
    v_device uuid := request_approval.requester_device_id;
    v_body text := request_approval.body;
    v_generation integer := request_approval.generation;
    v_expires bigint := request_approval.expires_at;
    v_now bigint := floor(extract(epoch FROM now()))::bigint;
    raw bytea;
    existing public.approval_requests%ROWTYPE;
    queued integer;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'request_approval needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF v_session IS NULL OR NOT EXISTS (SELECT 1 FROM public.agent_coding_sessions s WHERE s.id = v_session AND s.user_id = caller) THEN
        RAISE EXCEPTION 'the session is not one of yours' USING ERRCODE = '42501';
    END IF;
    IF v_device IS NULL OR NOT EXISTS (SELECT 1 FROM public.devices d WHERE d.id = v_device AND d.user_id = caller) THEN
        RAISE EXCEPTION 'the device is not one of yours' USING ERRCODE = '42501';
    END IF;
    IF v_request IS NULL THEN RAISE EXCEPTION 'request_id is required' USING ERRCODE = '22023'; END IF;
    IF v_generation IS NULL OR v_generation < 1 THEN
        RAISE EXCEPTION 'generation must be 1 to 2147483647' USING ERRCODE = '22023';
    END IF;
    IF v_expires IS NULL OR v_expires < v_now + 5 OR v_expires > v_now + 600 THEN
        RAISE EXCEPTION 'expires_at must be 5 to 600 seconds from now' USING ERRCODE = '22023';
    END IF;
    -- 0x01 || generation || nonce || at least the JSON's braces and the tag; at most 4,096 bytes of JSON.
    IF NOT private.is_canonical_base64(v_body, 1 + 4 + 12 + 2 + 16, 1 + 4 + 12 + 4096 + 16) THEN
        RAISE EXCEPTION 'body must be canonical base64 of a sealed request' USING ERRCODE = '22023';
    END IF;
    raw := decode(v_body, 'base64');
    IF get_byte(raw, 0) <> 1 OR (get_byte(raw, 1)::bigint << 24 | get_byte(raw, 2) << 16 | get_byte(raw, 3) << 8 | get_byte(raw, 4))
           <> v_generation THEN
        RAISE EXCEPTION 'the body''s version or generation is not the request''s' USING ERRCODE = '22023';
    END IF;

    SELECT * INTO existing FROM public.approval_requests r WHERE r.id = v_request FOR UPDATE;
    IF FOUND THEN
        IF existing.user_id <> caller THEN RAISE EXCEPTION 'the request is not one of yours' USING ERRCODE = '42501'; END IF;
        IF existing.body <> v_body OR existing.session_id <> v_session OR existing.requester_device_id <> v_device
           OR existing.generation <> v_generation OR existing.expires_at <> v_expires THEN
            RAISE EXCEPTION 'another request has this id' USING ERRCODE = '23505';
        END IF;
        SELECT count(*) INTO queued FROM public.push_outbox o
            WHERE o.user_id = caller AND o.collapse_id = 'approval-request-' || v_request::text;
        RETURN jsonb_build_object('requestId', v_request, 'expiresAt', v_expires, 'devicesNotified', queued);
    END IF;

    INSERT INTO public.approval_requests (id, user_id, session_id, requester_device_id, body, generation, expires_at)
        VALUES (v_request, caller, v_session, v_device, v_body, v_generation, v_expires);
    queued := private.queue_approval_alerts(caller, v_request);
    RETURN jsonb_build_object('requestId', v_request, 'expiresAt', v_expires, 'devicesNotified', queued);
END
$$;

-- The clearing push, with each device's new badge. Never suppressed.
CREATE OR REPLACE FUNCTION private.queue_approval_clearing(caller uuid, request uuid, reason text, except_device uuid)
    RETURNS integer
    LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
    queued integer;
BEGIN
    INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload)
        SELECT caller, t.device_id, t.token, 'background', 5, 'approval-' || request::text,
               jsonb_build_object('aps', jsonb_build_object('content-available', 1,
                                                            'badge', private.approval_badge(caller, t.device_id)),
                                  'clearApprovalId', request::text, 'reason', reason)
        FROM public.push_tokens t
        WHERE t.user_id = caller AND t.token_type = 'device' AND t.is_valid AND t.device_id IS DISTINCT FROM except_device
          AND private.may_queue_push(t.device_id, 'clearing')
        ORDER BY t.token
        ON CONFLICT (token, collapse_id) WHERE collapse_id LIKE 'approval-%' DO NOTHING;
    GET DIAGNOSTICS queued = ROW_COUNT;
    RETURN queued;
END
$$;

-- clear_approval (coordination) as before, each clearing push with its device's new badge.
CREATE OR REPLACE FUNCTION public.clear_approval(request_id text, exclude_device_token text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_request text := clear_approval.request_id;
    v_exclude text := clear_approval.exclude_device_token;
    notified integer;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'clear_approval needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF v_request IS NULL OR length(v_request) NOT BETWEEN 1 AND 200 OR v_request ~ '[[:cntrl:]]' THEN
        RAISE EXCEPTION 'request_id must be 1 to 200 characters without control characters' USING ERRCODE = '22023';
    END IF;
    INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload)
        SELECT caller, t.device_id, t.token, 'background', 5, 'approval-' || v_request,
               jsonb_build_object('aps', jsonb_build_object('content-available', 1,
                                                            'badge', private.approval_badge(caller, t.device_id)),
                                  'clearApprovalId', v_request, 'reason', 'approved_on_other_device')
        FROM public.push_tokens t
        WHERE t.user_id = caller AND t.token_type = 'device' AND t.is_valid AND t.token IS DISTINCT FROM v_exclude
          AND private.may_queue_push(t.device_id, 'clearing')
        ORDER BY t.token
        ON CONFLICT (token, collapse_id) WHERE collapse_id LIKE 'approval-%' DO NOTHING;
    SELECT count(*) INTO notified FROM public.push_tokens t
        WHERE t.user_id = caller AND t.token_type = 'device' AND t.is_valid AND t.token IS DISTINCT FROM v_exclude;
    RETURN jsonb_build_object('success', true, 'devicesNotified', notified);
END
$$;

-- runtime status -> a live activity's status (notifications.md); not-available reads as idle.
CREATE FUNCTION private.live_activity_status(runtime jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT CASE runtime -> 'coding_session' ->> 'status'
        WHEN 'running' THEN 'processing' WHEN 'waiting' THEN 'waiting_approval' WHEN 'error' THEN 'error'
        ELSE 'idle' END
$$;

-- A live activity payload for one device: `event` update or end, the content state from the
-- session's runtime status (details only when the device shows them), stale and dismissal dates.
CREATE FUNCTION private.live_activity_payload(
    session public.agent_coding_sessions, device uuid, event text, status text, operation text
) RETURNS jsonb
    LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
    stamp bigint := floor(extract(epoch FROM now()))::bigint;
    details boolean := (private.notification_settings_of(device)).show_notification_details;
    todo jsonb := session.runtime_status -> 'coding_session' -> 'todo_progress';
    state jsonb;
    aps jsonb;
BEGIN
    state := jsonb_build_object(
        'status', status,
        'currentOperation', CASE WHEN operation IS NOT NULL THEN operation
                                 WHEN details THEN coalesce(session.runtime_status -> 'coding_session' ->> 'current_operation', 'Working')
                                 ELSE 'Working' END,
        'elapsedSeconds', greatest(0, stamp - floor(extract(epoch FROM session.session_started_at))::bigint));
    IF todo IS NOT NULL THEN
        state := state || jsonb_build_object('todoProgress', jsonb_build_object(
            'completed', (todo ->> 'completed')::integer, 'total', (todo ->> 'total')::integer,
            'currentTask', CASE WHEN details THEN coalesce(todo ->> 'current_task', '') ELSE '' END));
    END IF;
    aps := jsonb_build_object('timestamp', stamp, 'event', event, 'content-state', state, 'stale-date', stamp + 300);
    IF event = 'end' THEN aps := aps || jsonb_build_object('dismissal-date', stamp + 900); END IF;
    RETURN jsonb_build_object('aps', aps);
END
$$;

-- Queues one live-activity event for one token, throttled (see the top of this file). Returns
-- whether a row was inserted or replaced.
CREATE FUNCTION private.queue_live_activity(caller uuid, device uuid, token text, event text, payload jsonb, priority integer)
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

-- Whether a live-activity token still has an activity open (no end queued for it).
CREATE FUNCTION private.live_activity_open(token text) RETURNS boolean
    LANGUAGE sql STABLE SET search_path = '' AS $$
    SELECT NOT EXISTS (SELECT 1 FROM public.push_outbox o WHERE o.token = live_activity_open.token
                       AND o.push_type = 'liveactivity' AND o.payload -> 'aps' ->> 'event' = 'end')
$$;

-- Ends every open live activity of `device` (all sessions, or one), with `operation` shown.
CREATE FUNCTION private.end_live_activities(caller uuid, device uuid, only_session uuid, status text, operation text)
    RETURNS integer
    LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
    t record;
    s public.agent_coding_sessions%ROWTYPE;
    ended integer := 0;
BEGIN
    FOR t IN SELECT p.token, p.session_id FROM public.push_tokens p
             WHERE p.user_id = caller AND p.device_id = device AND p.token_type = 'live_activity' AND p.is_valid
               AND (only_session IS NULL OR p.session_id = only_session) AND private.live_activity_open(p.token)
             ORDER BY p.token
    LOOP
        SELECT * INTO s FROM public.agent_coding_sessions a WHERE a.id = t.session_id;
        IF private.queue_live_activity(caller, device, t.token, 'end',
               private.live_activity_payload(s, device, 'end',
                   coalesce(status, private.live_activity_status(s.runtime_status)), operation), 10) THEN
            ended := ended + 1;
        END IF;
    END LOOP;
    RETURN ended;
END
$$;

-- Live activities turned off (by the function or a direct write): the device's open ones end.
CREATE FUNCTION private.settings_end_live_activities() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    IF NOT NEW.enable_live_activities AND (TG_OP = 'INSERT' OR OLD.enable_live_activities) THEN
        PERFORM private.end_live_activities(NEW.user_id, NEW.device_id, NULL, NULL, NULL);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER notification_settings_live_activities
    AFTER INSERT OR UPDATE OF enable_live_activities ON public.notification_settings
    FOR EACH ROW EXECUTE FUNCTION private.settings_end_live_activities();

-- A session's runtime status changed, or the session ended: its live activities hear of it.
CREATE FUNCTION private.session_live_activity() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    t record;
    status text;
    ended boolean := NEW.status = 'ended' AND OLD.status IS DISTINCT FROM 'ended';
BEGIN
    IF ended THEN
        FOR t IN SELECT DISTINCT p.device_id FROM public.push_tokens p
                 WHERE p.session_id = NEW.id AND p.user_id = NEW.user_id AND p.token_type = 'live_activity' AND p.is_valid
        LOOP
            PERFORM private.end_live_activities(NEW.user_id, t.device_id, NEW.id, 'completed', NULL);
        END LOOP;
        RETURN NULL;
    END IF;
    IF NEW.runtime_status IS NULL THEN RETURN NULL; END IF;
    status := private.live_activity_status(NEW.runtime_status);
    FOR t IN SELECT p.device_id, p.token FROM public.push_tokens p
             WHERE p.session_id = NEW.id AND p.user_id = NEW.user_id AND p.token_type = 'live_activity' AND p.is_valid
               AND private.live_activity_open(p.token)
             ORDER BY p.token
    LOOP
        IF NOT private.may_queue_push(t.device_id, 'liveactivity') THEN CONTINUE; END IF;
        PERFORM private.queue_live_activity(NEW.user_id, t.device_id, t.token, 'update',
            private.live_activity_payload(NEW, t.device_id, 'update', status, NULL),
            CASE WHEN status = 'waiting_approval' THEN 10 ELSE 5 END);
        -- One active session per device: its activities for other sessions end.
        PERFORM private.end_live_activities(NEW.user_id, t.device_id, p2.session_id, NULL, NULL)
            FROM (SELECT DISTINCT p.session_id FROM public.push_tokens p
                  WHERE p.user_id = NEW.user_id AND p.device_id = t.device_id AND p.token_type = 'live_activity'
                    AND p.is_valid AND p.session_id <> NEW.id AND private.live_activity_open(p.token)) p2;
    END LOOP;
    RETURN NULL;
END
$$;
CREATE TRIGGER agent_coding_sessions_live_activity
    AFTER UPDATE OF runtime_status, status ON public.agent_coding_sessions
    FOR EACH ROW
    WHEN (OLD.runtime_status IS DISTINCT FROM NEW.runtime_status
          OR (NEW.status = 'ended' AND OLD.status IS DISTINCT FROM 'ended'))
    EXECUTE FUNCTION private.session_live_activity();

-- A session handed off from an iOS device: that device's live activities for it end.
CREATE FUNCTION private.handoff_live_activity() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    PERFORM private.end_live_activities(NEW.user_id, OLD.device_id, NEW.session_id, NULL, 'Continued on another device');
    RETURN NULL;
END
$$;
CREATE TRIGGER session_active_clients_live_activity
    AFTER UPDATE OF device_id ON public.session_active_clients
    FOR EACH ROW
    WHEN (OLD.client_type = 'ios' AND OLD.device_id IS DISTINCT FROM NEW.device_id)
    EXECUTE FUNCTION private.handoff_live_activity();

-- Sets this device's settings: each argument given changes that setting, the others stay.
-- Turning live activities off ends the device's open activities. Returns the settings.
CREATE FUNCTION public.set_notification_settings(
    device_id uuid, enable_live_activities boolean DEFAULT NULL, enable_background_notifications boolean DEFAULT NULL,
    show_notification_details boolean DEFAULT NULL, enable_time_sensitive boolean DEFAULT NULL
) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_device uuid := set_notification_settings.device_id;
    before public.notification_settings;
    after public.notification_settings%ROWTYPE;
    open_before integer;
    ended integer := 0;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'set_notification_settings needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF v_device IS NULL OR NOT EXISTS (SELECT 1 FROM public.devices d WHERE d.id = v_device AND d.user_id = caller) THEN
        RAISE EXCEPTION 'the device is not one of yours' USING ERRCODE = '42501';
    END IF;
    before := private.notification_settings_of(v_device);
    open_before := (SELECT count(*) FROM public.push_tokens p
                    WHERE p.user_id = caller AND p.device_id = v_device AND p.token_type = 'live_activity' AND p.is_valid
                      AND private.live_activity_open(p.token));
    INSERT INTO public.notification_settings AS s (device_id, user_id, enable_live_activities,
            enable_background_notifications, show_notification_details, enable_time_sensitive)
        VALUES (v_device, caller,
                coalesce(set_notification_settings.enable_live_activities, before.enable_live_activities),
                coalesce(set_notification_settings.enable_background_notifications, before.enable_background_notifications),
                coalesce(set_notification_settings.show_notification_details, before.show_notification_details),
                coalesce(set_notification_settings.enable_time_sensitive, before.enable_time_sensitive))
        ON CONFLICT ON CONSTRAINT notification_settings_pkey DO UPDATE
        SET enable_live_activities = EXCLUDED.enable_live_activities,
            enable_background_notifications = EXCLUDED.enable_background_notifications,
            show_notification_details = EXCLUDED.show_notification_details,
            enable_time_sensitive = EXCLUDED.enable_time_sensitive
        RETURNING * INTO after;
    -- The trigger ended what was open; the difference is how many.
    ended := open_before - (SELECT count(*) FROM public.push_tokens p
                            WHERE p.user_id = caller AND p.device_id = v_device AND p.token_type = 'live_activity'
                              AND p.is_valid AND private.live_activity_open(p.token));
    RETURN jsonb_build_object(
        'deviceId', v_device, 'enableLiveActivities', after.enable_live_activities,
        'enableBackgroundNotifications', after.enable_background_notifications,
        'showNotificationDetails', after.show_notification_details,
        'enableTimeSensitive', after.enable_time_sensitive, 'liveActivitiesEnded', ended);
END
$$;

REVOKE ALL ON FUNCTION private.notification_settings_of(uuid), private.may_queue_push(uuid, text),
    private.queue_background_push(uuid, uuid, text, text, jsonb), private.approval_badge(uuid, uuid),
    private.queue_approval_alerts(uuid, uuid),
    private.live_activity_status(jsonb), private.live_activity_payload(public.agent_coding_sessions, uuid, text, text, text),
    private.queue_live_activity(uuid, uuid, text, text, jsonb, integer), private.live_activity_open(text),
    private.end_live_activities(uuid, uuid, uuid, text, text), private.session_live_activity(),
    private.handoff_live_activity(), private.settings_end_live_activities() FROM PUBLIC;
REVOKE ALL ON FUNCTION public.set_notification_settings(uuid, boolean, boolean, boolean, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.set_notification_settings(uuid, boolean, boolean, boolean, boolean)
    TO authenticated, service_role;
