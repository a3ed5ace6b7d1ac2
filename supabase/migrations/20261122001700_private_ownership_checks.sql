-- The ownership checks leave the exposed schema (security round 3, finding 8).
--
-- not_anothers_device, not_anothers_session and not_anothers_repository answer, for any id,
-- whether it belongs to a user other than the caller. The row-level-security policies need
-- them, but in `public` PostgREST also served them as RPC (POST /rest/v1/rpc/not_anothers_device),
-- so any signed-in user could ask whether an id was somebody else's device, session or
-- repository. PostgREST exposes only the schemas it is configured with (`public` here, as on
-- Supabase); `private` is not one of them.
--
-- A policy refers to a function by its identity, not its name, so moving the functions keeps
-- every policy working unchanged. The API roles keep EXECUTE (a policy runs with the privileges
-- of the user it checks) but get no USAGE on the schema: nothing can name the functions any more,
-- and nothing needs to.

CREATE SCHEMA IF NOT EXISTS private;
REVOKE ALL ON SCHEMA private FROM PUBLIC;

ALTER FUNCTION public.not_anothers_device(text) SET SCHEMA private;
ALTER FUNCTION public.not_anothers_repository(uuid) SET SCHEMA private;
ALTER FUNCTION public.not_anothers_session(uuid) SET SCHEMA private;
