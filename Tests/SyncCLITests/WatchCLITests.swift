import Foundation
import SyncModel
import TestStack
import Testing

/// `sync-cli sync --watch` as an agent runs it: a real child process against a real REST server
/// (a private `postgrest-server` over the stack's PostgreSQL, so this test can stop and start it
/// without disturbing the other tests), stopped by SIGTERM.
@Suite("sync-cli sync --watch against a server that goes away", .enabled(if: !StackEnvironment.skipped))
struct WatchCLITests {
    /// A `postgrest-server` of our own on a free port.
    final class Server {
        let port: Int
        var process: SpawnedChild?
        let stack: StackEnvironment

        init(stack: StackEnvironment) async throws {
            self.stack = stack
            port = try Self.freePort()
            try await start()
        }

        var url: String { "http://127.0.0.1:\(port)" }

        func start() async throws {
            guard let settings = ProcessInfo.processInfo.environment["SYNC_STACK_DB"],
                let pgPort = settings.split(separator: " ").first(where: { $0.hasPrefix("port=") })?.dropFirst(5)
            else {
                throw CLIFailure("SYNC_STACK_DB names no port: start the stack (make stack)")
            }
            let process = try SpawnedChild(
                URL(fileURLWithPath: CLI.path).deletingLastPathComponent().appendingPathComponent("postgrest-server")
                    .path,
                [],
                environment: ProcessInfo.processInfo.environment.merging([
                    "PGRST_JWT_SECRET": stack.jwtSecret, "PGRST_SERVER_PORT": String(port),
                    "PGRST_DB_PORT": String(pgPort), "PGRST_DB_NAME": "sync_own", "PGRST_DB_USER": "authenticator",
                    "PGRST_AUTH_DB_USER": "supabase_auth_admin",
                ]) { _, new in new })
            self.process = process
            // Up when it answers (the ceiling only catches a hang), unless it died.
            _ = try await Waiting.until(every: .milliseconds(50)) { Self.accepts(port: port) || !process.isRunning }
            if Self.accepts(port: port) { return }
            throw CLIFailure("the private postgrest-server did not come up")
        }

        func stop() async {
            guard let process else { return }
            process.kill(SIGTERM)
            _ = try? await process.exited()
            self.process = nil
        }

        deinit {
            process?.kill(SIGKILL)
            _ = try? process?.wait()
        }

        /// Whether something accepts TCP connections on the port.
        static func accepts(port: Int) -> Bool {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(port).bigEndian
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
        }

        static func freePort() throws -> Int {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
                }
            }
            guard bound else { throw CLIFailure("no free port") }
            return Int(UInt16(bigEndian: address.sin_port))
        }
    }

    struct CLIFailure: Error, CustomStringConvertible {
        let description: String
        init(_ text: String) { description = text }
    }

    /// Waits (bounded) until `file` contains `text`; returns whether it did.
    static func wait(for text: String, in file: URL, seconds: Double) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let content = try? String(contentsOf: file, encoding: .utf8), content.contains(text) { return true }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    @Test(
        "the watch backs off while the server is down, recovers by itself, loses and duplicates nothing, and exits 0 on SIGTERM"
    )
    func recovers() async throws {
        let stack = try StackEnvironment.require()
        let server = try await Server(stack: stack)
        let cli = try CLI()
        let email = "watch-\(UUID().canonical)@example.test"
        let signup = try await stack.request(
            "POST", "/auth/v1/signup", body: #"{"email":"\#(email)","password":"watch-password-long"}"#)
        try #require(signup.status == 200)
        let environment = [
            "SUPABASE_ANON_KEY": stack.anonKey, "SYNC_REMOTE": server.url, "SYNC_PASSWORD": "watch-password-long",
        ]
        let project = cli.directory.appendingPathComponent("project")
        try FileManager.default.createDirectory(at: project, withIntermediateDirectories: true)
        let store = cli.store("d")
        #expect(try await cli.run(["init", "--store", store, "--role", "desktop", "--name", "agent"]).status == 0)
        #expect(try await cli.run(["login", "--store", store, "--email", email], environment: environment).status == 0)
        #expect(try await cli.run(["repo", "add", "--store", store, project.path]).status == 0)
        let first = try await cli.run([
            "session", "start", "--store", store, "--repo", project.path, "--title", "before",
        ])
        let firstID = try #require(UUID.parse(first.out.trimmingCharacters(in: .whitespacesAndNewlines)))

        // The agent.
        let watch = try SpawnedChild(
            CLI.path, ["sync", "--watch", "--interval", "1", "--store", store],
            environment: ProcessInfo.processInfo.environment.merging(environment) { _, new in new })
        defer { watch.kill(SIGKILL) }
        let out = watch.outputFile, err = watch.errorsFile
        #expect(await Self.wait(for: "tick 1 full", in: out, seconds: 120), "no first tick")

        // Manual commands run while the watch runs (the lease is per tick).
        #expect(try await cli.run(["status", "--store", store]).status == 0)

        // The server goes away; a session is started meanwhile.
        await server.stop()
        let second = try await cli.run([
            "session", "start", "--store", store, "--repo", project.path, "--title", "during",
        ])
        let secondID = try #require(UUID.parse(second.out.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(await Self.wait(for: "backing off", in: err, seconds: 120), "no backoff line")
        // Let it fail a few times, then bring the server back.
        try await Task.sleep(for: .seconds(3))
        try await server.start()
        #expect(await Self.wait(for: "answers again", in: err, seconds: 120), "no recovery line")
        #expect(
            await Self.wait(for: "local changes", in: out, seconds: 120),
            "the session started during the outage was not pushed")

        // SIGTERM: the running tick finishes, exit 0.
        watch.kill(SIGTERM)
        #expect(try await Waiting.until { !watch.isRunning }, "hang: the watch did not stop on SIGTERM")
        #expect(try watch.ended() == 0)
        let log = (try? String(contentsOf: err, encoding: .utf8)) ?? ""
        #expect(log.components(separatedBy: "backing off").count == 2, "one line when the remote went away: \(log)")
        #expect(log.components(separatedBy: "answers again").count == 2)
        #expect(log.contains("stopped after"))

        // Nothing lost, nothing duplicated: checked in PostgreSQL directly.
        let ids = [firstID, secondID].map { "'\($0.canonical)'" }.joined(separator: ",")
        #expect(try await stack.sql("SELECT count(*) FROM agent_coding_sessions WHERE id IN (\(ids))") == "2")
        #expect(
            try await stack.sql(
                "SELECT count(*), count(DISTINCT (session_id, device_id)) FROM agent_coding_session_secrets WHERE session_id IN (\(ids))"
            ) == "2|2")
        // The store is free again.
        #expect(try await cli.run(["push", "--store", store], environment: environment).status == 0)
    }
}
