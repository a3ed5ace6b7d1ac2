import Foundation
import GRDB

// The embedded remote's schema, v7: notifications (registered in EmbeddedRemoteStore+Migrator.swift).
extension EmbeddedRemoteStore {
    /// v7: notifications.
    static func migration07(_ db: Database) throws {
        // The same table and column as the project's *_notifications.sql; the rules are in
        // EmbeddedRemoteStore+Notifications.swift. A row queued before this migration has no
        // not_before: it may go at once.
        try db.execute(
            sql: """
                CREATE TABLE notification_settings (
                    device_id TEXT PRIMARY KEY NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
                    user_id TEXT NOT NULL,
                    enable_live_activities INTEGER NOT NULL DEFAULT 1,
                    enable_background_notifications INTEGER NOT NULL DEFAULT 1,
                    show_notification_details INTEGER NOT NULL DEFAULT 0,
                    enable_time_sensitive INTEGER NOT NULL DEFAULT 1,
                    updated_at TEXT NOT NULL
                );
                ALTER TABLE push_outbox ADD COLUMN not_before TEXT;
                CREATE INDEX push_outbox_live_activity ON push_outbox (token, id) WHERE push_type = 'liveactivity';
                """)
    }
}
