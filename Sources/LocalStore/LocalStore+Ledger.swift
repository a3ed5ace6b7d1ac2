import Foundation
import GRDB
import SecretCrypto
import SyncModel

// The desktop's distribution ledger: which envelope each recipient got, under which key.
extension LocalStore {
    // MARK: - Distribution ledger

    /// Every ledger entry, or only those of these recipients (read through the recipient index).
    public func ledger(recipients: Set<UUID>? = nil) async throws -> [LedgerEntry] {
        try await mapErrors("reading ledger") {
            try await pool.read { db in
                // Columns by index: 100,000 rows at size L, where name lookups cost more than the rest.
                let filter = recipients == nil ? "" : " WHERE recipient_device_id IN (SELECT value FROM json_each(?))"
                return try Row.fetchAll(db, sql: """
                    SELECT session_id, recipient_device_id, recipient_key_fingerprint, sent_at, ephemeral_public_key FROM distribution_ledger
                    """ + filter, arguments: StatementArguments(recipients.map { [jsonArray($0)] } ?? [])).map { row in
                    LedgerEntry(sessionID: try row.uuid(0), recipientDeviceID: try row.uuid(1), recipientKeyFingerprint: row[2],
                                sentAt: row.date(3), ephemeralPublicKey: row[4])
                }
            }
        }
    }

    /// Records envelopes the remote accepted (replacing older entries for the same pairs).
    public func recordDistributions(_ entries: [LedgerEntry]) async throws {
        try await mapErrors("writing ledger") {
            try await pool.write { db in
                let statement = try db.cachedStatement(sql: """
                    INSERT INTO distribution_ledger (session_id, recipient_device_id, recipient_key_fingerprint, sent_at, ephemeral_public_key)
                    VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (session_id, recipient_device_id) DO UPDATE SET
                        recipient_key_fingerprint = excluded.recipient_key_fingerprint, sent_at = excluded.sent_at,
                        ephemeral_public_key = excluded.ephemeral_public_key
                    """)
                for entry in entries {
                    try statement.execute(arguments: [entry.sessionID.canonical, entry.recipientDeviceID.canonical, entry.recipientKeyFingerprint,
                                                      entry.sentAt.epoch, entry.ephemeralPublicKey])
                }
            }
        }
    }

    /// Fills in the `ephemeral_public_key` of entries written before the ledger recorded it, from
    /// what the remote holds for those pairs; entries that have one are left alone.
    public func adoptLedgerKeys(_ keys: [(sessionID: UUID, recipientDeviceID: UUID, ephemeralPublicKey: String)]) async throws {
        try await mapErrors("writing ledger") {
            try await pool.write { db in
                let statement = try db.cachedStatement(sql: """
                    UPDATE distribution_ledger SET ephemeral_public_key = ?
                    WHERE session_id = ? AND recipient_device_id = ? AND ephemeral_public_key IS NULL
                    """)
                for key in keys {
                    try statement.execute(arguments: [key.ephemeralPublicKey, key.sessionID.canonical, key.recipientDeviceID.canonical])
                }
            }
        }
    }

    /// Forgets every entry for these recipients (their rows were deleted remotely).
    @discardableResult
    public func deleteLedgerEntries(recipients: Set<UUID>) async throws -> Int {
        try await mapErrors("deleting ledger entries") {
            try await pool.write { db in
                try db.execute(sql: "DELETE FROM distribution_ledger WHERE recipient_device_id IN (SELECT value FROM json_each(?))", arguments: [jsonArray(recipients)])
                return db.changesCount
            }
        }
    }

    /// Forgets the entries for these (session, recipient) pairs.
    @discardableResult
    public func deleteLedgerEntries(pairs: [(sessionID: UUID, recipientDeviceID: UUID)]) async throws -> Int {
        try await mapErrors("deleting ledger entries") {
            try await pool.write { db in
                let statement = try db.cachedStatement(sql: "DELETE FROM distribution_ledger WHERE session_id = ? AND recipient_device_id = ?")
                var deleted = 0
                for pair in pairs {
                    try statement.execute(arguments: [pair.sessionID.canonical, pair.recipientDeviceID.canonical])
                    deleted += db.changesCount
                }
                return deleted
            }
        }
    }
}
