import Foundation
import GRDB

// The embedded remote's schema, v9: trust log (registered in EmbeddedRemoteStore+Migrator.swift).
extension EmbeddedRemoteStore {
    /// The migration: the log, its witnesses, and the private state (never read by a client).
    static func migration09(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE trust_log (
                    user_id TEXT NOT NULL,
                    epoch INTEGER NOT NULL CHECK (epoch >= 1),
                    seq INTEGER NOT NULL CHECK (seq >= 0 AND seq < 10000),
                    entry TEXT NOT NULL,
                    backup TEXT,
                    created_at TEXT NOT NULL,
                    PRIMARY KEY (user_id, epoch, seq)
                );
                CREATE TABLE trust_log_witnesses (
                    user_id TEXT NOT NULL,
                    device_id TEXT NOT NULL,
                    epoch INTEGER NOT NULL,
                    seq INTEGER NOT NULL,
                    body TEXT NOT NULL,
                    signature TEXT NOT NULL,
                    created_at TEXT NOT NULL,
                    PRIMARY KEY (user_id, device_id, epoch, seq)
                );
                CREATE TABLE trust_log_state (
                    user_id TEXT PRIMARY KEY NOT NULL,
                    current_epoch INTEGER,
                    highest_epoch INTEGER NOT NULL DEFAULT 0,
                    pending_epoch INTEGER,
                    pending_hash BLOB,
                    pending_created_at INTEGER,
                    last_reset_request REAL
                );
                CREATE TABLE trust_log_heads (
                    user_id TEXT NOT NULL,
                    epoch INTEGER NOT NULL,
                    seq INTEGER NOT NULL,
                    hash BLOB NOT NULL,
                    created_at INTEGER NOT NULL,
                    last_proof BLOB NOT NULL,
                    PRIMARY KEY (user_id, epoch)
                );
                """)
    }
}
