import Foundation
import GRDB

// The embedded remote's schema, v13: answers to questions with choices (registered in EmbeddedRemoteStore+Migrator.swift).
extension EmbeddedRemoteStore {
    /// The project's `*_agent_hooks.sql`: one sealed answer per question and device.
    static func migration13(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE agent_question_answers (
                    question_id TEXT NOT NULL REFERENCES agent_questions (id) ON DELETE CASCADE,
                    user_id TEXT NOT NULL,
                    device_id TEXT NOT NULL,
                    answer TEXT NOT NULL,
                    created_at TEXT NOT NULL,
                    PRIMARY KEY (question_id, device_id)
                );
                """)
    }
}
