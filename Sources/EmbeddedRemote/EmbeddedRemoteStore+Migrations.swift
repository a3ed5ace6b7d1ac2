import EnvelopeDigest
import Foundation
import GRDB
import RemoteContract

// The migrations EmbeddedRemoteStore registers, one function each, oldest first. Never edit one that has
// shipped: add a new one.
extension EmbeddedRemoteStore {
    /// v1: devices, repositories, sessions, secrets.
    static func v1(_ db: Database) throws {
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

    /// v2: runtime status, coordination.
    static func v2(_ db: Database) throws {
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

    /// v3: device trust.
    static func v3(_ db: Database) throws {
        // The same tables as the project's *_device_trust.sql; rows are checked by the
        // operations (EmbeddedRemoteStore+Trust.swift) as row-level security checks them.
        try db.execute(
            sql: """
                CREATE TABLE user_identity_keys (
                    user_id TEXT PRIMARY KEY NOT NULL,
                    public_key TEXT NOT NULL CHECK (length(public_key) BETWEEN 1 AND 100),
                    created_at TEXT NOT NULL
                );
                CREATE TABLE device_certificates (
                    device_id TEXT PRIMARY KEY NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
                    user_id TEXT NOT NULL,
                    body TEXT NOT NULL CHECK (length(body) BETWEEN 1 AND 2048),
                    signature TEXT NOT NULL CHECK (length(signature) BETWEEN 1 AND 200),
                    created_at TEXT NOT NULL
                );
                CREATE TABLE device_revocations (
                    device_id TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL,
                    body TEXT NOT NULL CHECK (length(body) BETWEEN 1 AND 2048),
                    signature TEXT NOT NULL CHECK (length(signature) BETWEEN 1 AND 200),
                    created_at TEXT NOT NULL
                );
                CREATE TABLE pairing_requests (
                    id TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL,
                    invite_id TEXT NOT NULL CHECK (length(invite_id) BETWEEN 1 AND 64),
                    device_id TEXT NOT NULL,
                    x25519_public_key TEXT NOT NULL CHECK (length(x25519_public_key) BETWEEN 1 AND 100),
                    ed25519_public_key TEXT NOT NULL CHECK (length(ed25519_public_key) BETWEEN 1 AND 100),
                    mac TEXT NOT NULL CHECK (length(mac) BETWEEN 1 AND 100),
                    created_at TEXT NOT NULL
                );
                """)
    }

    /// v4: secret requests.
    static func v4(_ db: Database) throws {
        // The same table as the project's *_secret_requests.sql, with its partial unique
        // index: one open request per (session, requester).
        try db.execute(
            sql: """
                CREATE TABLE session_secret_requests (
                    id TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL,
                    session_id TEXT NOT NULL REFERENCES agent_coding_sessions (id) ON DELETE CASCADE,
                    requester_device_id TEXT NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
                    created_at TEXT NOT NULL,
                    fulfilled_at TEXT
                );
                CREATE UNIQUE INDEX session_secret_requests_open
                    ON session_secret_requests (session_id, requester_device_id) WHERE fulfilled_at IS NULL;
                """)
    }

    /// v5: envelope digest kept per session.
    static func v5(_ db: Database) throws {
        // Like the project's *_secret_digest_kept.sql: each row's row_hash is stored as it is
        // written, and the per-session digest is kept by triggers, so the digest reads one
        // row per session.
        try db.execute(
            sql: """
                ALTER TABLE agent_coding_session_secrets ADD COLUMN row_h1 INTEGER;
                ALTER TABLE agent_coding_session_secrets ADD COLUMN row_h2 INTEGER;
                """)
        try db.execute(
            sql: SecretDigest.sqliteKeptDigest(
                table: "session_secret_digests", source: "agent_coding_session_secrets"))
        let rows = try Row.fetchAll(
            db, sql: "SELECT id, session_id, device_id, ephemeral_public_key FROM agent_coding_session_secrets")
        let update = try db.makeStatement(
            sql: "UPDATE agent_coding_session_secrets SET row_h1 = ?, row_h2 = ? WHERE id = ?")
        for row in rows {
            let hash = SecretDigest.rowHash(sessionID: row[1], deviceID: row[2], ephemeralPublicKey: row[3])
            try update.execute(arguments: [hash.0, hash.1, row[0] as Int64])
        }
    }

    /// v6: approvals.
    static func v6(_ db: Database) throws {
        // The same table as the project's *_approvals.sql; written only by the operations of
        // EmbeddedRemoteStore+Approvals.swift, as the functions write it.
        try db.execute(
            sql: """
                CREATE TABLE approval_requests (
                    id TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL,
                    session_id TEXT NOT NULL REFERENCES agent_coding_sessions (id) ON DELETE CASCADE,
                    requester_device_id TEXT NOT NULL,
                    body TEXT NOT NULL,
                    generation INTEGER NOT NULL CHECK (generation >= 1),
                    created_at TEXT NOT NULL,
                    expires_at INTEGER NOT NULL,
                    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending','approved','denied','expired','cancelled')),
                    decided_by_device_id TEXT,
                    decided_at TEXT,
                    decision_body TEXT,
                    decision_signature TEXT,
                    updated_at TEXT NOT NULL
                );
                CREATE INDEX approval_requests_user ON approval_requests (user_id, updated_at);
                """)
    }

    /// v7: notifications.
    static func v7(_ db: Database) throws {
        // The same table and column as the project's *_notifications.sql; the rules are in
        // EmbeddedRemoteStore+Notifications.swift. A row queued before this migration has no
        // not_before: it may go at once.
        try db.execute(
            sql: """
                CREATE TABLE notification_settings (
                    device_id TEXT PRIMARY KEY NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
                    user_id TEXT NOT NULL,
                    enable_live_activities INTEGER NOT NULL DEFAULT 1,
                    enable_background_notifications INTEGER NOT NULL DEFAULT 1,
                    show_notification_details INTEGER NOT NULL DEFAULT 0,
                    enable_time_sensitive INTEGER NOT NULL DEFAULT 1,
                    updated_at TEXT NOT NULL
                );
                ALTER TABLE push_outbox ADD COLUMN not_before TEXT;
                CREATE INDEX push_outbox_live_activity ON push_outbox (token, id) WHERE push_type = 'liveactivity';
                """)
    }

    /// v8: identity backups.
    static func v8(_ db: Database) throws {
        // The same table as the project's *_identity_backups.sql (recovery.md).
        try db.execute(
            sql: """
                CREATE TABLE identity_key_backups (
                    user_id TEXT PRIMARY KEY NOT NULL,
                    body TEXT NOT NULL CHECK (length(body) = 84),
                    created_at TEXT NOT NULL,
                    updated_at TEXT NOT NULL
                );
                """)
    }
}
