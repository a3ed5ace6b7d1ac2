-- not_anothers_device looks the device up by its key instead of scanning every user's devices.
--
-- The function (20261122000500) compared d.id with CASE WHEN device ~* '<uuid>' THEN
-- device::uuid END. A SECURITY DEFINER SQL function is never inlined, so its query is planned
-- with `device` as a parameter: the CASE cannot be folded, the planner scanned `devices` and ran
-- the case-insensitive regex once per device row, of every user, on every call. Every row written
-- to repositories, sessions, envelopes, certificates, revocations, pairing and secret requests
-- calls it (WITH CHECK), so a write cost grew with the number of devices in the whole table:
-- 239 us a call with 88 devices on the test stack (4 us for not_anothers_session), and an L
-- first push took twice as long once earlier worlds' devices had piled up.
--
-- Here the text is checked once, outside the lookup, and the device is read by its key (the
-- lookup sits in the CASE's THEN branch, an init-plan PostgreSQL runs only when that branch is
-- taken, so text that is not a UUID is never cast). Measured the same way: 31 us a call, flat in
-- the number of devices. The answers are unchanged: NULL or text that is not a UUID passes (the
-- foreign key or the column's type decides), a UUID passes unless a device with that id belongs
-- to somebody else.

CREATE OR REPLACE FUNCTION public.not_anothers_device(device text) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = '' AS $$
    SELECT CASE WHEN device ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                THEN NOT EXISTS (SELECT 1 FROM public.devices d WHERE d.id = device::uuid AND d.user_id IS DISTINCT FROM auth.uid())
                ELSE true END
$$;
REVOKE ALL ON FUNCTION public.not_anothers_device(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.not_anothers_device(text) TO authenticated, service_role;
