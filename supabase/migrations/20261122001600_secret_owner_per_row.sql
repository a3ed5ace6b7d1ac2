-- The envelope table's ownership test evaluated per row (issue 14).
--
-- The policy asked EXISTS (SELECT 1 FROM agent_coding_sessions s WHERE s.id = session_id AND
-- s.user_id = auth.uid()). PostgreSQL plans that as a hashed subplan: every statement first
-- reads all of the caller's sessions into a hash table, then probes it per row. At 100,000
-- sessions that is ~30 ms of every page of a listing, whatever the page holds: the phone's
-- envelope listing at 100 pages spent most of its database time building the same hash table.
-- As a function the same test is one primary-key probe per row the statement reads (~15 us),
-- like the WITH CHECK functions of 20261122000500: a 1,000-row page of envelopes at 100,000
-- sessions took 16-27 ms instead of 81 ms, a page of the pair listing 17 ms instead of 44 ms.
--
-- The answer is unchanged: the function is SECURITY DEFINER only because it must read the
-- sessions table whatever the caller's policies on it; it compares with the caller's own
-- auth.uid(), so it tells a caller only whether a session is theirs.
--
-- Not applied to the deployed variant (scripts/stack.sh), which keeps the deployed policy.

CREATE FUNCTION public.owns_session(session uuid) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = '' AS $$
    SELECT EXISTS (SELECT 1 FROM public.agent_coding_sessions s WHERE s.id = session AND s.user_id = auth.uid())
$$;
REVOKE ALL ON FUNCTION public.owns_session(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.owns_session(uuid) TO authenticated, service_role;

-- Only USING changes. WITH CHECK keeps its EXISTS: for an inserted row PostgreSQL already
-- probes per row, and the function's call (a SECURITY DEFINER with its own search_path) cost
-- more there: PostgreSQL's CPU in the first push at 1,000,000 pairs went from 115 s to 138 s
-- with both changed.
ALTER POLICY agent_coding_session_secrets_owner ON public.agent_coding_session_secrets
    USING (public.owns_session(session_id));
