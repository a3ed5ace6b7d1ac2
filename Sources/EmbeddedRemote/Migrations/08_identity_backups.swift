import Foundation
import GRDB

// The embedded remote's schema, v8: identity backups (registered in EmbeddedRemoteStore+Migrator.swift).
extension EmbeddedRemoteStore {
    /// v8: identity backups.
    static func migration08(_ db: Database) throws {
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
