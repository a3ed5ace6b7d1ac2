import EnvelopeDigest
import Foundation
import GRDB
import RemoteContract
import SyncModel

/// The pull feed on the embedded remote, with the migration's rules (`*_pull_feed.sql`): one
/// read, the device must be the caller's, the digests are computed as PostgreSQL computes them.
/// Also the paged listings a pull streams into its store.
extension EmbeddedRemoteStore: PullFeedRemote {
    /// Rows per page of the paged listings.
    static let pageRows = 1_000

    public func pullChanges(
        for deviceID: UUID, since cursor: ChangeCursor?, rowLimit: Int
    ) async throws
        -> PullChanges
    {
        let device = deviceID.canonical
        return try await read("reading the pull feed") { db in
            _ = try self.acting(db, deviceID, trusted: false)
            guard (0...5_000).contains(rowLimit) else { throw Self.invalid("row_limit must be from 0 to 5000") }
            // A device the log does not certify (one being paired) gets no envelopes or approvals.
            let certified = try self.callingDevice(db) != nil
            try self.requireOwn(db, table: "devices", id: deviceID, what: "device")
            let now = Self.now
            let since = cursor?.since
            /// The rows changed since the cursor, or `nil` when there are more than the limit.
            func changed(_ table: String) throws -> [Row]? {
                let rows = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT * FROM \(table) WHERE user_id = ? AND (? IS NULL OR updated_at > ?)
                        ORDER BY updated_at, id LIMIT ?
                        """, arguments: [self.me, since, since, rowLimit + 1])
                return rows.count > rowLimit ? nil : rows
            }
            let repositories = try changed("repositories").map { rows in
                try rows.map {
                    Versioned(record: try RepositoryRecord(json: Self.json($0)), updatedAt: $0["updated_at"])
                }
            }
            let sessions = try changed("agent_coding_sessions").map { rows in
                try rows.map { Versioned(record: try SessionRecord(json: Self.json($0)), updatedAt: $0["updated_at"]) }
            }
            let envelopes = try sessions.map { sessions in
                guard certified else { return [EnvelopeRecord]() }
                return try Self.envelopes(
                    db, user: self.me, device: device, Self.ofSessions,
                    [Self.jsonArray(Set(sessions.map(\.record.id)))])
            }
            func ids(_ table: String) throws -> RowSetDigest {
                SecretDigest.digest(
                    ofIDs: try String.fetchAll(
                        db, sql: "SELECT id FROM \(table) WHERE user_id = ?", arguments: [self.me]
                    )
                    .map(Self.uuid))
            }
            var envelopeRows = RowSetDigest()
            try Self.envelopeRowHashes(db, user: self.me, device: device) { _, hash in envelopeRows.add(hash) }
            let statements = try Self.statementsDigest(db, user: self.me)
            return PullChanges(
                cursor: ChangeCursor(since: now), repositories: repositories, sessions: sessions, envelopes: envelopes,
                repositoryIDs: try ids("repositories"), sessionIDs: try ids("agent_coding_sessions"),
                envelopeRows: envelopeRows,
                devices: try Self.changedDevices(db, user: self.me, since: since),
                statements: statements, trustLog: try self.trustLogHead(db),
                secretRequests: try Self.openRequests(db, user: self.me).filter { $0.requesterDeviceID == deviceID },
                approvals: certified
                    ? try Self.changed(db, .approval, user: self.me, since: since) { try ApprovalRequestRow(json: $0) }
                    : [])
        }
    }

    /// The envelopes addressed to `device` in the user's sessions whose `tail` (the rest of the
    /// `WHERE`, its order and limit) admits, with `arguments` for its parameters.
    static func envelopes(
        _ db: Database, user me: String, device: String, _ tail: String, _ arguments: StatementArguments
    ) throws -> [EnvelopeRecord] {
        try Row.fetchAll(
            db,
            sql: """
                SELECT s.session_id, s.device_id, s.ephemeral_public_key, s.encrypted_secret FROM agent_coding_session_secrets s
                JOIN agent_coding_sessions c ON c.id = s.session_id WHERE c.user_id = ? AND s.device_id = ? AND \(tail)
                """, arguments: StatementArguments([me, device]) + arguments
        ).map { try EnvelopeRecord(json: json($0)) }
    }

    /// The ``envelopes(_:user:device:_:_:)`` tail of the sessions a JSON array of ids names.
    static let ofSessions = "s.session_id IN (SELECT value FROM json_each(?)) ORDER BY s.session_id"

    /// Each envelope row addressed to `device` in the user's sessions: its session id and its row
    /// hash, what the feed's `envelope_rows` and the recipient digest fold.
    static func envelopeRowHashes(
        _ db: Database, user me: String, device: String, _ body: (String, (Int64, Int64)) throws -> Void
    ) throws {
        let rows = try Row.fetchCursor(
            db,
            sql: """
                SELECT s.session_id, s.ephemeral_public_key FROM agent_coding_session_secrets s
                JOIN agent_coding_sessions c ON c.id = s.session_id WHERE c.user_id = ? AND s.device_id = ?
                """, arguments: [me, device])
        while let row = try rows.next() {
            let session = try uuid(row[0]).canonical
            try body(session, SecretDigest.rowHash(sessionID: session, deviceID: device, ephemeralPublicKey: row[1]))
        }
    }

    /// The digest of the user's trust statements, `nil` without the trust tables.
    static func statementsDigest(_ db: Database, user me: String) throws -> String? {
        // As the migration computes it: MD5 (hex) of the identity key, "|", and every
        // certificate and revocation as kind:device_id:signature, sorted, joined by ",".
        guard try db.tableExists("user_identity_keys") else { return nil }
        let key = try String.fetchOne(
            db, sql: "SELECT public_key FROM user_identity_keys WHERE user_id = ?", arguments: [me])
        let text = (key ?? "") + "|" + (try statementLines(db, user: me, canonical: true)).joined(separator: ",")
        return MD5.hash(Array(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    public func recipientDigest(deviceID: UUID, buckets: Int) async throws -> [DigestBucket] {
        let device = deviceID.canonical
        return try await read("computing the recipient digest") { db in
            _ = try self.acting(db, deviceID, trusted: true)
            guard SecretDigest.isValidBucketCount(buckets) else {
                throw Self.invalid("buckets must be a power of two from 1 to 65536")
            }
            try self.requireOwn(db, table: "devices", id: deviceID, what: "device")
            var result: [Int: DigestBucket] = [:]
            try Self.envelopeRowHashes(db, user: self.me, device: device) { session, hash in
                SecretDigest.add(session: session, pairs: 1, h1: hash.0, h2: hash.1, buckets: buckets, to: &result)
            }
            return result.values.sorted { $0.bucket < $1.bucket }
        }
    }

    /// Every envelope a page at a time by session id, or those of `sessions` in one page.
    public func fetchEnvelopes(
        addressedTo deviceID: UUID, sessions: Set<UUID>?, pages page: @escaping PageHandler<EnvelopeRecord>
    ) async throws {
        if let sessions { return try await page(try await fetchEnvelopes(addressedTo: deviceID, of: sessions)) }
        var after = ""
        while true {
            let key = after
            let rows = try await read("reading envelopes", gate: .certified, else: []) { db in
                return try Self.envelopes(
                    db, user: self.me, device: deviceID.canonical, "s.session_id > ? ORDER BY s.session_id LIMIT ?",
                    [key, Self.pageRows])
            }
            if !rows.isEmpty { try await page(rows) }
            guard rows.count == Self.pageRows, let last = rows.last else { return }
            after = last.sessionID.canonical
        }
    }

    func fetchEnvelopes(addressedTo deviceID: UUID, of sessions: Set<UUID>) async throws -> [EnvelopeRecord] {
        let list = Self.jsonArray(sessions)
        return try await read("reading envelopes", gate: .certified, else: []) { db in
            return try Self.envelopes(db, user: self.me, device: deviceID.canonical, Self.ofSessions, [list])
        }
    }

    public func fetchSessions(
        after cursor: PullCursor?, pages page: @escaping PageHandler<Versioned<SessionRecord>>
    ) async throws {
        var after = cursor.map { ($0.updatedAt, $0.id.canonical) }
        while true {
            let key = after
            let rows = try await read("reading agent_coding_sessions", gate: .registered, else: []) { db in
                return try Row.fetchAll(
                    db,
                    sql: """
                        SELECT * FROM agent_coding_sessions WHERE user_id = ?
                        AND (? IS NULL OR updated_at > ? OR (updated_at = ? AND id > ?)) ORDER BY updated_at, id LIMIT ?
                        """, arguments: [self.me, key?.0, key?.0, key?.0, key?.1, Self.pageRows]
                ).map {
                    Versioned(record: try SessionRecord(json: Self.json($0)), updatedAt: $0["updated_at"] as String)
                }
            }
            if !rows.isEmpty { try await page(rows) }
            guard rows.count == Self.pageRows, let last = rows.last else { return }
            after = (last.updatedAt, last.record.id.canonical)
        }
    }
}
