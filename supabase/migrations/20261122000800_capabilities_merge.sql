-- devices.capabilities is shared by every client of a device (the deployed daemon keeps its
-- `cli.*` entries there, the engine its `session_secret_envelopes`): an update merges the keys
-- it sends into the stored object instead of replacing it. A client that wants a key gone sends
-- it as JSON null (it is then stored as null).

CREATE FUNCTION public.merge_device_capabilities() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.capabilities := coalesce(OLD.capabilities, '{}'::jsonb) || coalesce(NEW.capabilities, '{}'::jsonb);
    RETURN NEW;
END
$$;

CREATE TRIGGER devices_merge_capabilities BEFORE UPDATE OF capabilities ON public.devices
    FOR EACH ROW EXECUTE FUNCTION public.merge_device_capabilities();
