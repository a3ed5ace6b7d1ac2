-- The push outbox carries each row's APNs token (copied from push_tokens when the row was
-- queued): the push worker's, not the user's devices'. A device reads the outbox to show what is
-- queued and where it went; of the token it reads only the last six characters (`token_hint`,
-- enough to tell tokens apart), as it reads no other device's token in push_tokens, devices or
-- session_active_clients (20261122003600_device_scoped_rows.sql, 20261122003700_device_scoped_calls_2.sql).
--
-- Only the project's own schema has the outbox; the deployed variant skips this file.
ALTER TABLE public.push_outbox ADD COLUMN token_hint text GENERATED ALWAYS AS (right(token, 6)) STORED;

DO $$
DECLARE
    readable text;
BEGIN
    SELECT string_agg(quote_ident(c.column_name), ', ' ORDER BY c.ordinal_position) INTO readable
    FROM information_schema.columns c
    WHERE c.table_schema = 'public' AND c.table_name = 'push_outbox' AND c.column_name <> 'token';
    REVOKE SELECT ON public.push_outbox FROM authenticated;
    EXECUTE format('GRANT SELECT (%s) ON public.push_outbox TO authenticated', readable);
END
$$;
