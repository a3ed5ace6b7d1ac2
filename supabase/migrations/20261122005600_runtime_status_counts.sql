-- What a live activity may show, checked the same under every locale and with whole counts
-- (notifications.md; issue 68). Only the project's own schema has this CHECK; the deployed variant
-- skips this file.
--
-- agent_coding_sessions_runtime_status_live took any number from 0 to 100,000 as a todo count, and
-- `[[:cntrl:]]`, the locale's class, as control characters. A count of 2.5 was stored, and then
-- private.live_activity_payload's `::integer` raised 22P02 inside the session's trigger whenever a
-- phone had a live activity open, so the desktop's status write failed or not depending on
-- another device; the engine's reader took it as 2. Now a count must be whole (the reader drops a
-- todo whose count is not, as it drops any other malformed todo), and control characters are
-- Unicode's Cc (U+0001 to U+001F, U+007F to U+009F; PostgreSQL text holds no U+0000), which is
-- what the reader refuses, spelled out as the push-token CHECK spells it (a CHECK runs with the
-- writer's privileges and calls no private function).
--
-- NOT VALID: a row written before keeps its status until it is written again, and every write
-- from now on is checked. A migration that stopped on one old row would leave the rest unmigrated.
ALTER TABLE public.agent_coding_sessions DROP CONSTRAINT agent_coding_sessions_runtime_status_live;
ALTER TABLE public.agent_coding_sessions ADD CONSTRAINT agent_coding_sessions_runtime_status_live CHECK (
    runtime_status IS NULL OR (
        (NOT (runtime_status -> 'coding_session') ? 'current_operation'
         OR (jsonb_typeof(runtime_status -> 'coding_session' -> 'current_operation') = 'string'
             AND char_length(runtime_status -> 'coding_session' ->> 'current_operation') <= 200
             AND runtime_status -> 'coding_session' ->> 'current_operation' !~ '[\u0001-\u001f\u007f-\u009f]'))
        AND (NOT (runtime_status -> 'coding_session') ? 'todo_progress'
         OR (jsonb_typeof(runtime_status -> 'coding_session' -> 'todo_progress') = 'object'
             AND jsonb_typeof(runtime_status -> 'coding_session' -> 'todo_progress' -> 'completed') = 'number'
             AND jsonb_typeof(runtime_status -> 'coding_session' -> 'todo_progress' -> 'total') = 'number'
             AND (runtime_status -> 'coding_session' -> 'todo_progress' ->> 'completed')::numeric BETWEEN 0 AND 100000
             AND (runtime_status -> 'coding_session' -> 'todo_progress' ->> 'total')::numeric BETWEEN 0 AND 100000
             AND (runtime_status -> 'coding_session' -> 'todo_progress' ->> 'completed')::numeric
                 = trunc((runtime_status -> 'coding_session' -> 'todo_progress' ->> 'completed')::numeric)
             AND (runtime_status -> 'coding_session' -> 'todo_progress' ->> 'total')::numeric
                 = trunc((runtime_status -> 'coding_session' -> 'todo_progress' ->> 'total')::numeric)
             AND (NOT (runtime_status -> 'coding_session' -> 'todo_progress') ? 'current_task'
                  OR (jsonb_typeof(runtime_status -> 'coding_session' -> 'todo_progress' -> 'current_task') = 'string'
                      AND char_length(runtime_status -> 'coding_session' -> 'todo_progress' ->> 'current_task') <= 200
                      AND runtime_status -> 'coding_session' -> 'todo_progress' ->> 'current_task'
                          !~ '[\u0001-\u001f\u007f-\u009f]'))))
    )
) NOT VALID;
