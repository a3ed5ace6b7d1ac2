import Foundation
import GRDB
import SecretCrypto
import SyncModel
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
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
/// let store = try await DeviceStore.opened(directory: DeviceStore.defaultDirectory())
/// let me = try await store.createIdentity(name: "Quinn's laptop", deviceType: .linuxDesktop, role: .desktop)
/// ```
public final class DeviceStore: Sendable {
    /// The store directory.
    public let directory: URL
    /// Where this device's private keys live (``FileKeyStore`` over ``directory`` unless the
    /// app gave another).
    public let keys: any DeviceKeyStore
    let pool: DatabasePool
    /// This store's entry in ``openStores``.
    let openKey: String

    /// The database file's path.
    public var databasePath: String { directory.appendingPathComponent("store.sqlite").path }
    /// The device key file's path, in the default ``FileKeyStore``.
    public var keyPath: String { directory.appendingPathComponent(DeviceKeyName.encryption.fileName).path }

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
    ///   - keyStore: Where the private keys live; `nil` for 0600 files in `directory`.
    ///   - sharedContainer: `true` for a store an app shares with its extensions (an App Group
    ///     container): GRDB observes suspension, so a suspended app holds no SQLite lock; the app
    ///     posts GRDB's `Database.suspendNotification` when it moves to the background and
    ///     `Database.resumeNotification` when it comes back (reads fail while suspended). Opening a store whose schema is current takes no write lock either way, so an
    ///     extension opens it while the app writes.
    /// - Throws: ``LocalStoreError`` with `.notADatabase` or `.schemaTooNew` (the file is then left
    ///   untouched), or `.io`.
    public convenience init(
        directory: URL, busyTimeout: TimeInterval = 10, keyStore: (any DeviceKeyStore)? = nil,
        sharedContainer: Bool = false
    ) throws {
        try self.init(
            directory: directory, busyTimeout: busyTimeout, keyStore: keyStore, sharedContainer: sharedContainer,
            readOnly: false)
    }

    /// Opens the store read-write (creating it), or, with `readOnly`, an existing store without
    /// writing anything (``openedReadOnly(directory:keyStore:)``).
    init(
        directory: URL, busyTimeout: TimeInterval, keyStore: (any DeviceKeyStore)?, sharedContainer: Bool,
        readOnly: Bool
    ) throws {
        self.directory = directory
        keys = keyStore ?? FileKeyStore(directory: directory)
        let path = directory.appendingPathComponent("store.sqlite").path
        if readOnly {
            try Self.checkReadable(directory.path, database: path)
        } else {
            try Self.prepareWritable(directory)
        }
        // Closing any descriptor of a SQLite file drops every POSIX lock this process holds on
        // it, so the file is opened for these checks only when no store of this process has it
        // open (it was checked then).
        let key = (path as NSString).standardizingPath
        try Self.openStores.withLock { open in
            if open[key, default: 0] == 0 { try Self.checkHeader(path) }
            if !readOnly { try Self.createPrivately(path) }
            open[key, default: 0] += 1
        }
        openKey = key

        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(busyTimeout)
        configuration.label = "DeviceStore"
        configuration.observesSuspensionNotifications = sharedContainer
        configuration.readonly = readOnly
        // SQLite's temporary files (the statement journal: the pages a statement changes, kept
        // so that it can be undone alone) stay in memory instead of /var/tmp, outside this 0700
        // directory. Applying 100,000 pulled sessions wrote about 1,000,000 pages there.
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA temp_store = MEMORY") }
        do {
            pool = try DatabasePool(path: readOnly ? Self.readOnlyName(path) : path, configuration: configuration)
        } catch {
            Self.release(key)
            throw LocalStoreError.wrap(error, context: "cannot open \(path)")
        }
        do {
            try Self.bringUpToDate(pool, path: path, readOnly: readOnly)
        } catch {
            throw LocalStoreError.wrap(error, context: "cannot prepare \(path)")
        }
    }

    /// Creates the store directory (0700) when missing and refuses one that is unsafe or cannot
    /// be written.
    static func prepareWritable(_ directory: URL) throws {
        do {
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            // Found before anything is sent: the parent is read-only, or cannot be written.
            let parent = directory.deletingLastPathComponent().path
            if Self.isReadOnly(parent) {
                throw LocalStoreError(
                    .readOnly, "cannot create the store directory \(directory.path): \(parent) is read-only")
            }
            throw LocalStoreError(.io, "cannot create store directory \(directory.path)")
        }
        try Self.checkDirectory(directory.path)
        try Self.checkWritable(directory.path)
        AtomicFile.removeStaleTemporaries(in: directory.path)
    }

    /// Migrates the schema (read-write), or checks that it is current (read-only).
    static func bringUpToDate(_ pool: DatabasePool, path: String, readOnly: Bool) throws {
        let migrator = Schema.migrator
        let superseded = try pool.read { try migrator.hasBeenSuperseded($0) }
        guard !superseded else {
            throw LocalStoreError(
                .schemaTooNew,
                "\(path) was written by a newer version of this program; upgrade it (the store was not modified)")
        }
        if readOnly {
            guard try pool.read({ try migrator.hasCompletedMigrations($0) }) else {
                throw LocalStoreError(
                    .readOnly,
                    "\(path) was written by an older version of this program and must be upgraded, which needs to write it; make the store writable and run any command once"
                )
            }
            return
        }
        // A current schema is only read (GRDB's migrator writes nothing then): another
        // process's write does not hold up the opening (SharedOpenTests).
        try migrator.migrate(pool)
        // A bulk load of sessions that did not finish left their indexes dropped.
        if try pool.read(Schema.sessionIndexesMissing) { try pool.write(Schema.buildSessionIndexes) }
    }

    /// Opens the store as ``init(directory:busyTimeout:keyStore:sharedContainer:)`` does, on a
    /// thread of its own: opening may migrate the schema or rebuild indexes, which waits out
    /// `busyTimeout` while another process writes, and that wait must not hold one of the
    /// cooperative pool's threads (an app's other tasks would wait for it).
    public static func opened(
        directory: URL, busyTimeout: TimeInterval = 10, keyStore: (any DeviceKeyStore)? = nil,
        sharedContainer: Bool = false
    ) async throws -> DeviceStore {
        try await Blocking.run {
            try DeviceStore(
                directory: directory, busyTimeout: busyTimeout, keyStore: keyStore, sharedContainer: sharedContainer)
        }
    }

    /// Refuses a store directory that is not a directory, belongs to another user, or that
    /// group or others may write (they could swap the key file or the database).
    /// Database files this process has open, with how many stores hold each.
    static let openStores = Mutex<[String: Int]>([:])

    static func release(_ key: String) {
        openStores.withLock { open in
            open[key, default: 1] -= 1
            if open[key] == 0 { open[key] = nil }
        }
    }

    deinit { Self.release(openKey) }

    static func checkDirectory(_ path: String) throws {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw LocalStoreError(.io, "\(path) is not a directory")
        }
        guard info.st_uid == geteuid() else {
            throw LocalStoreError(
                .storeDirectoryUnsafe, "\(path) is owned by uid \(info.st_uid), not by the current user")
        }
        guard info.st_mode & 0o022 == 0 else {
            throw LocalStoreError(
                .storeDirectoryUnsafe,
                String(
                    format: "permissions 0%o for %@ let others write to the store (chmod 700 %@)", info.st_mode & 0o777,
                    path, path))
        }
    }

    /// Refuses, before anything else happens, a store that cannot be written: one on read-only
    /// media, or whose directory this user cannot write (the store, its journal and its lease
    /// all live there).
    ///
    /// - Throws: ``LocalStoreError`` `.readOnly`.
    static func checkWritable(_ path: String) throws {
        var info = statvfs()
        if statvfs(path, &info) == 0, info.f_flag & UInt(ST_RDONLY) != 0 {
            throw LocalStoreError(
                .readOnly,
                "the store at \(path) is on a read-only file system; move it (or remount the media read-write) and try again"
            )
        }
        guard access(path, W_OK | X_OK) == 0 else {
            throw LocalStoreError(
                .readOnly,
                "the store directory \(path) cannot be written by this user; make it writable (chmod u+w) and try again"
            )
        }
    }

    /// Whether `path` is on read-only media or cannot be written by this user.
    static func isReadOnly(_ path: String) -> Bool {
        var info = statvfs()
        if statvfs(path, &info) == 0, info.f_flag & UInt(ST_RDONLY) != 0 { return true }
        return access(path, W_OK) != 0
    }

    /// Creates the database file with mode 0600 before SQLite does (SQLite gives its WAL and
    /// shared-memory files the database file's mode); an existing file is narrowed to 0600 by
    /// path (`chmod` takes no descriptor, so it cannot drop a lock).
    static func createPrivately(_ path: String) throws {
        var info = stat()
        if lstat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFREG else {
                throw LocalStoreError(.notADatabase, "\(path) is not a regular file; refusing to open it")
            }
            if info.st_mode & 0o077 != 0 { chmod(path, 0o600) }
            return
        }
        // The file does not exist, so no connection of this process can hold locks on it.
        let descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if descriptor >= 0 { close(descriptor) }
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
}
