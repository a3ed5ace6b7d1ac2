import Foundation
import SyncTestSupport
import TestStack
import Testing

/// `sync-cli` killed with SIGKILL after the server committed its append and before it printed the
/// new recovery key (issue 65, item 1): a proxy forwards the append and holds the answer, the
/// test waits for the entry to be in the log and kills the process. The key in force and the new
/// recovery key must both survive, and the key be shown by the next commands.
@Suite("A trust command killed between commit and print")
struct KilledTrustCommandTests {
    @Test("recovery-key new killed after its append committed: trust status warns, show prints the key, it recovers")
    func killedAfterCommit() async throws {
        let stack = try StackEnvironment.require()
        let cli = try CLI()
        let (email, password) = ("killed-\(UUID().canonical)@example.test", "killed-command-password")
        let signup = try await stack.request(
            "POST", "/auth/v1/signup", body: #"{"email":"\#(email)","password":"\#(password)"}"#)
        try #require(signup.status == 200)
        let user = try #require(
            (try JSONSerialization.jsonObject(with: Data(signup.body.utf8)) as? [String: Any]).flatMap {
                ($0["user"] as? [String: Any])?["id"] as? String ?? $0["id"] as? String
            })
        let environment = [
            "SUPABASE_ANON_KEY": stack.anonKey, "SYNC_REMOTE": stack.url.absoluteString, "SYNC_PASSWORD": password,
        ]
        func run(
            _ arguments: [String], stdin: String? = nil, through remote: String? = nil
        ) async throws -> (status: Int32, out: String, err: String) {
            var env = environment
            if let remote { env["SYNC_REMOTE"] = remote }
            return try await cli.run(arguments, stdin: stdin, environment: env)
        }
        let (desktop, spare) = (cli.store("d"), cli.store("s"))
        for (store, name) in [(desktop, "laptop"), (spare, "spare")] {
            #expect(try await run(["init", "--store", store, "--role", "desktop", "--name", name]).status == 0)
            let login = try await run(["login", "--store", store, "--email", email])
            try #require(login.status == 0, "\(login.err)")
        }
        let started = try await run(["trust", "init", "--store", desktop, "--json"])
        try #require(started.status == 0, "\(started.err)")
        let first = try #require(
            (try JSONSerialization.jsonObject(with: Data(started.out.utf8)) as? [String: Any])?["recoveryKey"]
                as? String)
        func entries() async throws -> Int {
            Int(try await stack.sql("SELECT count(*) FROM public.trust_log WHERE user_id = '\(user)'")) ?? -1
        }
        let before = try await entries()

        // The append reaches the server; its answer never comes back while the process lives.
        let proxy = try await FaultProxy(
            upstreamHost: stack.url.host ?? "127.0.0.1", upstreamPort: stack.url.port ?? 80, seed: nil,
            stallDuration: .seconds(12))
        proxy.force(.stall, onRequestsContaining: "append_trust_entries")
        var env = cli.environment(environment)
        env["SYNC_REMOTE"] = proxy.url(path: stack.url.path).absoluteString
        let child = try SpawnedChild(
            CLI.path, ["trust", "recovery-key", "new", "--store", desktop, "--json"], environment: env,
            workingDirectory: cli.directory)
        // Killed once the entry is in the log, long before the client's 10 s idle bound would
        // retry; a hang ceiling only, never a duration asserted.
        var committed = false
        _ = try await Waiting.until(ceiling: .seconds(60)) {
            committed = (try? await entries()).map { $0 > before } ?? false
            let ended = try child.ended() != nil
            return committed || ended
        }
        child.kill(SIGKILL)
        let status = try await offThePool { try child.wait() }
        try #require(committed, "the append never reached the log: \(child.errors)")
        #expect(SpawnedChild.signalled(status), "the command ended before it was killed")
        #expect(!child.output.contains("recoveryKey"), "the command printed before it was killed")

        // The next commands, straight to the server: the key is warned about, shown once, and is
        // not the first one.
        let warned = try await run(["trust", "status", "--store", desktop, "--json"])
        #expect(warned.out.contains(#""recoveryKeyUnshown" : true"#), "\(warned.out) \(warned.err)")
        let shown = try await run(["trust", "recovery-key", "show", "--store", desktop, "--json", "--no-qr"])
        #expect(shown.status == 0, "\(shown.err)")
        let second = try #require(
            (try JSONSerialization.jsonObject(with: Data(shown.out.utf8)) as? [String: Any])?["recoveryKey"]
                as? String)
        #expect(second != first)
        let quiet = try await run(["trust", "status", "--store", desktop, "--json"])
        #expect(quiet.out.contains(#""recoveryKeyUnshown" : false"#), "\(quiet.out)")
        // It opens the newest backup, to the key in force: another desktop recovers with it.
        let recovered = try await run(["trust", "recover", "--yes", "--store", spare], stdin: second + "\n")
        #expect(recovered.status == 0, "\(recovered.err)")
        #expect(recovered.out.contains("trust root"))
        // The key is in no output but the one print.
        for output in [warned.out, warned.err, quiet.out, recovered.out, recovered.err] {
            #expect(!output.contains(second))
        }
        // The stalled connection ends by itself (12 s): no request of the test waits for it.
        await proxy.shutdown()
    }
}
