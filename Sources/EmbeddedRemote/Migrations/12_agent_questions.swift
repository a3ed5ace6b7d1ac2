import Foundation
import GRDB

// The embedded remote's schema, v12: agents' questions (registered in EmbeddedRemoteStore+Migrator.swift).
extension EmbeddedRemoteStore {
    /// The project's `*_notifications_2.sql`: agent_questions, and each question's pushes once
    /// per token.
    static func migration12(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE agent_questions (
                    id TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL,
                    session_id TEXT NOT NULL REFERENCES agent_coding_sessions (id) ON DELETE CASCADE,
                    requester_device_id TEXT NOT NULL,
                    body TEXT NOT NULL,
                    generation INTEGER NOT NULL CHECK (generation >= 1),
                    created_at TEXT NOT NULL,
                    expires_at INTEGER NOT NULL,
                    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending','answered','cancelled','expired')),
                    closed_at TEXT,
                    updated_at TEXT NOT NULL
                );
                CREATE INDEX agent_questions_user ON agent_questions (user_id, updated_at);
                CREATE UNIQUE INDEX push_outbox_question_once ON push_outbox (token, collapse_id) WHERE collapse_id LIKE 'question-%';
                """)
    }
}
