import EnvelopeDigest
import Foundation
import GRDB
import SecretCrypto
import SyncModel

// What a phone keeps to pull only what changed (docs/sync.md, "The pull feed"): the envelope
// rows the remote addresses to it, as last read, and the digests it compares with the remote's.
extension DeviceStore {
    // MARK: - Envelope rows as the remote holds them

    /// Records envelope rows as the remote holds them (addressed to this device), replacing what
    /// was recorded for their sessions; with `sessions`, the rows recorded for those sessions
    /// that are not among `rows` are deleted too (the remote no longer has them). With
    /// `storing`, those envelopes (opened and checked, each one of `rows` or one recorded
    /// before) are stored as ``upsertReceivedEnvelopes(_:)`` stores them, and their rows keep only
    /// their hash. One transaction.
    ///
    /// A recorded row that is not the envelope stored for its session stays whole:
    /// ``pendingEnvelopeRows(after:limit:)`` gives it back until it is stored.
    public func recordEnvelopeRows(
        _ rows: [EnvelopeRecord], replacingSessions sessions: Set<UUID>? = nil, storing: [ReceivedEnvelope] = [],
        settling refused: [EnvelopeRecord] = []
    ) async throws {
        let me = try await requireIdentity().id.canonical
        // The values each statement binds are made before the writer's turn (hashing, formatting):
        // the store has one writer, and a pull's other stages run meanwhile. A row refused for
        // good (its sender revoked) is settled like a stored one: checked again only if it changes.
        let stored = Dictionary(
            storing.map { ($0.sessionID, $0.envelope) }
                + refused.map {
                    (
                        $0.sessionID,
                        SecretEnvelope(ephemeralPublicKey: $0.ephemeralPublicKey, encryptedSecret: $0.encryptedSecret)
                    )
                }, uniquingKeysWith: { _, last in last })
        let records = rows.map { row -> (session: UUID, arguments: StatementArguments, whole: Bool) in
            let session = row.sessionID.canonical
            let hash = SecretDigest.rowHash(
                sessionID: session, deviceID: row.deviceID.canonical, ephemeralPublicKey: row.ephemeralPublicKey)
            // A row that changed is recorded whole (again); one being stored, only its hash.
            let whole =
                stored[row.sessionID]
                != SecretEnvelope(ephemeralPublicKey: row.ephemeralPublicKey, encryptedSecret: row.encryptedSecret)
            return (
                row.sessionID,
                [session, hash.0, hash.1, whole ? row.ephemeralPublicKey : nil, whole ? row.encryptedSecret : nil],
                whole
            )
        }
        let received = Self.receivedArguments(storing)
        let removed = sessions.map { jsonArray($0.subtracting(rows.map(\.sessionID))) }
        try await mapErrors("recording envelope rows") {
            try await pool.write { db in
                if let removed, let sessions, !sessions.isEmpty {
                    try db.execute(
                        sql: "DELETE FROM envelope_rows WHERE session_id IN (SELECT value FROM json_each(?))",
                        arguments: [removed])
                }
                let record = try db.cachedStatement(
                    sql: """
                        INSERT INTO envelope_rows (session_id, row_h1, row_h2, ephemeral_public_key, encrypted_secret)
                        VALUES (?, ?, ?, ?, ?)
                        ON CONFLICT (session_id) DO UPDATE SET row_h1 = excluded.row_h1, row_h2 = excluded.row_h2,
                            ephemeral_public_key = excluded.ephemeral_public_key, encrypted_secret = excluded.encrypted_secret,
                            refusal_code = NULL, refusal_message = NULL
                        WHERE row_h1 IS NOT excluded.row_h1 OR row_h2 IS NOT excluded.row_h2
                        """)
                // Sessions whose row this call wrote with its hash only: nothing to settle.
                var settled = Set<UUID>()
                for item in records {
                    try record.execute(arguments: item.arguments)
                    if db.changesCount > 0 {
                        if item.whole { settled.remove(item.session) } else { settled.insert(item.session) }
                    }
                }
                guard !storing.isEmpty || !refused.isEmpty else { return }
                if !storing.isEmpty { try Self.storeReceived(received, in: db) }
                // A row recorded before, whole, and read again unchanged (so not written above)
                // keeps only its hash now that its envelope is stored.
                let settle = try db.cachedStatement(
                    sql: """
                        UPDATE envelope_rows SET ephemeral_public_key = NULL, encrypted_secret = NULL,
                            refusal_code = NULL, refusal_message = NULL
                        WHERE session_id = ? AND row_h1 = ? AND row_h2 = ? AND encrypted_secret IS NOT NULL
                        """)
                let settling =
                    storing.map { ($0.sessionID, $0.envelope.ephemeralPublicKey) }
                    + refused.map { ($0.sessionID, $0.ephemeralPublicKey) }
                for (sessionID, ephemeral) in settling where !settled.contains(sessionID) {
                    let session = sessionID.canonical
                    let hash = SecretDigest.rowHash(sessionID: session, deviceID: me, ephemeralPublicKey: ephemeral)
                    try settle.execute(arguments: [session, hash.0, hash.1])
                }
            }
        }
    }

    /// Each row's hash by session, as `envelope_rows` records it (a later row of a session wins).
    func rowHashes(_ rows: [EnvelopeRecord]) async throws -> [UUID: (Int64, Int64)] {
        let me = try await requireIdentity().id.canonical
        return Dictionary(
            rows.map { row in
                (
                    row.sessionID,
                    SecretDigest.rowHash(
                        sessionID: row.sessionID.canonical, deviceID: me, ephemeralPublicKey: row.ephemeralPublicKey)
                )
            }, uniquingKeysWith: { _, last in last })
    }

    /// The sessions of `rows` whose row is recorded settled with the same hash: stored, or
    /// refused for good (a revoked sender's); a listing does not check them again.
    public func settledEnvelopeRows(_ rows: [EnvelopeRecord]) async throws -> Set<UUID> {
        guard !rows.isEmpty else { return [] }
        let hashes = try await rowHashes(rows)
        return try await mapErrors("reading envelope rows") {
            try await pool.read { db in
                var settled = Set<UUID>()
                for row in try Row.fetchAll(
                    db,
                    sql: """
                        SELECT session_id, row_h1, row_h2 FROM envelope_rows
                        WHERE encrypted_secret IS NULL AND session_id IN (SELECT value FROM json_each(?))
                        """, arguments: [jsonArray(Set(hashes.keys))])
                {
                    let session = try row.uuid(0)
                    if let hash = hashes[session], hash.0 == row[1] as Int64, hash.1 == row[2] as Int64 {
                        settled.insert(session)
                    }
                }
                return settled
            }
        }
    }

    /// Deletes the recorded envelope rows of sessions not in `sessions` (after a listing of every
    /// row). Returns how many were deleted.
    @discardableResult
    public func deleteEnvelopeRows(notIn sessions: Set<UUID>) async throws -> Int {
        try await mapErrors("deleting envelope rows") {
            try await pool.write { db in
                try db.execute(
                    sql: "DELETE FROM envelope_rows WHERE session_id NOT IN (SELECT value FROM json_each(?))",
                    arguments: [jsonArray(sessions)])
                return db.changesCount
            }
        }
    }

    /// The digest of every recorded envelope row, as the remote's `envelope_rows`: one row read
    /// (triggers keep it).
    public func envelopeRowsDigest() async throws -> RowSetDigest {
        try await mapErrors("reading the envelope digest") {
            try await pool.read { db in
                guard let row = try Row.fetchOne(db, sql: "SELECT pairs, h1, h2 FROM envelope_rows_digest") else {
                    return RowSetDigest()
                }
                return RowSetDigest(count: row[0], h1: row[1], h2: row[2])
            }
        }
    }

    /// The digest of the recorded envelope rows by bucket of session (`DigestBucket`), as the
    /// remote's recipient digest: one entry per non-empty bucket, ordered by bucket.
    public func envelopeRowsDigest(buckets: Int) async throws -> [DigestBucket] {
        try await mapErrors("reading the envelope digest") {
            try await pool.read { db in
                var result: [Int: DigestBucket] = [:]
                let rows = try Row.fetchCursor(db, sql: "SELECT session_id, row_h1, row_h2 FROM envelope_rows")
                while let row = try rows.next() {
                    SecretDigest.add(
                        session: try row.uuid(0).canonical, pairs: 1, h1: row[1], h2: row[2], buckets: buckets,
                        to: &result)
                }
                return result.values.sorted { $0.bucket < $1.bucket }
            }
        }
    }

    /// The sessions of recorded envelope rows, and of sessions held, that fall in `chosen` of
    /// `buckets` buckets: every session whose envelope row the remote may hold in those buckets.
    public func sessionsForEnvelopeRows(inBuckets chosen: Set<Int>, of buckets: Int) async throws -> Set<UUID> {
        try await mapErrors("reading sessions") {
            try await pool.read { db in
                var result = Set<UUID>()
                let rows = try Row.fetchCursor(
                    db, sql: "SELECT session_id FROM envelope_rows UNION SELECT id FROM sessions")
                while let row = try rows.next() {
                    let session = try row.uuid(0)
                    if chosen.contains(SecretDigest.bucket(of: session, buckets: buckets)) { result.insert(session) }
                }
                return result
            }
        }
    }

    /// Up to `limit` recorded envelope rows, after session `after` in session order, that are not
    /// the envelope stored for their session: what a pull must open and check. A row stays
    /// pending while it is refused, does not open, or its session is not here.
    public func pendingEnvelopeRows(after: UUID?, limit: Int) async throws -> [EnvelopeRecord] {
        let me = try await requireIdentity().id
        return try await mapErrors("reading envelope rows") {
            try await pool.read { db in
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT session_id, ephemeral_public_key, encrypted_secret FROM envelope_rows
                        WHERE encrypted_secret IS NOT NULL AND session_id > ? ORDER BY session_id LIMIT ?
                        """, arguments: [after?.canonical ?? "", limit]
                ).map { row in
                    EnvelopeRecord(
                        sessionID: try row.uuid(0), deviceID: me, ephemeralPublicKey: row[1], encryptedSecret: row[2])
                }
            }
        }
    }

    /// The received envelopes of these sessions, by session.
    public func receivedEnvelopes(sessions: Set<UUID>) async throws -> [UUID: ReceivedEnvelope] {
        try await mapErrors("reading envelopes") {
            try await pool.read { db in
                var result: [UUID: ReceivedEnvelope] = [:]
                for row in try Row.fetchAll(
                    db,
                    sql: "SELECT * FROM received_envelopes WHERE session_id IN (SELECT value FROM json_each(?))",
                    arguments: [jsonArray(sessions)])
                {
                    let envelope = try Self.receivedEnvelope(row)
                    result[envelope.sessionID] = envelope
                }
                return result
            }
        }
    }

    /// Deletes the received envelopes whose session has no recorded envelope row: the remote no
    /// longer addresses one to this device (each stays readable in the history). Returns how many.
    @discardableResult
    public func deleteReceivedEnvelopesWithoutRows() async throws -> Int {
        try await mapErrors("deleting envelopes") {
            try await pool.write { db in
                try db.execute(
                    sql: """
                        DELETE FROM received_envelopes WHERE session_id NOT IN (SELECT session_id FROM envelope_rows)
                        """)
                return db.changesCount
            }
        }
    }

    /// Forgets every secret the remote addressed to this device: the envelope rows and the
    /// received envelopes, as a pull does when the remote no longer addresses a session here (the
    /// history stays, as it does then). What a device does once the remote says it was revoked.
    /// Returns how many received envelopes went.
    @discardableResult
    public func forgetReceivedEnvelopes() async throws -> Int {
        try await mapErrors("deleting envelopes") {
            try await pool.write { db in
                try db.execute(sql: "DELETE FROM envelope_rows")
                try db.execute(sql: "DELETE FROM received_envelopes")
                return db.changesCount
            }
        }
    }

    /// The device that owns each of these sessions (those held), by session id.
    public func sessionOwners(of sessions: Set<UUID>) async throws -> [UUID: UUID] {
        try await mapErrors("reading sessions") {
            try await pool.read { db in
                var result: [UUID: UUID] = [:]
                let rows = try Row.fetchCursor(
                    db, sql: "SELECT id, device_id FROM sessions WHERE id IN (SELECT value FROM json_each(?))",
                    arguments: [jsonArray(sessions)])
                while let row = try rows.next() { result[try row.uuid(0)] = try row.uuid(1) }
                return result
            }
        }
    }

    /// The generation marks of these sessions (``generationMarks()``), by session.
    public func generationMarks(of sessions: Set<UUID>) async throws -> [UUID: GenerationMark] {
        try await mapErrors("reading generation marks") {
            try await pool.read { db in
                var marks: [UUID: GenerationMark] = [:]
                for row in try Row.fetchAll(
                    db,
                    sql: """
                        SELECT session_id, generation, authenticated, sender_device_id FROM session_generation_marks
                        WHERE session_id IN (SELECT value FROM json_each(?))
                        """, arguments: [jsonArray(sessions)])
                {
                    let session = try row.uuid("session_id")
                    marks[session] = GenerationMark(
                        sessionID: session, generation: UInt32(clamping: row["generation"] as Int64),
                        authenticated: row["authenticated"], senderDeviceID: try row.optionalUUID("sender_device_id"))
                }
                return marks
            }
        }
    }

    /// The sessions held here that have no received envelope.
    public func sessionsWithoutReceivedEnvelope() async throws -> Set<UUID> {
        try await mapErrors("reading sessions") {
            try await pool.read { db in
                var result = Set<UUID>()
                let rows = try Row.fetchCursor(
                    db, sql: "SELECT id FROM sessions WHERE id NOT IN (SELECT session_id FROM received_envelopes)")
                while let row = try rows.next() { result.insert(try row.uuid(0)) }
                return result
            }
        }
    }

    /// How many received envelopes these devices sealed.
    public func receivedEnvelopeCount(sentBy senders: Set<UUID>) async throws -> Int {
        guard !senders.isEmpty else { return 0 }
        return try await mapErrors("reading envelopes") {
            try await pool.read { db in
                try Int.fetchOne(
                    db,
                    sql: """
                        SELECT count(*) FROM received_envelopes WHERE sender_device_id IN (SELECT value FROM json_each(?))
                        """, arguments: [jsonArray(senders)]) ?? 0
            }
        }
    }

    /// The digest of every repository id here (`RowSetDigest`), as the remote's `repository_ids`.
    public func repositoryIDsDigest() async throws -> RowSetDigest {
        try await idDigest("repositories")
    }

    /// The digest of every session id here, as the remote's `session_ids`.
    public func sessionIDsDigest() async throws -> RowSetDigest {
        try await idDigest("sessions")
    }

    /// A table's kept id digest (one row), or, if it does not count every row (a row written
    /// without its hash), the digest computed from every id.
    func idDigest(_ table: String) async throws -> RowSetDigest {
        let kept = try await mapErrors("reading \(table)") {
            try await pool.read { db -> RowSetDigest? in
                guard
                    let row = try Row.fetchOne(
                        db, sql: "SELECT pairs, h1, h2 FROM id_digests WHERE table_name = ?", arguments: [table]),
                    try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table)") == row[0]
                else { return nil }
                return RowSetDigest(count: row[0], h1: row[1], h2: row[2])
            }
        }
        if let kept { return kept }
        return SecretDigest.digest(ofIDs: try await ids(in: table))
    }
}
