-- Every row a user writes may reference only rows of the same user (security finding 10).
--
-- Foreign keys are checked without row-level security, so before this a user could point a
-- session at another user's repository, a repository at another user's device or parent, or
-- address an envelope of their own session to another user's device; the other user's later
-- delete then cascaded into their rows. WITH CHECK now asks, for every referenced row, whether
-- it belongs to auth.uid().
--
-- Each check asks "is there no row with this id that belongs to somebody else": a row of the
-- caller passes, and so does an id that does not exist, which the foreign key then refuses
-- with its usual 23503 (the deployed secrets table has no foreign key on device_id; there an
-- envelope may name a device not registered yet, as before, but never another user's).
--
-- The checks are SECURITY DEFINER functions (owned by the migration's role, with an empty
-- search_path and every name qualified) because a policy on repositories that queried
-- repositories would recurse, and RLS would hide exactly the rows being asked about. Each
-- answers only whether an id belongs to somebody other than the caller's own auth.uid().

CREATE FUNCTION public.not_anothers_device(device text) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = '' AS $$
    SELECT NOT EXISTS (SELECT 1 FROM public.devices d
                       WHERE d.id = (CASE WHEN device ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                                          THEN device::uuid END)
                         AND d.user_id IS DISTINCT FROM auth.uid())
$$;
CREATE FUNCTION public.not_anothers_repository(repository uuid) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = '' AS $$
    SELECT NOT EXISTS (SELECT 1 FROM public.repositories r WHERE r.id = repository AND r.user_id IS DISTINCT FROM auth.uid())
$$;
CREATE FUNCTION public.not_anothers_session(session uuid) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = '' AS $$
    SELECT NOT EXISTS (SELECT 1 FROM public.agent_coding_sessions s WHERE s.id = session AND s.user_id IS DISTINCT FROM auth.uid())
$$;
REVOKE ALL ON FUNCTION public.not_anothers_device(text), public.not_anothers_repository(uuid), public.not_anothers_session(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.not_anothers_device(text), public.not_anothers_repository(uuid), public.not_anothers_session(uuid)
    TO authenticated, service_role;

DROP POLICY repositories_owner ON public.repositories;
CREATE POLICY repositories_owner ON public.repositories FOR ALL TO authenticated
    USING (user_id = (SELECT auth.uid()))
    WITH CHECK (user_id = (SELECT auth.uid())
                AND public.not_anothers_device(device_id::text)
                AND (parent_repository_id IS NULL OR public.not_anothers_repository(parent_repository_id)));

DROP POLICY agent_coding_sessions_owner ON public.agent_coding_sessions;
CREATE POLICY agent_coding_sessions_owner ON public.agent_coding_sessions FOR ALL TO authenticated
    USING (user_id = (SELECT auth.uid()))
    WITH CHECK (user_id = (SELECT auth.uid())
                AND public.not_anothers_device(device_id::text)
                AND public.not_anothers_repository(repository_id));

DROP POLICY agent_coding_session_secrets_owner ON public.agent_coding_session_secrets;
CREATE POLICY agent_coding_session_secrets_owner ON public.agent_coding_session_secrets FOR ALL TO authenticated
    USING (EXISTS (SELECT 1 FROM public.agent_coding_sessions s WHERE s.id = session_id AND s.user_id = (SELECT auth.uid())))
    WITH CHECK (EXISTS (SELECT 1 FROM public.agent_coding_sessions s WHERE s.id = session_id AND s.user_id = (SELECT auth.uid()))
                AND public.not_anothers_device(device_id::text));
