import Foundation
import GRDB
import SecretCrypto
import SyncModel
#if canImport(Glibc)
import Glibc
#endif

/// The device's own store: a directory holding `store.sqlite` (WAL, foreign keys on) and
/// `device.key` (the X25519 private key, 0600).
///
/// On a desktop it is the source of truth that gets pushed; on a phone it is the cache that gets
/// pulled into. Secrets never sit on disk in plain text: a desktop keeps each session's secret
/// sealed to its own key, a phone keeps envelopes as received; both open them on demand.
///
/// Every bulk operation runs in one transaction. Every UUID is stored in canonical lowercase.
///
/// ```swift
/// let store = try LocalStore(directory: LocalStore.defaultDirectory())
/// let me = try await store.createIdentity(name: "Quinn's laptop", deviceType: .linuxDesktop, role: .desktop)
/// ```
public final class LocalStore: Sendable {
    /// The store directory.
    public let directory: URL
    let pool: DatabasePool

    /// The database file's path.
    public var databasePath: String { directory.appendingPathComponent("store.sqlite").path }
    /// The device key file's path.
    public var keyPath: String { directory.appendingPathComponent("device.key").path }

    /// `$XDG_DATA_HOME/session-sync`, else `~/.local/share/session-sync`.
    ///
    /// - Parameter environment: The environment to read (tests pass their own).
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg).appendingPathComponent("session-sync")
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return URL(fileURLWithPath: home).appendingPathComponent(".local/share/session-sync")
    }

    /// Opens (creating if needed) the store in `directory` and brings its schema up to date.
    ///
    /// - Parameters:
    ///   - directory: The store directory; created with mode 0700 when missing.
    ///   - busyTimeout: How long a write waits for another process's write to finish.
    /// - Throws: ``LocalStoreError`` with `.notADatabase` or `.schemaTooNew` (the file is then left
    ///   untouched), or `.io`.
    public init(directory: URL, busyTimeout: TimeInterval = 10) throws {
        self.directory = directory
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw LocalStoreError(.io, "cannot create store directory \(directory.path)")
        }
        let path = directory.appendingPathComponent("store.sqlite").path
        try Self.checkDirectory(directory.path)
        try Self.checkHeader(path)
        try Self.createPrivately(path)

        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(busyTimeout)
        configuration.label = "LocalStore"
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
        } catch {
            throw LocalStoreError.wrap(error, context: "cannot open \(path)")
        }
        do {
            let migrator = Schema.migrator
            let superseded = try pool.read { try migrator.hasBeenSuperseded($0) }
            guard !superseded else {
                throw LocalStoreError(.schemaTooNew, "\(path) was written by a newer version of this program; upgrade it (the store was not modified)")
            }
            try migrator.migrate(pool)
        } catch {
            throw LocalStoreError.wrap(error, context: "cannot prepare \(path)")
        }
    }

    /// Refuses a store directory that is not a directory, belongs to another user, or that
    /// group or others may write (they could swap the key file or the database).
    static func checkDirectory(_ path: String) throws {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw LocalStoreError(.io, "\(path) is not a directory")
        }
        guard info.st_uid == geteuid() else {
            throw LocalStoreError(.storeDirectoryUnsafe, "\(path) is owned by uid \(info.st_uid), not by the current user")
        }
        guard info.st_mode & 0o022 == 0 else {
            throw LocalStoreError(.storeDirectoryUnsafe, String(
                format: "permissions 0%o for %@ let others write to the store (chmod 700 %@)", info.st_mode & 0o777, path, path))
        }
    }

    /// Creates the database file with mode 0600 before SQLite does (SQLite gives its WAL and
    /// shared-memory files the database file's mode); an existing file is narrowed to 0600.
    static func createPrivately(_ path: String) throws {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        guard descriptor >= 0 else {
            if errno == ELOOP { throw LocalStoreError(.notADatabase, "\(path) is a symbolic link; refusing to open it") }
            throw LocalStoreError(.io, "cannot open \(path)")
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw LocalStoreError(.notADatabase, "\(path) is not a regular file; refusing to open it")
        }
        if info.st_mode & 0o077 != 0 { fchmod(descriptor, 0o600) }
    }

    /// Refuses a non-empty file that does not start with SQLite's magic header, before SQLite
    /// (which would at least try to switch it to WAL) touches it.
    static func checkHeader(_ path: String) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else { return }
        defer { try? handle.close() }
        let header = (try? handle.read(upToCount: 16)) ?? Data()
        guard header.isEmpty || header == Data("SQLite format 3\0".utf8) else {
            throw LocalStoreError(.notADatabase, "\(path) is not a SQLite database; refusing to open or overwrite it")
        }
    }

    // MARK: - Identity and key

    /// This device's identity, or `nil` before ``createIdentity(name:deviceType:hostname:role:id:)``.
    public func identity() async throws -> DeviceIdentity? {
        try await mapErrors("reading identity") {
            try await pool.read { db in
                guard let row = try Row.fetchOne(db, sql: "SELECT * FROM device_identity") else { return nil }
                return try DeviceIdentity(
                    id: row.uuid("id"), userID: row.optionalUUID("user_id"), name: row["name"],
                    deviceType: row.enumValue("device_type"), hostname: row["hostname"], role: row.enumValue("role"),
                    publicKey: X25519PublicKey(base64: row["public_key"]), createdAt: row.date("created_at")
                )
            }
        }
    }

    /// The identity, or an error saying to run `init`.
    ///
    /// - Throws: ``LocalStoreError`` `.identityMissing`.
    public func requireIdentity() async throws -> DeviceIdentity {
        guard let identity = try await identity() else {
            throw LocalStoreError(.identityMissing, "this store has no device identity; run `sync-cli init` first")
        }
        return identity
    }

    /// Creates this device's identity and key pair; the private key goes to `device.key` (0600).
    ///
    /// - Throws: ``LocalStoreError`` `.identityExists` when either already exists.
    @discardableResult
    public func createIdentity(
        name: String, deviceType: DeviceType, hostname: String? = nil, role: SyncRole, id: UUID = UUID()
    ) async throws -> DeviceIdentity {
        if try await identity() != nil {
            throw LocalStoreError(.identityExists, "this store already has a device identity")
        }
        let key = X25519PrivateKey()
        try DeviceKeyFile.create(key, at: keyPath)
        let identity = DeviceIdentity(id: id, userID: nil, name: name, deviceType: deviceType, hostname: hostname,
                                      role: role, publicKey: key.publicKey, createdAt: Date())
        do {
            try await mapErrors("saving identity") {
                try await pool.write { db in
                    try db.execute(sql: """
                        INSERT INTO device_identity (singleton, id, user_id, name, device_type, hostname, role, public_key, created_at)
                        VALUES (1, ?, NULL, ?, ?, ?, ?, ?, ?)
                        """, arguments: [id.canonical, name, deviceType.rawValue, hostname, role.rawValue, key.publicKey.base64, identity.createdAt.epoch])
                }
            }
        } catch {
            // No identity row means the key we just wrote belongs to nobody: remove it.
            try? FileManager.default.removeItem(atPath: keyPath)
            throw error
        }
        return identity
    }

    /// Records the user this device belongs to (at login).
    public func setUserID(_ userID: UUID) async throws {
        try await mapErrors("saving user id") {
            try await pool.write { db in
                try db.execute(sql: "UPDATE device_identity SET user_id = ?", arguments: [userID.canonical])
                if db.changesCount == 0 { throw LocalStoreError(.identityMissing, "this store has no device identity; run `sync-cli init` first") }
            }
        }
    }

    /// Loads the device's private key, checking the file's permissions and that it matches the
    /// identity's public key.
    ///
    /// - Throws: ``LocalStoreError`` `.keyFileMissing`, `.keyFileTooOpen`, `.keyFileMalformed`,
    ///   `.keyMismatch`, `.identityMissing`.
    public func deviceKey() async throws -> X25519PrivateKey {
        let identity = try await requireIdentity()
        let key = try DeviceKeyFile.load(from: keyPath)
        guard key.publicKey == identity.publicKey else {
            throw LocalStoreError(.keyMismatch, "\(keyPath) does not match this store's device identity")
        }
        return key
    }

    // MARK: - Repositories

    /// Inserts or updates `rows` by id, in one transaction.
    ///
    /// - Parameters:
    ///   - rows: The repositories; a row whose `(deviceID, localPath)` belongs to another id fails.
    ///   - progress: Called with the number of rows written so far, every 1,000 rows and at the end.
    /// - Throws: ``LocalStoreError`` `.uniqueViolation`; nothing is written then.
    public func upsertRepositories(_ rows: [RepositoryRecord], progress: (@Sendable (Int) -> Void)? = nil) async throws {
        try await upsert(rows, progress: progress)
    }

    /// All repositories, or those updated after `since`, ordered by `(updated_at, id)`.
    public func repositories(changedSince since: Date? = nil) async throws -> [RepositoryRecord] {
        try await fetch(RepositoryRecord.self, changedSince: since)
    }

    /// One repository.
    public func repository(id: UUID) async throws -> RepositoryRecord? {
        try await fetchOne(RepositoryRecord.self, id: id)
    }

    /// Deletes every repository (and, by cascade, its sessions) whose id is not in `ids`.
    ///
    /// - Returns: The number of repositories deleted.
    @discardableResult
    public func deleteRepositories(notIn ids: Set<UUID>) async throws -> Int {
        try await deleteRows(RepositoryRecord.self, notIn: ids)
    }

    /// Deletes the repositories with these ids (and their sessions).
    @discardableResult
    public func deleteRepositories(ids: Set<UUID>) async throws -> Int {
        try await deleteRows(RepositoryRecord.self, ids: ids)
    }

    /// A pull's view of the remote, applied in one transaction: rows not in `retaining` are
    /// deleted first (so a path freed remotely can be reused), then `rows` are upserted.
    public func applyRepositories(_ rows: [RepositoryRecord], retaining: Set<UUID>?) async throws {
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

    /// All sessions, or those updated after `since`, ordered by `(updated_at, id)`.
    public func sessions(changedSince since: Date? = nil) async throws -> [SessionRecord] {
        try await fetch(SessionRecord.self, changedSince: since)
    }

    /// One session.
    public func session(id: UUID) async throws -> SessionRecord? {
        try await fetchOne(SessionRecord.self, id: id)
    }

    /// Deletes every session whose id is not in `ids`.
    @discardableResult
    public func deleteSessions(notIn ids: Set<UUID>) async throws -> Int {
        try await deleteRows(SessionRecord.self, notIn: ids)
    }

    /// Deletes the sessions with these ids.
    @discardableResult
    public func deleteSessions(ids: Set<UUID>) async throws -> Int {
        try await deleteRows(SessionRecord.self, ids: ids)
    }

    /// A pull's view of the remote sessions, applied in one transaction (deletions first).
    public func applySessions(_ rows: [SessionRecord], retaining: Set<UUID>?) async throws {
        try await apply(rows, retaining: retaining)
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
        let sealed = try sessions.map { try SecretEnvelope.seal(SessionSecret(), for: identity.publicKey, sessionID: SessionID($0.id)) }
        try await mapErrors("creating sessions") {
            try await pool.write { db in
                let sequence = try Self.nextChangeSequence(db)
                let insert = try db.cachedStatement(sql: "INSERT INTO sessions (\((SessionRecord.columns + ["change_seq"]).joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: SessionRecord.columns.count + 1).joined(separator: ", ")))")
                let secret = try db.cachedStatement(sql: "INSERT INTO own_session_secrets (session_id, ephemeral_public_key, encrypted_secret) VALUES (?, ?, ?)")
                for (session, envelope) in zip(sessions, sealed) {
                    try insert.execute(arguments: StatementArguments(session.values + [sequence]))
                    try secret.execute(arguments: [session.id.canonical, envelope.ephemeralPublicKey, envelope.encryptedSecret])
                }
            }
        }
    }

    /// The sealed secrets of this desktop's sessions, keyed by session id.
    public func ownSealedSecrets() async throws -> [UUID: SecretEnvelope] {
        try await mapErrors("reading session secrets") {
            try await pool.read { db in
                var result: [UUID: SecretEnvelope] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT session_id, ephemeral_public_key, encrypted_secret FROM own_session_secrets") {
                    result[try row.uuid("session_id")] = SecretEnvelope(ephemeralPublicKey: row["ephemeral_public_key"], encryptedSecret: row["encrypted_secret"])
                }
                return result
            }
        }
    }

    /// Opens a session's secret (desktop side) with the device key.
    ///
    /// - Parameters:
    ///   - sessionID: The session.
    ///   - key: The device key, when the caller already loaded it; otherwise it is loaded.
    /// - Throws: ``LocalStoreError`` `.notFound` or `.secretUnreadable`.
    public func openOwnSecret(sessionID: UUID, using key: X25519PrivateKey? = nil) async throws -> SessionSecret {
        let envelope = try await mapErrors("reading session secret") {
            try await pool.read { db in
                try Row.fetchOne(db, sql: "SELECT ephemeral_public_key, encrypted_secret FROM own_session_secrets WHERE session_id = ?", arguments: [sessionID.canonical])
                    .map { SecretEnvelope(ephemeralPublicKey: $0["ephemeral_public_key"], encryptedSecret: $0["encrypted_secret"]) }
            }
        }
        guard let envelope else { throw LocalStoreError(.notFound, "no secret for session \(sessionID.canonical)") }
        let deviceKey: X25519PrivateKey
        if let key { deviceKey = key } else { deviceKey = try await self.deviceKey() }
        do {
            return try envelope.open(sessionID: SessionID(sessionID), using: deviceKey)
        } catch {
            throw LocalStoreError(.secretUnreadable, "the secret of session \(sessionID.canonical) cannot be opened with this device's key")
        }
    }

    // MARK: - Phone: received envelopes

    /// Stores envelopes addressed to this device, as received, in one transaction.
    ///
    /// - Throws: ``LocalStoreError`` `.foreignKeyViolation` for an unknown session.
    public func upsertReceivedEnvelopes(_ envelopes: [ReceivedEnvelope]) async throws {
        try await mapErrors("saving envelopes") {
            try await pool.write { db in
                let statement = try db.cachedStatement(sql: """
                    INSERT INTO received_envelopes (session_id, ephemeral_public_key, encrypted_secret, fetched_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (session_id) DO UPDATE SET ephemeral_public_key = excluded.ephemeral_public_key,
                        encrypted_secret = excluded.encrypted_secret, fetched_at = excluded.fetched_at
                    """)
                for item in envelopes {
                    try statement.execute(arguments: [item.sessionID.canonical, item.envelope.ephemeralPublicKey, item.envelope.encryptedSecret, item.fetchedAt.epoch])
                }
            }
        }
    }

    /// All received envelopes.
    public func receivedEnvelopes() async throws -> [ReceivedEnvelope] {
        try await mapErrors("reading envelopes") {
            try await pool.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM received_envelopes ORDER BY session_id").map { row in
                    ReceivedEnvelope(
                        sessionID: try row.uuid("session_id"),
                        envelope: SecretEnvelope(ephemeralPublicKey: row["ephemeral_public_key"], encryptedSecret: row["encrypted_secret"]),
                        fetchedAt: row.date("fetched_at")
                    )
                }
            }
        }
    }

    /// Deletes received envelopes whose session is not in `sessionIDs`.
    @discardableResult
    public func deleteReceivedEnvelopes(notIn sessionIDs: Set<UUID>) async throws -> Int {
        try await mapErrors("deleting envelopes") {
            try await pool.write { db in
                try db.execute(sql: "DELETE FROM received_envelopes WHERE session_id NOT IN (SELECT value FROM json_each(?))", arguments: [jsonArray(sessionIDs)])
                return db.changesCount
            }
        }
    }

    /// Opens a received envelope with the device key.
    ///
    /// - Throws: ``LocalStoreError`` `.notFound` or `.secretUnreadable`.
    public func openReceivedSecret(sessionID: UUID, using key: X25519PrivateKey? = nil) async throws -> SessionSecret {
        let envelope = try await mapErrors("reading envelope") {
            try await pool.read { db in
                try Row.fetchOne(db, sql: "SELECT ephemeral_public_key, encrypted_secret FROM received_envelopes WHERE session_id = ?", arguments: [sessionID.canonical])
                    .map { SecretEnvelope(ephemeralPublicKey: $0["ephemeral_public_key"], encryptedSecret: $0["encrypted_secret"]) }
            }
        }
        guard let envelope else { throw LocalStoreError(.notFound, "no envelope for session \(sessionID.canonical)") }
        let deviceKey: X25519PrivateKey
        if let key { deviceKey = key } else { deviceKey = try await self.deviceKey() }
        do {
            return try envelope.open(sessionID: SessionID(sessionID), using: deviceKey)
        } catch {
            throw LocalStoreError(.secretUnreadable, "the envelope for session \(sessionID.canonical) cannot be opened with this device's key")
        }
    }

    // MARK: - Distribution ledger

    /// Every ledger entry.
    public func ledger() async throws -> [LedgerEntry] {
        try await mapErrors("reading ledger") {
            try await pool.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM distribution_ledger").map { row in
                    LedgerEntry(sessionID: try row.uuid("session_id"), recipientDeviceID: try row.uuid("recipient_device_id"),
                                recipientKeyFingerprint: row["recipient_key_fingerprint"], sentAt: row.date("sent_at"))
                }
            }
        }
    }

    /// Records envelopes the remote accepted (replacing older entries for the same pairs).
    public func recordDistributions(_ entries: [LedgerEntry]) async throws {
        try await mapErrors("writing ledger") {
            try await pool.write { db in
                let statement = try db.cachedStatement(sql: """
                    INSERT INTO distribution_ledger (session_id, recipient_device_id, recipient_key_fingerprint, sent_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (session_id, recipient_device_id) DO UPDATE SET
                        recipient_key_fingerprint = excluded.recipient_key_fingerprint, sent_at = excluded.sent_at
                    """)
                for entry in entries {
                    try statement.execute(arguments: [entry.sessionID.canonical, entry.recipientDeviceID.canonical, entry.recipientKeyFingerprint, entry.sentAt.epoch])
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

    // MARK: - Cursors and report

    /// The pull cursor for `table`, if a pull got that far.
    public func cursor(for table: CursorTable) async throws -> PullCursor? {
        try await mapErrors("reading cursor") {
            try await pool.read { db in
                guard let row = try Row.fetchOne(db, sql: "SELECT updated_at, last_id FROM pull_cursors WHERE table_name = ?", arguments: [table.rawValue]) else { return nil }
                return PullCursor(updatedAt: row["updated_at"], id: try row.uuid("last_id"))
            }
        }
    }

    /// Saves (or, with `nil`, clears) the pull cursor for `table`.
    public func setCursor(_ cursor: PullCursor?, for table: CursorTable) async throws {
        try await mapErrors("saving cursor") {
            try await pool.write { db in
                if let cursor {
                    try db.execute(sql: """
                        INSERT INTO pull_cursors (table_name, updated_at, last_id) VALUES (?, ?, ?)
                        ON CONFLICT (table_name) DO UPDATE SET updated_at = excluded.updated_at, last_id = excluded.last_id
                        """, arguments: [table.rawValue, cursor.updatedAt, cursor.id.canonical])
                } else {
                    try db.execute(sql: "DELETE FROM pull_cursors WHERE table_name = ?", arguments: [table.rawValue])
                }
            }
        }
    }

    /// Saves the last sync report (JSON text; it must hold no secret material).
    public func saveLastReport(_ json: String, finishedAt: Date = Date()) async throws {
        try await mapErrors("saving report") {
            try await pool.write { db in
                try db.execute(sql: """
                    INSERT INTO last_sync_report (singleton, finished_at, report) VALUES (1, ?, ?)
                    ON CONFLICT (singleton) DO UPDATE SET finished_at = excluded.finished_at, report = excluded.report
                    """, arguments: [finishedAt.epoch, json])
            }
        }
    }

    /// The last sync report's JSON text and when it finished.
    public func lastReport() async throws -> (json: String, finishedAt: Date)? {
        try await mapErrors("reading report") {
            try await pool.read { db in
                try Row.fetchOne(db, sql: "SELECT report, finished_at FROM last_sync_report").map { ($0["report"], $0.date("finished_at")) }
            }
        }
    }

    /// Row counts of every content table.
    public func counts() async throws -> StoreCounts {
        try await mapErrors("counting rows") {
            try await pool.read { db in
                func count(_ table: String) throws -> Int { try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table)") ?? 0 }
                return StoreCounts(
                    repositories: try count("repositories"), sessions: try count("sessions"),
                    ownSecrets: try count("own_session_secrets"), receivedEnvelopes: try count("received_envelopes"),
                    ledgerEntries: try count("distribution_ledger")
                )
            }
        }
    }

    // MARK: - Desktop: what a push must send

    /// Repositories written after change sequence `sequence`, with the highest sequence among them.
    public func repositories(changedAfter sequence: Int64) async throws -> (rows: [RepositoryRecord], through: Int64) {
        try await changed(RepositoryRecord.self, after: sequence)
    }

    /// Sessions written after change sequence `sequence`, with the highest sequence among them.
    public func sessions(changedAfter sequence: Int64) async throws -> (rows: [SessionRecord], through: Int64) {
        try await changed(SessionRecord.self, after: sequence)
    }

    func changed<R: LocalRow>(_ type: R.Type, after sequence: Int64) async throws -> (rows: [R], through: Int64) {
        try await mapErrors("reading \(R.table)") {
            try await pool.read { db in
                let rows = try Row.fetchAll(db, sql: "SELECT \(R.columns.joined(separator: ", ")), change_seq FROM \(R.table) WHERE change_seq > ? ORDER BY change_seq, id",
                                            arguments: [sequence])
                let through = rows.last.map { $0[R.columns.count] as Int64 } ?? sequence
                return (try rows.map(R.init(row:)), through)
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
                try db.execute(sql: "INSERT OR IGNORE INTO pending_remote_deletions (table_name, id) SELECT ?, value FROM json_each(?) WHERE value IN (SELECT id FROM \(table))",
                               arguments: [table, list])
                try db.execute(sql: "DELETE FROM \(table) WHERE id IN (SELECT value FROM json_each(?))", arguments: [list])
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
                    if (row["table_name"] as String) == "repositories" { repositories.insert(id) } else { sessions.insert(id) }
                }
                return (repositories, sessions)
            }
        }
    }

    /// Forgets pending deletions the remote has made.
    public func clearPendingRemoteDeletions(repositories: Set<UUID>, sessions: Set<UUID>) async throws {
        try await mapErrors("clearing pending deletions") {
            try await pool.write { db in
                try db.execute(sql: "DELETE FROM pending_remote_deletions WHERE table_name = 'repositories' AND id IN (SELECT value FROM json_each(?))",
                               arguments: [jsonArray(repositories)])
                try db.execute(sql: "DELETE FROM pending_remote_deletions WHERE table_name = 'sessions' AND id IN (SELECT value FROM json_each(?))",
                               arguments: [jsonArray(sessions)])
            }
        }
    }

    // MARK: - Settings

    /// A stored setting (remote URL, sync bookkeeping); never a secret.
    public func setting(_ key: String) async throws -> String? {
        try await mapErrors("reading setting") {
            try await pool.read { db in try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = ?", arguments: [key]) }
        }
    }

    /// Stores (or, with `nil`, removes) a setting.
    public func setSetting(_ key: String, _ value: String?) async throws {
        try await mapErrors("saving setting") {
            try await pool.write { db in
                if let value {
                    try db.execute(sql: "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                                   arguments: [key, value])
                } else {
                    try db.execute(sql: "DELETE FROM settings WHERE key = ?", arguments: [key])
                }
            }
        }
    }

    // MARK: - Generic bulk operations

    func upsert<R: LocalRow>(_ rows: [R], progress: (@Sendable (Int) -> Void)?) async throws {
        try await mapErrors("writing \(R.table)") {
            try await pool.write { db in try Self.upsert(rows, in: db, progress: progress) }
        }
    }

    static func upsert<R: LocalRow>(_ rows: [R], in db: Database, progress: (@Sendable (Int) -> Void)?) throws {
        let sequence = try nextChangeSequence(db)
        let statement = try db.cachedStatement(sql: R.upsertSQL)
        for (index, row) in rows.enumerated() {
            try statement.execute(arguments: StatementArguments(row.values + [sequence]))
            if (index + 1) % 1000 == 0 { progress?(index + 1) }
        }
        progress?(rows.count)
    }

    /// Takes the next change sequence number for the current transaction.
    static func nextChangeSequence(_ db: Database) throws -> Int64 {
        try db.execute(sql: "UPDATE change_counter SET value = value + 1")
        return try Int64.fetchOne(db, sql: "SELECT value FROM change_counter") ?? 0
    }

        func apply<R: LocalRow>(_ rows: [R], retaining: Set<UUID>?) async throws {
        try await mapErrors("applying \(R.table)") {
            try await pool.write { db in
                if let retaining {
                    try db.execute(sql: "DELETE FROM \(R.table) WHERE id NOT IN (SELECT value FROM json_each(?))", arguments: [jsonArray(retaining)])
                }
                try Self.upsert(rows, in: db, progress: nil)
            }
        }
    }

    func fetch<R: LocalRow>(_ type: R.Type, changedSince since: Date?) async throws -> [R] {
        try await mapErrors("reading \(R.table)") {
            try await pool.read { db in
                if let since {
                    return try Row.fetchAll(db, sql: "\(R.selectSQL) WHERE updated_at > ? ORDER BY updated_at, id", arguments: [since.epoch]).map(R.init(row:))
                }
                return try Row.fetchAll(db, sql: "\(R.selectSQL) ORDER BY updated_at, id").map(R.init(row:))
            }
        }
    }

    func fetchOne<R: LocalRow>(_ type: R.Type, id: UUID) async throws -> R? {
        try await mapErrors("reading \(R.table)") {
            try await pool.read { db in
                try Row.fetchOne(db, sql: "\(R.selectSQL) WHERE id = ?", arguments: [id.canonical]).map(R.init(row:))
            }
        }
    }

    func deleteRows<R: LocalRow>(_ type: R.Type, notIn ids: Set<UUID>) async throws -> Int {
        try await mapErrors("deleting \(R.table)") {
            try await pool.write { db in
                try db.execute(sql: "DELETE FROM \(R.table) WHERE id NOT IN (SELECT value FROM json_each(?))", arguments: [jsonArray(ids)])
                return db.changesCount
            }
        }
    }

    func deleteRows<R: LocalRow>(_ type: R.Type, ids: Set<UUID>) async throws -> Int {
        try await mapErrors("deleting \(R.table)") {
            try await pool.write { db in
                try db.execute(sql: "DELETE FROM \(R.table) WHERE id IN (SELECT value FROM json_each(?))", arguments: [jsonArray(ids)])
                return db.changesCount
            }
        }
    }
}
