import Foundation
import GRDB

// The embedded remote's schema, v6: approvals (registered in EmbeddedRemoteStore+Migrator.swift).
extension EmbeddedRemoteStore {
    /// v6: approvals.
    static func migration06(_ db: Database) throws {
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
}
