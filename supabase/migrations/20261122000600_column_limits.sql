-- Sizes and formats a client can never legitimately exceed (security findings 5 and 11): a
-- 50 MiB hostname was stored before. The project's schema only; the deployed variant keeps the
-- deployed columns as they are.

-- The standard base64 of exactly 32 bytes (44 characters, the last before `=` carrying only
-- 4 bits, so one spelling per key) and not one of the X25519 points of small order that
-- libsodium refuses (compared with the top bit cleared, as libsodium does).
CREATE FUNCTION public.is_valid_x25519_public_key(key text) RETURNS boolean
    LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
    SELECT key ~ '^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$'
       AND NOT (set_byte(decode(key, 'base64'), 31, get_byte(decode(key, 'base64'), 31) & 127) = ANY (ARRAY[
           '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea,
           '\x0100000000000000000000000000000000000000000000000000000000000000'::bytea,
           '\xe0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800'::bytea,
           '\x5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157'::bytea,
           '\xecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f'::bytea,
           '\xedffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f'::bytea,
           '\xeeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f'::bytea]))
$$;

ALTER TABLE public.devices
    ADD CONSTRAINT devices_public_key_format CHECK (public_key IS NULL OR public.is_valid_x25519_public_key(public_key)),
    ADD CONSTRAINT devices_name_length CHECK (length(name) <= 200),
    ADD CONSTRAINT devices_hostname_length CHECK (length(hostname) <= 255),
    ADD CONSTRAINT devices_apns_token_length CHECK (length(apns_token) <= 512),
    ADD CONSTRAINT devices_capabilities_size CHECK (pg_column_size(capabilities) <= 8192);

ALTER TABLE public.repositories
    ADD CONSTRAINT repositories_name_length CHECK (length(name) <= 255),
    ADD CONSTRAINT repositories_local_path_length CHECK (length(local_path) <= 4096),
    ADD CONSTRAINT repositories_remote_url_length CHECK (length(remote_url) <= 2048),
    ADD CONSTRAINT repositories_default_branch_length CHECK (length(default_branch) <= 255),
    ADD CONSTRAINT repositories_worktree_branch_length CHECK (length(worktree_branch) <= 255);

ALTER TABLE public.agent_coding_sessions
    ADD CONSTRAINT agent_coding_sessions_title_length CHECK (length(title) <= 1024),
    ADD CONSTRAINT agent_coding_sessions_current_branch_length CHECK (length(current_branch) <= 255),
    ADD CONSTRAINT agent_coding_sessions_working_directory_length CHECK (length(working_directory) <= 4096),
    ADD CONSTRAINT agent_coding_sessions_worktree_path_length CHECK (length(worktree_path) <= 4096);

ALTER TABLE public.agent_coding_session_secrets
    ADD CONSTRAINT agent_coding_session_secrets_ephemeral_key_length CHECK (length(ephemeral_public_key) <= 64),
    ADD CONSTRAINT agent_coding_session_secrets_encrypted_secret_length CHECK (length(encrypted_secret) <= 4096);
