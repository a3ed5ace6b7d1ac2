import Foundation
import GRDB

// The embedded remote's schema, v1: devices, repositories, sessions, secrets (registered in EmbeddedRemoteStore+Migrator.swift).
extension EmbeddedRemoteStore {
    /// v1: devices, repositories, sessions, secrets.
    static func migration01(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE devices (
                    id TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL,
                    name TEXT NOT NULL,
                    device_type TEXT NOT NULL CHECK (device_type IN ('mac-desktop','win-desktop','linux-desktop','ios-tablet','ios-phone','android-tablet','android-phone','web-browser')),
                    hostname TEXT,
                    is_active INTEGER NOT NULL DEFAULT 1,
                    last_seen_at TEXT,
                    created_at TEXT NOT NULL,
                    updated_at TEXT NOT NULL,
                    device_role TEXT NOT NULL DEFAULT 'trusted_executor' CHECK (device_role IN ('trust_root','trusted_executor','temporary_viewer')),
                    public_key TEXT,
                    is_primary_trust_root INTEGER NOT NULL DEFAULT 0,
                    verified_at TEXT,
                    is_trusted INTEGER NOT NULL DEFAULT 0 CHECK (NOT (is_trusted AND device_type = 'web-browser')),
                    has_seen_trust_prompt INTEGER NOT NULL DEFAULT 0,
                    apns_token TEXT,
                    apns_environment TEXT DEFAULT 'sandbox' CHECK (apns_environment IN ('sandbox','production')),
                    push_enabled INTEGER NOT NULL DEFAULT 0,
                    apns_token_updated_at TEXT,
                    capabilities TEXT DEFAULT '{}'
                );
                CREATE INDEX devices_user ON devices (user_id);

                CREATE TABLE repositories (
                    id TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL,
                    device_id TEXT NOT NULL,
                    name TEXT NOT NULL,
                    local_path TEXT NOT NULL,
                    remote_url TEXT,
                    default_branch TEXT,
                    parent_repository_id TEXT REFERENCES repositories (id) ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED,
                    is_worktree INTEGER NOT NULL DEFAULT 0,
                    worktree_branch TEXT,
                    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active','archived')),
                    last_synced_at TEXT,
                    created_at TEXT NOT NULL,
                    updated_at TEXT NOT NULL,
                    UNIQUE (device_id, local_path)
                );
                CREATE INDEX repositories_user_updated ON repositories (user_id, updated_at, id);

                CREATE TABLE agent_coding_sessions (
                    id TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL,
                    device_id TEXT NOT NULL,
                    repository_id TEXT NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
                    title TEXT,
                    session_pid INTEGER,
                    session_started_at TEXT NOT NULL,
                    session_ended_at TEXT,
                    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active','paused','ended')),
                    current_branch TEXT,
                    working_directory TEXT,
                    last_heartbeat_at TEXT,
                    created_at TEXT NOT NULL,
                    updated_at TEXT NOT NULL,
                    is_worktree INTEGER NOT NULL DEFAULT 0,
                    worktree_path TEXT
                );
                CREATE INDEX sessions_user_updated ON agent_coding_sessions (user_id, updated_at, id);
                CREATE INDEX sessions_repository ON agent_coding_sessions (repository_id);

                CREATE TABLE agent_coding_session_secrets (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    session_id TEXT NOT NULL REFERENCES agent_coding_sessions (id) ON DELETE CASCADE,
                    device_id TEXT NOT NULL,
                    ephemeral_public_key TEXT NOT NULL DEFAULT '',
                    encrypted_secret TEXT NOT NULL,
                    created_at TEXT NOT NULL,
                    UNIQUE (session_id, device_id)
                );
                CREATE INDEX secrets_device ON agent_coding_session_secrets (device_id);
                """)
    }
}
