import Foundation
import GRDB

// The embedded remote's schema, v15: a revoked device's pushes (registered in EmbeddedRemoteStore+Migrator.swift).
extension EmbeddedRemoteStore {
    /// The project's `*_revoked_device_pushes.sql`: a revocation now ends the device's push tokens
    /// (``endRevokedDevices(_:user:entry:)``); a device revoked before this migration has an ended
    /// credential (only a revocation ends one), and its tokens end here.
    static func migration15(_ db: Database) throws {
        try db.execute(
            sql: """
                UPDATE push_tokens SET is_valid = 0, updated_at = ?
                WHERE is_valid AND EXISTS (SELECT 1 FROM device_credentials c WHERE c.device_id = push_tokens.device_id
                                           AND c.user_id = push_tokens.user_id AND c.ended_at IS NOT NULL)
                """, arguments: [now])
    }
}
