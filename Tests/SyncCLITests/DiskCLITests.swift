import Foundation
import GRDB
import LocalStore
import SyncModel
import SyncTestSupport
import TestStack
import Testing

/// What a full disk and read-only media do to the real `sync-cli`: a typed error that says what to
/// do, exit status 1, nothing half-written, and convergence once the disk has room again.
@Suite("sync-cli on a full disk and on read-only media", .serialized, .enabled(if: Mounts.available, Mounts.skipReason))
struct DiskCLITests {
    static let diskFull = "no space left on the device that holds the store: free space and run sync again"

    /// SQLite's own check of a store, read-only: "ok" for a store that opens without repair.
    static func integrity(_ store: String) throws -> String {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: store + "/store.sqlite", configuration: configuration)
        return try queue.read { db in
            let check = try String.fetchAll(db, sql: "PRAGMA integrity_check").joined(separator: "; ")
            let keys = try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").count
            return keys == 0 ? check : "\(check); \(keys) foreign key violations"
        }
    }

    static func count(_ store: String, _ table: String) throws -> Int {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: store + "/store.sqlite", configuration: configuration)
        return try queue.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM \(table)") ?? 0 }
    }

    @Test(
        "filled to the last block during session start, push and pull: exit 1 and what to do, nothing half-written; all converges after"
    )
    func diskFull() async throws {
        let cli = try CLI()
        let disk = try Mounts.tmpfs(size: "4m")
        defer { Mounts.unmount(disk) }
        let desktop = disk.appendingPathComponent("d").path, phone = disk.appendingPathComponent("p").path
        let repo = cli.directory.appendingPathComponent("project")
        try FileManager.default.createDirectory(at: repo, withIntermediateDirectories: true)
        #expect(try await cli.run(["init", "--store", desktop, "--role", "desktop", "--name", "laptop"]).status == 0)
        #expect(try await cli.run(["init", "--store", phone, "--role", "mobile", "--name", "phone"]).status == 0)
        for store in [desktop, phone] {
            #expect(try await cli.run(["login", "--store", store, "--email", "q@example.com"]).status == 0)
        }
        #expect(try await cli.run(["repo", "add", "--store", desktop, repo.path]).status == 0)
        for _ in 0..<4 {
            #expect(try await cli.run(["session", "start", "--store", desktop, "--repo", repo.path]).status == 0)
        }
        #expect(try await cli.run(["sync", "--store", desktop]).status == 0)
        // The remote (outside the small disk) holds sessions the phone has not pulled yet, and the
        // desktop holds sessions it has not pushed yet.
        #expect(try await cli.run(["sync", "--store", phone]).status == 0)
        for _ in 0..<3 {
            #expect(try await cli.run(["session", "start", "--store", desktop, "--repo", repo.path]).status == 0)
        }
        #expect(try await cli.run(["sync", "--store", desktop]).status == 0)
        for _ in 0..<2 {
            #expect(try await cli.run(["session", "start", "--store", desktop, "--repo", repo.path]).status == 0)
        }
        let sessionsBefore = try Self.count(desktop, "sessions")

        let filler = try Mounts.fill(disk)
        let started = try await cli.run(["session", "start", "--store", desktop, "--repo", repo.path])
        #expect(started.status == 1 && started.err.contains(Self.diskFull), "\(started.status) \(started.err)")
        // Each process that exits may delete its write-ahead log and so free blocks: top up first.
        _ = try Mounts.fill(disk)
        let pushed = try await cli.run(["push", "--store", desktop])
        #expect(pushed.status == 1 && pushed.err.contains(Self.diskFull), "\(pushed.status) \(pushed.err)")
        _ = try Mounts.fill(disk)
        let pulled = try await cli.run(["pull", "--store", phone])
        #expect(pulled.status == 1 && pulled.err.contains(Self.diskFull), "\(pulled.status) \(pulled.err)")
        // Room again. Before anything writes: both stores open as they are (SQLite's own check,
        // read-only), and the failed session start left nothing behind.
        try FileManager.default.removeItem(at: filler)
        for store in [desktop, phone] { #expect(try Self.integrity(store) == "ok") }
        #expect(try Self.count(desktop, "sessions") == sessionsBefore, "a failed session start left a session")
        #expect(try Self.count(desktop, "own_session_secrets") == sessionsBefore)

        // One normal sync on each device, and the phone opens every secret.
        #expect(try await cli.run(["sync", "--store", desktop]).status == 0)
        #expect(try await cli.run(["sync", "--store", phone]).status == 0)
        let desktopStore = try await DeviceStore.opened(directory: URL(fileURLWithPath: desktop))
        let phoneStore = try await DeviceStore.opened(directory: URL(fileURLWithPath: phone))
        let key = try await phoneStore.deviceKey()
        for session in try await desktopStore.sessions() {
            let mine = try await desktopStore.openOwnSecret(sessionID: session.id)
            #expect(try await phoneStore.openReceivedSecret(sessionID: session.id, using: key) == mine)
        }
        #expect(try await desktopStore.sessions().count == sessionsBefore)
    }

    @Test(
        "a nearly full disk (192 KiB free): every refusal says no space and what to do, never a disk I/O error; a sync converges once there is room"
    )
    func nearlyFullDisk() async throws {
        let cli = try CLI()
        let disk = try Mounts.tmpfs(size: "4m")
        defer { Mounts.unmount(disk) }
        let phone = disk.appendingPathComponent("p").path
        let desktop = cli.directory.appendingPathComponent("desktop").path
        let repo = cli.directory.appendingPathComponent("project")
        try FileManager.default.createDirectory(at: repo, withIntermediateDirectories: true)
        #expect(try await cli.run(["init", "--store", desktop, "--role", "desktop", "--name", "laptop"]).status == 0)
        #expect(try await cli.run(["init", "--store", phone, "--role", "mobile", "--name", "phone"]).status == 0)
        for store in [desktop, phone] {
            #expect(try await cli.run(["login", "--store", store, "--email", "q@example.com"]).status == 0)
        }
        #expect(try await cli.run(["sync", "--store", phone]).status == 0)
        #expect(try await cli.run(["repo", "add", "--store", desktop, repo.path]).status == 0)
        // More than the phone's disk can take: its pull fills the disk part way through.
        let store = try await DeviceStore.opened(directory: URL(fileURLWithPath: desktop))
        let repository = try #require(try await store.repositories().first)
        for _ in 0..<150 { try await store.startSession(repositoryID: repository.id) }
        #expect(try await cli.run(["sync", "--store", desktop]).status == 0)

        let filler = try Mounts.fill(disk, leaving: 192 * 1024)
        #expect((128 * 1024...256 * 1024).contains(Mounts.free(disk)), "\(Mounts.free(disk)) bytes free")
        let pulled = try await cli.run(["pull", "--store", phone])
        #expect(pulled.status == 1 && pulled.err.contains(Self.diskFull), "\(pulled.status) \(pulled.err)")
        #expect(!pulled.err.contains("I/O error"))
        // The pull left its WAL behind; without its index (a store copied or restored without
        // `-shm`), opening the store must rebuild the index, for which there is no room.
        try? FileManager.default.removeItem(atPath: phone + "/store.sqlite-shm")
        let filler2 = try Mounts.fill(disk, leaving: 8 * 1024)
        for command in [["pull", "--store", phone], ["status", "--store", phone]] {
            let result = try await cli.run(command)
            #expect(
                result.status == 1 && result.err.contains(Self.diskFull), "\(command) \(result.status) \(result.err)")
            #expect(!result.err.contains("I/O error"), "\(command): \(result.err)")
        }

        try FileManager.default.removeItem(at: filler)
        try FileManager.default.removeItem(at: filler2)
        let again = try await cli.run(["sync", "--store", phone])
        #expect(again.status == 0, "\(again.err)")
        #expect(try Self.count(phone, "sessions") == 150)
        #expect(try Self.integrity(phone) == "ok")
    }

    /// A server that counts what reaches it (a Supabase project as far as login cares).
    static func countingServer() throws -> HostileServer {
        try HostileServer { _, connection in connection.json(200, "[]", headers: ["content-range": "*/*"]) }
    }

    /// A desktop store logged in to `server` with an access token (login then sends nothing).
    static func loggedIn(_ cli: CLI, _ store: String, server: HostileServer) async throws -> [String: String] {
        let environment = [
            "SYNC_REMOTE": server.baseURL.absoluteString, "SUPABASE_ANON_KEY": "anon",
            "SYNC_ACCESS_TOKEN": "eyJhbGciOiJIUzI1NiJ9."
                + StackEnvironment.base64URL(Data(#"{"sub":"\#(UUID().canonical)"}"#.utf8)) + ".c2ln",
        ]
        #expect(
            try await cli.run(
                ["init", "--store", store, "--role", "desktop", "--name", "laptop"], environment: environment
            )
            .status == 0)
        #expect(try await cli.run(["login", "--store", store], environment: environment).status == 0)
        return environment
    }

    /// Whether a request reaches `server` beyond the `before` it had, within about a minute of
    /// this loop's turns (not of the clock, which runs on while a busy suite keeps every task
    /// from its thread).
    static func requestArrives(at server: HostileServer, after before: Int) async -> Bool {
        for _ in 0..<6_000 where server.requests.count <= before { try? await Task.sleep(for: .milliseconds(10)) }
        return server.requests.count > before
    }

    @Test("a store directory that became read-only: a clear error before any network request")
    func readOnlyDirectory() async throws {
        let cli = try CLI()
        let server = try Self.countingServer()
        defer { server.stop() }
        let store = cli.store("d")
        let environment = try await Self.loggedIn(cli, store, server: server)
        let before = server.requests.count
        try Mounts.bindReadOnly(URL(fileURLWithPath: store))
        defer { Mounts.unmount(URL(fileURLWithPath: store)) }
        for command in [["sync"], ["push"], ["session", "start", "--repo", "x"]] {
            let result = try await cli.run(command + ["--store", store], environment: environment)
            #expect(
                result.status == 1 && result.err.contains("read-only"), "\(command): \(result.status) \(result.err)")
        }
        #expect(server.requests.count == before, "a request reached the server")
    }

    @Test("a read-only store can still be inspected: status, trust status, secrets show, the lists (issue 69 item 12)")
    func readOnlyStoreInspected() async throws {
        let cli = try CLI()
        let store = cli.store("d")
        let repo = cli.directory.appendingPathComponent("project")
        try FileManager.default.createDirectory(at: repo, withIntermediateDirectories: true)
        #expect(try await cli.run(["init", "--store", store, "--role", "desktop", "--name", "laptop"]).status == 0)
        #expect(try await cli.run(["login", "--store", store, "--email", "q@example.com"]).status == 0)
        #expect(try await cli.run(["repo", "add", "--store", store, repo.path]).status == 0)
        let session = try await cli.run(["session", "start", "--store", store, "--repo", repo.path]).out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try await cli.run(["sync", "--store", store]).status == 0)
        try Mounts.bindReadOnly(URL(fileURLWithPath: store))
        defer { Mounts.unmount(URL(fileURLWithPath: store)) }
        let reads: [[String]] = [
            ["status"], ["status", "--json"], ["trust", "status"], ["secrets", "show", session], ["repo", "list"],
            ["session", "list"],
        ]
        for command in reads {
            let result = try await cli.run(command + ["--store", store])
            #expect(result.status == 0, "\(command): \(result.status) \(result.err)")
        }
        let status = try await cli.run(["status", "--store", store])
        #expect(status.out.contains("laptop"), "\(status.out)")
        // A command that writes is still refused, saying why.
        let sync = try await cli.run(["sync", "--store", store])
        #expect(sync.status == 1 && sync.err.contains("read-only"), "\(sync.status) \(sync.err)")
    }

    @Test("a store on read-only media: a clear error before any network request")
    func readOnlyMedia() async throws {
        let cli = try CLI()
        let server = try Self.countingServer()
        defer { server.stop() }
        let media = try Mounts.tmpfs(size: "8m")
        defer { Mounts.unmount(media) }
        let store = media.appendingPathComponent("d").path
        let environment = try await Self.loggedIn(cli, store, server: server)
        let before = server.requests.count
        try Mounts.remountReadOnly(media)
        let result = try await cli.run(["sync", "--store", store], environment: environment)
        #expect(result.status == 1 && result.err.contains("read-only file system"), "\(result.status) \(result.err)")
        #expect(server.requests.count == before, "a request reached the server")
    }
}
