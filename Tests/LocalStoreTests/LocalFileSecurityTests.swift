import Foundation
import SyncModel
import Testing

@testable import LocalStore

#if canImport(Glibc)
import Glibc
#endif

/// The audit's finding 20: files in the store directory are only trusted when they are what
/// they claim to be, owned by this user and closed to others.
@Suite("Local file security")
struct LocalFileSecurityTests {
    /// Runs `body` on another thread and waits at most `limit`; `unblock` is called if it has
    /// not finished by then (so a regression hangs this test for seconds, not forever).
    static func finishes<T: Sendable>(
        within limit: TimeInterval, unblock: @escaping @Sendable () -> Void,
        _ body: @escaping @Sendable () -> T
    ) -> T? {
        let done = DispatchSemaphore(value: 0)
        let result = LockedBox<T>()
        Thread {
            result.set(body())
            done.signal()
        }.start()
        if done.wait(timeout: .now() + limit) == .success { return result.get() }
        unblock()
        _ = done.wait(timeout: .now() + 5)
        return nil
    }

    @Test("a FIFO planted as device.key is refused at once instead of blocking the command")
    func fifoKeyFile() async throws {
        let fixture = try await Fixture()
        let path = fixture.store.keyPath
        try FileManager.default.removeItem(atPath: path)
        #expect(mkfifo(path, 0o600) == 0)
        let outcome = Self.finishes(
            within: 5,
            unblock: {
                let writer = open(path, O_WRONLY | O_NONBLOCK)
                if writer >= 0 { close(writer) }
            }
        ) { () -> String in
            do {
                _ = try DeviceKeyFile.load(from: path)
                return "loaded"
            } catch let error as LocalStoreError { return error.code.description } catch { return "other" }
        }
        #expect(
            outcome == LocalStoreError.Code.keyFileMalformed.description,
            "blocked or accepted: \(outcome ?? "did not finish")")
    }

    @Test("a FIFO or another user's file as auth.json is refused", .enabled(if: geteuid() == 0))
    func authFileOwnership() throws {
        let directory = TemporaryDirectory()
        let path = directory.url.appendingPathComponent("auth.json").path
        try SecretFile.write(Data("{}".utf8), to: path)
        #expect(try SecretFile.read(path) == Data("{}".utf8))
        #expect(chown(path, 65534, 65534) == 0)
        #expect { try SecretFile.read(path) } throws: { ($0 as? LocalStoreError)?.code == .authFileTooOpen }
        try FileManager.default.removeItem(atPath: path)
        #expect(mkfifo(path, 0o600) == 0)
        let outcome = Self.finishes(
            within: 5,
            unblock: {
                let writer = open(path, O_WRONLY | O_NONBLOCK)
                if writer >= 0 { close(writer) }
            }
        ) { () -> String in
            do {
                _ = try SecretFile.read(path)
                return "read"
            } catch let error as LocalStoreError { return error.code.description } catch { return "other" }
        }
        #expect(outcome == LocalStoreError.Code.authFileMalformed.description)
    }

    @Test("store.sqlite and its WAL files are created 0600, and an old 0644 database is narrowed")
    func databaseMode() async throws {
        let fixture = try await Fixture()
        try await fixture.store.upsertRepositories([fixture.repository()])
        for name in ["store.sqlite", "store.sqlite-wal", "store.sqlite-shm"] {
            let path = fixture.temporary.store.appendingPathComponent(name).path
            guard FileManager.default.fileExists(atPath: path) else { continue }
            let mode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
            #expect(mode & 0o077 == 0, "\(name) is \(String(mode, radix: 8))")
        }
        let database = fixture.store.databasePath
        #expect(chmod(database, 0o644) == 0)
        _ = try await DeviceStore.opened(directory: fixture.temporary.store)
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: database)[.posixPermissions] as? Int)
        #expect(mode & 0o077 == 0)
    }

    @Test("a store directory that group or others can write is refused", arguments: [0o777, 0o770, 0o722, 0o702])
    func writableDirectory(mode: Int) throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(at: directory.store, withIntermediateDirectories: true)
        #expect(chmod(directory.store.path, mode_t(mode)) == 0)
        #expect { try DeviceStore(directory: directory.store) } throws: {
            ($0 as? LocalStoreError)?.code == .storeDirectoryUnsafe
        }
    }

    @Test(
        "git remote URLs lose credentials before they are stored, printed or sent",
        arguments: [
            ("https://user:ghp_secret@github.com/org/repo.git", "https://github.com/org/repo.git"),
            ("https://x-access-token:ghp_secret@github.com/org/repo", "https://github.com/org/repo"),
            (
                "https://ghp_secret@gitlab.com/org/repo.git?private_token=ghp_secret#frag",
                "https://gitlab.com/org/repo.git"
            ),
            ("ssh://git:pw@host:22/repo.git", "ssh://host:22/repo.git"),
            ("git@github.com:org/repo.git", "git@github.com:org/repo.git"),
            ("/srv/git/repo.git", "/srv/git/repo.git"),
        ])
    func remoteURLs(raw: String, expected: String) async throws {
        #expect(RemoteURL.redacted(raw) == expected)
        let fixture = try await Fixture()
        var repository = fixture.repository()
        repository.remoteURL = raw
        #expect(repository.remoteURL == expected)
        try await fixture.store.upsertRepositories([repository])
        #expect(try await fixture.store.repository(id: repository.id)?.remoteURL == expected)
        #expect(!(try await fixture.store.repositories().contains { $0.remoteURL?.contains("ghp_secret") == true }))
    }
}

/// A value set on one thread and read on another.
final class LockedBox<T: Sendable>: @unchecked Sendable {
    // @unchecked: every access goes through `lock`.
    private let lock = NSLock()
    private var value: T?
    func set(_ newValue: T) {
        lock.lock()
        value = newValue
        lock.unlock()
    }
    func get() -> T? {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
}

@Suite("Small files written so that a kill cannot half-write them")
struct AtomicFileTests {
    /// Runs the helper, which kills itself after `step`; returns whether it got that far.
    static func killed(after step: AtomicFile.Step, kind: String, in directory: URL) async throws -> Bool {
        let child = try Helper(["atomic-write", directory.path, kind, step.rawValue])
        return try await child.endedBy(signal: SIGKILL)
    }

    @Test(
        "killed after each step, auth.json is the old file or the whole new one, and the store clears what was left",
        arguments: AtomicFile.Step.allCases)
    func replaceKilledAtEveryStep(step: AtomicFile.Step) async throws {
        let directory = TemporaryDirectory()
        let path = directory.url.appendingPathComponent("auth.json").path
        let old = Data(repeating: 0x4F, count: 100)
        try SecretFile.write(old, to: path)
        #expect(try await Self.killed(after: step, kind: "replace", in: directory.url))
        let now = try #require(try SecretFile.read(path))
        // Before the rename the old file stands; from it on, the whole new one.
        let renamed = [.renamed, .directorySynced].contains(step)
        #expect(now == (renamed ? Data(repeating: 0x4E, count: 4096) : old))
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        // A killed writer's temporary file goes when the store next looks.
        AtomicFile.removeStaleTemporaries(in: directory.url.path)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
        #expect(names == ["auth.json"])
    }

    @Test(
        "killed after each step, a created key file is absent or whole, never short",
        arguments: AtomicFile.Step.allCases)
    func createKilledAtEveryStep(step: AtomicFile.Step) async throws {
        let directory = TemporaryDirectory()
        let path = directory.url.appendingPathComponent("new.key").path
        #expect(try await Self.killed(after: step, kind: "create", in: directory.url))
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
        let linked = [.renamed, .directorySynced].contains(step)
        #expect(size == (linked ? 4096 : nil))
        AtomicFile.removeStaleTemporaries(in: directory.url.path)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
        #expect(names == (linked ? ["new.key"] : []))
    }
}
