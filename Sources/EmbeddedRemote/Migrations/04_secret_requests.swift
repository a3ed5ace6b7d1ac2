import Foundation
import GRDB

// The embedded remote's schema, v4: secret requests (registered in EmbeddedRemoteStore+Migrator.swift).
extension EmbeddedRemoteStore {
    /// v4: secret requests.
    static func migration04(_ db: Database) throws {
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
}
