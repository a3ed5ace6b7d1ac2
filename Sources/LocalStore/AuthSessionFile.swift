import Foundation
import SyncModel

/// The signed-in session's file, `auth.json` in the store directory: the one home of the
/// user's tokens on disk.
///
/// Written atomically with mode 0600; read only when it is a regular file owned by this user
/// that nobody else can access (``SecretFile``). The tokens never appear in an error.
public struct AuthSessionFile: Sendable {
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
