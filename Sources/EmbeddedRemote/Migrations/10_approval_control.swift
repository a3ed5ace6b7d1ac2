import Foundation
import GRDB

// The embedded remote's schema, v10: approval control (registered in EmbeddedRemoteStore+Migrator.swift).
extension EmbeddedRemoteStore {
    /// The project's `*_approval_control.sql`: the requester's control hash, and how often the
    /// request was reopened.
    static func migration10(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE approval_requests ADD COLUMN control_hash BLOB CHECK (control_hash IS NULL OR length(control_hash) = 32);
                ALTER TABLE approval_requests ADD COLUMN reopened INTEGER NOT NULL DEFAULT 0;
                """)
    }
}
