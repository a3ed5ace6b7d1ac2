import EnvelopeDigest
import Foundation
import GRDB
import SyncModel

/// A table row type with an explicit column list, bound and read without Codable's overhead.
protocol LocalRow: Sendable {
    static var table: String { get }
    /// Columns in binding order; the first is the primary key `id`.
    static var columns: [String] { get }
    var id: UUID { get }
    var values: [(any DatabaseValueConvertible)?] { get }
    init(row: Row) throws
}

extension LocalRow {
    static var selectSQL: String { "SELECT \(columns.joined(separator: ", ")) FROM \(table)" }

    /// The upsert, with the transaction's change sequence as one more bound value. Its conflict
    /// target is the primary key only: a clash on another unique key (for repositories,
    /// (device_id, local_path)) fails as it would remotely.
    static var upsertSQL: String {
        let list = (columns + ["change_seq"]).joined(separator: ", ")
        let marks = Array(repeating: "?", count: columns.count + 1).joined(separator: ", ")
        let updates = (columns.dropFirst() + ["change_seq"]).map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
        return "INSERT INTO \(table) (\(list)) VALUES (\(marks)) ON CONFLICT (id) DO UPDATE SET \(updates)"
    }

    /// ``upsertSQL`` that leaves a row equal to the one stored untouched (no write, no change
    /// counted), for rows a pull read again.
    static var applySQL: String {
        upsertSQL + " WHERE " + columns.dropFirst().map { "\($0) IS NOT excluded.\($0)" }.joined(separator: " OR ")
    }
}

extension Date {
    /// Seconds since 2001-01-01 UTC, Foundation's own representation, so a `Date` stored as a
    /// SQLite REAL comes back bit-for-bit equal (seconds since 1970 would round).
    var epoch: Double { timeIntervalSinceReferenceDate }
    init(epoch: Double) { self.init(timeIntervalSinceReferenceDate: epoch) }
}

extension Row {
    // Row types read their columns by index (their `columns` order): name lookup per field
    // costs more than the rest of decoding on 10,000-row reads.

    func uuid(_ index: Int) throws -> UUID {
        guard let text: String = self[index], let uuid = UUID.parse(text) else {
            throw LocalStoreError(.corruptRow, "column \(index) does not hold a UUID")
        }
        return uuid
    }

    func optionalUUID(_ index: Int) throws -> UUID? {
        guard let text: String = self[index] else { return nil }
        guard let uuid = UUID.parse(text) else {
            throw LocalStoreError(.corruptRow, "column \(index) does not hold a UUID")
        }
        return uuid
    }

    func date(_ index: Int) -> Date { Date(epoch: self[index]) }
    func optionalDate(_ index: Int) -> Date? { (self[index] as Double?).map(Date.init(epoch:)) }

    func enumValue<E: RawRepresentable>(_ index: Int) throws -> E where E.RawValue == String {
        guard let text: String = self[index], let value = E(rawValue: text) else {
            throw LocalStoreError(.corruptRow, "column \(index) holds an unknown value")
        }
        return value
    }

    func uuid(_ column: String) throws -> UUID {
        guard let text: String = self[column], let uuid = UUID.parse(text) else {
            throw LocalStoreError(.corruptRow, "column \(column) does not hold a UUID")
        }
        return uuid
    }

    func optionalUUID(_ column: String) throws -> UUID? {
        guard let text: String = self[column] else { return nil }
        guard let uuid = UUID.parse(text) else {
            throw LocalStoreError(.corruptRow, "column \(column) does not hold a UUID")
        }
        return uuid
    }

    func date(_ column: String) -> Date { Date(epoch: self[column]) }

    func enumValue<E: RawRepresentable>(_ column: String) throws -> E where E.RawValue == String {
        guard let text: String = self[column], let value = E(rawValue: text) else {
            throw LocalStoreError(.corruptRow, "column \(column) holds an unknown value")
        }
        return value
    }
}

extension RepositoryRecord: LocalRow {
    static let table = "repositories"
    static let columns = [
        "id", "user_id", "device_id", "name", "local_path", "remote_url", "default_branch", "parent_repository_id",
        "is_worktree", "worktree_branch", "status", "last_synced_at", "created_at", "updated_at", "id_h1", "id_h2",
    ]

    var values: [(any DatabaseValueConvertible)?] {
        [
            id.canonical, userID.canonical, deviceID.canonical, name, localPath, remoteURL, defaultBranch,
            parentRepositoryID?.canonical, isWorktree, worktreeBranch, status.rawValue, lastSyncedAt?.epoch,
            createdAt.epoch, updatedAt.epoch,
        ] + idHashValues(id)
    }

    init(row: Row) throws {
        self.init(
            id: try row.uuid(0), userID: try row.uuid(1), deviceID: try row.uuid(2), name: row[3], localPath: row[4],
            remoteURL: row[5], defaultBranch: row[6], parentRepositoryID: try row.optionalUUID(7), isWorktree: row[8],
            worktreeBranch: row[9], status: try row.enumValue(10), lastSyncedAt: row.optionalDate(11),
            createdAt: row.date(12), updatedAt: row.date(13)
        )
    }
}

extension SessionRecord: LocalRow {
    static let table = "sessions"
    static let columns = [
        "id", "user_id", "device_id", "repository_id", "title", "session_pid", "session_started_at",
        "session_ended_at", "status", "current_branch", "working_directory", "last_heartbeat_at", "is_worktree",
        "worktree_path", "created_at", "updated_at", "runtime_status", "runtime_status_updated_at", "id_h1", "id_h2",
    ]

    var values: [(any DatabaseValueConvertible)?] {
        [
            id.canonical, userID.canonical, deviceID.canonical, repositoryID.canonical, title, sessionPID,
            sessionStartedAt.epoch, sessionEndedAt?.epoch, status.rawValue, currentBranch, workingDirectory,
            lastHeartbeatAt?.epoch, isWorktree, worktreePath, createdAt.epoch, updatedAt.epoch,
            runtimeStatus?.jsonText, runtimeStatus?.reportedAt?.epoch,
        ] + idHashValues(id)
    }

    init(row: Row) throws {
        self.init(
            id: try row.uuid(0), userID: try row.uuid(1), deviceID: try row.uuid(2), repositoryID: try row.uuid(3),
            title: row[4], sessionPID: row[5], sessionStartedAt: row.date(6), sessionEndedAt: row.optionalDate(7),
            status: try row.enumValue(8), currentBranch: row[9], workingDirectory: row[10],
            lastHeartbeatAt: row.optionalDate(11), isWorktree: row[12], worktreePath: row[13],
            createdAt: row.date(14), updatedAt: row.date(15)
        )
        let reportedAt = row.optionalDate(17)
        runtimeStatus = (row[16] as String?).flatMap { RuntimeStatus(json: $0, sessionID: id, reportedAt: reportedAt) }
    }
}

/// The `id_h1`, `id_h2` columns of a repository or session: its id's hash in a `RowSetDigest`,
/// which triggers add to the table's kept digest (`id_digests`).
func idHashValues(_ id: UUID) -> [(any DatabaseValueConvertible)?] {
    let hash = SecretDigest.idHash(id)
    return [hash.0, hash.1]
}

/// JSON array text of canonical ids, bound as one argument and expanded by `json_each`, so a set
/// of any size is one statement without hitting SQLite's variable limit.
func jsonArray(_ ids: some Sequence<UUID>) -> String {
    "[" + ids.map { "\"\($0.canonical)\"" }.joined(separator: ",") + "]"
}
