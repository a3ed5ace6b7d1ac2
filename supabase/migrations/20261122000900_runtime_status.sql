-- A session's live status as the deployed desktops report it (coordination.md, "Runtime
-- status"): a JSON object the desktop PATCHes by id, with the deployed CHECKs. Phones receive
-- it with the session rows on pull. The deployed schema has these columns too, so the deployed
-- variant applies this file as well.

ALTER TABLE public.agent_coding_sessions
    ADD COLUMN IF NOT EXISTS runtime_status jsonb,
    ADD COLUMN IF NOT EXISTS runtime_status_updated_at timestamptz;

ALTER TABLE public.agent_coding_sessions ADD CONSTRAINT agent_coding_sessions_runtime_status_shape CHECK (
    runtime_status IS NULL OR (
        jsonb_typeof(runtime_status) = 'object'
        AND runtime_status -> 'schema_version' = '"1"'::jsonb
        AND jsonb_typeof(runtime_status -> 'coding_session') = 'object'
        AND jsonb_typeof(runtime_status -> 'coding_session' -> 'status') = 'string'
        AND runtime_status -> 'coding_session' ->> 'status' IN ('running', 'idle', 'waiting', 'not-available', 'error')
        AND jsonb_typeof(runtime_status -> 'device_id') = 'string'
        AND jsonb_typeof(runtime_status -> 'session_id') = 'string'
        AND runtime_status ->> 'session_id' = id::text
        AND jsonb_typeof(runtime_status -> 'updated_at_ms') = 'number'
        AND (NOT runtime_status ? 'error_message' OR jsonb_typeof(runtime_status -> 'error_message') = 'string')
    )
);
ALTER TABLE public.agent_coding_sessions ADD CONSTRAINT agent_coding_sessions_runtime_status_time CHECK (
    runtime_status IS NULL OR runtime_status_updated_at IS NOT NULL
);
