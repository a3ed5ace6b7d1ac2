-- An index on agent_coding_sessions (user_id, id): a first pull lists every session of the user in
-- id order, in ranges of ids read side by side (docs/sync.md, "Pull"). Each page is then one scan
-- of this index from the last id of the page before. Ordered by (updated_at, id), which the
-- user_updated index serves, a page of a range read and sorted every row of the range left: at
-- 100,000 sessions 30-90 ms of PostgreSQL a page instead of a few.
--
-- Only a read path changes; a deployment without this index lists the same rows, more slowly.
CREATE INDEX IF NOT EXISTS agent_coding_sessions_user_id ON public.agent_coding_sessions (user_id, id);
