import Foundation
import GRDB
import SecretCrypto
import SyncModel

// Repositories and sessions: the rows both roles keep (a desktop as the source, a phone as a cache).
extension DeviceStore {
    // MARK: - Repositories

    /// Inserts or updates `rows` by id, in one transaction.
    ///
    /// - Parameters:
    ///   - rows: The repositories; a row whose `(deviceID, localPath)` belongs to another id fails.
    ///   - progress: Called with the number of rows written so far, every 1,000 rows and at the end.
    /// - Throws: ``LocalStoreError`` `.uniqueViolation`; nothing is written then.
    public func upsertRepositories(_ rows: [RepositoryRecord], progress: (@Sendable (Int) -> Void)? = nil) async throws
    {
        try await upsert(rows, progress: progress)
    }

    /// Every repository, ordered by `(updated_at, id)`.
    public func repositories() async throws -> [RepositoryRecord] {
        try await fetch(RepositoryRecord.self, changedSince: nil)
    }

    /// The ids of every repository, without reading the rows.
    public func repositoryIDs() async throws -> Set<UUID> {
        try await ids(in: "repositories")
    }

    /// The ids of every session, without reading the rows.
    public func sessionIDs() async throws -> Set<UUID> {
        try await ids(in: "sessions")
    }

    /// The device that owns each session (its `device_id`), by session id.
    public func sessionOwners() async throws -> [UUID: UUID] {
        try await mapErrors("reading sessions") {
            try await pool.read { db in
                var result: [UUID: UUID] = [:]
                let rows = try Row.fetchCursor(db, sql: "SELECT id, device_id FROM sessions")
                while let row = try rows.next() { result[try row.uuid(0)] = try row.uuid(1) }
                return result
            }
        }
    }

    /// Every value of a uuid column, read from its index alone where it has one.
    func ids(in table: String, column: String = "id") async throws -> Set<UUID> {
        try await mapErrors("reading \(table)") {
            try await pool.read { db in
                var result = Set<UUID>()
                let rows = try Row.fetchCursor(db, sql: "SELECT \(column) FROM \(table)")
                while let row = try rows.next() { result.insert(try row.uuid(0)) }
                return result
            }
        }
    }

    /// Repositories updated after `since`, ordered by `(updated_at, id)`.
    func repositories(changedSince since: Date) async throws -> [RepositoryRecord] {
        try await fetch(RepositoryRecord.self, changedSince: since)
    }

    /// One repository.
    func repository(id: UUID) async throws -> RepositoryRecord? {
        try await fetchOne(RepositoryRecord.self, id: id)
    }

    /// Deletes every repository (and, by cascade, its sessions) whose id is not in `ids`.
    ///
    /// - Returns: The number of repositories deleted.
    @discardableResult
    func deleteRepositories(notIn ids: Set<UUID>) async throws -> Int {
        try await deleteRows(RepositoryRecord.self, notIn: ids)
    }

    /// Deletes the repositories with these ids (and their sessions).
    @discardableResult
    func deleteRepositories(ids: Set<UUID>) async throws -> Int {
        try await deleteRows(RepositoryRecord.self, ids: ids)
    }

    /// A pull's view of the remote, applied in one transaction: rows not in `retaining` are
    /// deleted first (so a path freed remotely can be reused), then `rows` are upserted; a row
    /// equal to the one stored is not written.
    ///
    /// - Returns: How many rows changed (inserted or updated) and how many were deleted.
    @discardableResult
    public func applyRepositories(_ rows: [RepositoryRecord], retaining: Set<UUID>?) async throws -> AppliedRows {
        try await apply(rows, retaining: retaining)
    }

    // MARK: - Sessions

    /// Inserts or updates `rows` by id, in one transaction.
    ///
    /// - Throws: ``LocalStoreError`` `.foreignKeyViolation` for a session whose repository is
    ///   unknown; nothing is written then.
    public func upsertSessions(_ rows: [SessionRecord], progress: (@Sendable (Int) -> Void)? = nil) async throws {
        try await upsert(rows, progress: progress)
    }

    /// Every session, ordered by `(updated_at, id)`.
    public func sessions() async throws -> [SessionRecord] {
        try await fetch(SessionRecord.self, changedSince: nil)
    }

    /// One session.
    public func session(id: UUID) async throws -> SessionRecord? {
        try await fetchOne(SessionRecord.self, id: id)
    }

    /// Deletes every session whose id is not in `ids`.
    @discardableResult
    func deleteSessions(notIn ids: Set<UUID>) async throws -> Int {
        try await deleteRows(SessionRecord.self, notIn: ids)
    }

    /// Deletes the sessions with these ids.
    @discardableResult
    func deleteSessions(ids: Set<UUID>) async throws -> Int {
        try await deleteRows(SessionRecord.self, ids: ids)
    }

    /// Records the live status this desktop reported for one of its sessions, without marking
    /// the session changed (a push never sends the status; the remote got it directly).
    ///
    /// - Returns: whether the session exists here.
    @discardableResult
    public func recordRuntimeStatus(_ status: RuntimeStatus) async throws -> Bool {
        try await mapErrors("recording runtime status") {
            try await pool.write { db in
                try db.execute(
                    sql: "UPDATE sessions SET runtime_status = ?, runtime_status_updated_at = ? WHERE id = ?",
                    arguments: [status.jsonText, status.reportedAt?.epoch, status.sessionID.canonical])
                return db.changesCount > 0
            }
        }
    }

    /// A pull's view of the remote sessions, applied in one transaction (deletions first), as
    /// ``applyRepositories(_:retaining:)``.
    @discardableResult
    public func applySessions(_ rows: [SessionRecord], retaining: Set<UUID>?) async throws -> AppliedRows {
        try await apply(rows, retaining: retaining)
    }

    /// Runs `body`, which fills the sessions table (a phone's first pull), with the table's
    /// secondary indexes dropped when it starts empty, and builds them again when `body` ends,
    /// whether it succeeds or throws. Rows arrive in id order at best, so each page of inserts
    /// touched a page of every index at random: a 100,000-session load spent more time keeping
    /// the indexes than writing the rows. Built once at the end, each index is one sort.
    ///
    /// Readers meanwhile see the same rows (queries on the indexed columns scan). A process that
    /// ends before the indexes are built again leaves them to the next open of the store, which
    /// builds what is missing.
    ///
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws (the indexes are built again first), or ``LocalStoreError``.
    public func loadingSessionsInBulk<T>(_ body: () async throws -> T) async throws -> T {
        let dropped = try await mapErrors("preparing a bulk load of sessions") {
            try await pool.write { db -> Bool in
                guard try Bool.fetchOne(db, sql: "SELECT NOT EXISTS (SELECT 1 FROM sessions)") == true else {
                    return false
                }
                for index in Schema.sessionIndexes { try db.execute(sql: "DROP INDEX IF EXISTS \(index.name)") }
                return true
            }
        }
        guard dropped else { return try await body() }
        let result: T
        do {
            result = try await body()
        } catch {
            try? await buildSessionIndexes()
            throw error
        }
        try await buildSessionIndexes()
        return result
    }

    func buildSessionIndexes() async throws {
        try await mapErrors("building the sessions' indexes") { try await pool.write(Schema.buildSessionIndexes) }
    }

    /// Applies sessions made ready by ``PreparedSessions/init(_:)``, as
    /// ``applySessions(_:retaining:)`` without deletions.
    @discardableResult
    public func applySessions(_ prepared: PreparedSessions) async throws -> AppliedRows {
        try await apply(SessionRecord.self, prepared.arguments, retaining: nil)
    }
}

/// Sessions a pull read, with the values the store writes made from them (ids formatted and
/// hashed): the part of ``DeviceStore/applySessions(_:)`` that does not need the store's single
/// writer, so that a pull makes a page's values while the writer writes the page before.
public struct PreparedSessions: Sendable {
    let arguments: [StatementArguments]

    /// How many sessions.
    public var count: Int { arguments.count }

    public init(_ rows: [SessionRecord]) {
        arguments = DeviceStore.arguments(rows)
    }
}
