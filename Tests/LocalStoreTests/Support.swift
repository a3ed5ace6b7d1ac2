import Foundation
import LocalStore
import SyncModel
import TestStack

/// A fresh temporary directory per test, removed when the value is released.
final class TemporaryDirectory: Sendable {
    let url: URL

    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("localstore-\(UUID().canonical)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    var store: URL { url.appendingPathComponent("store") }
}

/// A store with a desktop identity, plus helpers to build rows.
struct Fixture {
    let temporary = TemporaryDirectory()
    let store: DeviceStore
    let identity: DeviceIdentity
    let user = UUID()

    init(role: SyncRole = .desktop) async throws {
        store = try await DeviceStore.opened(directory: temporary.store)
        identity = try await store.createIdentity(
            name: "test desktop", deviceType: .linuxDesktop, hostname: "box", role: role)
        try await store.setUserID(user)
    }

    func repository(path: String = "/src/\(UUID().canonical)", device: UUID? = nil) -> RepositoryRecord {
        RepositoryRecord(
            userID: user, deviceID: device ?? identity.id, name: "repo", localPath: path,
            remoteURL: "git@example.com:a/b.git", defaultBranch: "main")
    }

    func session(in repository: RepositoryRecord) -> SessionRecord {
        SessionRecord(
            userID: user, deviceID: identity.id, repositoryID: repository.id, title: "work",
            sessionPID: 4242, currentBranch: "main", workingDirectory: repository.localPath)
    }
}

/// Runs the test helper executable built next to the test bundle.
struct Helper {
    static var path: String {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent()
                .appendingPathComponent(".build/debug"),
        ].map { $0.appendingPathComponent("localstore-test-helper").path }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates[0]
    }

    let child: SpawnedChild
    /// The child's standard input; closing it ends `hold-lease`.
    var input: FileHandle { child.input! }

    init(_ arguments: [String]) throws {
        child = try SpawnedChild(
            Self.path, arguments, environment: ProcessInfo.processInfo.environment, pipeInput: true, pipeOutput: true)
    }

    /// Reads stdout until `line` appears (or the child exits), off the cooperative pool.
    func wait(for line: String) async throws -> Bool {
        let child = child
        return try await offThePool { Self.read(child, until: line) }
    }

    private static func read(_ child: SpawnedChild, until line: String) -> Bool {
        var seen = ""
        let handle = child.outputPipe!
        while true {
            let chunk = handle.availableData
            if chunk.isEmpty { return false }
            seen += String(decoding: chunk, as: UTF8.self)
            if seen.split(separator: "\n").contains(Substring(line)) { return true }
        }
    }

    func kill() async throws {
        child.kill(SIGKILL)
        _ = try await exited()
    }

    /// Waits (off the cooperative pool) for the child to end; whether `signal` (any signal when
    /// nil) ended it.
    func endedBy(signal: Int32? = nil) async throws -> Bool {
        guard let status = try? await exited(), SpawnedChild.signalled(status) else { return false }
        return signal.map { status & 0x7F == $0 } ?? true
    }

    /// The child's wait status, waited for on a thread of its own.
    func exited() async throws -> Int32 {
        let child = child
        return try await offThePool { try child.wait() }
    }
}
