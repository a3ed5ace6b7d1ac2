import Foundation
import GRDB
import SyncModel

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension DeviceStore {
    /// Opens an existing store for reading only: nothing is created, migrated, repaired or
    /// written, so a store on read-only media, or in a directory this user cannot write, can
    /// still be inspected (`sync-cli status`, `trust status`, `secrets show`). Any write through
    /// the returned store fails with SQLite's read-only error.
    ///
    /// - Parameters:
    ///   - directory: The store directory; it must hold `store.sqlite`.
    ///   - keyStore: Where the private keys live; `nil` for the files in `directory`.
    /// - Throws: ``LocalStoreError`` `.notFound` when there is no store, `.readOnly` when its
    ///   schema is older than this program's (upgrading it needs a write), `.schemaTooNew`,
    ///   `.notADatabase`, `.storeDirectoryUnsafe` or `.io`.
    public static func openedReadOnly(
        directory: URL, keyStore: (any DeviceKeyStore)? = nil
    ) async throws
        -> DeviceStore
    {
        try await Blocking.run {
            try DeviceStore(
                directory: directory, busyTimeout: 10, keyStore: keyStore, sharedContainer: false, readOnly: true)
        }
    }

    /// Refuses a missing or unsafe store before a read-only open.
    static func checkReadable(_ directory: String, database: String) throws {
        guard FileManager.default.fileExists(atPath: database) else {
            throw LocalStoreError(.notFound, "no store at \(directory)")
        }
        try checkDirectory(directory)
    }

    /// The name SQLite opens a store by for reading only. A WAL database needs its
    /// shared-memory file, which SQLite cannot create in a directory nobody may write; there,
    /// when no write-ahead log was left behind (nothing committed is outside the database
    /// file, and nobody can be writing), the file is opened as immutable. Elsewhere the path
    /// itself, opened read-only.
    static func readOnlyName(_ path: String) -> String {
        let directory = (path as NSString).deletingLastPathComponent
        guard isReadOnly(directory), !FileManager.default.fileExists(atPath: path + "-wal") else { return path }
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "?#%")
        let escaped = path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path
        return "file:\(escaped)?immutable=1"
    }
}
