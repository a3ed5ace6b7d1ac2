-- not_anothers_device checks its text once, instead of once per device row scanned.
--
-- The function (20261122000500) compared d.id with CASE WHEN device ~* '<uuid>' THEN
-- device::uuid END. A SECURITY DEFINER SQL function is never inlined, so its query is planned
-- with `device` as a parameter and the CASE cannot be folded. Where the planner scans `devices`
-- (a table of up to a few hundred rows, or one without statistics), it ran the case-insensitive
-- regex once per device row, of every user, on every call. Every row written to repositories,
-- sessions, envelopes, certificates, revocations, pairing and secret requests calls it (WITH
-- CHECK). Per call, 5,000 calls as an authenticated user: 7 us with 1 device, 268 us with 101
-- (not_anothers_session: 4 us); with 1,001 or 10,001 analyzed devices the planner takes the
-- primary key and it is 8 us. On the test stack, whose devices pile up world after world in
-- that middle range, an L first push took up to 2.4 times as long.
--
-- Here the regex runs once, outside the lookup, and the lookup compares d.id with the cast
-- value (the primary key serves it once the planner prefers the index). It sits in the CASE's
-- THEN branch, an init-plan PostgreSQL runs only when that branch is taken, so text that is not
-- a UUID is never cast. Measured the same way: 7 us with 1 device, 30 us with 101, 8 us with
-- 1,001 and 10,001. The answers are unchanged: NULL or text that is not a UUID passes (the
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
