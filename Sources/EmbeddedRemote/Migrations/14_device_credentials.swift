import Foundation
import GRDB

// The embedded remote's schema, v14: device credentials (registered in EmbeddedRemoteStore+Migrator.swift).
extension EmbeddedRemoteStore {
    /// The migration: each device's credential hash, ended when the log revokes the device.
    static func migration14(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE device_credentials (
                    device_id TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL,
                    hash BLOB NOT NULL UNIQUE CHECK (length(hash) = 32),
                    registered_at TEXT NOT NULL,
                    ended_at TEXT
                );
                """)
        // A device's witness for a seq it witnessed already is kept beside the first: the key
        // holds the signature.
        try db.execute(
            sql: """
                CREATE TABLE trust_log_witnesses_new (
                    user_id TEXT NOT NULL,
                    device_id TEXT NOT NULL,
                    epoch INTEGER NOT NULL,
                    seq INTEGER NOT NULL,
                    body TEXT NOT NULL,
                    signature TEXT NOT NULL,
                    created_at TEXT NOT NULL,
                    PRIMARY KEY (user_id, device_id, epoch, seq, signature)
                );
                INSERT INTO trust_log_witnesses_new SELECT user_id, device_id, epoch, seq, body, signature, created_at
                    FROM trust_log_witnesses;
                DROP TABLE trust_log_witnesses;
                ALTER TABLE trust_log_witnesses_new RENAME TO trust_log_witnesses;
                """)
        // Devices revoked before: ended now, so that no credential of theirs can register.
        let users = try String.fetchAll(db, sql: "SELECT DISTINCT user_id FROM trust_log")
        for user in users {
            for entry in try String.fetchAll(
                db, sql: "SELECT entry FROM trust_log WHERE user_id = ?", arguments: [user])
            {
                try endRevokedDevices(db, user: user, entry: entry)
            }
        }
    }
}
