-- Multi-device coordination (coordination.md): which device drives a session (handoff), push
-- tokens, the push outbox a delivery worker reads, and approval clearing.
--
-- Users read their own rows; nobody but the functions below writes them. Each function is
-- SECURITY DEFINER because it must write push_outbox (which users may not) or reassign a push
-- token that another user registered (tokens are unique across users, and RLS would hide that
-- row). Each pins search_path to '' and qualifies every name, refuses a caller without
-- auth.uid() (42501), and checks that every session, device and token it touches is the
-- caller's: it never relies on row-level security, which its owner bypasses.
--
-- Errors: 42501 (HTTP 403) for a session or device that is not the caller's, 22023 (HTTP 400)
-- for a value outside its allowed set. A refused call changes nothing.

CREATE TABLE public.session_active_clients (
    session_id uuid PRIMARY KEY REFERENCES public.agent_coding_sessions (id) ON DELETE CASCADE,
    user_id uuid NOT NULL,
    client_type text NOT NULL CHECK (client_type IN ('ios', 'desktop', 'web')),
    device_id uuid NOT NULL,
    push_token text,
    last_activity_at timestamptz NOT NULL DEFAULT now(),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX session_active_clients_user ON public.session_active_clients (user_id);

CREATE TABLE public.push_tokens (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id uuid NOT NULL,
    device_id uuid NOT NULL REFERENCES public.devices (id) ON DELETE CASCADE,
    token text NOT NULL UNIQUE CHECK ((token ~ '^[A-Za-z0-9._:-]+$' AND length(token) <= 512)),
    token_type text NOT NULL DEFAULT 'device' CHECK (token_type IN ('device', 'live_activity')),
    activity_id text CHECK (activity_id IS NULL OR (length(activity_id) BETWEEN 1 AND 200 AND activity_id !~ '[[:cntrl:]]')),
    session_id uuid REFERENCES public.agent_coding_sessions (id) ON DELETE CASCADE,
    platform text NOT NULL DEFAULT 'ios' CHECK (platform ~ '^[a-z]{1,20}$'),
    environment text NOT NULL DEFAULT 'production' CHECK (environment IN ('development', 'production')),
    is_valid boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CHECK (token_type <> 'live_activity' OR (activity_id IS NOT NULL AND session_id IS NOT NULL))
);
CREATE INDEX push_tokens_user_device ON public.push_tokens (user_id, device_id);

CREATE TABLE public.push_outbox (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id uuid NOT NULL,
    device_id uuid,
    token text NOT NULL,
    push_type text NOT NULL CHECK (push_type IN ('background', 'alert', 'liveactivity')),
    priority integer NOT NULL CHECK (priority IN (5, 10)),
    collapse_id text,
    payload jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz,
    attempts integer NOT NULL DEFAULT 0,
    last_error text
);
CREATE INDEX push_outbox_user ON public.push_outbox (user_id, id);
CREATE INDEX push_outbox_pending ON public.push_outbox (id) WHERE delivered_at IS NULL;
-- Clearing one approval queues each token's payload once, however often it is asked.
CREATE UNIQUE INDEX push_outbox_approval_once ON public.push_outbox (token, collapse_id) WHERE collapse_id LIKE 'approval-%';

CREATE TRIGGER session_active_clients_updated_at BEFORE INSERT OR UPDATE ON public.session_active_clients
    FOR EACH ROW EXECUTE FUNCTION public.set_updated_at();
CREATE TRIGGER push_tokens_updated_at BEFORE INSERT OR UPDATE ON public.push_tokens
    FOR EACH ROW EXECUTE FUNCTION public.set_updated_at();

ALTER TABLE public.session_active_clients ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.push_tokens ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.push_outbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY session_active_clients_read ON public.session_active_clients FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()));
CREATE POLICY push_tokens_read ON public.push_tokens FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()));
CREATE POLICY push_outbox_read ON public.push_outbox FOR SELECT TO authenticated
    USING (user_id = (SELECT auth.uid()));
GRANT SELECT ON public.session_active_clients, public.push_tokens, public.push_outbox TO authenticated;
-- The delivery worker (service_role) reads the outbox and marks rows delivered.
GRANT SELECT, INSERT, UPDATE, DELETE ON public.session_active_clients, public.push_tokens, public.push_outbox TO service_role;

-- Claims a session for the caller's device. No holder: the caller holds it. The caller's own
-- device holds it: its activity is refreshed. Another device holds it: the caller takes over and
-- every valid device token of the previous device gets the silent handoff payload. The insert
-- waits for a concurrent claimer's insert; the row lock then orders the rest, so two devices
-- claiming at the same moment end with one holder and exactly one handoff.
CREATE FUNCTION public.claim_session_activity(session_id uuid, device_id uuid, client_type text) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_session uuid := claim_session_activity.session_id;
    v_device uuid := claim_session_activity.device_id;
    v_client text := claim_session_activity.client_type;
    v_token text;
    previous public.session_active_clients%ROWTYPE;
    inserted boolean;
    queued integer;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'claim_session_activity needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF v_client IS NULL OR v_client NOT IN ('ios', 'desktop', 'web') THEN
        RAISE EXCEPTION 'client_type must be ios, desktop or web' USING ERRCODE = '22023';
    END IF;
    IF v_session IS NULL OR NOT EXISTS (SELECT 1 FROM public.agent_coding_sessions s WHERE s.id = v_session AND s.user_id = caller) THEN
        RAISE EXCEPTION 'the session is not one of yours' USING ERRCODE = '42501';
    END IF;
    IF v_device IS NULL OR NOT EXISTS (SELECT 1 FROM public.devices d WHERE d.id = v_device AND d.user_id = caller) THEN
        RAISE EXCEPTION 'the device is not one of yours' USING ERRCODE = '42501';
    END IF;
    SELECT t.token INTO v_token FROM public.push_tokens t
        WHERE t.device_id = v_device AND t.user_id = caller AND t.token_type = 'device' AND t.is_valid
        ORDER BY t.updated_at DESC LIMIT 1;

    INSERT INTO public.session_active_clients (session_id, user_id, client_type, device_id, push_token, last_activity_at)
        VALUES (v_session, caller, v_client, v_device, v_token, now())
        ON CONFLICT ON CONSTRAINT session_active_clients_pkey DO NOTHING
        RETURNING true INTO inserted;
    IF inserted THEN
        RETURN jsonb_build_object('handed_off', false, 'previous_device_id', NULL, 'previous_client_type', NULL, 'notified', 0);
    END IF;

    SELECT * INTO previous FROM public.session_active_clients a WHERE a.session_id = v_session FOR UPDATE;
    UPDATE public.session_active_clients a
        SET client_type = v_client, device_id = v_device, push_token = v_token, last_activity_at = now()
        WHERE a.session_id = v_session;
    IF previous.device_id = v_device THEN
        RETURN jsonb_build_object('handed_off', false, 'previous_device_id', NULL, 'previous_client_type', NULL, 'notified', 0);
    END IF;

    INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload)
        SELECT caller, t.device_id, t.token, 'background', 5, 'handoff-' || v_session::text,
               jsonb_build_object('aps', jsonb_build_object('content-available', 1), 'type', 'session_handoff',
                                  'sessionId', v_session::text, 'handedOffTo', v_client)
        FROM public.push_tokens t
        WHERE t.user_id = caller AND t.device_id = previous.device_id AND t.token_type = 'device' AND t.is_valid
        ORDER BY t.token;
    GET DIAGNOSTICS queued = ROW_COUNT;
    RETURN jsonb_build_object('handed_off', true, 'previous_device_id', previous.device_id,
                              'previous_client_type', previous.client_type, 'notified', queued);
END
$$;

-- Registers (or re-registers) a push token for one of the caller's devices. A token is unique
-- across users: one registered before by another user or device moves to this one. With
-- previous_token, the caller's row for that token becomes invalid (rotation).
CREATE FUNCTION public.register_push_token(
    device_id uuid, token text, token_type text DEFAULT NULL, platform text DEFAULT NULL, environment text DEFAULT NULL,
    activity_id text DEFAULT NULL, session_id uuid DEFAULT NULL, previous_token text DEFAULT NULL
) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_device uuid := register_push_token.device_id;
    v_token text := register_push_token.token;
    v_type text := coalesce(register_push_token.token_type, 'device');
    v_platform text := coalesce(register_push_token.platform, 'ios');
    v_environment text := coalesce(register_push_token.environment, 'production');
    v_activity text := register_push_token.activity_id;
    v_session uuid := register_push_token.session_id;
    v_previous text := register_push_token.previous_token;
    existing record;
    v_id uuid;
    invalidated integer := 0;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'register_push_token needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF v_token IS NULL OR v_token !~ '^[A-Za-z0-9._:-]+$' OR length(v_token) > 512 THEN
        RAISE EXCEPTION 'token must be 1 to 512 characters of A-Z a-z 0-9 . _ : -' USING ERRCODE = '22023';
    END IF;
    IF v_type NOT IN ('device', 'live_activity') THEN RAISE EXCEPTION 'token_type must be device or live_activity' USING ERRCODE = '22023'; END IF;
    IF v_environment NOT IN ('development', 'production') THEN
        RAISE EXCEPTION 'environment must be development or production' USING ERRCODE = '22023';
    END IF;
    IF v_platform !~ '^[a-z]{1,20}$' THEN RAISE EXCEPTION 'platform must be 1 to 20 lowercase letters' USING ERRCODE = '22023'; END IF;
    IF v_type = 'live_activity' AND (v_activity IS NULL OR v_session IS NULL) THEN
        RAISE EXCEPTION 'a live_activity token needs activity_id and session_id' USING ERRCODE = '22023';
    END IF;
    IF v_type = 'device' AND (v_activity IS NOT NULL OR v_session IS NOT NULL) THEN
        RAISE EXCEPTION 'a device token takes no activity_id or session_id' USING ERRCODE = '22023';
    END IF;
    IF v_activity IS NOT NULL AND (length(v_activity) NOT BETWEEN 1 AND 200 OR v_activity ~ '[[:cntrl:]]') THEN
        RAISE EXCEPTION 'activity_id must be 1 to 200 characters without control characters' USING ERRCODE = '22023';
    END IF;
    IF v_previous IS NOT NULL AND (v_previous !~ '^[A-Za-z0-9._:-]+$' OR length(v_previous) > 512) THEN
        RAISE EXCEPTION 'previous_token must be 1 to 512 characters of A-Z a-z 0-9 . _ : -' USING ERRCODE = '22023';
    END IF;
    IF v_device IS NULL OR NOT EXISTS (SELECT 1 FROM public.devices d WHERE d.id = v_device AND d.user_id = caller) THEN
        RAISE EXCEPTION 'the device is not one of yours' USING ERRCODE = '42501';
    END IF;
    IF v_session IS NOT NULL AND NOT EXISTS (SELECT 1 FROM public.agent_coding_sessions s WHERE s.id = v_session AND s.user_id = caller) THEN
        RAISE EXCEPTION 'the session is not one of yours' USING ERRCODE = '42501';
    END IF;

    IF v_previous IS NOT NULL AND v_previous <> v_token THEN
        UPDATE public.push_tokens t SET is_valid = false WHERE t.token = v_previous AND t.user_id = caller AND t.is_valid;
        GET DIAGNOSTICS invalidated = ROW_COUNT;
    END IF;
    SELECT t.user_id, t.device_id INTO existing FROM public.push_tokens t WHERE t.token = v_token FOR UPDATE;
    INSERT INTO public.push_tokens AS t (user_id, device_id, token, token_type, activity_id, session_id, platform, environment, is_valid)
        VALUES (caller, v_device, v_token, v_type, v_activity, v_session, v_platform, v_environment, true)
        ON CONFLICT ON CONSTRAINT push_tokens_token_key DO UPDATE
        SET user_id = EXCLUDED.user_id, device_id = EXCLUDED.device_id, token_type = EXCLUDED.token_type,
            activity_id = EXCLUDED.activity_id, session_id = EXCLUDED.session_id, platform = EXCLUDED.platform,
            environment = EXCLUDED.environment, is_valid = true
        RETURNING t.id INTO v_id;
    RETURN jsonb_build_object(
        'id', v_id,
        'reassigned', existing.user_id IS NOT NULL AND (existing.user_id <> caller OR existing.device_id <> v_device),
        'previousInvalidated', invalidated > 0);
END
$$;

-- Marks one of the caller's tokens invalid; false when the caller has no such token.
CREATE FUNCTION public.invalidate_push_token(token text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    changed integer;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'invalidate_push_token needs a signed-in user' USING ERRCODE = '42501'; END IF;
    UPDATE public.push_tokens t SET is_valid = false WHERE t.token = invalidate_push_token.token AND t.user_id = caller;
    GET DIAGNOSTICS changed = ROW_COUNT;
    RETURN changed > 0;
END
$$;

-- The design's status for one of the caller's devices.
CREATE FUNCTION public.push_token_status(device_id uuid) RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
#variable_conflict use_column
DECLARE
    caller uuid := auth.uid();
    v_device uuid := push_token_status.device_id;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'push_token_status needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF v_device IS NULL OR NOT EXISTS (SELECT 1 FROM public.devices d WHERE d.id = v_device AND d.user_id = caller) THEN
        RAISE EXCEPTION 'the device is not one of yours' USING ERRCODE = '42501';
    END IF;
    RETURN jsonb_build_object(
        'deviceTokenRegistered', EXISTS (SELECT 1 FROM public.push_tokens t WHERE t.user_id = caller AND t.device_id = v_device
                                         AND t.token_type = 'device' AND t.is_valid),
        'liveActivityTokens', coalesce((
            SELECT jsonb_agg(jsonb_build_object('activityId', t.activity_id, 'sessionId', t.session_id, 'registeredAt', t.updated_at)
                             ORDER BY t.updated_at, t.id)
            FROM public.push_tokens t
            WHERE t.user_id = caller AND t.device_id = v_device AND t.token_type = 'live_activity' AND t.is_valid), '[]'::jsonb));
END
$$;

-- Queues the silent "approval answered elsewhere" payload for every valid device token of the
-- caller but the excluded one, once per request and token.
CREATE FUNCTION public.clear_approval(request_id text, exclude_device_token text DEFAULT NULL) RETURNS jsonb
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
               jsonb_build_object('aps', jsonb_build_object('content-available', 1), 'clearApprovalId', v_request,
                                  'reason', 'approved_on_other_device')
        FROM public.push_tokens t
        WHERE t.user_id = caller AND t.token_type = 'device' AND t.is_valid AND t.token IS DISTINCT FROM v_exclude
        ORDER BY t.token
        ON CONFLICT (token, collapse_id) WHERE collapse_id LIKE 'approval-%' DO NOTHING;
    SELECT count(*) INTO notified FROM public.push_tokens t
        WHERE t.user_id = caller AND t.token_type = 'device' AND t.is_valid AND t.token IS DISTINCT FROM v_exclude;
    RETURN jsonb_build_object('success', true, 'devicesNotified', notified);
END
$$;

REVOKE ALL ON FUNCTION public.claim_session_activity(uuid, uuid, text),
    public.register_push_token(uuid, text, text, text, text, text, uuid, text), public.invalidate_push_token(text),
    public.push_token_status(uuid), public.clear_approval(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.claim_session_activity(uuid, uuid, text),
    public.register_push_token(uuid, text, text, text, text, text, uuid, text), public.invalidate_push_token(text),
    public.push_token_status(uuid), public.clear_approval(text, text) TO authenticated, service_role;
