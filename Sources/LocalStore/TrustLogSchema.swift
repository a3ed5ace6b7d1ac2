import Foundation
import GRDB

extension Schema {
    /// v13: the trust log's pin (trust-log.md, "Verification"): the epoch this device verified,
    /// its head and the verifier's state, every entry of the epoch with its hash, and the epoch
    /// of each revocation it remembers.
    static func trustLogPin(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE trust_log_pin (
                    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
                    epoch INTEGER NOT NULL,
                    head_seq INTEGER NOT NULL,
                    head_hash BLOB NOT NULL,
                    state BLOB NOT NULL,
                    highest_epoch INTEGER NOT NULL,
                    witnessed_seq INTEGER,
                    updated_at REAL NOT NULL
                );
                CREATE TABLE trust_log_entries (
                    epoch INTEGER NOT NULL,
                    seq INTEGER NOT NULL,
                    entry TEXT NOT NULL,
                    hash BLOB NOT NULL,
                    PRIMARY KEY (epoch, seq)
                ) WITHOUT ROWID;
                ALTER TABLE known_revocations ADD COLUMN epoch INTEGER;
                ALTER TABLE known_revocations ADD COLUMN ed25519_public_key TEXT;
                """)
    }
}
