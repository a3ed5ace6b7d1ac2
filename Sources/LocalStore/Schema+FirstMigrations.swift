import EnvelopeDigest
import Foundation
import GRDB
import SyncModel

// The migrations Schema registers up to v6, one function each, oldest first. Never edit one that has
// shipped: add a new one.
extension Schema {
    /// v1: identity, repositories, sessions, secrets, ledger, cursors.
    static func v1(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE device_identity (
                    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
                    id TEXT NOT NULL,
                    user_id TEXT,
                    name TEXT NOT NULL,
                    device_type TEXT NOT NULL,
                    hostname TEXT,
                    role TEXT NOT NULL CHECK (role IN ('desktop', 'mobile')),
                    public_key TEXT NOT NULL,
                    created_at REAL NOT NULL
                );

                CREATE TABLE repositories (
                    id TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL,
                    device_id TEXT NOT NULL,
                    name TEXT NOT NULL,
                    local_path TEXT NOT NULL,
                    remote_url TEXT,
                    default_branch TEXT,
                    parent_repository_id TEXT,
                    is_worktree INTEGER NOT NULL DEFAULT 0,
                    worktree_branch TEXT,
                    status TEXT NOT NULL CHECK (status IN ('active', 'archived')),
                    last_synced_at REAL,
                    created_at REAL NOT NULL,
                    updated_at REAL NOT NULL,
                    UNIQUE (device_id, local_path)
                );
                CREATE INDEX repositories_updated ON repositories (updated_at, id);

                CREATE TABLE sessions (
                    id TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL,
                    device_id TEXT NOT NULL,
                    repository_id TEXT NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
                    title TEXT,
                    session_pid INTEGER,
                    session_started_at REAL NOT NULL,
                    session_ended_at REAL,
                    status TEXT NOT NULL CHECK (status IN ('active', 'paused', 'ended')),
                    current_branch TEXT,
                    working_directory TEXT,
                    last_heartbeat_at REAL,
                    is_worktree INTEGER NOT NULL DEFAULT 0,
                    worktree_path TEXT,
                    created_at REAL NOT NULL,
                    updated_at REAL NOT NULL
                );
                CREATE INDEX sessions_repository ON sessions (repository_id);
                CREATE INDEX sessions_updated ON sessions (updated_at, id);
                """)
        try v1Secrets(db)
    }

    /// v1's second half: secrets, envelopes, the ledger, cursors and the last report.
    static func v1Secrets(_ db: Database) throws {
        try db.execute(
            sql: """
                -- Desktop: each session's secret, sealed to this device's own key (never plaintext).
                CREATE TABLE own_session_secrets (
                    session_id TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
                    ephemeral_public_key TEXT NOT NULL,
                    encrypted_secret TEXT NOT NULL
                );

                -- Phone: envelopes addressed to this device, exactly as received.
                CREATE TABLE received_envelopes (
                    session_id TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
                    ephemeral_public_key TEXT NOT NULL,
                    encrypted_secret TEXT NOT NULL,
                    fetched_at REAL NOT NULL
                );

                -- Desktop: which (session, recipient) pairs were accepted by the remote, for which key.
                CREATE TABLE distribution_ledger (
                    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
                    recipient_device_id TEXT NOT NULL,
                    recipient_key_fingerprint TEXT NOT NULL,
                    sent_at REAL NOT NULL,
                    PRIMARY KEY (session_id, recipient_device_id)
                ) WITHOUT ROWID;
                CREATE INDEX distribution_ledger_recipient ON distribution_ledger (recipient_device_id);

                CREATE TABLE pull_cursors (
                    table_name TEXT PRIMARY KEY NOT NULL,
                    updated_at TEXT NOT NULL,
                    last_id TEXT NOT NULL
                );

                CREATE TABLE last_sync_report (
                    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
                    finished_at REAL NOT NULL,
                    report TEXT NOT NULL
                );
                """)
    }

    /// v2: change sequence, tombstones, settings.
    static func v2(_ db: Database) throws {
        // change_seq: the transaction that last wrote a row, from one counter, so a push
        // sends exactly the rows written since the last accepted push, whatever the clock does.
        try db.execute(
            sql: """
                ALTER TABLE repositories ADD COLUMN change_seq INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE sessions ADD COLUMN change_seq INTEGER NOT NULL DEFAULT 0;
                CREATE INDEX repositories_change_seq ON repositories (change_seq);
                CREATE INDEX sessions_change_seq ON sessions (change_seq);
                CREATE TABLE change_counter (
                    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
                    value INTEGER NOT NULL
                );
                INSERT INTO change_counter (singleton, value) VALUES (1, 0);

                -- Desktop: rows deleted here that the remote still has to delete.
                CREATE TABLE pending_remote_deletions (
                    table_name TEXT NOT NULL CHECK (table_name IN ('repositories', 'sessions')),
                    id TEXT NOT NULL,
                    PRIMARY KEY (table_name, id)
                ) WITHOUT ROWID;

                CREATE TABLE settings (
                    key TEXT PRIMARY KEY NOT NULL,
                    value TEXT NOT NULL
                ) WITHOUT ROWID;
                """)
    }

    /// v3: secret generations, envelope senders.
    static func v3(_ db: Database) throws {
        try db.execute(
            sql: """
                -- Desktop: a session's secret has a generation (1 for every secret made before v3).
                ALTER TABLE own_session_secrets ADD COLUMN generation INTEGER NOT NULL DEFAULT 1;
                -- Phone: what an envelope said about its sealer, checked when it was received.
                ALTER TABLE received_envelopes ADD COLUMN sender_device_id TEXT;
                ALTER TABLE received_envelopes ADD COLUMN sender_public_key TEXT;
                ALTER TABLE received_envelopes ADD COLUMN generation INTEGER NOT NULL DEFAULT 1;
                ALTER TABLE received_envelopes ADD COLUMN authenticated INTEGER NOT NULL DEFAULT 0;
                """)
    }

    /// v4: session runtime status.
    static func v4(_ db: Database) throws {
        try db.execute(
            sql: """
                -- The live status the session's desktop reported (JSON text), and when the remote got it.
                ALTER TABLE sessions ADD COLUMN runtime_status TEXT;
                ALTER TABLE sessions ADD COLUMN runtime_status_updated_at REAL;
                """)
    }

    /// v5: ledger envelope keys.
    static func v5(_ db: Database) throws {
        try db.execute(
            sql: """
                -- Desktop: each accepted envelope's ephemeral_public_key, which the remote's envelope digest hashes.
                ALTER TABLE distribution_ledger ADD COLUMN ephemeral_public_key TEXT;
                """)
    }

    /// v6: device trust, secret generations kept.
    static func v6(_ db: Database) throws {
        // Foundation's reference date is Julian day 2451910.5: the triggers stamp REAL
        // seconds since then, like every other timestamp here.
        try db.execute(
            sql: """
                -- Desktop: every earlier generation of a session's own secret, sealed at rest as the current one.
                CREATE TABLE own_secret_history (
                    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
                    generation INTEGER NOT NULL,
                    ephemeral_public_key TEXT NOT NULL,
                    encrypted_secret TEXT NOT NULL,
                    retired_at REAL NOT NULL,
                    PRIMARY KEY (session_id, generation)
                ) WITHOUT ROWID;
                CREATE TRIGGER own_secret_keep_generation BEFORE UPDATE OF generation ON own_session_secrets
                WHEN NEW.generation <> OLD.generation BEGIN
                    INSERT OR REPLACE INTO own_secret_history (session_id, generation, ephemeral_public_key, encrypted_secret, retired_at)
                    VALUES (OLD.session_id, OLD.generation, OLD.ephemeral_public_key, OLD.encrypted_secret, (julianday('now') - 2451910.5) * 86400.0);
                END;

                -- Phone: every earlier generation of a received envelope, as received.
                CREATE TABLE received_envelope_history (
                    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
                    generation INTEGER NOT NULL,
                    ephemeral_public_key TEXT NOT NULL,
                    encrypted_secret TEXT NOT NULL,
                    fetched_at REAL NOT NULL,
                    sender_device_id TEXT,
                    sender_public_key TEXT,
                    authenticated INTEGER NOT NULL,
                    PRIMARY KEY (session_id, generation)
                ) WITHOUT ROWID;
                CREATE TRIGGER received_envelope_keep_generation BEFORE UPDATE OF generation ON received_envelopes
                WHEN NEW.generation <> OLD.generation BEGIN
                    INSERT OR REPLACE INTO received_envelope_history (session_id, generation, ephemeral_public_key, encrypted_secret, fetched_at,
                                                                       sender_device_id, sender_public_key, authenticated)
                    VALUES (OLD.session_id, OLD.generation, OLD.ephemeral_public_key, OLD.encrypted_secret, OLD.fetched_at,
                            OLD.sender_device_id, OLD.sender_public_key, OLD.authenticated);
                END;

                -- Trust root: open pairing invites (the pairing secret never leaves this file and the screen).
                CREATE TABLE pairing_invites (
                    invite_id TEXT PRIMARY KEY NOT NULL,
                    secret BLOB NOT NULL,
                    created_at REAL NOT NULL,
                    expires_at REAL NOT NULL,
                    used_at REAL,
                    used_by TEXT
                ) WITHOUT ROWID;

                -- Every device revocation this device verified, kept even if the remote forgets it.
                CREATE TABLE known_revocations (
                    device_id TEXT PRIMARY KEY NOT NULL,
                    x25519_public_key TEXT NOT NULL,
                    revoked_at REAL NOT NULL,
                    seen_at REAL NOT NULL
                ) WITHOUT ROWID;
                """)
    }
}
