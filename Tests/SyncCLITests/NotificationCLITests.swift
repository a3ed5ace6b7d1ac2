import Foundation
import TestStack
import Testing

@Suite("sync-cli notifications")
struct NotificationCLITests {
    @Test("show and set the phone's settings; a desktop's status reaches the phone's live activity sanitised")
    func settingsAndLiveActivity() async throws {
        let cli = try CLI()
        let repo = cli.directory.appendingPathComponent("project")
        try FileManager.default.createDirectory(at: repo, withIntermediateDirectories: true)
        #expect(
            try await cli.run(["init", "--store", cli.store("d"), "--role", "desktop", "--name", "laptop"]).status == 0)
        #expect(
            try await cli.run(["init", "--store", cli.store("p"), "--role", "mobile", "--name", "phone"]).status == 0)
        for store in ["d", "p"] {
            #expect(try await cli.run(["login", "--store", cli.store(store), "--email", "q@example.com"]).status == 0)
        }
        #expect(try await cli.run(["repo", "add", "--store", cli.store("d"), repo.path]).status == 0)
        let session = try await cli.run(["session", "start", "--store", cli.store("d"), "--repo", repo.path]).out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try await cli.run(["sync", "--store", cli.store("d")]).status == 0)
        #expect(try await cli.run(["sync", "--store", cli.store("p")]).status == 0)

        func settings(_ arguments: [String]) async throws -> [String: Any] {
            let result = try await cli.run(["notifications"] + arguments + ["--store", cli.store("p"), "--json"])
            #expect(result.status == 0, "\(result.err)")
            return try #require(try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [String: Any])
        }
        let defaults = try await settings(["show"])
        #expect(defaults["liveActivities"] as? Bool == true && defaults["background"] as? Bool == true)
        #expect(defaults["details"] as? Bool == false && defaults["timeSensitive"] as? Bool == true)
        let changed = try await settings(["set", "details", "on"])
        #expect(changed["details"] as? Bool == true && changed["liveActivitiesEnded"] as? Int == 0)
        await #expect(try settings(["show"])["details"] as? Bool == true)
        let text = try await cli.run(["notifications", "show", "--store", cli.store("p")])
        #expect(text.status == 0 && text.out.contains("details") && text.out.contains("on"))
        // Each name whole, its value after it (a fixed column cut the longest one).
        let lines = text.out.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(
            lines.contains(["quiet-while-active", "off"]) || lines.contains(["quiet-while-active", "on"]), "\(text.out)"
        )

        // Bad input: a clear refusal, nothing changed.
        let badValue = try await cli.run(["notifications", "set", "details", "maybe", "--store", cli.store("p")])
        #expect(badValue.status != 0 && badValue.err.contains("on or off"))
        let badKey = try await cli.run(["notifications", "set", "sound", "on", "--store", cli.store("p")])
        #expect(badKey.status != 0 && badKey.err.contains("live-activities"))
        await #expect(try settings(["show"])["details"] as? Bool == true)

        // The phone's live activity for the session, then the desktop reports.
        #expect(
            try await cli.run([
                "push-token", "register", "--store", cli.store("p"), "live0123", "--type", "live_activity",
                "--activity-id", "a1", "--session-id", session,
            ]).status == 0)
        let reported = try await cli.run([
            "session", "status", "--store", cli.store("d"), session, "running", "--operation",
            "Deploying with token=abc123", "--todo", "3/7", "--task", "Fix auth bug", "--json",
        ])
        #expect(reported.status == 0, "\(reported.err)")
        #expect(reported.out.contains("Deploying with [REDACTED]") && !reported.out.contains("abc123"))
        let outbox = try await cli.run(["outbox", "list", "--store", cli.store("p"), "--json"])
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(outbox.out.utf8)) as? [[String: Any]])
        let live = try #require(rows.first { $0["pushType"] as? String == "liveactivity" })
        let aps = try #require((live["payload"] as? [String: Any])?["aps"] as? [String: Any])
        let state = try #require(aps["content-state"] as? [String: Any])
        #expect(state["currentOperation"] as? String == "Deploying with [REDACTED]")
        #expect((state["todoProgress"] as? [String: Any])?["currentTask"] as? String == "Fix auth bug")
        #expect(live["notBefore"] is String)
        // The status message is sanitised too: the server stores it in clear.
        let failed = try await cli.run([
            "session", "status", "--store", cli.store("d"), session, "error", "--message",
            "deploy failed: DB_PASSWORD=hunter2", "--json",
        ])
        #expect(failed.status == 0, "\(failed.err)")
        #expect(failed.out.contains("deploy failed: [REDACTED]") && !failed.out.contains("hunter2"), "\(failed.out)")
        let badTodo = try await cli.run([
            "session", "status", "--store", cli.store("d"), session, "running", "--todo", "3",
        ])
        #expect(badTodo.status != 0 && badTodo.err.contains("COMPLETED/TOTAL"))
        let taskAlone = try await cli.run([
            "session", "status", "--store", cli.store("d"), session, "running", "--task", "x",
        ])
        #expect(taskAlone.status != 0 && taskAlone.err.contains("--todo"))
    }
}

extension NotificationCLITests {
    @Test(
        "session notify: the desktop raises a task alert for the phone; the same kind again within the minute is coalesced; the phone may not"
    )
    func sessionNotify() async throws {
        let cli = try CLI()
        let session = try await ApprovalCLITests.paired(cli)
        // No token yet: "queued for 0" says why (issue 69 item 11).
        let lonely = try await cli.run(["session", "notify", "--store", cli.store("d"), session, "paused"])
        #expect(
            lonely.status == 0 && lonely.out.contains("queued for 0 device tokens (coalesced 0, suppressed 0, off 0).")
                && lonely.out.contains("no other trusted device of yours has a valid push token"), "\(lonely.out)")
        #expect(
            try await cli.run(["push-token", "register", "--store", cli.store("p"), String(repeating: "ef", count: 32)])
                .status == 0)
        let first = try await cli.run(["session", "notify", "--store", cli.store("d"), session, "complete"])
        #expect(first.status == 0, "\(first.err)")
        #expect(first.out.contains("task_complete queued for 1 device token (coalesced 0, suppressed 0, off 0)."))
        #expect(!first.out.contains("Nothing"))
        let said = try await cli.run(["session", "notify", "--store", cli.store("d"), session, "complete"])
        #expect(
            said.out.contains(
                "queued for 0 device tokens (coalesced 1, suppressed 0, off 0). Nothing new was queued: "
                    + "the same alert is already queued for 1 device token (at most one a minute per session and device)."
            ), "\(said.out)")
        let again = try await cli.run(["session", "notify", "--store", cli.store("d"), session, "complete", "--json"])
        let counts = try #require(try JSONSerialization.jsonObject(with: Data(again.out.utf8)) as? [String: Int])
        #expect(counts == ["queued": 0, "coalesced": 1, "suppressed": 0, "off": 0])
        let phone = try await cli.run(["session", "notify", "--store", cli.store("p"), session, "failed"])
        // Said as the cause it is (issue 69 item 11), not as a sync to run.
        #expect(
            phone.status == 1 && phone.err.contains("only the desktop that runs a session may notify about it")
                && !phone.err.contains("sync-cli sync"), "\(phone.err)")
    }
}

extension NotificationCLITests {
    @Test(
        "question ask prints its id and Push: line (warning when nobody is reachable); the phone shows it; close clears it; never in the process list"
    )
    func questionCommands() async throws {
        let cli = try CLI()
        let session = try await ApprovalCLITests.paired(cli)
        let text = "Which branch should I rebase onto? marker-cli-q"
        let lonely = try await cli.run(
            ["question", "ask", "--store", cli.store("d"), session, "--from-file", "-"], stdin: text + "\n")
        #expect(lonely.status == 0, "\(lonely.err)")
        #expect(lonely.out.contains("Push: no device has a push token."))
        #expect(lonely.err.contains("Warning: no device can be reached by push"))

        #expect(
            try await cli.run(["push-token", "register", "--store", cli.store("p"), String(repeating: "ab", count: 32)])
                .status == 0)
        let asked = try await cli.run(
            ["question", "ask", "--store", cli.store("d"), session, "--from-file", "-", "--json"], stdin: text)
        #expect(asked.status == 0 && !asked.err.contains("Warning"), "\(asked.err)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(asked.out.utf8)) as? [String: Any])
        let id = try #require(object["questionId"] as? String)
        #expect(object["devicesNotified"] as? Int == 1)
        let deliveries = try #require(object["deliveries"] as? [String: Any])
        #expect((deliveries["devices"] as? [[String: Any]])?.first?["outcome"] as? String == "queued")

        let shown = try await cli.run(["question", "show", "--store", cli.store("p"), id])
        #expect(shown.status == 0 && shown.out.contains(text) && shown.out.contains("(pending)"), "\(shown.err)")
        // An id prefix is enough, as for sessions (issue 69, a small one).
        let prefixed = try await cli.run(["question", "show", "--store", cli.store("p"), String(id.prefix(8))])
        #expect(prefixed.status == 0 && prefixed.out.contains(text), "\(prefixed.err)")
        // Text the agent wrote is shown as written: no hint flag is added to a command in it (a
        // person approving "`sync-cli trust revoke`" must read what the agent asked).
        let agentText = "May I run `sync-cli trust revoke` next? marker-hint"
        let withCommand = try await cli.run(
            ["question", "ask", "--store", cli.store("d"), session, "--from-file", "-", "--json"], stdin: agentText)
        let withCommandID = try #require(
            (try JSONSerialization.jsonObject(with: Data(withCommand.out.utf8)) as? [String: Any])?["questionId"]
                as? String)
        let unchanged = try await cli.run(["question", "show", "--store", cli.store("p"), withCommandID])
        #expect(unchanged.out.contains(agentText), "\(unchanged.out)")
        let nothing = try await cli.run(["question", "show", "--store", cli.store("p"), "ffffffff"])
        #expect(nothing.status == 1 && nothing.err.contains("no question matches ffffffff"), "\(nothing.err)")
        let outbox = try await cli.run(["outbox", "list", "--store", cli.store("p"), "--json"])
        #expect(!outbox.out.contains("marker-cli-q"))

        let closed = try await cli.run(["question", "close", "--store", cli.store("d"), id])
        #expect(closed.status == 0 && closed.out.contains("answered; 1 device told to clear it."), "\(closed.out)")
        let again = try await cli.run(["question", "close", "--store", cli.store("d"), id, "--cancelled", "--json"])
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(again.out.utf8)) as? [String: Any])
        #expect(answer["closed"] as? Bool == false && answer["status"] as? String == "answered")
        let refused = try await cli.run(["question", "ask", "--store", cli.store("d"), session, "--text", ""])
        #expect(refused.status == 1 && refused.err.contains("outside the limits"), "\(refused.err)")
    }
}
