import Foundation
import GRDB
import SecretCrypto
import SyncModel

// What only a desktop keeps: its sessions' own secrets, sealed at rest, and the change
// sequence and tombstones that tell a push what to send.
extension DeviceStore {
    // MARK: - Desktop: what an app calls

    /// Adds one of this desktop's repositories, or updates the one it already has at
    /// `localPath`: the user and device come from the store, so an app passes only what it
    /// knows of the checkout. The next push sends it.
    ///
    /// - Parameters:
    ///   - name: The name people see (a folder's name, say).
    ///   - localPath: The checkout's absolute path on this desktop; it identifies the repository.
    ///   - remoteURL: The `origin` URL, if any (credentials in it are removed before storing).
    ///   - defaultBranch: The default branch, if known.
    /// - Returns: The stored repository; keep its `id` to start sessions in it.
    /// - Throws: ``LocalStoreError`` `.identityMissing`, `.userMissing` (nobody signed in on this
    ///   store yet), `.wrongRole` (a phone's store).
    @discardableResult
    public func addRepository(
        name: String, localPath: String, remoteURL: String? = nil, defaultBranch: String? = nil
    ) async throws -> RepositoryRecord {
        let (identity, user) = try await requireDesktop()
        let existing = try await repositories().first { $0.deviceID == identity.id && $0.localPath == localPath }
        var record =
            existing ?? RepositoryRecord(userID: user, deviceID: identity.id, name: name, localPath: localPath)
        record.name = name
        if let remoteURL { record.remoteURL = RemoteURL.redacted(remoteURL) }
        if let defaultBranch { record.defaultBranch = defaultBranch }
        record.updatedAt = Date()
        try await upsertRepositories([record])
        return record
    }

    /// Starts a session in one of this desktop's repositories, with a fresh secret sealed to
    /// this device's key at rest. The next push sends the session and seals its secret to
    /// every device the user trusts.
    ///
    /// - Parameters:
    ///   - repositoryID: The repository, as ``addRepository(name:localPath:remoteURL:defaultBranch:)``
    ///     returned it.
    ///   - title: What the session is about, if the app has it.
    ///   - branch: The branch it works on.
    ///   - processID: The agent's process, if it has one.
    /// - Returns: The stored session; its `id` names it everywhere.
    /// - Throws: ``LocalStoreError`` `.notFound` (no such repository of this desktop),
    ///   `.identityMissing`, `.userMissing`, `.wrongRole`.
    @discardableResult
    public func startSession(
        repositoryID: UUID, title: String? = nil, branch: String? = nil, processID: Int? = nil
    ) async throws -> SessionRecord {
        let (identity, user) = try await requireDesktop()
        guard let repository = try await repositories().first(where: { $0.id == repositoryID }),
            repository.deviceID == identity.id
        else {
            throw LocalStoreError(
                .notFound, "this desktop has no repository \(repositoryID.canonical); add it with addRepository first")
        }
        return try await createSession(
            SessionRecord(
                userID: user, deviceID: identity.id, repositoryID: repository.id, title: title, sessionPID: processID,
                currentBranch: branch, workingDirectory: repository.localPath))
    }

    /// Marks one of this desktop's sessions ended; the next push sends the change (the secret
    /// stays, so its messages can still be read).
    ///
    /// - Returns: The session as stored.
    /// - Throws: ``LocalStoreError`` `.notFound`, `.wrongRole`, `.identityMissing`, `.userMissing`.
    @discardableResult
    public func endSession(_ sessionID: UUID, at date: Date = Date()) async throws -> SessionRecord {
        let (identity, _) = try await requireDesktop()
        guard var record = try await session(id: sessionID), record.deviceID == identity.id else {
            throw LocalStoreError(.notFound, "this desktop has no session \(sessionID.canonical)")
        }
        record.status = .ended
        record.sessionEndedAt = date
        record.updatedAt = date
        try await upsertSessions([record])
        return record
    }

    /// This store's identity and user, when it is a desktop's and someone signed in on it.
    func requireDesktop() async throws -> (DeviceIdentity, UUID) {
        let identity = try await requireIdentity()
        guard identity.role == .desktop else {
            throw LocalStoreError(
                .wrongRole, "this store is a phone's; repositories and sessions live on desktops")
        }
        guard let user = identity.userID else {
            throw LocalStoreError(.userMissing, "nobody has signed in on this store yet; sign in first")
        }
        return (identity, user)
    }

    // MARK: - Desktop: own sessions and their secrets

    /// Creates a session with a fresh secret, sealed to this device's own key, in one transaction.
    ///
    /// - Parameter session: The session row (its repository must exist).
    /// - Returns: The stored session.
    /// - Throws: ``LocalStoreError`` `.uniqueViolation` when the id exists, `.foreignKeyViolation`.
    @discardableResult
    public func createSession(_ session: SessionRecord) async throws -> SessionRecord {
        try await createSessions([session])
        return session
    }

    /// Creates many sessions, each with a fresh secret sealed to this device's own key, in one
    /// transaction.
    ///
    /// - Throws: ``LocalStoreError`` `.uniqueViolation` or `.foreignKeyViolation`; nothing is written then.
    public func createSessions(_ sessions: [SessionRecord]) async throws {
        let identity = try await requireIdentity()
        let sealed = try sessions.map {
            try SecretEnvelope.seal(SessionSecret(), for: identity.publicKey, sessionID: SessionID($0.id))
        }
        try await mapErrors("creating sessions") {
            try await pool.write { db in
                let sequence = try Self.nextChangeSequence(db)
                let insert = try db.cachedStatement(
                    sql:
                        "INSERT INTO sessions (\((SessionRecord.columns + ["change_seq"]).joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: SessionRecord.columns.count + 1).joined(separator: ", ")))"
                )
                let secret = try db.cachedStatement(
                    sql:
                        "INSERT INTO own_session_secrets (session_id, ephemeral_public_key, encrypted_secret) VALUES (?, ?, ?)"
                )
                for (session, envelope) in zip(sessions, sealed) {
                    try insert.execute(arguments: StatementArguments(session.values + [sequence]))
                    try secret.execute(arguments: [
                        session.id.canonical, envelope.ephemeralPublicKey, envelope.encryptedSecret,
                    ])
                }
            }
        }
    }

    /// The sealed secrets of this desktop's sessions, keyed by session id.
    public func ownSealedSecrets() async throws -> [UUID: OwnSealedSecret] {
        try await mapErrors("reading session secrets") {
            try await pool.read { db in
                Dictionary(
                    try Row.fetchAll(db, sql: "SELECT \(Self.ownSecretColumns) FROM own_session_secrets").map(
                        Self.ownSecret),
                    uniquingKeysWith: { first, _ in first })
            }
        }
    }

    /// The columns ``ownSecret(_:)`` reads, in its order.
    static let ownSecretColumns = "session_id, ephemeral_public_key, encrypted_secret, generation"

    /// A row of ``ownSecretColumns`` as (session id, sealed secret).
    static func ownSecret(_ row: Row) throws -> (UUID, OwnSealedSecret) {
        (
            try row.uuid(0),
            OwnSealedSecret(
                envelope: SecretEnvelope(ephemeralPublicKey: row[1], encryptedSecret: row[2]),
                generation: UInt32(clamping: row[3] as Int64))
        )
    }

    /// The ids of this desktop's sessions (those it holds its own secret for).
    public func ownSessionIDs() async throws -> Set<UUID> {
        try await ids(in: "own_session_secrets", column: "session_id")
    }

    /// One page of this desktop's sealed secrets in session id order: at most `limit`, those
    /// after `after` (from the start when `nil`). Pages keep a push's memory flat however many
    /// sessions the desktop has.
    public func ownSealedSecrets(after: UUID?, limit: Int) async throws -> [(sessionID: UUID, sealed: OwnSealedSecret)]
    {
        try await mapErrors("reading session secrets") {
            try await pool.read { db in
                try Row.fetchAll(
                    db,
                    sql:
                        "SELECT \(Self.ownSecretColumns) FROM own_session_secrets WHERE session_id > ? ORDER BY session_id LIMIT ?",
                    arguments: [after?.canonical ?? "", max(1, limit)]
                ).map(Self.ownSecret)
            }
        }
    }

    /// The sealed secrets of these sessions of this desktop (those it holds), keyed by session id.
    public func ownSealedSecrets(sessions: Set<UUID>) async throws -> [UUID: OwnSealedSecret] {
        try await mapErrors("reading session secrets") {
            try await pool.read { db in
                Dictionary(
                    try Row.fetchAll(
                        db,
                        sql: """
                            SELECT \(Self.ownSecretColumns) FROM own_session_secrets WHERE session_id IN (SELECT value FROM json_each(?))
                            """, arguments: [jsonArray(sessions)]
                    ).map(Self.ownSecret), uniquingKeysWith: { first, _ in first })
            }
        }
    }

    /// Opens a session's secret (desktop side) with the device key.
    ///
    /// - Parameters:
    ///   - sessionID: The session.
    ///   - generation: An earlier generation kept after a rotation; `nil` for the current one.
    ///   - key: The device key, when the caller already loaded it; otherwise it is loaded.
    /// - Throws: ``LocalStoreError`` `.notFound` or `.secretUnreadable`.
    public func openOwnSecret(
        sessionID: UUID, generation: UInt32? = nil, using key: X25519PrivateKey? = nil
    ) async throws -> SessionSecret {
        let envelope = try await ownSealedSecret(sessionID: sessionID, generation: generation).envelope
        let deviceKey: X25519PrivateKey
        if let key { deviceKey = key } else { deviceKey = try await self.deviceKey() }
        do {
            return try envelope.open(sessionID: SessionID(sessionID), using: deviceKey)
        } catch {
            throw LocalStoreError(
                .secretUnreadable,
                "the secret of session \(sessionID.canonical) cannot be opened with this device's key")
        }
    }

    // MARK: - Desktop: what a push must send

    /// Repositories written after change sequence `sequence`, a page at a time: at most `limit`
    /// in (change sequence, id) order, after `position` (from the start when `nil`).
    public func repositories(
        changedAfter sequence: Int64, from position: ChangePosition? = nil,
        limit: Int = .max
    ) async throws -> ChangedPage<RepositoryRecord> {
        try await changed(RepositoryRecord.self, after: sequence, from: position, limit: limit)
    }

    /// Sessions written after change sequence `sequence`, a page at a time: at most `limit` in
    /// (change sequence, id) order, after `position` (from the start when `nil`).
    public func sessions(
        changedAfter sequence: Int64, from position: ChangePosition? = nil,
        limit: Int = .max
    ) async throws -> ChangedPage<SessionRecord> {
        try await changed(SessionRecord.self, after: sequence, from: position, limit: limit)
    }

    /// How many repositories were written after change sequence `sequence`.
    public func repositoriesChangedCount(after sequence: Int64) async throws -> Int {
        try await changedCount(RepositoryRecord.self, after: sequence)
    }

    /// How many sessions were written after change sequence `sequence`.
    public func sessionsChangedCount(after sequence: Int64) async throws -> Int {
        try await changedCount(SessionRecord.self, after: sequence)
    }

    func changedCount<R: LocalRow>(_ type: R.Type, after sequence: Int64) async throws -> Int {
        try await mapErrors("reading \(R.table)") {
            try await pool.read { db in
                try Int.fetchOne(db, sql: "SELECT count(*) FROM \(R.table) WHERE change_seq > ?", arguments: [sequence])
                    ?? 0
            }
        }
    }

    /// Whether anything waits to be pushed: rows written after these change sequences, or
    /// remote deletions still to make. One cheap read, for a watch's quiet ticks.
    public func hasUnpushedChanges(repositoriesAfter: Int64, sessionsAfter: Int64) async throws -> Bool {
        try await mapErrors("reading the change sequence") {
            try await pool.read { db in
                try Bool.fetchOne(
                    db,
                    sql: """
                        SELECT EXISTS (SELECT 1 FROM repositories WHERE change_seq > ?) OR EXISTS (SELECT 1 FROM sessions WHERE change_seq > ?)
                            OR EXISTS (SELECT 1 FROM pending_remote_deletions)
                        """, arguments: [repositoriesAfter, sessionsAfter]) ?? false
            }
        }
    }

    func changed<R: LocalRow>(
        _ type: R.Type, after sequence: Int64, from position: ChangePosition?, limit: Int
    ) async throws -> ChangedPage<R> {
        try await mapErrors("reading \(R.table)") {
            try await pool.read { db in
                let columns = R.columns.joined(separator: ", ")
                // A keyset page: one transaction writes many rows under one change sequence, so
                // the id orders them within it.
                let rows: [Row]
                if let position {
                    rows = try Row.fetchAll(
                        db,
                        sql: """
                            SELECT \(columns), change_seq FROM \(R.table)
                            WHERE change_seq > ? AND (change_seq > ? OR (change_seq = ? AND id > ?)) ORDER BY change_seq, id LIMIT ?
                            """,
                        arguments: [sequence, position.sequence, position.sequence, position.id, max(1, limit)])
                } else {
                    rows = try Row.fetchAll(
                        db,
                        sql:
                            "SELECT \(columns), change_seq FROM \(R.table) WHERE change_seq > ? ORDER BY change_seq, id LIMIT ?",
                        arguments: [sequence, max(1, limit)])
                }
                let last = rows.last.map { ChangePosition(sequence: $0[R.columns.count], id: $0[0]) }
                return ChangedPage(rows: try rows.map(R.init(row:)), last: last, complete: rows.count < max(1, limit))
            }
        }
    }

    /// Deletes repositories here and remembers to delete them remotely (their sessions cascade
    /// on both sides).
    @discardableResult
    public func removeRepositories(ids: Set<UUID>) async throws -> Int {
        try await remove("repositories", ids: ids)
    }

    /// Deletes sessions here and remembers to delete them remotely.
    @discardableResult
    public func removeSessions(ids: Set<UUID>) async throws -> Int {
        try await remove("sessions", ids: ids)
    }

    func remove(_ table: String, ids: Set<UUID>) async throws -> Int {
        try await mapErrors("removing \(table)") {
            try await pool.write { db in
                let list = jsonArray(ids)
                try db.execute(
                    sql:
                        "INSERT OR IGNORE INTO pending_remote_deletions (table_name, id) SELECT ?, value FROM json_each(?) WHERE value IN (SELECT id FROM \(table))",
                    arguments: [table, list])
                try db.execute(
                    sql: "DELETE FROM \(table) WHERE id IN (SELECT value FROM json_each(?))", arguments: [list])
                return db.changesCount
            }
        }
    }

    /// Remote deletions still to make: repository ids and session ids.
    public func pendingRemoteDeletions() async throws -> (repositories: Set<UUID>, sessions: Set<UUID>) {
        try await mapErrors("reading pending deletions") {
            try await pool.read { db in
                var repositories = Set<UUID>(), sessions = Set<UUID>()
                for row in try Row.fetchAll(db, sql: "SELECT table_name, id FROM pending_remote_deletions") {
                    let id = try row.uuid("id")
                    if (row["table_name"] as String) == "repositories" {
                        repositories.insert(id)
                    } else {
                        sessions.insert(id)
                    }
                }
                return (repositories, sessions)
            }
        }
    }

    /// Forgets pending deletions the remote has made.
    public func clearPendingRemoteDeletions(repositories: Set<UUID>, sessions: Set<UUID>) async throws {
        try await mapErrors("clearing pending deletions") {
            try await pool.write { db in
                try db.execute(
                    sql:
                        "DELETE FROM pending_remote_deletions WHERE table_name = 'repositories' AND id IN (SELECT value FROM json_each(?))",
                    arguments: [jsonArray(repositories)])
                try db.execute(
                    sql:
                        "DELETE FROM pending_remote_deletions WHERE table_name = 'sessions' AND id IN (SELECT value FROM json_each(?))",
                    arguments: [jsonArray(sessions)])
            }
        }
    }
}

/// Where a page of changed rows ended: the change sequence and id of its last row.
public struct ChangePosition: Sendable, Hashable {
    /// The change sequence of the page's last row.
    public var sequence: Int64
    /// The id (canonical text) of the page's last row.
    public var id: String
}

/// One page of the rows written after a change sequence.
public struct ChangedPage<Row: Sendable>: Sendable {
    /// The rows, in (change sequence, id) order.
    public var rows: [Row]
    /// The last row's position, to ask for the next page from (nil when the page is empty).
    public var last: ChangePosition?
    /// Whether no row follows this page.
    public var complete: Bool
}
