import EnvelopeDigest
import Foundation
import GRDB

// The embedded remote's schema, v5: envelope digest kept per session (registered in EmbeddedRemoteStore+Migrator.swift).
extension EmbeddedRemoteStore {
    /// v5: envelope digest kept per session.
    static func migration05(_ db: Database) throws {
        // Like the project's *_secret_digest_kept.sql: each row's row_hash is stored as it is
        // written, and the per-session digest is kept by triggers, so the digest reads one
        // row per session.
        try db.execute(
            sql: """
                ALTER TABLE agent_coding_session_secrets ADD COLUMN row_h1 INTEGER;
                ALTER TABLE agent_coding_session_secrets ADD COLUMN row_h2 INTEGER;
                """)
        try db.execute(
            sql: SecretDigest.sqliteKeptDigest(
                table: "session_secret_digests", source: "agent_coding_session_secrets"))
        let rows = try Row.fetchAll(
            db, sql: "SELECT id, session_id, device_id, ephemeral_public_key FROM agent_coding_session_secrets")
        let update = try db.makeStatement(
            sql: "UPDATE agent_coding_session_secrets SET row_h1 = ?, row_h2 = ? WHERE id = ?")
        for row in rows {
            let hash = SecretDigest.rowHash(sessionID: row[1], deviceID: row[2], ephemeralPublicKey: row[3])
            try update.execute(arguments: [hash.0, hash.1, row[0] as Int64])
        }
    }
}
