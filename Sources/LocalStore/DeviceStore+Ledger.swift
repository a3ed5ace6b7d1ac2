import EnvelopeDigest
import Foundation
import GRDB
import SecretCrypto
import SyncModel

// The desktop's distribution ledger: which envelope each recipient got, under which key.
extension DeviceStore {
    // MARK: - Distribution ledger

    /// Every ledger entry, or only those of these recipients (read through the recipient index),
    /// or only those of these sessions (through the primary key).
    public func ledger(recipients: Set<UUID>? = nil, sessions: Set<UUID>? = nil) async throws -> [LedgerEntry] {
        try await mapErrors("reading ledger") {
            try await pool.read { db in
                var filters: [String] = []
                var arguments = StatementArguments()
                if let recipients {
                    filters.append("recipient_device_id IN (SELECT value FROM json_each(?))")
                    arguments += [jsonArray(recipients)]
                }
                if let sessions {
                    filters.append("session_id IN (SELECT value FROM json_each(?))")
                    arguments += [jsonArray(sessions)]
                }
                // Columns by index: 100,000 rows at size L, where name lookups cost more than the rest.
                return try Row.fetchAll(
                    db,
                    sql: """
                        SELECT session_id, recipient_device_id, recipient_key_fingerprint, sent_at, ephemeral_public_key FROM distribution_ledger
                        """ + (filters.isEmpty ? "" : " WHERE " + filters.joined(separator: " AND ")),
                    arguments: arguments
                ).map { row in
                    LedgerEntry(
                        sessionID: try row.uuid(0), recipientDeviceID: try row.uuid(1), recipientKeyFingerprint: row[2],
                        sentAt: row.date(3), ephemeralPublicKey: row[4])
                }
            }
        }
    }

    /// The envelope digest (sync.md, "Reconciliation that scales") of the ledger entries of this
    /// desktop's sessions, by bucket, from the per-session digests the ledger's triggers keep:
    /// one row per session is read, no entry is hashed. Entries without a recorded
    /// `ephemeral_public_key` are not in it; ``sessionsWithUnhashedLedgerEntries()`` names their sessions.
    public func ledgerDigest(buckets: Int) async throws -> [Int: DigestBucket] {
        try await mapErrors("reading the ledger digest") {
            try await pool.read { db in
                var result: [Int: DigestBucket] = [:]
                let rows = try Row.fetchCursor(
                    db,
                    sql: """
                        SELECT d.session_id, d.pairs, d.h1, d.h2 FROM ledger_digests d JOIN own_session_secrets o ON o.session_id = d.session_id
                        WHERE d.pairs > 0
                        """)
                while let row = try rows.next() {
                    SecretDigest.add(
                        session: row[0], pairs: row[1], h1: row[2], h2: row[3], buckets: buckets, to: &result)
                }
                return result
            }
        }
    }

    /// The sessions (of this desktop) with ledger entries that recorded no envelope key, written
    /// before the ledger kept it: the digest cannot cover them, so their buckets are listed.
    public func sessionsWithUnhashedLedgerEntries() async throws -> Set<UUID> {
        try await mapErrors("reading ledger") {
            try await pool.read { db in
                Set(
                    try Row.fetchAll(
                        db,
                        sql: """
                            SELECT DISTINCT l.session_id FROM distribution_ledger l JOIN own_session_secrets o ON o.session_id = l.session_id
                            WHERE l.row_h1 IS NULL
                            """
                    ).map { try $0.uuid(0) })
            }
        }
    }

    /// How many of this desktop's sessions each (recipient, key fingerprint) has a ledger entry
    /// for: a recipient whose current fingerprint counts every session needs nothing sealed.
    /// Read from the counts the ledger's triggers keep, without reading the entries.
    public func ledgerCoverage() async throws -> [LedgerCoverage] {
        try await mapErrors("reading ledger") {
            try await pool.read { db in
                try Row.fetchAll(
                    db, sql: "SELECT recipient_device_id, recipient_key_fingerprint, sessions FROM ledger_coverage"
                )
                .map {
                    LedgerCoverage(recipientDeviceID: try $0.uuid(0), recipientKeyFingerprint: $0[1], sessions: $0[2])
                }
            }
        }
    }

    /// Records envelopes the remote accepted (replacing older entries for the same pairs).
    public func recordDistributions(_ entries: [LedgerEntry]) async throws {
        try await mapErrors("writing ledger") {
            try await pool.write { db in
                let statement = try db.cachedStatement(
                    sql: """
                        INSERT INTO distribution_ledger (session_id, recipient_device_id, recipient_key_fingerprint, sent_at, ephemeral_public_key,
                                                         row_h1, row_h2)
                        VALUES (?, ?, ?, ?, ?, ?, ?)
                        ON CONFLICT (session_id, recipient_device_id) DO UPDATE SET
                            recipient_key_fingerprint = excluded.recipient_key_fingerprint, sent_at = excluded.sent_at,
                            ephemeral_public_key = excluded.ephemeral_public_key, row_h1 = excluded.row_h1, row_h2 = excluded.row_h2
                        """)
                for entry in entries {
                    let session = entry.sessionID.canonical, device = entry.recipientDeviceID.canonical
                    let hash = entry.ephemeralPublicKey.map {
                        SecretDigest.rowHash(sessionID: session, deviceID: device, ephemeralPublicKey: $0)
                    }
                    try statement.execute(arguments: [
                        session, device, entry.recipientKeyFingerprint, entry.sentAt.epoch, entry.ephemeralPublicKey,
                        hash?.0, hash?.1,
                    ])
                }
            }
        }
    }

    /// Fills in the `ephemeral_public_key` of entries written before the ledger recorded it, from
    /// what the remote holds for those pairs; entries that have one are left alone.
    public func adoptLedgerKeys(
        _ keys: [(sessionID: UUID, recipientDeviceID: UUID, ephemeralPublicKey: String)]
    ) async throws {
        try await mapErrors("writing ledger") {
            try await pool.write { db in
                let statement = try db.cachedStatement(
                    sql: """
                        UPDATE distribution_ledger SET ephemeral_public_key = ?, row_h1 = ?, row_h2 = ?
                        WHERE session_id = ? AND recipient_device_id = ? AND ephemeral_public_key IS NULL
                        """)
                for key in keys {
                    let session = key.sessionID.canonical, device = key.recipientDeviceID.canonical
                    let hash = SecretDigest.rowHash(
                        sessionID: session, deviceID: device, ephemeralPublicKey: key.ephemeralPublicKey)
                    try statement.execute(arguments: [key.ephemeralPublicKey, hash.0, hash.1, session, device])
                }
            }
        }
    }

    /// Forgets every entry for these recipients (their rows were deleted remotely).
    @discardableResult
    public func deleteLedgerEntries(recipients: Set<UUID>) async throws -> Int {
        try await mapErrors("deleting ledger entries") {
            try await pool.write { db in
                try db.execute(
                    sql:
                        "DELETE FROM distribution_ledger WHERE recipient_device_id IN (SELECT value FROM json_each(?))",
                    arguments: [jsonArray(recipients)])
                return db.changesCount
            }
        }
    }

    /// Forgets the entries for these (session, recipient) pairs.
    @discardableResult
    public func deleteLedgerEntries(pairs: [(sessionID: UUID, recipientDeviceID: UUID)]) async throws -> Int {
        try await mapErrors("deleting ledger entries") {
            try await pool.write { db in
                let statement = try db.cachedStatement(
                    sql: "DELETE FROM distribution_ledger WHERE session_id = ? AND recipient_device_id = ?")
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
