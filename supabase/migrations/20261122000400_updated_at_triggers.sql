-- updated_at moves on every write, whatever the writer sent, so pulls can page by it.
-- Deployed databases lack these triggers; the engine sets updated_at itself too.

CREATE FUNCTION public.set_updated_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.updated_at := clock_timestamp();
    RETURN NEW;
END
$$;

CREATE TRIGGER devices_updated_at BEFORE INSERT OR UPDATE ON public.devices
    FOR EACH ROW EXECUTE FUNCTION public.set_updated_at();
CREATE TRIGGER repositories_updated_at BEFORE INSERT OR UPDATE ON public.repositories
    FOR EACH ROW EXECUTE FUNCTION public.set_updated_at();
CREATE TRIGGER agent_coding_sessions_updated_at BEFORE INSERT OR UPDATE ON public.agent_coding_sessions
    FOR EACH ROW EXECUTE FUNCTION public.set_updated_at();
