-- The feeds carry the trust log's head (docs/trust-log.md, "The remote"): `trustLog` is
-- {"epoch", "seq", "hash", "highestEpoch", "pendingEpoch"} of the caller's current epoch (null
-- before any log). A device whose pin is at that head, with no new epoch and no reset pending,
-- reads nothing more of the log and verifies nothing. `statements` stays for older clients,
-- which still read the (now read-only) legacy tables. Only the project's own schema has the
-- feeds; the deployed variant skips this file.

CREATE OR REPLACE FUNCTION public.sync_pull_changes(device_id uuid, since timestamptz DEFAULT NULL, row_limit integer DEFAULT 500)
    RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    caller uuid := auth.uid();
    v_device uuid := sync_pull_changes.device_id;
    v_since timestamptz := sync_pull_changes.since;
    v_limit integer := sync_pull_changes.row_limit;
    v_repositories jsonb;
    v_sessions jsonb;
    v_envelopes jsonb;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'sync_pull_changes needs a signed-in user' USING ERRCODE = '42501'; END IF;
    IF v_limit IS NULL OR v_limit < 0 OR v_limit > 5000 THEN
        RAISE EXCEPTION 'row_limit must be from 0 to 5000' USING ERRCODE = '22023';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM public.devices d WHERE d.id = v_device AND d.user_id = caller) THEN
        RAISE EXCEPTION 'sync_pull_changes: the device is not one of the caller''s' USING ERRCODE = '42501';
    END IF;

    SELECT CASE WHEN count(*) > v_limit THEN NULL ELSE coalesce(jsonb_agg(to_jsonb(r) ORDER BY r.updated_at, r.id), '[]'::jsonb) END
      INTO v_repositories
      FROM (SELECT * FROM public.repositories x WHERE x.user_id = caller AND (v_since IS NULL OR x.updated_at > v_since)
            ORDER BY x.updated_at, x.id LIMIT v_limit + 1) r;
    SELECT CASE WHEN count(*) > v_limit THEN NULL ELSE coalesce(jsonb_agg(to_jsonb(r) ORDER BY r.updated_at, r.id), '[]'::jsonb) END
      INTO v_sessions
      FROM (SELECT * FROM public.agent_coding_sessions x WHERE x.user_id = caller AND (v_since IS NULL OR x.updated_at > v_since)
            ORDER BY x.updated_at, x.id LIMIT v_limit + 1) r;
    IF v_sessions IS NOT NULL THEN
        SELECT coalesce(jsonb_agg(jsonb_build_object('session_id', s.session_id, 'device_id', s.device_id,
                                                     'ephemeral_public_key', s.ephemeral_public_key,
                                                     'encrypted_secret', s.encrypted_secret) ORDER BY s.session_id), '[]'::jsonb)
          INTO v_envelopes
          FROM public.agent_coding_session_secrets s
          JOIN public.agent_coding_sessions c ON c.id = s.session_id
         WHERE s.device_id = v_device AND c.user_id = caller
           AND s.session_id IN (SELECT (e ->> 'id')::uuid FROM jsonb_array_elements(v_sessions) e);
    END IF;

    RETURN jsonb_build_object(
        'server_time', now(),
        'repositories', v_repositories,
        'sessions', v_sessions,
        'envelopes', v_envelopes,
        'repository_ids', private.pull_digest_of('repositories', caller),
        'session_ids', private.pull_digest_of('sessions', caller),
        'envelope_rows', private.pull_digest_of('envelopes', v_device),
        'devices', coalesce((SELECT jsonb_agg(to_jsonb(d) ORDER BY d.updated_at, d.id) FROM public.devices d
                             WHERE d.user_id = caller AND (v_since IS NULL OR d.updated_at > v_since)), '[]'::jsonb),
        'statements', (SELECT md5(coalesce((SELECT k.public_key FROM public.user_identity_keys k WHERE k.user_id = caller), '') || '|' ||
                                  coalesce(string_agg(s.kind || ':' || s.device_id::text || ':' || s.signature, ',' ORDER BY s.kind, s.device_id), ''))
                       FROM (SELECT 'c' AS kind, c.device_id, c.signature FROM public.device_certificates c WHERE c.user_id = caller
                             UNION ALL
                             SELECT 'r', v.device_id, v.signature FROM public.device_revocations v WHERE v.user_id = caller) s),
        'trustLog', private.trust_log_head_of(caller),
        'secret_requests', coalesce((SELECT jsonb_agg(to_jsonb(r) ORDER BY r.created_at, r.id) FROM public.session_secret_requests r
                                     WHERE r.user_id = caller AND r.requester_device_id = v_device AND r.fulfilled_at IS NULL), '[]'::jsonb),
        'approvals', coalesce((SELECT jsonb_agg(to_jsonb(a) ORDER BY a.updated_at, a.id) FROM public.approval_requests a
                               WHERE a.user_id = caller AND (CASE WHEN v_since IS NULL THEN a.status = 'pending' ELSE a.updated_at > v_since END)),
                              '[]'::jsonb)
    );
END
$$;

CREATE OR REPLACE FUNCTION public.sync_changes(since timestamptz DEFAULT NULL)
    RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    caller uuid := auth.uid();
    v_since timestamptz := sync_changes.since;
BEGIN
    IF caller IS NULL THEN RAISE EXCEPTION 'sync_changes needs a signed-in user' USING ERRCODE = '42501'; END IF;
    RETURN jsonb_build_object(
        'server_time', now(),
        'devices', coalesce((SELECT jsonb_agg(to_jsonb(d) ORDER BY d.updated_at, d.id) FROM public.devices d
                             WHERE d.user_id = caller AND (v_since IS NULL OR d.updated_at > v_since)), '[]'::jsonb),
        'secret_requests', coalesce((SELECT jsonb_agg(to_jsonb(r) ORDER BY r.created_at, r.id) FROM public.session_secret_requests r
                                     WHERE r.user_id = caller AND r.fulfilled_at IS NULL), '[]'::jsonb),
        'statements', (SELECT md5(coalesce(string_agg(s.kind || ':' || s.device_id::text || ':' || s.signature, ',' ORDER BY s.kind, s.device_id), ''))
                       FROM (SELECT 'c' AS kind, c.device_id, c.signature FROM public.device_certificates c WHERE c.user_id = caller
                             UNION ALL
                             SELECT 'r', v.device_id, v.signature FROM public.device_revocations v WHERE v.user_id = caller) s),
        'trustLog', private.trust_log_head_of(caller),
        'approvals', coalesce((SELECT jsonb_agg(to_jsonb(a) ORDER BY a.updated_at, a.id) FROM public.approval_requests a
                               WHERE a.user_id = caller AND (CASE WHEN v_since IS NULL THEN a.status = 'pending' ELSE a.updated_at > v_since END)),
                              '[]'::jsonb)
    );
END
$$;
