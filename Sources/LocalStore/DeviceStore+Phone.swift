import Foundation
import GRDB
import SecretCrypto
import SyncModel

// What only a phone keeps: the envelopes addressed to it, as received.
extension DeviceStore {
    // MARK: - Phone: received envelopes

    /// Stores envelopes addressed to this device, as received, in one transaction.
    ///
    /// - Throws: ``LocalStoreError`` `.foreignKeyViolation` for an unknown session.
    public func upsertReceivedEnvelopes(_ envelopes: [ReceivedEnvelope]) async throws {
        let arguments = Self.receivedArguments(envelopes)
        try await mapErrors("saving envelopes") {
            try await bulkWrite { db in try Self.storeReceived(arguments, in: db) }
        }
    }

    /// The values ``storeReceived(_:in:)`` binds for each envelope, made before the writer's turn.
    static func receivedArguments(_ envelopes: [ReceivedEnvelope]) -> [StatementArguments] {
        envelopes.map { item in
            [
                item.sessionID.canonical, item.envelope.ephemeralPublicKey, item.envelope.encryptedSecret,
                item.fetchedAt.epoch, item.senderDeviceID?.canonical, item.senderPublicKey?.base64,
                Int64(item.generation), item.authenticated,
            ]
        }
    }

    /// Stores envelopes (their ``receivedArguments(_:)``) in a transaction of the caller's.
    static func storeReceived(_ arguments: [StatementArguments], in db: Database) throws {
        let statement = try db.cachedStatement(
            sql: """
                INSERT INTO received_envelopes (session_id, ephemeral_public_key, encrypted_secret, fetched_at,
                                                sender_device_id, sender_public_key, generation, authenticated)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (session_id) DO UPDATE SET ephemeral_public_key = excluded.ephemeral_public_key,
                    encrypted_secret = excluded.encrypted_secret, fetched_at = excluded.fetched_at,
                    sender_device_id = excluded.sender_device_id, sender_public_key = excluded.sender_public_key,
                    generation = excluded.generation, authenticated = excluded.authenticated
                """)
        for values in arguments { try statement.execute(arguments: values) }
    }

    /// The sessions this phone holds an envelope for, without reading the envelopes.
    public func receivedEnvelopeSessionIDs() async throws -> Set<UUID> {
        try await ids(in: "received_envelopes", column: "session_id")
    }

    /// All received envelopes.
    public func receivedEnvelopes() async throws -> [ReceivedEnvelope] {
        try await mapErrors("reading envelopes") {
            try await pool.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM received_envelopes ORDER BY session_id").map { row in
                    try Self.receivedEnvelope(row)
                }
            }
        }
    }

    /// Deletes received envelopes whose session is not in `sessionIDs`.
    @discardableResult
    public func deleteReceivedEnvelopes(notIn sessionIDs: Set<UUID>) async throws -> Int {
        try await mapErrors("deleting envelopes") {
            try await pool.write { db in
                try db.execute(
                    sql: "DELETE FROM received_envelopes WHERE session_id NOT IN (SELECT value FROM json_each(?))",
                    arguments: [jsonArray(sessionIDs)])
                return db.changesCount
            }
        }
    }

    /// The high-water mark of every session this phone ever stored an envelope for, including
    /// sessions deleted since (the marks are never deleted and only rise).
    public func generationMarks() async throws -> [UUID: GenerationMark] {
        try await mapErrors("reading generation marks") {
            try await pool.read { db in
                var marks: [UUID: GenerationMark] = [:]
                for row in try Row.fetchAll(
                    db,
                    sql: "SELECT session_id, generation, authenticated, sender_device_id FROM session_generation_marks")
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

    static func receivedEnvelope(_ row: Row) throws -> ReceivedEnvelope {
        ReceivedEnvelope(
            sessionID: try row.uuid("session_id"),
            envelope: SecretEnvelope(
                ephemeralPublicKey: row["ephemeral_public_key"], encryptedSecret: row["encrypted_secret"]),
            fetchedAt: row.date("fetched_at"),
            senderDeviceID: try row.optionalUUID("sender_device_id"),
            senderPublicKey: (row["sender_public_key"] as String?).flatMap { try? X25519PublicKey(base64: $0) },
            generation: UInt32(clamping: row["generation"] as Int64),
            authenticated: row["authenticated"]
        )
    }

    /// Opens a received envelope with the device key: its secret, sender, generation and
    /// whether the sender was authenticated. A version-2 envelope is checked again against the
    /// sender key it was verified with on receipt.
    ///
    /// - Parameters:
    ///   - sessionID: The session.
    ///   - generation: An earlier generation kept after a rotation; `nil` for the current one.
    ///   - key: The device key, when the caller already loaded it; otherwise it is loaded.
    /// - Throws: ``LocalStoreError`` `.notFound` or `.secretUnreadable`.
    public func openReceived(
        sessionID: UUID, generation: UInt32? = nil, using key: X25519PrivateKey? = nil
    ) async throws -> OpenedSecret {
        let received = try await receivedEnvelope(sessionID: sessionID, generation: generation)
        let deviceKey: X25519PrivateKey
        if let key { deviceKey = key } else { deviceKey = try await self.deviceKey() }
        let identity = try await requireIdentity()
        let opened: OpenedSecret
        do {
            opened = try received.envelope.open(
                sessionID: SessionID(sessionID), recipientDeviceID: identity.id, using: deviceKey
            ) { sender in
                sender == received.senderDeviceID ? received.senderPublicKey : nil
            }
        } catch {
            throw LocalStoreError(
                .secretUnreadable,
                "the envelope for session \(sessionID.canonical) cannot be opened with this device's key")
        }
        // The stored generation is the one truth (a version-1 envelope says 1 whatever it is);
        // a version-2 header that disagrees with it is not the envelope that was stored.
        guard !opened.authenticated || opened.generation == received.generation else {
            throw LocalStoreError(
                .corruptRow, "the envelope for session \(sessionID.canonical) is not of the generation stored with it")
        }
        return opened.withGeneration(received.generation)
    }

    /// Opens a received envelope's secret with the device key.
    ///
    /// - Throws: ``LocalStoreError`` `.notFound` or `.secretUnreadable`.
    public func openReceivedSecret(sessionID: UUID, using key: X25519PrivateKey? = nil) async throws -> SessionSecret {
        try await openReceived(sessionID: sessionID, using: key).secret
    }
}
