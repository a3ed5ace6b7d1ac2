import Foundation
import GRDB

// The embedded remote's schema, v11: notifications round 2 (registered in EmbeddedRemoteStore+Migrator.swift).
extension EmbeddedRemoteStore {
    /// The project's `*_notifications_2.sql`: a setting per alert kind and quiet-while-active.
    static func migration11(_ db: Database) throws {
        for column in [
            "alert_approvals", "alert_questions", "alert_task_complete", "alert_task_failed", "alert_task_paused",
            "quiet_while_active",
        ] {
            try db.execute(sql: "ALTER TABLE notification_settings ADD COLUMN \(column) INTEGER NOT NULL DEFAULT 1")
        }
        // What a worker records when it gives up (no worker runs here; the columns keep the
        // outcomes' rules one).
        try db.execute(sql: "ALTER TABLE push_outbox ADD COLUMN failed_at TEXT")
        try db.execute(sql: "ALTER TABLE push_outbox ADD COLUMN last_reason TEXT")
    }
}
