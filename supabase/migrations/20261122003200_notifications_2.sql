-- Notifications round 2, first step (docs/notifications.md, "Round 2"): an approval's alert
-- says which session it is about and where a tap goes, and each phone shows it in its own
-- language, with nothing of the question in it.
--
-- - private.notification_config: one row, the deep-link scheme of this deployment, changed by
--   the database owner (UPDATE private.notification_config SET deep_link_scheme = 'myapp'), not
--   visible to PostgREST. The next alerts carry the new scheme.
-- - The approval alert gains `title-loc-key` and `loc-key` (the app's strings; `title` and
--   `body` stay the generic English), `thread-id` (the session id: iOS groups a session's
--   alerts) and `deepLink` (<scheme>://session/<session id>/approval/<request id>). No `loc-args`:
--   any argument would be content.
-- Only the project's own schema has approvals; the deployed variant skips this file.

CREATE TABLE private.notification_config (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    deep_link_scheme text NOT NULL DEFAULT 'codingbridge' CHECK (deep_link_scheme ~ '^[a-z][a-z0-9+.-]{0,31}$')
);
INSERT INTO private.notification_config DEFAULT VALUES;
REVOKE ALL ON private.notification_config FROM PUBLIC;

-- The deep-link scheme in force ('codingbridge' should the row be gone).
CREATE FUNCTION private.deep_link_scheme() RETURNS text
    LANGUAGE sql STABLE SET search_path = '' AS $$
    SELECT coalesce((SELECT c.deep_link_scheme FROM private.notification_config c WHERE c.id), 'codingbridge')
$$;
REVOKE ALL ON FUNCTION private.deep_link_scheme() FROM PUBLIC;

-- The alert of a new request: as in *_approval_recipients.sql, with the round-2 members.
CREATE OR REPLACE FUNCTION private.queue_approval_alerts(caller uuid, request uuid) RETURNS integer
    LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
    r public.approval_requests%ROWTYPE;
    base jsonb;
    queued integer;
BEGIN
    SELECT * INTO r FROM public.approval_requests a WHERE a.id = request;
    base := jsonb_build_object(
        'aps', jsonb_build_object(
            'alert', jsonb_build_object(
                'title', 'Approval needed', 'body', 'An agent session is waiting for you',
                'title-loc-key', 'notification.approval.title',
                'loc-key', 'notification.approval.body.generic'),
            'sound', 'default', 'category', 'APPROVAL_REQUEST', 'thread-id', r.session_id::text,
            'interruption-level', 'time-sensitive', 'mutable-content', 1, 'badge', 0),
        'type', 'approval', 'requestId', r.id::text, 'sessionId', r.session_id::text,
        'deepLink', private.deep_link_scheme() || '://session/' || r.session_id::text || '/approval/' || r.id::text,
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
          AND private.is_trusted_device(caller, t.device_id) AND private.may_queue_push(t.device_id, 'alert')
        ORDER BY t.token
        ON CONFLICT (token, collapse_id) WHERE collapse_id LIKE 'approval-%' DO NOTHING;
    GET DIAGNOSTICS queued = ROW_COUNT;
    RETURN queued;
END
$$;
