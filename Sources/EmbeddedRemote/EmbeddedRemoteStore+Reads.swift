import EnvelopeDigest
import Foundation
import GRDB
import RemoteContract
import SyncModel

// Reading and deleting what a push wrote: envelope listings and digests, deletes, and the
// versioned reads a pull pages through.
extension EmbeddedRemoteStore {
    // MARK: - Envelope pairs and deletes

    public func listEnvelopePairs() async throws -> [EnvelopePair] {
        return try await read("listing envelope pairs", gate: .certified, else: []) { db in
            return try Row.fetchAll(
                db,
                sql: """
                    SELECT s.session_id, s.device_id FROM agent_coding_session_secrets s
                    JOIN agent_coding_sessions c ON c.id = s.session_id WHERE c.user_id = ? ORDER BY s.session_id, s.device_id
                    """, arguments: [self.me]
            ).map { try EnvelopePair(json: Self.json($0)) }
        }
    }

    public func secretDigest(ownerDeviceID: UUID, buckets: Int) async throws -> [DigestBucket] {
        return try await read("computing the envelope digest") { db in
            _ = try self.acting(db, ownerDeviceID, trusted: true)
            guard SecretDigest.isValidBucketCount(buckets) else {
                throw Self.invalid("buckets must be a power of two from 1 to 65536")
            }
            var result: [Int: DigestBucket] = [:]
            let rows = try Row.fetchCursor(
                db,
                sql: """
                    SELECT d.session_id, d.pairs, d.h1, d.h2 FROM session_secret_digests d
                    JOIN agent_coding_sessions c ON c.id = d.session_id WHERE c.user_id = ? AND c.device_id = ? AND d.pairs > 0
                    """, arguments: [self.me, ownerDeviceID.canonical])
            while let row = try rows.next() {
                SecretDigest.add(
                    session: (row[0] as String).lowercased(), pairs: row[1], h1: row[2], h2: row[3], buckets: buckets,
                    to: &result)
            }
            return result.values.sorted { $0.bucket < $1.bucket }
        }
    }

    public func listEnvelopeKeys(sessions: Set<UUID>, atMost: Int?) async throws -> [EnvelopeKey] {
        let list = Self.jsonArray(sessions)
        return try await read("listing envelope keys", gate: .certified, else: []) { db in
            return try Row.fetchAll(
                db,
                sql: """
                    SELECT s.session_id, s.device_id, s.ephemeral_public_key FROM agent_coding_session_secrets s
                    JOIN agent_coding_sessions c ON c.id = s.session_id
                    WHERE c.user_id = ? AND s.session_id IN (SELECT value FROM json_each(?)) ORDER BY s.session_id, s.device_id
                    """, arguments: [self.me, list]
            ).map { try EnvelopeKey(json: Self.json($0)) }
        }
    }

    public func deleteEnvelopes(_ scope: EnvelopeScope) async throws -> Int? {
        switch scope {
        case .recipients(let recipients): try await deleteSecrets(column: "device_id", ids: recipients)
        case .sessions(let sessions): try await deleteSecrets(column: "session_id", ids: sessions)
        case .pairs(let pairs): try await deletePairs(pairs)
        }
    }

    func deleteSecrets(column: String, ids: Set<UUID>) async throws -> Int? {
        let list = Self.jsonArray(ids)
        return try await write("deleting envelopes") { db in
            // Only the envelopes of the calling desktop's sessions (the policy's USING).
            guard let caller = try self.callingDevice(db) else { return 0 }
            try db.execute(
                sql: """
                    DELETE FROM agent_coding_session_secrets WHERE \(column) IN (SELECT value FROM json_each(?))
                    AND session_id IN (SELECT id FROM agent_coding_sessions WHERE user_id = ? AND (device_id = ? OR ? = ?))
                    """, arguments: [list, self.me, caller, caller, Self.serviceRoleCaller])
            return db.changesCount
        }
    }

    func deletePairs(_ pairs: [EnvelopePair]) async throws -> Int? {
        return try await write("deleting envelopes") { db in
            guard let caller = try self.callingDevice(db) else { return 0 }
            let statement = try db.cachedStatement(
                sql: """
                    DELETE FROM agent_coding_session_secrets WHERE session_id = ? AND device_id = ?
                    AND session_id IN (SELECT id FROM agent_coding_sessions WHERE user_id = ? AND (device_id = ? OR ? = ?))
                    """)
            var deleted = 0
            for pair in pairs {
                try statement.execute(arguments: [
                    pair.sessionID.canonical, pair.deviceID.canonical, self.me, caller, caller, Self.serviceRoleCaller,
                ])
                deleted += db.changesCount
            }
            return deleted
        }
    }

    public func deleteRows(_ table: ContentTable, ids: Set<UUID>) async throws -> Int? {
        try await deleteOwned(Self.tableName(table), ids: ids)
    }

    /// The table of a content table.
    static func tableName(_ table: ContentTable) -> String {
        switch table {
        case .repositories: "repositories"
        case .sessions: "agent_coding_sessions"
        }
    }

    func deleteOwned(_ table: String, ids: Set<UUID>) async throws -> Int? {
        let list = Self.jsonArray(ids)
        return try await write("deleting \(table)") { db in
            // A device deletes only its own rows (the service role any of the user's).
            guard let caller = try self.credentialDevice(db) else { return 0 }
            try db.execute(
                sql: """
                    DELETE FROM \(table) WHERE id IN (SELECT value FROM json_each(?)) AND user_id = ?
                    AND (device_id = ? OR ? = ?)
                    """,
                arguments: [list, self.me, caller, caller, Self.serviceRoleCaller])
            return db.changesCount
        }
    }

    // MARK: - Reads

    public func fetchRepositories(after cursor: PullCursor?) async throws -> [Versioned<RepositoryRecord>] {
        try await fetchVersioned("repositories", after: cursor, decode: RepositoryRecord.init(json:))
    }

    func fetchVersioned<Record: Sendable & Hashable>(
        _ table: String, after cursor: PullCursor?, decode: @Sendable @escaping (ResponseRow) throws -> Record
    ) async throws -> [Versioned<Record>] {
        return try await read("reading \(table)", gate: .registered, else: []) { db in
            let rows: [Row]
            if let cursor {
                rows = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT * FROM \(table) WHERE user_id = ? AND (updated_at > ? OR (updated_at = ? AND id > ?)) ORDER BY updated_at, id
                        """, arguments: [self.me, cursor.updatedAt, cursor.updatedAt, cursor.id.canonical])
            } else {
                rows = try Row.fetchAll(
                    db, sql: "SELECT * FROM \(table) WHERE user_id = ? ORDER BY updated_at, id", arguments: [self.me])
            }
            return try rows.map { row in Versioned(record: try decode(Self.json(row)), updatedAt: row["updated_at"]) }
        }
    }

    public func listIDs(_ table: ContentTable, deviceID: UUID?) async throws -> Set<UUID> {
        try await listIDs(Self.tableName(table), deviceID: deviceID)
    }

    func listIDs(_ table: String, deviceID: UUID?) async throws -> Set<UUID> {
        return try await read("listing \(table)", gate: .registered, else: []) { db in
            let ids: [String]
            if let deviceID {
                ids = try String.fetchAll(
                    db, sql: "SELECT id FROM \(table) WHERE user_id = ? AND device_id = ?",
                    arguments: [self.me, deviceID.canonical])
            } else {
                ids = try String.fetchAll(db, sql: "SELECT id FROM \(table) WHERE user_id = ?", arguments: [self.me])
            }
            return Set(try ids.map(Self.uuid))
        }
    }
}
