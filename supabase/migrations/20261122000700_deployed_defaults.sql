-- The column defaults the deployed schema has (remote-schema, "More facts"), so a client that
-- leaves a column out gets what it would get from a deployed project: server-generated ids,
-- session start and heartbeat at insert time, a repository's last sync at insert time.

ALTER TABLE public.devices ALTER COLUMN id SET DEFAULT gen_random_uuid();
ALTER TABLE public.repositories ALTER COLUMN id SET DEFAULT gen_random_uuid();
ALTER TABLE public.repositories ALTER COLUMN last_synced_at SET DEFAULT now();
ALTER TABLE public.agent_coding_sessions ALTER COLUMN id SET DEFAULT gen_random_uuid();
ALTER TABLE public.agent_coding_sessions ALTER COLUMN session_started_at SET DEFAULT now();
ALTER TABLE public.agent_coding_sessions ALTER COLUMN last_heartbeat_at SET DEFAULT now();
ALTER TABLE public.devices ALTER COLUMN last_seen_at SET DEFAULT now();
