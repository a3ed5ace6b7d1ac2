import Foundation
import SyncModel

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The signed-in session's file, `auth.json` in the store directory: the one home of the
/// user's tokens on disk.
///
/// Written atomically with mode 0600; read only when it is a regular file owned by this user
/// that nobody else can access (``SecretFile``). The tokens never appear in an error.
public struct AuthSessionFile: AuthSessionStorage {
    /// Why the saved session cannot be used.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String { "\(path): \(reason); run `sync-cli login` again" }
    }

    /// The file's path.
    public let path: String

    /// The file of the store in `directory`.
    public init(directory: URL) {
        path = directory.appendingPathComponent("auth.json").path
    }

    /// Saves `session`, atomically, mode 0600.
    ///
    /// - Throws: ``LocalStoreError`` `.io`.
    public func save(_ session: AuthSession) throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        try SecretFile.write(try encoder.encode(session), to: path)
    }

    /// The saved session, or `nil` when there is none.
    ///
    /// - Throws: ``LocalStoreError`` when the file is unsafe (``SecretFile/read(_:)``);
    ///   ``Failure`` when it is not a saved session.
    public func load() throws -> AuthSession? {
        guard let data = try SecretFile.read(path) else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        do {
            return try decoder.decode(AuthSession.self, from: data)
        } catch {
            throw Failure(path: path, reason: "not a saved session")
        }
    }

    /// `auth.lock` beside the file: the lock the processes sharing a store (an app and its
    /// notification extension) hold while one of them refreshes the session.
    public var lockPath: String { (path as NSString).deletingLastPathComponent + "/auth.lock" }

    /// Runs `body` holding an exclusive `flock` on ``lockPath`` (created 0600), waiting up to
    /// `timeout` for another process to let it go.
    ///
    /// - Throws: ``LocalStoreError`` `.storeBusy` after `timeout`, `.io` when the lock file
    ///   cannot be opened; what `body` throws.
    public func exclusively<T>(timeout: Duration = .seconds(30), _ body: () async throws -> T) async throws -> T {
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw LocalStoreError(.io, "cannot open \(lockPath)") }
        defer { close(descriptor) }
        let deadline = ContinuousClock.now + timeout
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard ContinuousClock.now < deadline else {
                throw LocalStoreError(.storeBusy, "another process held \(lockPath) for too long")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        defer { _ = flock(descriptor, LOCK_UN) }
        return try await body()
    }

    /// Removes the saved session (log out); nothing happens when there is none.
    public func remove() throws {
        guard FileManager.default.fileExists(atPath: path) else { return }
        do { try FileManager.default.removeItem(atPath: path) } catch {
            throw LocalStoreError(.io, "cannot remove \(path)")
        }
    }
}

extension DeviceStore {
    /// This store's `auth.json`.
    public var authSessionFile: AuthSessionFile { AuthSessionFile(directory: directory) }
}
