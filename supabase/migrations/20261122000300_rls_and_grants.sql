-- Row-level security as deployed: every row belongs to auth.uid(); secrets through their session.
-- `(SELECT auth.uid())` rather than `auth.uid()`: PostgreSQL then evaluates it once per
-- statement instead of once per row (Supabase's own advice); bulk writes and listings need it.

ALTER TABLE public.devices ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.repositories ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.agent_coding_sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.agent_coding_session_secrets ENABLE ROW LEVEL SECURITY;

CREATE POLICY devices_owner ON public.devices FOR ALL TO authenticated
    USING (user_id = (SELECT auth.uid())) WITH CHECK (user_id = (SELECT auth.uid()));
CREATE POLICY repositories_owner ON public.repositories FOR ALL TO authenticated
    USING (user_id = (SELECT auth.uid())) WITH CHECK (user_id = (SELECT auth.uid()));
CREATE POLICY agent_coding_sessions_owner ON public.agent_coding_sessions FOR ALL TO authenticated
    USING (user_id = (SELECT auth.uid())) WITH CHECK (user_id = (SELECT auth.uid()));
CREATE POLICY agent_coding_session_secrets_owner ON public.agent_coding_session_secrets FOR ALL TO authenticated
    USING (EXISTS (SELECT 1 FROM public.agent_coding_sessions s WHERE s.id = session_id AND s.user_id = (SELECT auth.uid())))
    WITH CHECK (EXISTS (SELECT 1 FROM public.agent_coding_sessions s WHERE s.id = session_id AND s.user_id = (SELECT auth.uid())));

GRANT USAGE ON SCHEMA public TO anon, authenticated, service_role;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.repositories, public.agent_coding_sessions,
    public.agent_coding_session_secrets TO authenticated, service_role;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO authenticated, service_role;

-- A user's device may write only the columns a device owns. Trust fields belong to the trust
-- flow (service_role): a deployed daemon reset is_trusted at every login by sending it.
GRANT SELECT, DELETE ON public.devices TO authenticated;
GRANT INSERT (id, user_id, name, device_type, hostname, public_key, is_active, last_seen_at,
              apns_token, apns_environment, push_enabled, apns_token_updated_at, capabilities)
    ON public.devices TO authenticated;
GRANT UPDATE (id, user_id, name, device_type, hostname, public_key, is_active, last_seen_at,
              apns_token, apns_environment, push_enabled, apns_token_updated_at, capabilities)
    ON public.devices TO authenticated;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.devices TO service_role;
