import Foundation
import GRDB

/// The one error type of LocalStore, of the same shape as RemoteStore's `RemoteStoreError`.
///
/// A struct with an extensible code, like postgres-nio's `PSQLError`: `code` says what went
/// wrong, `sqliteCode` carries SQLite's extended result code when SQLite said it. Neither the
/// `description` nor the `debugDescription` holds SQL arguments, row contents, keys or secrets.
public struct LocalStoreError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What went wrong.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        // A closed set inside, an open one outside (postgres-nio's `PSQLError.Code`): a new
        // code is not a breaking change for a caller that switches over the public values.
        private enum Base: String, Sendable, Hashable {
            case notADatabase, schemaTooNew, keyFileTooOpen, keyFileMalformed, keyFileMissing,
                authFileTooOpen, authFileMalformed, keyMismatch, identityMissing, userMissing, wrongRole,
                identityExists, uniqueViolation, foreignKeyViolation, storeBusy, notFound, secretUnreadable,
                corruptRow, database, io, diskFull, readOnly, storeDirectoryUnsafe
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }
        public var description: String { base.rawValue }

        /// The file exists but is not a SQLite database; it was left untouched.
        public static let notADatabase = Code(.notADatabase)
        /// The store was written by a newer version of this program; it was left untouched.
        public static let schemaTooNew = Code(.schemaTooNew)
        /// The device key file is readable or writable by group or others.
        public static let keyFileTooOpen = Code(.keyFileTooOpen)
        /// The device key file is not 32 raw bytes, or is not a regular file.
        public static let keyFileMalformed = Code(.keyFileMalformed)
        /// The device key file does not exist.
        public static let keyFileMissing = Code(.keyFileMissing)
        /// The sign-in file (`auth.json`) is readable or writable by group or others, or another
        /// user owns it.
        public static let authFileTooOpen = Code(.authFileTooOpen)
        /// The sign-in file is not a regular file, is too large, or could not be read in full.
        public static let authFileMalformed = Code(.authFileMalformed)
        /// The device key does not match the public key recorded for this store's identity.
        public static let keyMismatch = Code(.keyMismatch)
        /// The store has no device identity yet (`init` was not run).
        public static let identityMissing = Code(.identityMissing)
        /// The store's identity has no user yet (nobody signed in on it).
        public static let userMissing = Code(.userMissing)
        /// The call is a desktop's (repositories and sessions) and this store is a phone's.
        public static let wrongRole = Code(.wrongRole)
        /// The store already has a device identity.
        public static let identityExists = Code(.identityExists)
        /// A unique key would be violated (the remote would reject the same rows).
        public static let uniqueViolation = Code(.uniqueViolation)
        /// A row references a row that does not exist.
        public static let foreignKeyViolation = Code(.foreignKeyViolation)
        /// Another process holds the store's sync lease.
        public static let storeBusy = Code(.storeBusy)
        /// The requested row does not exist.
        public static let notFound = Code(.notFound)
        /// A stored envelope could not be opened with this device's key.
        public static let secretUnreadable = Code(.secretUnreadable)
        /// A row in the database is not what this program wrote.
        public static let corruptRow = Code(.corruptRow)
        /// Any other SQLite failure.
        public static let database = Code(.database)
        /// A file-system operation failed.
        public static let io = Code(.io)
        /// The device that holds the store is full: nothing was half-written; free space and
        /// run again.
        public static let diskFull = Code(.diskFull)
        /// The store is on read-only media, or its directory cannot be written: found before
        /// anything is sent.
        public static let readOnly = Code(.readOnly)
        /// The store directory belongs to another user or others may write to it.
        public static let storeDirectoryUnsafe = Code(.storeDirectoryUnsafe)
    }

    /// The kind of failure.
    public let code: Code
    /// A secret-free explanation.
    public let message: String
    /// SQLite's extended result code, when SQLite reported the failure.
    public let sqliteCode: Int32?

    /// Creates an error.
    public init(_ code: Code, _ message: String, sqliteCode: Int32? = nil) {
        self.code = code
        self.message = message
        self.sqliteCode = sqliteCode
    }

    public var description: String {
        sqliteCode.map { "\(message) (SQLite code \($0))" } ?? message
    }

    public var debugDescription: String { "LocalStoreError(\(code): \(description))" }

    /// Maps a GRDB error to a store error, keeping SQLite's message but never its arguments.
    static func wrap(_ error: Error, context: String) -> Error {
        if error is LocalStoreError || error is CancellationError { return error }
        guard let error = error as? DatabaseError else {
            return LocalStoreError(.database, "\(context): \(type(of: error))")
        }
        let code: Code
        switch error.extendedResultCode {
        case .SQLITE_CONSTRAINT_UNIQUE, .SQLITE_CONSTRAINT_PRIMARYKEY: code = .uniqueViolation
        case .SQLITE_CONSTRAINT_FOREIGNKEY: code = .foreignKeyViolation
        case .SQLITE_NOTADB: code = .notADatabase
        case .SQLITE_IOERR_SHMSIZE:
            // The shared-memory index beside a WAL could not be given its pages: on a nearly
            // full disk that is the first thing to fail when a store opens (a WAL was left, the
            // index must be rebuilt), reported by SQLite as an I/O error, not as SQLITE_FULL.
            return LocalStoreError(.diskFull, diskFullMessage, sqliteCode: error.extendedResultCode.rawValue)
        default:
            switch error.resultCode {
            case .SQLITE_NOTADB: code = .notADatabase
            case .SQLITE_FULL:
                return LocalStoreError(.diskFull, diskFullMessage, sqliteCode: error.extendedResultCode.rawValue)
            case .SQLITE_READONLY:
                return LocalStoreError(
                    .readOnly, "\(context): the store cannot be written (read-only media or directory)",
                    sqliteCode: error.extendedResultCode.rawValue)
            default: code = .database
            }
        }
        return LocalStoreError(
            code, "\(context): \(error.message ?? "SQLite error")", sqliteCode: error.extendedResultCode.rawValue)
    }
}

/// Runs `body`, mapping any GRDB error to a ``LocalStoreError``.
func mapErrors<T>(_ context: String, _ body: () async throws -> T) async throws -> T {
    do { return try await body() } catch { throw LocalStoreError.wrap(error, context: context) }
}
