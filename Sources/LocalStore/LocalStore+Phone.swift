import Foundation
import GRDB
import SecretCrypto
import SyncModel

// What only a phone keeps: the envelopes addressed to it, as received.
extension LocalStore {
    // MARK: - Phone: received envelopes

    /// Stores envelopes addressed to this device, as received, in one transaction.
    ///
    /// - Throws: ``LocalStoreError`` `.foreignKeyViolation` for an unknown session.
    public func upsertReceivedEnvelopes(_ envelopes: [ReceivedEnvelope]) async throws {
        try await mapErrors("saving envelopes") {
            try await pool.write { db in
                let statement = try db.cachedStatement(sql: """
                    INSERT INTO received_envelopes (session_id, ephemeral_public_key, encrypted_secret, fetched_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (session_id) DO UPDATE SET ephemeral_public_key = excluded.ephemeral_public_key,
                        encrypted_secret = excluded.encrypted_secret, fetched_at = excluded.fetched_at
                    """)
                for item in envelopes {
                    try statement.execute(arguments: [item.sessionID.canonical, item.envelope.ephemeralPublicKey, item.envelope.encryptedSecret, item.fetchedAt.epoch])
                }
            }
        }
    }

    /// All received envelopes.
    public func receivedEnvelopes() async throws -> [ReceivedEnvelope] {
        try await mapErrors("reading envelopes") {
            try await pool.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM received_envelopes ORDER BY session_id").map { row in
                    ReceivedEnvelope(
                        sessionID: try row.uuid("session_id"),
                        envelope: SecretEnvelope(ephemeralPublicKey: row["ephemeral_public_key"], encryptedSecret: row["encrypted_secret"]),
                        fetchedAt: row.date("fetched_at")
                    )
                }
            }
        }
    }

    /// Deletes received envelopes whose session is not in `sessionIDs`.
    @discardableResult
    public func deleteReceivedEnvelopes(notIn sessionIDs: Set<UUID>) async throws -> Int {
        try await mapErrors("deleting envelopes") {
            try await pool.write { db in
                try db.execute(sql: "DELETE FROM received_envelopes WHERE session_id NOT IN (SELECT value FROM json_each(?))", arguments: [jsonArray(sessionIDs)])
                return db.changesCount
            }
        }
    }

    /// Opens a received envelope with the device key.
    ///
    /// - Throws: ``LocalStoreError`` `.notFound` or `.secretUnreadable`.
    public func openReceivedSecret(sessionID: UUID, using key: X25519PrivateKey? = nil) async throws -> SessionSecret {
        let envelope = try await mapErrors("reading envelope") {
            try await pool.read { db in
                try Row.fetchOne(db, sql: "SELECT ephemeral_public_key, encrypted_secret FROM received_envelopes WHERE session_id = ?", arguments: [sessionID.canonical])
                    .map { SecretEnvelope(ephemeralPublicKey: $0["ephemeral_public_key"], encryptedSecret: $0["encrypted_secret"]) }
            }
        }
        guard let envelope else { throw LocalStoreError(.notFound, "no envelope for session \(sessionID.canonical)") }
        let deviceKey: X25519PrivateKey
        if let key { deviceKey = key } else { deviceKey = try await self.deviceKey() }
        do {
            return try envelope.open(sessionID: SessionID(sessionID), using: deviceKey)
        } catch {
            throw LocalStoreError(.secretUnreadable, "the envelope for session \(sessionID.canonical) cannot be opened with this device's key")
        }
    }
}
