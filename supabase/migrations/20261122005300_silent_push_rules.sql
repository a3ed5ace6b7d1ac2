-- What a silent push carries, and which requests count toward a device's badge, as pure
-- functions (coordination.md, "Clearing" and "Handoff"; docs/notifications.md; issue 68). Only
-- the project's own schema queues these; the deployed variant skips this file.
--
-- private.queue_approval_clearing, private.queue_question_clearing, private.clear_approval and
-- private.claim_session_activity built their payloads inline, and private.approval_badge said
-- inline which requests count. Each moves into an IMMUTABLE function of its arguments, which
-- testvectors/remote-rules-v1.json calls with every case, expecting the answers of PushPayloads
-- and NotificationRules in the RemoteRules module (which the embedded remote runs, the badge rule
-- as a SQLite function of the same name). The callers keep their names, signatures, checks and
-- effects: only the expression that built a payload or filtered a count is replaced, and each
-- replacement first checks that the expression is still the one it replaces.

-- The silent push that takes a request's prompt off a device: content-available, the device's
-- new badge, the request's id (clearApprovalId for an 'approval', clearQuestionId for a
-- 'question') and the reason it closed; NULL for any other kind.
CREATE FUNCTION private.rule_clearing_payload(kind text, request text, reason text, badge integer) RETURNS jsonb
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT jsonb_build_object('aps', jsonb_build_object('content-available', 1, 'badge', badge),
                              CASE kind WHEN 'approval' THEN 'clearApprovalId' ELSE 'clearQuestionId' END, request,
                              'reason', reason)
    WHERE kind IN ('approval', 'question')
$$;
REVOKE ALL ON FUNCTION private.rule_clearing_payload(text, text, text, integer) FROM PUBLIC;

-- The silent push that tells a device another client (`handed_off_to`) took `session` from it.
CREATE FUNCTION private.rule_handoff_payload(session text, handed_off_to text) RETURNS jsonb
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT jsonb_build_object('aps', jsonb_build_object('content-available', 1), 'type', 'session_handoff',
                              'sessionId', session, 'handedOffTo', handed_off_to)
$$;
REVOKE ALL ON FUNCTION private.rule_handoff_payload(text, text) FROM PUBLIC;

-- Whether a request (an approval request or a question) counts toward a device's badge: it is
-- 'pending', the device did not ask it, and its time has not come (`expires_in`, its expiry less
-- now in whole seconds, is more than 0). Without a SET clause, so that PostgreSQL inlines it into
-- the count as a plain expression (no call per row; the partial index on pending rows still
-- matches its status test, though no longer as a range on expires_at); it names no object, only
-- built-in operators, which resolve in pg_catalog first.
CREATE FUNCTION private.rule_badge_counts(status text, asked_by_device boolean, expires_in bigint) RETURNS boolean
    LANGUAGE sql IMMUTABLE AS $$
    SELECT status = 'pending' AND NOT asked_by_device AND expires_in > 0
$$;
REVOKE ALL ON FUNCTION private.rule_badge_counts(text, boolean, bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION private.approval_badge(caller uuid, device uuid) RETURNS integer
    LANGUAGE sql STABLE SET search_path = '' AS $$
    SELECT (SELECT count(*)::integer FROM public.approval_requests a
            WHERE a.user_id = caller
              AND private.rule_badge_counts(a.status, a.requester_device_id = device,
                                            a.expires_at - floor(extract(epoch FROM now()))::bigint))
         + (SELECT count(*)::integer FROM public.agent_questions q
            WHERE q.user_id = caller
              AND private.rule_badge_counts(q.status, q.requester_device_id = device,
                                            q.expires_at - floor(extract(epoch FROM now()))::bigint))
$$;

-- Each caller's inline payload, replaced by the rule's call.
DO $$
DECLARE
    f record;
    src text;
BEGIN
    FOR f IN SELECT * FROM (VALUES
        ('private.queue_approval_clearing(uuid, uuid, text, uuid)',
         $old$jsonb_build_object('aps', jsonb_build_object('content-available', 1,
                                                            'badge', private.approval_badge(caller, t.device_id)),
                                  'clearApprovalId', request::text, 'reason', reason)$old$,
         $new$private.rule_clearing_payload('approval', request::text, reason, private.approval_badge(caller, t.device_id))$new$),
        ('private.queue_question_clearing(uuid, uuid, text)',
         $old$jsonb_build_object('aps', jsonb_build_object('content-available', 1,
                                                            'badge', private.approval_badge(caller, t.device_id)),
                                  'clearQuestionId', question::text, 'reason', reason)$old$,
         $new$private.rule_clearing_payload('question', question::text, reason, private.approval_badge(caller, t.device_id))$new$),
        ('private.clear_approval(text, text)',
         $old$jsonb_build_object('aps', jsonb_build_object('content-available', 1,
                                                            'badge', private.approval_badge(caller, t.device_id)),
                                  'clearApprovalId', v_request, 'reason', 'approved_on_other_device')$old$,
         $new$private.rule_clearing_payload('approval', v_request, 'approved_on_other_device',
                                             private.approval_badge(caller, t.device_id))$new$),
        ('private.claim_session_activity(uuid, uuid, text)',
         $old$jsonb_build_object('aps', jsonb_build_object('content-available', 1), 'type', 'session_handoff',
                                  'sessionId', v_session::text, 'handedOffTo', v_client)$old$,
         $new$private.rule_handoff_payload(v_session::text, v_client)$new$)
    ) AS v (fn, old, new) LOOP
        src := pg_get_functiondef(f.fn::regprocedure);
        IF position(f.old IN src) = 0 THEN
            RAISE EXCEPTION '% no longer builds its payload as this migration expects: update it', f.fn;
        END IF;
        EXECUTE replace(src, f.old, f.new);
    END LOOP;
END
$$;
