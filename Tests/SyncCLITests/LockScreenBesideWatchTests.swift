import Foundation
import GRDB
import LocalStore
import SyncModel
import TestStack
import Testing

/// An app watching the phone's store while its notification actions answer approvals, each a
/// process of its own (notifications-2.md, "One store, several processes"; "What the tests must
/// show", 7), on the stack with real logins whose refresh tokens are single-use.
@Suite("Answering from the lock screen beside a watching app", .enabled(if: !StackEnvironment.skipped))
struct LockScreenBesideWatchTests {
    /// Makes the saved login look 30 s from expiry, so the next process refreshes it (under the
    /// lock every process takes for that).
    static func ageLogin(_ store: String) async throws {
        let file = AuthSessionFile(directory: URL(fileURLWithPath: store))
        try await file.exclusively {
            guard var session = try file.load() else { return }
            session.expiresAt = Date().addingTimeInterval(30)
            try file.save(session)
        }
    }

    @Test(
        "20 answer-push processes, 4 at once, beside sync --watch on the phone's store: each accepted, no tick fails or is busy, each refresh token spent once; an answer beside a rival write transaction does not wait for it"
    )
    func answersBesideAWatch() async throws {
        let stack = try StackEnvironment.require()
        let cli = try CLI()
        let (email, password) = ("lock-\(UUID().canonical)@example.test", "lock-screen-password")
        let signup = try await stack.request(
            "POST", "/auth/v1/signup", body: #"{"email":"\#(email)","password":"\#(password)"}"#)
        try #require(signup.status == 200)
        let environment = [
            "SUPABASE_ANON_KEY": stack.anonKey, "SYNC_REMOTE": stack.url.absoluteString, "SYNC_PASSWORD": password,
        ]
        func run(_ arguments: [String], stdin: String? = nil) async throws -> (status: Int32, out: String, err: String)
        {
            try await cli.run(arguments, stdin: stdin, environment: environment)
        }
        let (desktop, phone) = (cli.store("d"), cli.store("p"))
        let project = cli.directory.appendingPathComponent("project")
        try FileManager.default.createDirectory(at: project, withIntermediateDirectories: true)
        #expect(try await run(["init", "--store", desktop, "--role", "desktop", "--name", "laptop"]).status == 0)
        #expect(try await run(["init", "--store", phone, "--role", "mobile", "--name", "phone"]).status == 0)
        for store in [desktop, phone] {
            let login = try await run(["login", "--store", store, "--email", email])
            try #require(login.status == 0, "\(login.err)")
        }
        #expect(try await run(["trust", "init", "--store", desktop]).status == 0)
        let invite = try await run(["trust", "invite", "--store", desktop, "--device-type", "ios-phone"])
        let code = try #require(
            invite.out.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.count == 84 && $0.split(separator: "-").count == 17 })
        #expect(try await run(["trust", "join", "--no-wait", "--store", phone], stdin: code + "\n").status == 0)
        #expect(try await run(["trust", "approve", "--store", desktop]).status == 0)
        #expect(try await run(["repo", "add", "--store", desktop, project.path]).status == 0)
        let session = try await run(["session", "start", "--store", desktop, "--repo", project.path]).out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try await run(["sync", "--store", desktop]).status == 0)
        #expect(try await run(["sync", "--store", phone]).status == 0)
        // Unique: a token another test's user holds would stay theirs.
        let token = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        #expect(try await run(["push-token", "register", "--store", phone, token]).status == 0)

        // The app: watching the phone's store.
        let watch = try SpawnedChild(
            CLI.path, ["sync", "--watch", "--interval", "1", "--json", "--store", phone],
            environment: cli.environment(environment))
        defer { watch.kill(SIGKILL) }

        // Five rounds of four approvals asked at once, answered by four processes at once, the
        // saved login aged before each round so that one of them refreshes it.
        let question = #"{"tool": "Bash", "summary": "npm test"}"#
        /// `approval request` on the desktop, waiting in the background (outside the process slots,
        /// as ``ApprovalCLITests/ask(_:_:stdin:)`` says why).
        func ask() -> Task<(status: Int32, out: String, err: String), Error> {
            Task {
                try await offThePool {
                    try cli.runBlocking(
                        ["approval", "request", "--store", desktop, session, "--from-file", "-", "--json"],
                        stdin: question, environment: environment)
                }
            }
        }
        var seen = Set<String>()
        func newAlerts(_ count: Int) async throws -> [[String: Any]] {
            let deadline = ContinuousClock.now + Waiting.ceiling
            var last = ""
            while ContinuousClock.now < deadline {
                let outbox = try await run(["outbox", "list", "--store", phone, "--json"])
                last = "\(outbox.status) \(outbox.err) \(outbox.out.prefix(2000))"
                let rows = (try? JSONSerialization.jsonObject(with: Data(outbox.out.utf8)) as? [[String: Any]]) ?? []
                let fresh = rows.compactMap { $0["payload"] as? [String: Any] }.filter {
                    $0["type"] as? String == "approval" && !seen.contains($0["requestId"] as? String ?? "")
                }
                if fresh.count >= count {
                    for payload in fresh { seen.insert(payload["requestId"] as? String ?? "") }
                    return fresh
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            Issue.record("no \(count) new approval alerts in the phone's outbox: \(last)")
            throw CancellationError()
        }
        /// The payload written as APNs would hand it to the app.
        func file(_ payload: [String: Any], _ name: String) throws -> String {
            let file = cli.directory.appendingPathComponent("payload-\(name).json")
            try JSONSerialization.data(withJSONObject: payload).write(to: file)
            return file.path
        }
        @Sendable func answer(_ path: String) async throws -> (Int32, String) {
            let result = try await cli.run(
                ["approval", "answer-push", "--store", phone, path, "approve", "--json"], environment: environment)
            return (result.status, result.out + result.err)
        }
        var answered = 0
        for round in 0..<5 {
            let asks = (0..<4).map { _ in ask() }
            let payloads = try await newAlerts(4)
            try await Self.ageLogin(phone)
            let paths = try payloads.enumerated().map { try file($1, "\(round)-\($0)") }
            let answers = try await withThrowingTaskGroup(of: (Int32, String).self) { group in
                for path in paths {
                    group.addTask { try await answer(path) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for (status, output) in answers {
                #expect(status == 0 && output.contains("\"accepted\" : true"), "\(output)")
            }
            for ask in asks { #expect(try await ask.value.status == 0) }
            answered += answers.count
        }
        #expect(answered == 20)

        // Another process holds a write transaction on the phone's store until the answer has
        // ended: the answer only reads it, so it is accepted. One that waited for the writer
        // would wait out its busy timeout (10 s) while the writer waits for it, and fail busy.
        let asked = ask()
        let last = try #require(try await newAlerts(1).first)
        // It waits its turn behind the watch's own writes, as the store does.
        var holderConfiguration = Configuration()
        holderConfiguration.busyMode = .timeout(30)
        let holder = try DatabaseQueue(
            path: URL(fileURLWithPath: phone).appendingPathComponent("store.sqlite").path,
            configuration: holderConfiguration)
        // The holder says when it is inside its transaction; the answer starts then. The stream
        // ends with the task, so a holder that failed to begin cannot leave the test waiting.
        let (inside, entered) = AsyncStream.makeStream(of: Void.self)
        let answerEnded = DispatchSemaphore(value: 0)
        let holding = Task {
            defer { entered.finish() }
            // GRDB runs this on its own queue, not on the cooperative pool; the ceiling only
            // catches an answer that never ends.
            try await holder.write { db in
                try db.execute(sql: "CREATE TABLE IF NOT EXISTS held_by_test (x INTEGER)")
                entered.yield()
                _ = answerEnded.wait(timeout: .now() + .seconds(120))
                try db.execute(sql: "DROP TABLE held_by_test")
            }
        }
        var holds = false
        for await _ in inside {
            holds = true
            break
        }
        #expect(holds, "the rival writer never held the store")
        let (status, output) = try await answer(try file(last, "held"))
        answerEnded.signal()
        #expect(status == 0 && output.contains("\"accepted\" : true"), "the answer waited for the writer: \(output)")
        try await holding.value
        #expect(try await asked.value.status == 0)

        // The watch: every tick ran; none failed, none found the store busy.
        watch.kill(SIGTERM)
        let stopBy = Date().addingTimeInterval(120)
        while watch.isRunning && Date() < stopBy { try await Task.sleep(for: .milliseconds(50)) }
        let ticks = ((try? String(contentsOf: watch.outputFile, encoding: .utf8)) ?? "").split(separator: "\n")
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(ticks.count >= 5, "the watch ticked while the answers ran")
        for tick in ticks {
            #expect(tick["failure"] == nil && tick["action"] as? String != "busy", "\(tick)")
        }

        // Each refresh token was spent once: every login session's chain (the sign-up's, the
        // desktop's, the phone's) has exactly one live token (a token spent twice ends the whole
        // session), and the phone's was refreshed each round, however many processes raced.
        let chains = try await stack.sql(
            """
            SELECT count(*) FILTER (WHERE NOT revoked) || ':' || count(*) FILTER (WHERE revoked)
            FROM auth.refresh_tokens WHERE user_id = (SELECT id FROM auth.users WHERE email = '\(email)')
            GROUP BY session_id ORDER BY 1
            """
        ).split(separator: "\n").map(String.init)
        #expect(chains.count >= 2 && chains.allSatisfy { $0.hasPrefix("1:") }, "\(chains)")
        // (Once a round when the processes' single flight holds: 5 here; the bound allows for a
        // process that read the login before the round aged it.)
        #expect(
            chains.contains { (5...9).contains(Int($0.split(separator: ":")[1]) ?? 0) },
            "the phone's login was refreshed each round: \(chains)")
    }
}
