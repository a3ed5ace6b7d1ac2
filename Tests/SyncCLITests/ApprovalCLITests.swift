import Foundation
import Synchronization
import TestStack
import Testing

@Suite("sync-cli approval")
struct ApprovalCLITests {
    /// A desktop (trust root) with a session and a paired phone, synced; returns the session id.
    static func paired(_ cli: CLI) async throws -> String {
        let repo = cli.directory.appendingPathComponent("project")
        try FileManager.default.createDirectory(at: repo, withIntermediateDirectories: true)
        #expect(
            try await cli.run(["init", "--store", cli.store("d"), "--role", "desktop", "--name", "laptop"]).status == 0)
        #expect(
            try await cli.run(["init", "--store", cli.store("p"), "--role", "mobile", "--name", "phone"]).status == 0)
        for store in ["d", "p"] {
            #expect(try await cli.run(["login", "--store", cli.store(store), "--email", "q@example.com"]).status == 0)
        }
        #expect(try await cli.run(["trust", "init", "--store", cli.store("d")]).status == 0)
        let invite = try await cli.run(["trust", "invite", "--store", cli.store("d"), "--device-type", "ios-phone"])
        let code = try #require(
            invite.out.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.count == 84 && $0.split(separator: "-").count == 17 })
        #expect(
            try await cli.run(["trust", "join", "--no-wait", "--store", cli.store("p")], stdin: code + "\n").status == 0
        )
        #expect(try await cli.run(["trust", "approve", "--store", cli.store("d")]).status == 0)
        #expect(try await cli.run(["repo", "add", "--store", cli.store("d"), repo.path]).status == 0)
        let session = try await cli.run(["session", "start", "--store", cli.store("d"), "--repo", repo.path]).out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try await cli.run(["sync", "--store", cli.store("d")]).status == 0)
        #expect(try await cli.run(["sync", "--store", cli.store("p")]).status == 0)
        return session
    }

    /// Starts `approval request` on the desktop; the result arrives when it exits.
    ///
    /// It runs outside ``ChildProcesses/slots``: the asking process mostly waits for an answer,
    /// and holding a slot meanwhile starved the commands that answer it. Three tests asking at
    /// once held all three slots while each waited for a slot to list what they had asked.
    static func ask(
        _ cli: CLI, _ arguments: [String], stdin: String? = nil
    ) -> Task<(status: Int32, out: String, err: String), Error> {
        Task { try await offThePool { try cli.runBlocking(arguments, stdin: stdin) } }
    }

    /// The phone's pending requests' ids, once there is one. On a hang (the ceiling), says how
    /// the asking process (`asking`) ended, if it did: which wait starved.
    static func pending(
        _ cli: CLI, asking: Task<(status: Int32, out: String, err: String), Error>? = nil
    ) async throws -> String {
        let found = try await Waiting.value(every: .milliseconds(100)) { () -> String? in
            let listed = try await cli.run(["approval", "list", "--store", cli.store("p"), "--pending", "--json"])
            #expect(listed.status == 0, "\(listed.err)")
            let items = try JSONSerialization.jsonObject(with: Data(listed.out.utf8)) as? [[String: Any]]
            return items?.first?["requestId"] as? String
        }
        if let found { return found }
        var state = "no asking process given"
        if let asking {
            let ended = Mutex<String?>(nil)
            Task {
                let text: String
                do {
                    let result = try await asking.value
                    text = "exit \(result.status): \(result.err)"
                } catch { text = "\(error)" }
                ended.withLock { $0 = text }
            }
            try await Task.sleep(for: .seconds(1))
            state = ended.withLock { $0 }.map { "the asking process ended: \($0)" } ?? "the asking process still waits"
        }
        Issue.record("hang: no pending request on the phone within \(Waiting.ceiling); \(state)")
        throw CancellationError()
    }

    @Test(
        "request waits for the phone's answer: 0 approved, 5 denied, 6 cancelled by SIGTERM; list shows who answered, never what was asked"
    )
    func requestAndAnswer() async throws {
        let cli = try CLI()
        let session = try await Self.paired(cli)
        // The request stands as long as the CLI allows: it is answered long before on any machine.
        let request = [
            "approval", "request", "--store", cli.store("d"), session, "--from-file", "-", "--json", "--timeout",
            Waiting.answerWindow,
        ]
        let question = #"{"tool": "Bash", "summary": "npm test", "detail": "cd app\nnpm test"}"#

        // Approved.
        let approved = Self.ask(cli, request, stdin: question)
        let first = try await Self.pending(cli)
        // The question never was a process argument: other local users cannot read it in /proc.
        let asker = try #require(Self.pid(of: "approval", in: cli))
        let arguments = String(
            decoding: FileManager.default.contents(atPath: "/proc/\(asker)/cmdline") ?? Data(), as: UTF8.self)
        #expect(!arguments.isEmpty && !arguments.contains("npm") && !arguments.contains("Bash"))
        let shown = try await cli.run(["approval", "show", "--store", cli.store("p"), first, "--json"])
        let content = try #require(JSONSerialization.jsonObject(with: Data(shown.out.utf8)) as? [String: String])
        #expect(
            content["tool"] == "Bash" && content["summary"] == "npm test" && content["detail"] == "cd app\nnpm test")
        let answer = try await cli.run(["approval", "answer", "--store", cli.store("p"), first, "approve", "--json"])
        #expect(answer.status == 0 && answer.out.contains("\"accepted\" : true"))
        let result = try await approved.value
        #expect(result.status == 0, "\(result.err)")
        let outcome = try #require(JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [String: Any])
        let phoneID = try await cli.run(["status", "--store", cli.store("p")]).out
        #expect(
            outcome["outcome"] as? String == "approved" && phoneID.contains(outcome["deviceId"] as? String ?? "-"))
        #expect(outcome["requestId"] as? String == first)
        // A second answer is refused and told who answered.
        let again = try await cli.run(["approval", "answer", "--store", cli.store("p"), first, "deny"])
        #expect(again.status == 1 && again.out.contains("already approved by"))

        // Denied: exit 5.
        let denied = Self.ask(cli, request, stdin: question)
        let second = try await Self.pending(cli)
        #expect(try await cli.run(["approval", "answer", "--store", cli.store("p"), second, "deny"]).status == 0)
        let deniedResult = try await denied.value
        #expect(deniedResult.status == 5 && deniedResult.out.contains("\"denied\""))

        // Audit, on either device: who answered and when; nothing of the content.
        let list = try await cli.run(["approval", "list", "--store", cli.store("d"), "--json"])
        let rows = try #require(JSONSerialization.jsonObject(with: Data(list.out.utf8)) as? [[String: Any]])
        #expect(rows.count == 2 && rows.allSatisfy { $0["decidedByDeviceId"] is String && $0["decidedAt"] is String })
        #expect(!list.out.contains("npm") && !list.out.contains("Bash"))

        // Cancelled: SIGTERM cancels the request, the phone's prompt clears, exit 6.
        let cancelled = Self.ask(cli, request.filter { $0 != "--json" }, stdin: question)
        let third = try await Self.pending(cli)
        let pid = try #require(Self.pid(of: "approval", in: cli))
        kill(pid, SIGTERM)
        let cancelledResult = try await cancelled.value
        #expect(cancelledResult.status == 6 && cancelledResult.out.contains("cancelled"))
        let late = try await cli.run(["approval", "answer", "--store", cli.store("p"), third, "approve"])
        #expect(late.status == 1 && late.out.contains("already cancelled"))
        // The same rule with --json: the remote's answer is printed, and the exit says it was not recorded.
        let lateJSON = try await cli.run(["approval", "answer", "--store", cli.store("p"), third, "approve", "--json"])
        #expect(lateJSON.status == 1 && lateJSON.out.contains("\"accepted\" : false"))
    }

    @Test("request refuses before asking: no pinned identity, content out of limits, timeout out of range")
    func refusals() async throws {
        let cli = try CLI()
        let repo = cli.directory.appendingPathComponent("project")
        try FileManager.default.createDirectory(at: repo, withIntermediateDirectories: true)
        #expect(
            try await cli.run(["init", "--store", cli.store("d"), "--role", "desktop", "--name", "laptop"]).status == 0)
        #expect(try await cli.run(["login", "--store", cli.store("d"), "--email", "q@example.com"]).status == 0)
        #expect(try await cli.run(["repo", "add", "--store", cli.store("d"), repo.path]).status == 0)
        let session = try await cli.run(["session", "start", "--store", cli.store("d"), "--repo", repo.path]).out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try await cli.run(["sync", "--store", cli.store("d")]).status == 0)
        let base = ["approval", "request", "--store", cli.store("d"), session]
        let unpaired = try await cli.run(base + ["--tool", "Bash", "--summary", "s"])
        #expect(unpaired.status == 1 && unpaired.err.contains("pair your devices first"))
        // The flags still work, with a warning that they are visible in the process list.
        #expect(unpaired.err.contains("Warning: the question was given as arguments"))
        let file = cli.directory.appendingPathComponent("question.json")
        try Data(#"{"tool": "Bash"}"#.utf8).write(to: file)
        let partial = try await cli.run(base + ["--from-file", file.path])
        #expect(partial.status == 1 && partial.err.contains("must be a JSON object"))
        let both = try await cli.run(base + ["--from-file", file.path, "--tool", "Bash"])
        #expect(both.status != 0 && both.err.contains("not both"))
        let neither = try await cli.run(base)
        #expect(neither.status != 0 && neither.err.contains("--from-file"))
        #expect(try await cli.run(["trust", "init", "--store", cli.store("d")]).status == 0)
        let long = try await cli.run(base + ["--tool", String(repeating: "t", count: 65), "--summary", "s"])
        #expect(long.status == 1 && long.err.contains("--tool 1-64"))
        let timeout = try await cli.run(base + ["--tool", "Bash", "--summary", "s", "--timeout", "601"])
        #expect(timeout.status != 0 && timeout.err.contains("--timeout must be 5 to 600"))
        let help = try await cli.run(["approval", "request", "--help"])
        #expect(help.out.contains("0 approved; 5 denied; 6 expired or cancelled"))
    }

    /// The pid of a running `sync-cli` child whose arguments include `word` and this test's directory.
    static func pid(of word: String, in cli: CLI) -> Int32? {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = Int32(entry),
                let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline")
            else { continue }
            let arguments = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            if arguments.first?.hasSuffix("sync-cli") == true, arguments.contains(word),
                arguments.contains(where: { $0.hasPrefix(cli.directory.path) }), arguments.contains("request")
            {
                return pid
            }
        }
        return nil
    }
}

extension ApprovalCLITests {
    @Test(
        "request prints where the alert went (Push: ...), --json holds the same entries; with nobody reachable it warns at once and a device with the app open still answers"
    )
    func pushOutcomes() async throws {
        let cli = try CLI()
        let session = try await Self.paired(cli)
        let question = #"{"tool": "Bash", "summary": "npm test"}"#
        let request = [
            "approval", "request", "--store", cli.store("d"), session, "--from-file", "-", "--timeout",
            Waiting.answerWindow,
        ]

        // Nobody has a push token: the warning, and the phone (app open) answers all the same.
        let unreachable = Self.ask(cli, request, stdin: question)
        let first = try await UsageMessagesTests.pending(cli, unreachable)
        #expect(try await cli.run(["approval", "answer", "--store", cli.store("p"), first, "approve"]).status == 0)
        let answered = try await unreachable.value
        #expect(answered.status == 0, "\(answered.err)")
        #expect(answered.out.contains("Push: no device has a push token."))
        #expect(
            answered.err.contains(
                "Warning: no device can be reached by push; only a device with the app open or in watch mode can answer."
            ))

        // The phone registers a token: queued for it, no warning; --json carries the entries.
        let token = String(repeating: "cd", count: 32)
        #expect(try await cli.run(["push-token", "register", "--store", cli.store("p"), token]).status == 0)
        let reachable = Self.ask(cli, request + ["--json"], stdin: question)
        let second = try await UsageMessagesTests.pending(cli, reachable)
        #expect(try await cli.run(["approval", "answer", "--store", cli.store("p"), second, "deny"]).status == 0)
        let denied = try await reachable.value
        #expect(denied.status == 5 && !denied.err.contains("Warning"), "\(denied.err)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(denied.out.utf8)) as? [String: Any])
        #expect(object["outcome"] as? String == "denied" && object["requestId"] as? String == second)
        let deliveries = try #require(object["deliveries"] as? [String: Any])
        let devices = try #require(deliveries["devices"] as? [[String: Any]])
        #expect(devices.count == 1 && devices[0]["deviceName"] as? String == "phone")
        #expect(devices[0]["outcome"] as? String == "queued" && deliveries["final"] as? Bool == false)
        #expect(!denied.out.contains(token))

        let text = Self.ask(cli, request, stdin: question)
        let third = try await UsageMessagesTests.pending(cli, text)
        #expect(try await cli.run(["approval", "answer", "--store", cli.store("p"), third, "approve"]).status == 0)
        let printed = try await text.value
        #expect(printed.status == 0 && printed.out.contains("Push: queued for phone.\n"), "\(printed.out)")
    }
}
