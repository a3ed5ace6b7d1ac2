import DeviceTrust
import Foundation
import LocalStore
import SecretCrypto
import SyncTestSupport
import TestStack
import Testing

/// The first day, round 2 (issue 52): a mistake gets exit 64 and a message that points the right
/// way; a message says what happened, not what was about to.
@Suite("sync-cli: usage mistakes and messages that point the right way")
struct UsageMessagesTests {
    /// The phone's pending request, once the desktop's is there; the desktop's output if it ended
    /// first. Waits up to two minutes: under a full suite the asking process may wait for a slot.
    static func pending(
        _ cli: CLI, _ asked: Task<(status: Int32, out: String, err: String), Error>
    ) async throws -> String {
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            let listed = try await cli.run(["approval", "list", "--store", cli.store("p"), "--pending", "--json"])
            if let items = try? JSONSerialization.jsonObject(with: Data(listed.out.utf8)) as? [[String: Any]],
                let id = items.first?["requestId"] as? String
            {
                return id
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        let ended = try await asked.value
        Issue.record("no pending request; the desktop's request ended \(ended.status): \(ended.err)")
        throw CancellationError()
    }

    @Test("a mistyped subcommand is named with the nearest one (7); exit 64")
    func mistypedSubcommand() async throws {
        let cli = try CLI()
        let pull = try await cli.run(["pul", "--store", cli.store("x")])
        #expect(
            pull.status == 64 && pull.err.contains("did you mean `sync-cli pull --store \(cli.store("x"))`?"),
            "\(pull.err)")
        #expect(!pull.err.contains("Unknown option"))
        let approve = try await cli.run(["trust", "aprove", "--store", cli.store("x")])
        #expect(
            approve.status == 64
                && approve.err.contains("did you mean `sync-cli trust approve --store \(cli.store("x"))`?"))
        // Two neighbours swapped is one slip of the fingers (issue 69 item 11).
        let swapped = try await cli.run(["sycn", "--store", cli.store("x")])
        #expect(
            swapped.status == 64 && swapped.err.contains("did you mean `sync-cli sync --store \(cli.store("x"))`?"),
            "\(swapped.err)")
        let nothing = try await cli.run(["frobnicate"])
        #expect(nothing.status == 64 && nothing.err.contains("unknown command 'frobnicate'"))
        #expect(!nothing.err.contains("did you mean"))
        // Known words all the way, and arguments after a leaf, are ArgumentParser's to judge.
        #expect(try await cli.run(["vectors", "verify", "--help"]).status == 0)
    }

    @Test("login: a malformed --user, a mistyped embedded: and a missing --email exit 64 (6); the port is shown (13)")
    func loginUsage() async throws {
        let cli = try CLI()
        let store = cli.store("d")
        #expect(try await cli.run(["init", "--store", store, "--role", "desktop", "--name", "laptop"]).status == 0)
        let user = try await cli.run(["login", "--store", store, "--user", "not-a-uuid"])
        #expect(user.status == 64 && user.err.contains("--user must be a UUID"))
        let typo = try await cli.run(["login", "--store", store, "--remote", "embeded:/x/remote.sqlite"])
        #expect(typo.status == 64 && typo.err.contains("did you mean embedded:/x/remote.sqlite?"), "\(typo.err)")
        let bare = try await cli.run(["login", "--store", store], environment: ["SYNC_EMAIL": ""])
        #expect(bare.status == 64 && bare.err.contains("needs --email or --user"))
        let token =
            "eyJhbGciOiJIUzI1NiJ9." + StackEnvironment.base64URL(Data(#"{"sub":"\#(UUID().canonical)"}"#.utf8))
            + ".c2ln"
        let port = try await cli.run(
            ["login", "--store", store, "--remote", "http://127.0.0.1:54321"],
            environment: ["SUPABASE_ANON_KEY": "anon", "SYNC_ACCESS_TOKEN": token])
        #expect(port.status == 0 && port.out.contains(" on 127.0.0.1:54321"), "\(port.out) \(port.err)")
    }

    @Test("--version is the newest version heading of CHANGELOG.md (13)")
    func versionFromTheChangelog() async throws {
        let cli = try CLI()
        let printed = try await cli.run(["--version"])
        #expect(printed.status == 0)
        let changelog = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let headings = changelog.split(separator: "\n").filter { $0.hasPrefix("## ") }
        let newest = try #require(headings.first?.dropFirst(3).split(separator: " ").first)
        #expect(printed.out.trimmingCharacters(in: .whitespacesAndNewlines) == String(newest))
        // Every heading names a version and its date, newest first.
        let versions = try headings.map { heading in
            let parts = heading.dropFirst(3).split(separator: " ")
            #expect(parts.count == 2 && parts[1].hasPrefix("(") && parts[1].hasSuffix(")"), "\(heading)")
            return try #require(parts.first).split(separator: ".").compactMap { Int($0) }
        }
        #expect(versions.allSatisfy { $0.count == 3 })
        #expect(zip(versions, versions.dropFirst()).allSatisfy { $0.0.lexicographicallyPrecedes($0.1) == false })
    }

    @Test("trust init in a pipe prints the recovery key without its QR block (13)")
    func recoveryKeyQRNotInAPipe() async throws {
        let cli = try CLI()
        let store = cli.store("d")
        #expect(try await cli.run(["init", "--store", store, "--role", "desktop", "--name", "laptop"]).status == 0)
        #expect(try await cli.run(["login", "--store", store, "--email", "q@example.com"]).status == 0)
        let started = try await cli.run(["trust", "init", "--store", store])
        #expect(started.status == 0 && started.out.contains("Recovery key"), "\(started.err)")
        #expect(!started.out.contains("█") && !started.out.contains("▀") && !started.out.contains("▄"))
    }

    @Test("Ctrl-C during a push exits 130 and says the next sync resumes (6)")
    func interruptedPush() async throws {
        let cli = try CLI()
        // A server that never answers: the push waits on its first request.
        let silent = try HostileServer { _, _ in }
        defer { silent.stop() }
        let store = cli.store("d")
        let environment = try await DiskCLITests.loggedIn(cli, store, server: silent)
        let before = silent.requests.count
        let push = try SpawnedChild(
            CLI.path, ["push", "--store", store], environment: cli.environment(environment),
            workingDirectory: cli.directory, stdin: nil)
        // Interrupted once it waits on its first request (its handler is in place by then).
        #expect(await DiskCLITests.requestArrives(at: silent, after: before), "the push never asked the server")
        push.kill(SIGINT)
        let status = try await offThePool { SpawnedChild.exitCode(try push.wait()) }
        #expect(status == 130 && push.errors.contains("interrupted: the next sync resumes"), "\(push.errors)")
    }

    @Test(
        "a mistyped embedded remote is named, not created (3); a too-open device.key stops the sync before it runs (6)")
    func embeddedTypoAndOpenKey() async throws {
        let cli = try CLI()
        let session = try await ApprovalCLITests.paired(cli)
        let other = cli.directory.appendingPathComponent("other.sqlite").path
        let typo = try await cli.run(["pull", "--store", cli.store("p"), "--remote", "embedded:" + other])
        #expect(typo.status == 1 && typo.err.contains("there is no embedded remote at \(other)"), "\(typo.err)")
        #expect(!typo.err.contains("re-pair") && !FileManager.default.fileExists(atPath: other))

        let key = cli.store("d") + "/device.key"
        chmod(key, 0o644)
        let open = try await cli.run(["push", "--store", cli.store("d"), "--json"])
        #expect(open.status == 1 && open.err.contains("too open"), "\(open.status) \(open.err)")
        chmod(key, 0o600)
        #expect(try await cli.run(["push", "--store", cli.store("d")]).status == 0)
        let phoneKey = cli.store("p") + "/device.key"
        chmod(phoneKey, 0o640)
        let pulled = try await cli.run(["pull", "--store", cli.store("p"), "--json"])
        #expect(pulled.status == 1 && pulled.err.contains("too open") && pulled.out.isEmpty, "\(pulled.status)")
        chmod(phoneKey, 0o600)
        #expect(try await cli.run(["secrets", "show", "--store", cli.store("p"), session]).status == 0)
    }

    @Test("with trust set up, a dead server exits 3 with a JSON report, on a push and on a pull (1)")
    func deadServerWithTrust() async throws {
        let cli = try CLI()
        _ = try await ApprovalCLITests.paired(cli)
        for store in ["d", "p"] {
            let status = try await cli.run(["status", "--store", cli.store(store), "--json"])
            let object = try #require(JSONSerialization.jsonObject(with: Data(status.out.utf8)) as? [String: Any])
            let user = try #require((object["device"] as? [String: Any])?["userId"] as? String)
            let token =
                "eyJhbGciOiJIUzI1NiJ9." + StackEnvironment.base64URL(Data(#"{"sub":"\#(user)"}"#.utf8)) + ".c2ln"
            // Port 9 (discard) on loopback: nothing listens, every request fails at once.
            let dead = try await cli.run(
                ["sync", "--store", cli.store(store), "--remote", "http://127.0.0.1:9", "--json"],
                environment: ["SUPABASE_ANON_KEY": "anon", "SYNC_ACCESS_TOKEN": token])
            #expect(dead.status == 3, "\(store): \(dead.status) \(dead.err)")
            let report = try? JSONSerialization.jsonObject(with: Data(dead.out.utf8)) as? [String: Any]
            #expect(report?["outcome"] as? String == "failure", "\(store): \(dead.out)")
        }
    }

    @Test(
        "scripts/stack.sh info prints a signup that works as printed and a stop command for its own directory (13)",
        .enabled(if: !StackEnvironment.skipped && ProcessInfo.processInfo.environment["STACK_DIR"] != nil))
    func stackInfo() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let info = try SpawnedChild(
            "/bin/bash", [root.appendingPathComponent("scripts/stack.sh").path, "info"],
            environment: ProcessInfo.processInfo.environment, workingDirectory: root, stdin: nil)
        #expect(try await info.exited() == 0)
        let lines = info.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = try #require(lines.firstIndex { $0.contains("/auth/v1/signup") })
        let email = "info-\(UUID().canonical)@example.com"
        let signup = (lines[start] + "\n" + lines[start + 1]).replacingOccurrences(of: "you@example.com", with: email)
        let run = try SpawnedChild(
            "/bin/bash", ["-c", signup], environment: ProcessInfo.processInfo.environment, workingDirectory: root,
            stdin: nil)
        #expect(try await run.exited() == 0)
        #expect(run.output.contains("\"access_token\""), "\(run.output)")
        let stackDirectory = try #require(ProcessInfo.processInfo.environment["STACK_DIR"])
        #expect(info.output.contains("Stop it with: STACK_DIR=\(stackDirectory) "))
    }

    @Test(
        "plain http:// to another host is refused for a login and for every later command; --insecure-http allows it with a warning (4)"
    )
    func plainHTTP() async throws {
        let cli = try CLI()
        let store = cli.store("d")
        #expect(try await cli.run(["init", "--store", store, "--role", "desktop", "--name", "laptop"]).status == 0)
        let token =
            "eyJhbGciOiJIUzI1NiJ9." + StackEnvironment.base64URL(Data(#"{"sub":"\#(UUID().canonical)"}"#.utf8))
            + ".c2ln"
        let environment = ["SUPABASE_ANON_KEY": "anon", "SYNC_ACCESS_TOKEN": token]
        // 192.0.2.0/24 is TEST-NET-1: nothing answers there, and nothing is sent.
        let refused = try await cli.run(
            ["login", "--store", store, "--remote", "http://192.0.2.1:8000"], environment: environment)
        #expect(refused.status == 64 && refused.err.contains("plain http:// is refused"), "\(refused.err)")
        let allowed = try await cli.run(
            ["login", "--store", store, "--remote", "http://192.0.2.1:8000", "--insecure-http"],
            environment: environment)
        #expect(allowed.status == 0 && allowed.err.contains("Warning: plain http://"), "\(allowed.err)")
        // The saved remote is refused again by a command without the flag, before any request.
        let push = try await cli.run(
            ["push", "--store", store], environment: environment.merging(["SYNC_REMOTE": ""]) { $1 })
        #expect(push.status == 64 && push.err.contains("plain http:// is refused"), "\(push.err)")
        let help = try await cli.run(["login", "--help"])
        #expect(help.out.contains("--insecure-http"))
    }

    @Test("vectors verify names a missing file and says the files were not verified (6)")
    func missingVectorFile() async throws {
        let cli = try CLI()
        let missing = try await cli.run(["vectors", "verify", "/nonexistent.json"])
        #expect(missing.status == 2 && missing.err.contains("/nonexistent.json: cannot read file: no such file"))
        #expect(missing.out.contains("0 passed, 0 failed; 1 of 1 files not verified"))
    }

    @Test(
        "secrets show wants 8 characters of the id (13); approval request on a phone refuses before saying it asked, and an answer on the asking desktop says to answer elsewhere (9)"
    )
    func approvalsAndSecrets() async throws {
        let cli = try CLI()
        let session = try await ApprovalCLITests.paired(cli)
        let short = try await cli.run(["secrets", "show", "--store", cli.store("p"), String(session.prefix(7))])
        #expect(short.status == 64 && short.err.contains("at least 8 characters"))
        let enough = try await cli.run(["secrets", "show", "--store", cli.store("p"), String(session.prefix(8))])
        #expect(enough.status == 0, "\(enough.err)")

        let question = #"{"tool": "Bash", "summary": "npm test"}"#
        let onPhone = try await cli.run(
            ["approval", "request", "--store", cli.store("p"), session, "--from-file", "-"], stdin: question)
        #expect(onPhone.status == 1 && onPhone.err.contains("asked by the desktop that runs the session"))
        #expect(!onPhone.out.contains("Asking"), "it said it asked before it refused: \(onPhone.out)")

        let asked = ApprovalCLITests.ask(
            cli, ["approval", "request", "--store", cli.store("d"), session, "--from-file", "-", "--timeout", "120"],
            stdin: question)
        let request = try await Self.pending(cli, asked)
        let own = try await cli.run(["approval", "answer", "--store", cli.store("d"), request, "approve"])
        #expect(own.status == 1 && own.err.contains("answer it on another of the user's devices"), "\(own.err)")
        #expect(!own.err.contains("generation"))
        #expect(try await cli.run(["approval", "answer", "--store", cli.store("p"), request, "deny"]).status == 0)
        #expect(try await asked.value.status == 5)
    }

    @Test("secrets show says when the device that sealed a secret has since been revoked (9)")
    func secretFromARevokedSender() async throws {
        let cli = try CLI()
        let first = try await ApprovalCLITests.paired(cli)
        let other = cli.store("d2")
        #expect(try await cli.run(["init", "--store", other, "--role", "desktop", "--name", "spare"]).status == 0)
        #expect(try await cli.run(["login", "--store", other, "--email", "q@example.com"]).status == 0)
        let invite = try await cli.run(["trust", "invite", "--store", cli.store("d"), "--device-type", "linux-desktop"])
        let code = try #require(
            invite.out.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.count == 84 && $0.split(separator: "-").count == 17 })
        #expect(try await cli.run(["trust", "join", "--no-wait", "--store", other], stdin: code + "\n").status == 0)
        #expect(try await cli.run(["trust", "approve", "--store", cli.store("d")]).status == 0)
        let repo = cli.directory.appendingPathComponent("spare-project")
        try FileManager.default.createDirectory(at: repo, withIntermediateDirectories: true)
        #expect(try await cli.run(["repo", "add", "--store", other, repo.path]).status == 0)
        let sealed = try await cli.run(["session", "start", "--store", other, "--repo", repo.path]).out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try await cli.run(["sync", "--store", other]).status == 0)
        #expect(try await cli.run(["sync", "--store", cli.store("p")]).status == 0)
        let before = try await cli.run(["secrets", "show", "--store", cli.store("p"), sealed])
        #expect(before.status == 0 && before.out.contains("(authenticated)") && !before.out.contains("revoked"))

        let otherID = try #require(try await DeviceStore.opened(directory: URL(fileURLWithPath: other)).identity()).id
        #expect(
            try await cli.run(["trust", "revoke", "--store", cli.store("d"), otherID.canonical, "--yes"]).status == 0)
        #expect(try await cli.run(["sync", "--store", cli.store("p")]).status <= 2)
        let after = try await cli.run(["secrets", "show", "--store", cli.store("p"), sealed])
        #expect(after.status == 0, "\(after.err)")
        #expect(after.out.contains("revoked on") && after.out.contains("no longer trusted"), "\(after.out)")
        #expect(!after.out.contains("(authenticated)"), "\(after.out)")
        let json = try await cli.run(["secrets", "show", "--store", cli.store("p"), sealed, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
        #expect(object["senderRevoked"] as? Bool == true)
        let untouched = try await cli.run(["secrets", "show", "--store", cli.store("p"), first, "--json"])
        let still = try #require(try JSONSerialization.jsonObject(with: Data(untouched.out.utf8)) as? [String: Any])
        #expect(still["senderRevoked"] as? Bool == false)
    }

    @Test(
        "a pairing code with one character changed or two groups swapped is refused before anything is sent; approve exits 1 when it refused every request (2)"
    )
    func mistypedPairingCode() async throws {
        let cli = try CLI()
        for (name, role) in [("d", "desktop"), ("p", "mobile")] {
            #expect(
                try await cli.run(["init", "--store", cli.store(name), "--role", role, "--name", name]).status == 0)
            #expect(try await cli.run(["login", "--store", cli.store(name), "--email", "q@example.com"]).status == 0)
        }
        #expect(try await cli.run(["trust", "init", "--store", cli.store("d")]).status == 0)
        let invite = try await cli.run(["trust", "invite", "--store", cli.store("d"), "--device-type", "ios-phone"])
        let code = try #require(
            invite.out.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.count == 84 && $0.split(separator: "-").count == 17 })
        var groups = code.split(separator: "-").map(String.init)
        groups.swapAt(4, 5)
        let letters = Array(code)
        let changed = String(letters.prefix(40)) + (letters[40] == "A" ? "B" : "A") + String(letters.dropFirst(41))
        for typo in [changed, groups.joined(separator: "-")] {
            let joined = try await cli.run(
                ["trust", "join", "--no-wait", "--store", cli.store("p")], stdin: typo + "\n")
            #expect(joined.status == 1 && joined.err.contains("does not check out"), "\(joined.status) \(joined.err)")
            #expect(!joined.out.contains("Asked the trust root"))
        }
        let nothing = try await cli.run(["trust", "approve", "--store", cli.store("d")])
        #expect(nothing.status == 0 && nothing.out.contains("No pairing requests"), "nothing reached the server")

        // A code whose checksum holds but whose secret is wrong (only a forger or a one-in-65,536
        // typo gets here): the server-side MAC still refuses it, and approve says so with exit 1.
        let parsed = try PairingCode(parsing: code)
        var secret = parsed.secret.withUnsafeBytes { Array($0) }
        secret[0] ^= 0x01
        let forged = try PairingCode(
            inviteID: parsed.inviteID, secret: SecureBytes(copying: secret), fingerprint: parsed.fingerprint)
        let asked = try await cli.run(
            ["trust", "join", "--no-wait", "--store", cli.store("p")], stdin: forged.revealText() + "\n")
        #expect(asked.status == 0, "\(asked.err)")
        let refused = try await cli.run(["trust", "approve", "--store", cli.store("d")])
        #expect(refused.status == 1, "\(refused.status) \(refused.out) \(refused.err)")
        #expect(refused.out.contains("mistyped") || refused.err.contains("mistyped"), "\(refused.out)")
    }
}
