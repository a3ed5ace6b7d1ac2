import AgentHooks
import Foundation
import GRDB
import LocalStore
import SecretCrypto
import SyncModel
import TestStack
import Testing

/// Never break the agent (docs/agent-hooks.md, "What must hold"): whatever goes wrong, the hook
/// exits 0 with one valid JSON object or nothing, and says what happened in one line of stderr.
@Suite("Agent hooks: never break the agent")
struct RobustnessTests {
    /// Runs the hook as the agent would, with `stdin` and extra `environment`.
    static func hook(
        _ world: AgentWorld, stdin: String, store: String? = nil, environment: [String: String] = [:]
    ) async throws -> (status: Int32, out: String, err: String) {
        let env = world.environment.merging(environment) { $1 }
        let arguments = ["agent", "hook", "claude-code", "--store", store ?? world.desktop.directory.path]
        let project = world.project
        return try await ChildProcesses.slots.run {
            try await offThePool {
                let child = try SpawnedChild(
                    CLIPath.path, arguments, environment: env, workingDirectory: project, stdin: stdin)
                return (SpawnedChild.exitCode(try child.wait()), child.output, child.errors)
            }
        }
    }

    static func quietFailure(_ result: (status: Int32, out: String, err: String), _ what: String) {
        #expect(result.status == 0, "\(what): exit \(result.status)")
        #expect(result.out.isEmpty, "\(what): a decision was printed")
        #expect(result.err.split(separator: "\n").count == 1, "\(what): not one line on stderr: \(result.err)")
    }

    @Test("malformed, oversized and truncated input: exit 0, no decision, one line")
    func badInput() async throws {
        let world = try await AgentWorld.make(.embedded)
        try await world.install(["--away", "always"])
        let event = Events.bash("s-bad", world: world, command: "ls").compactText
        Self.quietFailure(try await Self.hook(world, stdin: "{not json"), "malformed")
        Self.quietFailure(try await Self.hook(world, stdin: String(event.prefix(event.count / 2))), "truncated")
        Self.quietFailure(try await Self.hook(world, stdin: "[1, 2]"), "not an object")
        let oversized = String(event.dropLast()) + ", \"pad\": \"" + String(repeating: "x", count: 1 << 20) + "\"}"
        Self.quietFailure(try await Self.hook(world, stdin: oversized), "oversized")
        #expect(try await world.desktop.sessions().isEmpty, "nothing was acted on")
    }

    @Test("a locked store, a dead remote and a missing login: exit 0, no decision, one line")
    func unavailable() async throws {
        let world = try await AgentWorld.make(.embedded)
        try await world.install(["--away", "always"])
        let prompt = Events.prompt("s-locked", world: world).compactText
        // Another process holds the store's write lock (a thread of this one, off the pool).
        let queue = try DatabaseQueue(path: world.desktop.databasePath)
        let locked = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            try? queue.inTransaction(.immediate) { _ in
                locked.signal()
                release.wait()
                return .rollback
            }
        }
        try await offThePool { locked.wait() }
        Self.quietFailure(try await Self.hook(world, stdin: prompt), "locked store")
        release.signal()

        let ask = Events.bash("s-dead", world: world, command: "ls").compactText
        let dead = try await Self.hook(
            world, stdin: ask,
            environment: [
                "SYNC_REMOTE": "http://127.0.0.1:1", "SUPABASE_ANON_KEY": "anon", "SYNC_ACCESS_TOKEN": "x.y.z",
            ])
        Self.quietFailure(dead, "dead remote")

        let loggedOut = try await DeviceStore.opened(directory: world.directory.appendingPathComponent("logged-out"))
        _ = try await loggedOut.createIdentity(name: "other", deviceType: .linuxDesktop, hostname: nil, role: .desktop)
        Self.quietFailure(
            try await Self.hook(world, stdin: ask, store: loggedOut.directory.path), "missing login")
        let start = try await Self.hook(
            world, stdin: Events.start("s-x", world: world).compactText, store: loggedOut.directory.path)
        #expect(start.status == 0)
        let notice = try JSONValue.parse(Array(start.out.utf8))
        #expect(notice["systemMessage"]?.string?.contains("sync-cli login") == true, "SessionStart tells the person")
    }

    @Test("a session the person deleted stays deleted when the agent resumes it")
    func deletedStaysDeleted() async throws {
        let world = try await AgentWorld.make(.embedded)
        try await world.install()
        let start = Events.start("s-del", world: world).compactText
        #expect(try await Self.hook(world, stdin: start).status == 0)
        let id = world.session("s-del")
        #expect(try await world.desktop.session(id: id) != nil)
        _ = try await world.desktop.removeSessions(ids: [id])
        #expect(
            try await Self.hook(world, stdin: Events.start("s-del", world: world, source: "resume").compactText).status
                == 0)
        #expect(try await world.desktop.session(id: id) == nil)
    }
}
