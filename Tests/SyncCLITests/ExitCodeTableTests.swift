import EmbeddedRemote
import Foundation
import GRDB
import LocalStore
import RemoteStore
import SyncModel
import SyncTestSupport
import TestStack
import Testing

/// The exit-status table of `push`, `pull` and `sync` (README.md and docs/cli.md say it; they are
/// the one truth): every status either names is provoked here, with the real `sync-cli`, and a
/// status added to the table without a case here fails the test (issue 52, item 6).
@Suite("sync-cli: the exit-status table, row by row")
struct ExitCodeTableTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The statuses a document's exit-status paragraph names: `**N**` and "exit N".
    static func statuses(in file: String, after marker: String) throws -> Set<Int32> {
        let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
        let start = try #require(text.range(of: marker)).lowerBound
        let paragraph = text[start...].components(separatedBy: "\n\n")[0]
        var found = Set(paragraph.matches(of: /\*\*(\d+)\*\*/).compactMap { Int32($0.1) })
        found.formUnion(paragraph.matches(of: /exit (\d+)/).compactMap { Int32($0.1) })
        return found
    }

    @Test("the README and docs/cli.md name the same statuses, and each is what the CLI does")
    func everyRow() async throws {
        let readme = try Self.statuses(in: "README.md", after: "Exit status of `push`, `pull` and `sync`")
        let reference = try Self.statuses(in: "docs/cli.md", after: "Exit status of `push`, `pull` and `sync`")
        #expect(readme == reference, "README \(readme.sorted()) and docs/cli.md \(reference.sorted()) differ")
        var shown = Set<Int32>()
        func check(_ status: Int32, _ result: (status: Int32, out: String, err: String), _ why: String) {
            #expect(result.status == status, "\(why): \(result.status) \(result.out) \(result.err)")
            if result.status == status { shown.insert(status) }
        }
        let cli = try CLI()

        // 0: everything synced.
        let desktop = cli.store("d")
        #expect(try await cli.run(["init", "--store", desktop, "--role", "desktop", "--name", "laptop"]).status == 0)
        #expect(try await cli.run(["login", "--store", desktop, "--email", "q@example.com"]).status == 0)
        check(0, try await cli.run(["sync", "--store", desktop]), "a sync that synced")

        // 1: nothing ran: a store never initialised, and a device key others may read.
        check(1, try await cli.run(["push", "--store", cli.store("never")]), "an uninitialised store")
        let open = cli.store("open")
        #expect(try await cli.run(["init", "--store", open, "--role", "desktop", "--name", "open"]).status == 0)
        #expect(try await cli.run(["login", "--store", open, "--email", "q@example.com"]).status == 0)
        chmod(open + "/device.key", 0o644)
        let tooOpen = try await cli.run(["sync", "--store", open, "--json"])
        check(1, tooOpen, "a device key others may read")
        #expect(tooOpen.err.contains("device.key"), "\(tooOpen.err)")

        // 2: partial: one device row on the remote has a key that is not one.
        let user = try #require(
            try await DeviceStore.opened(directory: URL(fileURLWithPath: desktop)).identity()?.userID)
        // The operator's hand: rows written on the remote behind the devices' backs.
        let remote = try EmbeddedRemoteStore.serviceRole(
            path: cli.directory.appendingPathComponent("remote.sqlite").path, userID: user)
        try await remote.upsertOwnDevice(
            OwnDeviceRow(
                id: UUID(), userID: user, name: "broken", deviceType: .iosPhone, hostname: nil,
                publicKey: "bm90IGEga2V5"))
        check(2, try await cli.run(["push", "--store", desktop]), "a device row with a malformed key")

        // 3: every phase with work failed: a dead server (nothing listens on port 9).
        let token = "eyJhbGciOiJIUzI1NiJ9." + StackEnvironment.base64URL(Data(#"{"sub":"\#(user)"}"#.utf8)) + ".c2ln"
        check(
            3,
            try await cli.run(
                ["sync", "--store", desktop, "--remote", "http://127.0.0.1:9"],
                environment: ["SUPABASE_ANON_KEY": "anon", "SYNC_ACCESS_TOKEN": token]), "a dead server")

        // 4: the trust log does not verify (its genesis replaced behind everyone's back), on a
        // remote of its own: a root and a paired phone.
        let paired = try CLI()
        _ = try await ApprovalCLITests.paired(paired)
        let database = try DatabaseQueue(path: paired.directory.appendingPathComponent("remote.sqlite").path)
        try await database.write {
            try $0.execute(
                sql: "UPDATE trust_log SET entry = (SELECT entry FROM trust_log WHERE seq = 1) WHERE seq = 0")
        }
        check(4, try await paired.run(["push", "--store", paired.store("d")]), "a trust log that does not verify")

        // 130: interrupted, against a server that never answers.
        let silent = try HostileServer { _, _ in }
        defer { silent.stop() }
        let waiting = cli.store("waiting")
        let environment = try await DiskCLITests.loggedIn(cli, waiting, server: silent)
        let before = silent.requests.count
        let push = try SpawnedChild(
            CLI.path, ["push", "--store", waiting], environment: cli.environment(environment),
            workingDirectory: cli.directory, stdin: nil)
        // Interrupted once it waits on its first request (its handler is in place by then).
        #expect(await DiskCLITests.requestArrives(at: silent, after: before), "the push never asked the server")
        push.kill(SIGINT)
        let interrupted = try await offThePool { SpawnedChild.exitCode(try push.wait()) }
        check(130, (interrupted, push.output, push.errors), "Ctrl-C")
        #expect(push.errors.contains("interrupted: the next sync resumes"))

        // 64: a usage mistake.
        check(64, try await cli.run(["pul", "--store", desktop]), "a mistyped subcommand")

        #expect(shown == readme, "table \(readme.sorted()), shown \(shown.sorted())")
    }
}
