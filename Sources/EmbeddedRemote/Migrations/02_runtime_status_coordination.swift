import Foundation
import GRDB

// The embedded remote's schema, v2: runtime status, coordination (registered in EmbeddedRemoteStore+Migrator.swift).
extension EmbeddedRemoteStore {
    /// v2: runtime status, coordination.
    static func migration02(_ db: Database) throws {
        // The same tables as the project's *_runtime_status.sql and *_coordination.sql.
        try db.execute(
            sql: """
                ALTER TABLE agent_coding_sessions ADD COLUMN runtime_status TEXT CHECK (runtime_status IS NULL OR json_valid(runtime_status));
                ALTER TABLE agent_coding_sessions ADD COLUMN runtime_status_updated_at TEXT;

                CREATE TABLE session_active_clients (
                    session_id TEXT PRIMARY KEY NOT NULL REFERENCES agent_coding_sessions (id) ON DELETE CASCADE,
                    user_id TEXT NOT NULL,
                    client_type TEXT NOT NULL CHECK (client_type IN ('ios','desktop','web')),
                    device_id TEXT NOT NULL,
                    push_token TEXT,
                    last_activity_at TEXT NOT NULL,
                    created_at TEXT NOT NULL,
                    updated_at TEXT NOT NULL
                );

                CREATE TABLE push_tokens (
                    id TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL,
                    device_id TEXT NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
                    token TEXT NOT NULL UNIQUE,
                    token_type TEXT NOT NULL CHECK (token_type IN ('device','live_activity')),
                    activity_id TEXT,
                    session_id TEXT REFERENCES agent_coding_sessions (id) ON DELETE CASCADE,
                    platform TEXT NOT NULL DEFAULT 'ios',
                    environment TEXT NOT NULL CHECK (environment IN ('development','production')),
                    is_valid INTEGER NOT NULL DEFAULT 1,
                    created_at TEXT NOT NULL,
                    updated_at TEXT NOT NULL,
                    CHECK (token_type <> 'live_activity' OR (activity_id IS NOT NULL AND session_id IS NOT NULL))
                );
                CREATE INDEX push_tokens_user_device ON push_tokens (user_id, device_id);

                CREATE TABLE push_outbox (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    user_id TEXT NOT NULL,
                    device_id TEXT,
                    token TEXT NOT NULL,
                    push_type TEXT NOT NULL CHECK (push_type IN ('background','alert','liveactivity')),
                    priority INTEGER NOT NULL CHECK (priority IN (5, 10)),
                    collapse_id TEXT,
                    payload TEXT NOT NULL CHECK (json_valid(payload)),
                    created_at TEXT NOT NULL,
                    delivered_at TEXT,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    last_error TEXT
                );
                CREATE INDEX push_outbox_user ON push_outbox (user_id, id);
                CREATE UNIQUE INDEX push_outbox_approval_once ON push_outbox (token, collapse_id) WHERE collapse_id LIKE 'approval-%';
                """)
    }
}
