-- require_asker (20261122003500_device_scoped_calls.sql) learned whether a request of another
-- user exists ("only the desktop that asked" for it, "not one of yours" for an unknown id): it now
-- looks only at the caller's own requests, and another user's id is refused as an unknown one is.
--
-- Supabase's default privileges grant every public function to authenticated; a function meant
-- for the operator loses that grant here (REVOKE ... FROM PUBLIC alone left it).
--
-- Only the project's own schema has these functions; the deployed variant skips this file.
CREATE OR REPLACE FUNCTION private.require_asker(request uuid) RETURNS void
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    c uuid := private.caller_device(true);
BEGIN
    IF request IS NOT NULL
       AND (EXISTS (SELECT 1 FROM public.approval_requests a
                    WHERE a.id = request AND a.user_id = auth.uid() AND a.requester_device_id IS DISTINCT FROM c)
            OR EXISTS (SELECT 1 FROM public.agent_questions q
                       WHERE q.id = request AND q.user_id = auth.uid() AND q.requester_device_id IS DISTINCT FROM c)) THEN
        RAISE EXCEPTION 'only the desktop that asked may make this call' USING ERRCODE = '42501';
    END IF;
END
$$;

REVOKE ALL ON FUNCTION public.expire_approvals(), public.session_secret_digest_apply() FROM anon, authenticated;

-- The feeds return the user's device rows as JSON: without `apns_token`, as a device reads the
-- table (20261122003600_device_scoped_rows.sql). Each feed is redefined as it stands with that one
-- change (its text in supabase/schema.sql), and refused if the change does not apply exactly once.
DO $$
DECLARE
    f regprocedure;
    body text;
    fixed text;
BEGIN
    FOREACH f IN ARRAY ARRAY['private.sync_changes(timestamptz)'::regprocedure,
                             'private.sync_pull_changes(uuid, timestamptz, integer)'::regprocedure] LOOP
        body := pg_get_functiondef(f);
        fixed := replace(body, 'jsonb_agg(to_jsonb(d) ORDER BY', 'jsonb_agg(to_jsonb(d) - ''apns_token'' ORDER BY');
        IF fixed = body OR length(fixed) - length(body) <> length(' - ''apns_token''') THEN
            RAISE EXCEPTION 'the device rows of % are not where this migration expects them', f;
        END IF;
        EXECUTE fixed;
    END LOOP;
END
$$;

-- A session's holder row carries its APNs token (copied from push_tokens for the live activity):
-- the push path's, not the user's other devices'. A device reads every other column.
DO $$
DECLARE
    readable text;
BEGIN
    SELECT string_agg(quote_ident(c.column_name), ', ' ORDER BY c.ordinal_position) INTO readable
    FROM information_schema.columns c
    WHERE c.table_schema = 'public' AND c.table_name = 'session_active_clients' AND c.column_name <> 'push_token';
    REVOKE SELECT ON public.session_active_clients FROM authenticated;
    EXECUTE format('GRANT SELECT (%s) ON public.session_active_clients TO authenticated', readable);
END
$$;
