import EnvelopeDigest
import Foundation
import GRDB
import RemoteContract
import RemoteRules
import SyncModel
import Synchronization

/// `SyncRemote` on one local SQLite file: the default remote when no Supabase URL is set.
///
/// The file has the remote's four tables with the same unique keys and foreign keys (envelopes
/// cascade with their session). A store is opened for one user and behaves as row-level
/// security does for that user: reads see only that user's rows; writing a row that belongs to
/// another user, or naming another user, is refused as `permissionDenied`. WAL and a busy
/// timeout let several local processes (a desktop and phones in a demo) share one file.
///
/// `updated_at` is set on every write, as the project's own migrations' triggers do, in the
/// same text form PostgREST returns, so pull cursors work the same on both remotes.
public final class EmbeddedRemoteStore: EnvelopeDigestRemote {
    public let userID: UUID
    /// The database file.
    public let path: String
    let pool: DatabasePool
    let counters = Mutex(RemoteMetrics())
    /// Rows per transaction for bulk writes, as the PostgREST client batches.
    let batchSize = 500
    /// When the user last signed in (the embedded remote has no passwords: `login` records the
    /// time); starting a trust log or asking for a reset needs one in the last 600 seconds.
    public let signedInAt: Date?
    /// The scheme of the deep links in alerts (notifications.md, "Round 2"): a deployment's
    /// `private.notification_config`, here a value given at init.
    public let deepLinkScheme: String
    /// The device this store acts for (docs/trust.md, "Device credentials"); `nil`: none, and
    /// every device-scoped call is refused.
    let credential: DeviceCredential?
    /// SHA-256 of ``credential``, what the remote keeps: computed once, not per checked row.
    let credentialHash: Data?
    /// Whether ``credential`` was registered by this store.
    let registered = Mutex(false)
    /// Acting as the project's service role (``serviceRole(path:userID:)``): no device rules.
    let isServiceRole: Bool

    /// Whether the sign-in is fresh enough to start a trust log or ask for a reset: at most 600 s
    /// old, as `private.tl_fresh_sign_in` reads the token's sign-in time (a time ahead of this
    /// clock is not refused).
    var isFreshSignIn: Bool { signedInAt.map { Date().timeIntervalSince($0) <= 600 } ?? false }

    /// Opens (creating if needed) the embedded remote at `path`, scoped to `userID`.
    ///
    /// - Parameters:
    ///   - path: The SQLite file.
    ///   - userID: The signed-in user every call acts as.
    ///   - signedInAt: When the user signed in, for the calls that need a recent sign-in.
    ///   - busyTimeout: How long a write waits for another process's.
    ///   - deepLinkScheme: The scheme of alerts' deep links: `^[a-z][a-z0-9+.-]{0,31}$`.
    ///   - credential: The device the store acts for, registered at its first call.
    /// - Throws: `RemoteStoreError` `.storage`; `.configuration` for a scheme of another form.
    public convenience init(
        path: String, userID: UUID, signedInAt: Date? = nil, busyTimeout: TimeInterval = 15,
        deepLinkScheme: String = AlertRoute.defaultScheme, credential: DeviceCredential? = nil
    ) throws {
        try self.init(
            path: path, userID: userID, signedInAt: signedInAt, busyTimeout: busyTimeout,
            deepLinkScheme: deepLinkScheme,
            credential: credential, isServiceRole: false)
    }

    /// Opens the embedded remote as ``init(path:userID:signedInAt:busyTimeout:deepLinkScheme:credential:)``
    /// does, on a thread of its own: opening migrates the file, which waits out `busyTimeout` while
    /// another process writes, and that wait must not hold one of the cooperative pool's threads.
    public static func opened(
        path: String, userID: UUID, signedInAt: Date? = nil, busyTimeout: TimeInterval = 15,
        deepLinkScheme: String = AlertRoute.defaultScheme, credential: DeviceCredential? = nil
    ) async throws -> EmbeddedRemoteStore {
        try await Blocking.run {
            try EmbeddedRemoteStore(
                path: path, userID: userID, signedInAt: signedInAt, busyTimeout: busyTimeout,
                deepLinkScheme: deepLinkScheme, credential: credential)
        }
    }

    /// The embedded remote as the project's `service_role` key sees it: the user's rows without
    /// the device rules (PostgreSQL's service role bypasses row-level security), for the
    /// operator's tools and for tests that play a hostile server. It acts for no device: calls
    /// that act for one are refused.
    public static func serviceRole(path: String, userID: UUID) throws -> EmbeddedRemoteStore {
        try EmbeddedRemoteStore(
            path: path, userID: userID, signedInAt: nil, busyTimeout: 15, deepLinkScheme: AlertRoute.defaultScheme,
            credential: nil, isServiceRole: true)
    }

    private init(
        path: String, userID: UUID, signedInAt: Date?, busyTimeout: TimeInterval, deepLinkScheme: String,
        credential: DeviceCredential?, isServiceRole: Bool
    ) throws {
        self.isServiceRole = isServiceRole
        guard AlertRoute.isValidScheme(deepLinkScheme) else {
            throw RemoteStoreError(
                .configuration, "a deep-link scheme is a lowercase letter and up to 31 of a-z, 0-9, +, . and -")
        }
        self.userID = userID
        self.path = path
        self.signedInAt = signedInAt
        self.deepLinkScheme = deepLinkScheme
        self.credential = credential
        self.credentialHash = credential.map(Self.hash(of:))
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(busyTimeout)
        configuration.label = "EmbeddedRemoteStore"
        configuration.prepareDatabase { db in db.add(function: Self.badgeCounts) }
        do {
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            pool = try DatabasePool(path: path, configuration: configuration)
            try Self.migrator.migrate(pool)
        } catch {
            throw Self.wrap(error, "opening embedded remote at \(path)")
        }
    }

    public func metrics() -> RemoteMetrics { counters.withLock { $0 } }

    func count(_ operations: Int = 1) { MetricsTally.record({ $0.requests += operations }, in: counters) }

    static func wrap(_ error: Error, _ context: String) -> Error {
        if error is RemoteStoreError || error is CancellationError { return error }
        guard let error = error as? DatabaseError else {
            return RemoteStoreError(.storage, "\(context): \(type(of: error))")
        }
        switch error.extendedResultCode {
        case .SQLITE_CONSTRAINT_UNIQUE, .SQLITE_CONSTRAINT_PRIMARYKEY:
            return RemoteStoreError(
                .conflict, "\(context): duplicate key value violates a unique constraint",
                postgrestCode: .uniqueViolation)
        case .SQLITE_CONSTRAINT_FOREIGNKEY:
            return RemoteStoreError(
                .foreignKeyViolation, "\(context): a referenced row does not exist", postgrestCode: .foreignKeyViolation
            )
        case .SQLITE_CONSTRAINT_NOTNULL:
            return RemoteStoreError(.http, "\(context): a required column is null", postgrestCode: .notNullViolation)
        case .SQLITE_CONSTRAINT_CHECK:
            return RemoteStoreError(
                .invalidValue, "\(context): a value is outside its allowed set", postgrestCode: .checkViolation)
        case _ where error.resultCode == .SQLITE_ERROR && (error.message ?? "").hasPrefix("no such table"):
            // A file whose tables were dropped behaves as a deployment without the migration.
            return RemoteStoreError(
                .missingTable, "\(context): \(error.message ?? "no such table")", postgrestCode: .undefinedTable)
        default:
            return RemoteStoreError(.storage, "\(context): \(error.message ?? "SQLite error")")
        }
    }

    func read<T: Sendable>(_ context: String, _ body: @Sendable @escaping (Database) throws -> T) async throws -> T {
        count()
        try await ensureRegistered()
        do { return try await pool.read(body) } catch { throw await explainRefusal(Self.wrap(error, context)) }
    }

    /// Whom a gated read shows rows: a registered device (``credentialDevice(_:)``), or one the
    /// trust log in force certifies (``callingDevice(_:)``).
    enum Gate { case registered, certified }

    /// ``read(_:_:)`` as row-level security reads: a caller `gate` does not admit sees no row
    /// (`hidden`: an empty list, or `nil`).
    func read<T: Sendable>(
        _ context: String, gate: Gate, else hidden: T, _ body: @Sendable @escaping (Database) throws -> T
    ) async throws -> T {
        try await read(context) { db in
            try (gate == .certified ? self.callingDevice(db) : self.credentialDevice(db)) == nil ? hidden : body(db)
        }
    }

    func write<T: Sendable>(_ context: String, _ body: @Sendable @escaping (Database) throws -> T) async throws -> T {
        count()
        try await ensureRegistered()
        do { return try await pool.write(body) } catch { throw await explainRefusal(Self.wrap(error, context)) }
    }

    var me: String { userID.canonical }
    static var now: String { Timestamp.format(Date()) }
    /// Unix seconds now, in whole seconds (the SQL's `floor(extract(epoch FROM now()))`).
    static var epochSeconds: UInt64 { UInt64(max(0, Date().timeIntervalSince1970)) }

    /// Refuses a row naming another user (RLS `WITH CHECK`).
    func checkOwner(_ owner: UUID) throws {
        guard owner == userID else { throw Self.rowSecurity }
    }

    /// Refuses a row of a device other than the calling one, new or replacing one of another
    /// device (the policies' `device_id = private.credential_device()`).
    func checkOwnRow(_ db: Database, device: String, table: String? = nil, id: String? = nil) throws {
        if isServiceRole { return }
        let caller = try credentialDevice(db)
        var owners = [device]
        if let table, let id,
            let existing = try String.fetchOne(
                db.cachedStatement(sql: "SELECT device_id FROM \(table) WHERE id = ?"), arguments: [id])
        {
            owners.append(existing)
        }
        guard let caller, owners.allSatisfy({ $0 == caller }) else { throw Self.rowSecurity }
    }

    /// Whether the calling (certified) device, `caller` (read once per batch of rows, as
    /// PostgreSQL evaluates `private.calling_device()` once per statement), runs `session`: who
    /// writes its envelopes.
    func isSessionDesktop(_ db: Database, session: String, caller: String?) throws -> Bool {
        if isServiceRole { return true }
        guard let caller else { return false }
        return try String.fetchOne(
            db.cachedStatement(sql: "SELECT device_id FROM agent_coding_sessions WHERE id = ?"), arguments: [session])
            == caller
    }

    /// Refuses to touch an existing row that belongs to another user (RLS `USING`).
    func checkExisting(_ db: Database, table: String, id: String) throws {
        if try isAnothers(db, table: table, id: id) { throw Self.rowSecurity }
    }

    // MARK: - Bulk writes

    public func upsertRepositories(
        _ rows: [RepositoryRecord], onBatchAccepted: BatchHandler<RepositoryRecord>?
    ) async throws -> BulkWriteResult {
        try await bulk(rows, key: { $0.id.canonical }, onBatchAccepted: onBatchAccepted) { db, row in
            try self.checkOwner(row.userID)
            try self.checkExisting(db, table: "repositories", id: row.id.canonical)
            try self.checkOwnRow(db, device: row.deviceID.canonical, table: "repositories", id: row.id.canonical)
            try Self.insert(db, "repositories", row.jsonRow)
        }
    }

    public func upsertSessions(
        _ rows: [SessionRecord], onBatchAccepted: BatchHandler<SessionRecord>?
    ) async throws -> BulkWriteResult {
        try await bulk(rows, key: { $0.id.canonical }, onBatchAccepted: onBatchAccepted) { db, row in
            try self.checkOwner(row.userID)
            try self.checkExisting(db, table: "agent_coding_sessions", id: row.id.canonical)
            try self.checkOwnRow(
                db, device: row.deviceID.canonical, table: "agent_coding_sessions", id: row.id.canonical)
            let previous = try String.fetchOne(
                db.cachedStatement(sql: "SELECT status FROM agent_coding_sessions WHERE id = ?"),
                arguments: [row.id.canonical])
            let wasEnded = previous == SessionStatus.ended.rawValue
            // `title` is kept when a row has none: the row leaves the key out then.
            try Self.insert(db, "agent_coding_sessions", row.jsonRow)
            // A session whose repository is another user's would be refused by RLS too.
            try self.checkExisting(db, table: "repositories", id: row.repositoryID.canonical)
            if row.status == .ended, !wasEnded {
                try Self.sessionEnded(db, user: self.me, session: row.id.canonical)
            }
            if let kind = TaskAlertRules.statusKind(before: previous, after: row.status.rawValue) {
                _ = try Self.queueTaskAlerts(
                    db, user: self.me, session: row.id.canonical, kind: kind, scheme: self.deepLinkScheme)
            }
        }
    }

    public func upsertEnvelopes(
        _ rows: [EnvelopeRecord], onBatchAccepted: BatchHandler<EnvelopeRecord>?
    ) async throws -> BulkWriteResult {
        try await bulk(
            rows, key: { $0.pair.key }, onBatchAccepted: onBatchAccepted, prepare: { db in try self.callingDevice(db) }
        ) { db, caller, row in
            guard let owner = try Self.owner(db, table: "agent_coding_sessions", id: row.sessionID.canonical) else {
                throw RemoteStoreError(
                    .foreignKeyViolation,
                    "insert or update on agent_coding_session_secrets violates foreign key constraint",
                    postgrestCode: .foreignKeyViolation)
            }
            guard owner == self.me, try self.isSessionDesktop(db, session: row.sessionID.canonical, caller: caller)
            else { throw Self.rowSecurity }
            let hash = SecretDigest.rowHash(
                sessionID: row.sessionID.canonical, deviceID: row.deviceID.canonical,
                ephemeralPublicKey: row.ephemeralPublicKey)
            try Self.insert(
                db, "agent_coding_session_secrets", row.jsonRow, onConflict: ["session_id", "device_id"],
                stamped: false,
                computed: [("row_h1", hash.0.databaseValue), ("row_h2", hash.1.databaseValue)])
        }
    }

    /// De-duplicates by key (last wins), writes in transactions of ``batchSize`` rows with a
    /// savepoint per row, so a refused row is reported and the others are written.
    func bulk<Row: Sendable>(
        _ rows: [Row], key: (Row) -> String, onBatchAccepted: BatchHandler<Row>?,
        apply: @Sendable @escaping (Database, Row) throws -> Void
    ) async throws -> BulkWriteResult {
        try await bulk(rows, key: key, onBatchAccepted: onBatchAccepted, prepare: { _ in () }) { db, _, row in
            try apply(db, row)
        }
    }

    /// ``bulk(_:key:onBatchAccepted:apply:)`` with what every row's check needs read once per
    /// batch's transaction (`prepare`), as a policy's initPlan is evaluated once per statement.
    func bulk<Row: Sendable, Context>(
        _ rows: [Row], key: (Row) -> String, onBatchAccepted: BatchHandler<Row>?,
        prepare: @Sendable @escaping (Database) throws -> Context,
        apply: @Sendable @escaping (Database, Context, Row) throws -> Void
    ) async throws -> BulkWriteResult {
        var latest: [String: Int] = [:]
        for (index, row) in rows.enumerated() { latest[key(row)] = index }
        let unique = rows.enumerated().filter { latest[key($0.element)] == $0.offset }.map {
            (key: key($0.element), row: $0.element)
        }
        var result = BulkWriteResult()
        for start in stride(from: 0, to: unique.count, by: batchSize) {
            let batch = Array(unique[start..<min(start + batchSize, unique.count)])
            let outcome: (accepted: [Row], rejected: [RejectedRow]) = try await write("writing rows") { db in
                var accepted: [Row] = []
                var rejected: [RejectedRow] = []
                let context = try prepare(db)
                for item in batch {
                    do {
                        try db.inSavepoint {
                            try apply(db, context, item.row)
                            return .commit
                        }
                        accepted.append(item.row)
                    } catch {
                        let mapped = Self.wrap(error, "row \(item.key)")
                        guard let remoteError = mapped as? RemoteStoreError else { throw mapped }
                        rejected.append(RejectedRow(key: item.key, error: remoteError))
                    }
                }
                return (accepted, rejected)
            }
            result.accepted += outcome.accepted.count
            result.rejected += outcome.rejected
            if !outcome.accepted.isEmpty { try await onBatchAccepted?(outcome.accepted) }
        }
        return result
    }

    /// What an insert's statement text depends on: the table, the conflict key and the columns.
    struct InsertShape: Hashable, Sendable {
        let table: String
        let key: [String]?
        let names: [String]
    }

    /// The text of ``insert(_:_:_:onConflict:stamped:computed:)``'s statements by shape (a few
    /// per table: the columns a record names).
    static let insertStatements = Mutex<[InsertShape: String]>([:])

    /// Writes `row`, the JSON the PostgREST client sends for it, into `table` as PostgREST and
    /// the project's triggers do: the columns the row names are inserted or, on a conflict of
    /// `onConflict` (`nil`: none, a conflict is refused), updated (a column the row leaves out keeps
    /// its value, and so does `created_at`); `created_at` is now unless the row names one, and
    /// `updated_at` is now (`stamped`). `computed`: columns the remote adds.
    static func insert(
        _ db: Database, _ table: String, _ row: JSONRow, onConflict key: [String]? = ["id"], stamped: Bool = true,
        computed: [(String, DatabaseValue)] = []
    ) throws {
        let now = Self.now.databaseValue
        var names: [String] = []
        var values: [DatabaseValue] = []
        names.reserveCapacity(row.fields.count + computed.count + 2)
        values.reserveCapacity(names.capacity)
        for (name, value) in row.fields where name != "updated_at" {
            names.append(name)
            values.append(value.databaseValue)
        }
        for (name, value) in computed {
            names.append(name)
            values.append(value)
        }
        if !names.contains("created_at") {
            names.append("created_at")
            values.append(now)
        }
        if stamped {
            names.append("updated_at")
            values.append(now)
        }
        let shape = InsertShape(table: table, key: key, names: names)
        try db.cachedStatement(sql: statement(shape)).execute(arguments: StatementArguments(values))
    }

    /// The statement text of `shape`, built once (not once per row of a bulk write).
    static func statement(_ shape: InsertShape) -> String {
        insertStatements.withLock { cache in
            if let sql = cache[shape] { return sql }
            let names = shape.names
            var sql = """
                INSERT INTO \(shape.table) (\(names.joined(separator: ", "))) VALUES (\(names.map { _ in "?" }.joined(separator: ", ")))
                """
            if let key = shape.key {
                let updated = names.filter { !key.contains($0) && $0 != "created_at" }.map { "\($0) = excluded.\($0)" }
                sql += " ON CONFLICT (\(key.joined(separator: ", "))) DO UPDATE SET \(updated.joined(separator: ", "))"
            }
            cache[shape] = sql
            return sql
        }
    }

    // MARK: - Helpers

    /// A SQLite row as the JSON object PostgREST would return (booleans as booleans).
    /// A stored row as PostgREST would answer it (a `bytea` as its base64 text).
    static func json(_ row: Row) -> ResponseRow {
        var object = ResponseRow()
        for (column, value) in row {
            switch value.storage {
            case .null: object.fields.append((column, .null))
            case let .int64(number):
                object.fields.append((column, booleanColumns.contains(column) ? .bool(number != 0) : .int(Int(number))))
            case let .double(number): object.fields.append((column, .double(number)))
            case let .string(text): object.fields.append((column, .string(text)))
            case let .blob(data): object.fields.append((column, .string(data.base64EncodedString())))
            }
        }
        return object
    }

    static let booleanColumns = Set(
        [
            "is_active", "is_primary_trust_root", "is_trusted", "has_seen_trust_prompt", "push_enabled", "is_worktree",
            "is_valid",
        ] + NotificationSettings.Key.allCases.map(\.column))

    static func uuid(_ text: String?) throws -> UUID {
        guard let text, let uuid = UUID.parse(text) else {
            throw RemoteStoreError(.storage, "a stored id is not a UUID")
        }
        return uuid
    }

    static func jsonArray(_ ids: some Sequence<UUID>) -> String {
        "[" + ids.map { "\"\($0.canonical)\"" }.joined(separator: ",") + "]"
    }
}

extension RowValue {
    /// The value as the embedded remote's columns hold it (a boolean as 1 or 0).
    var databaseValue: DatabaseValue {
        switch self {
        case .string(let text), .json(let text): text.databaseValue
        case .int(let number): number.databaseValue
        case .bool(let flag): flag.databaseValue
        case .null: .null
        }
    }
}
