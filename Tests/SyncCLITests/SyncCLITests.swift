import EmbeddedRemote
import Foundation
import LocalStore
import RemoteStore
import SecretCrypto
import SyncModel
import TestStack
import Testing

/// Runs the built `sync-cli` as a user would.
struct CLI {
    static var path: String {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent()
                .appendingPathComponent(".build/debug"),
        ].map { $0.appendingPathComponent("sync-cli").path }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates[0]
    }

    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().canonical)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    /// Runs `arguments`; returns exit status, stdout and stderr. The wait is off the cooperative
    /// pool (``offThePool(_:)``).
    @discardableResult
    func run(
        _ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]
    ) async throws -> (status: Int32, out: String, err: String) {
        try await ChildProcesses.slots.run {
            try await offThePool { try runBlocking(arguments, stdin: stdin, environment: environment) }
        }
    }

    /// ``run(_:stdin:environment:)`` on the calling thread.
    func runBlocking(
        _ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]
    ) throws -> (status: Int32, out: String, err: String) {
        let child = try SpawnedChild(
            Self.path, arguments, environment: self.environment(environment), workingDirectory: directory,
            stdin: stdin)
        let status = SpawnedChild.exitCode(try child.wait())
        return (status, child.output, child.errors)
    }

    /// The environment a run gets: this process's, the embedded remote beside the stores, and
    /// `overrides`.
    func environment(_ overrides: [String: String]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["SYNC_REMOTE"] = "embedded:" + directory.appendingPathComponent("remote.sqlite").path
        env.removeValue(forKey: "SYNC_STORE_DIR")
        for (key, value) in overrides { env[key] = value }
        return env
    }

    func store(_ name: String) -> String { directory.appendingPathComponent(name).path }
}

@Suite("sync-cli")
struct SyncCLITests {
    static let commands: [[String]] = [
        [], ["demo"], ["init"], ["login"], ["repo"], ["repo", "add"], ["repo", "list"], ["repo", "remove"], ["session"],
        ["session", "start"], ["session", "end"], ["session", "list"], ["session", "delete"], ["push"], ["pull"],
        ["sync"],
        ["status"], ["devices", "list"], ["secrets", "show"], ["vectors", "verify"], ["vectors", "generate"],
        ["session", "activity"], ["session", "status"], ["push-token"], ["push-token", "register"],
        ["push-token", "invalidate"],
        ["push-token", "status"], ["approvals", "clear"], ["outbox", "list"],
        ["trust"], ["trust", "init"], ["trust", "invite"], ["trust", "join"], ["trust", "approve"],
        ["trust", "status"], ["trust", "revoke"], ["trust", "recovery-key", "show"], ["question"], ["question", "ask"],
        ["question", "close"],
        ["question", "show"], ["question", "answer"], ["session", "notify"], ["session", "touch"],
        ["outbox", "deliveries"], ["agent"], ["agent", "install"], ["agent", "uninstall"], ["agent", "status"],
        ["agent", "hook"], ["agent", "notify"],
    ]

    @Test("every command has help", arguments: commands)
    func help(command: [String]) async throws {
        let result = try await CLI().run(command + ["--help"])
        #expect(result.status == 0)
        #expect(result.out.contains("USAGE:"))
    }

    @Test("sync commands document their exit statuses")
    func exitStatusesDocumented() async throws {
        for command in ["push", "pull", "sync"] {
            let result = try await CLI().run([command, "--help"])
            let text = result.out.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(
                text.contains("2 partial success") && text.contains("3 every phase failed")
                    && text.contains("64 a usage mistake"))
        }
    }

    @Test("the demo ends with every secret matched")
    func demo() async throws {
        let result = try await CLI().run(["demo"])
        // Booleans first: the demo's output holds its (throwaway) pairing code, which a failing
        // expectation would otherwise print.
        let matched = result.out.contains("5/5 secrets matched"),
            quiet = result.out.contains("0 sealed on the second push")
        let ended = result.out.hasSuffix("Every secret matched.\n"),
            paired = result.out.contains("certified Quinn's iPhone; refused 0")
        let authenticated = result.out.contains("every envelope authenticated")
        #expect(result.status == 0 && matched && quiet && ended && paired && authenticated)
    }

    @Test(
        "by hand: init, login, repo add, session start, push, pull, secrets show; exit codes and output hold no secret")
    func byHand() async throws {
        let cli = try CLI()
        let repo = cli.directory.appendingPathComponent("project")
        try FileManager.default.createDirectory(at: repo, withIntermediateDirectories: true)
        #expect(
            try await cli.run(["init", "--store", cli.store("d"), "--role", "desktop", "--name", "laptop"]).status == 0)
        #expect(
            try await cli.run(["init", "--store", cli.store("p"), "--role", "mobile", "--name", "phone"]).status == 0)
        // Before login, a push refuses to run: status 1, a clear message.
        let early = try await cli.run(["push", "--store", cli.store("d")])
        #expect(early.status == 1 && early.err.contains("login"))
        for store in ["d", "p"] {
            #expect(try await cli.run(["login", "--store", cli.store(store), "--email", "q@example.com"]).status == 0)
        }
        #expect(try await cli.run(["pull", "--store", cli.store("p")]).status == 0)
        #expect(try await cli.run(["repo", "add", "--store", cli.store("d"), repo.path]).status == 0)
        let started = try await cli.run([
            "session", "start", "--store", cli.store("d"), "--repo", repo.path, "--title", "t",
        ])
        let session = started.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(started.status == 0 && UUID.parse(session) != nil)
        let push = try await cli.run(["push", "--store", cli.store("d"), "--json"])
        #expect(push.status == 0)
        #expect(push.out.contains("\"envelopesSealed\" : 2"))
        let pull = try await cli.run(["pull", "--store", cli.store("p")])
        #expect(pull.status == 0 && pull.out.contains("1 opened"))

        let shown = try await cli.run(["secrets", "show", "--store", cli.store("p"), String(session.prefix(8))])
        #expect(shown.status == 0 && !shown.out.contains("sess_"))
        let revealed = try await cli.run(["secrets", "show", "--store", cli.store("p"), session, "--reveal"])
        let secret = revealed.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(secret.hasPrefix("sess_") && secret.count == 48)
        let desktopCopy = try await cli.run(["secrets", "show", "--store", cli.store("d"), session, "--reveal"])
        #expect(desktopCopy.out.trimmingCharacters(in: .whitespacesAndNewlines) == secret)
        for output in [push, pull, shown, try await cli.run(["status", "--store", cli.store("d")])] {
            #expect(!output.out.contains(secret) && !output.err.contains(secret))
        }

        // A malformed device key on the remote: partial success, exit status 2, reported.
        let user = try #require(
            try await DeviceStore(directory: URL(fileURLWithPath: cli.store("d"))).identity()?.userID)
        // The operator's hand: rows written on the remote behind the devices' backs.
        let remote = try EmbeddedRemoteStore.serviceRole(
            path: cli.directory.appendingPathComponent("remote.sqlite").path, userID: user)
        let broken = UUID()
        try await remote.upsertOwnDevice(
            OwnDeviceRow(
                id: broken, userID: user, name: "broken", deviceType: .iosPhone,
                hostname: nil, publicKey: "bm90IGEga2V5"))
        let partial = try await cli.run(["push", "--store", cli.store("d")])
        #expect(partial.status == 2)
        #expect(partial.out.contains("invalidPublicKey") && partial.out.contains(broken.canonical))
        let devices = try await cli.run(["devices", "list", "--store", cli.store("d")])
        #expect(devices.out.contains("broken") && devices.out.contains("no: public key is not the base64 of 32 bytes"))

        // The wrong role is refused.
        #expect(try await cli.run(["push", "--store", cli.store("p")]).status == 1)
    }

    @Test(
        "coordination by hand: tokens, handoff, approval clearing, runtime status, outbox, presence; no token printed whole"
    )
    func coordination() async throws {
        let cli = try CLI()
        let repo = cli.directory.appendingPathComponent("project")
        try FileManager.default.createDirectory(at: repo, withIntermediateDirectories: true)
        for (store, role) in [("d", "desktop"), ("p", "mobile")] {
            #expect(
                try await cli.run(["init", "--store", cli.store(store), "--role", role, "--name", store]).status == 0)
            #expect(try await cli.run(["login", "--store", cli.store(store), "--email", "c@example.com"]).status == 0)
        }
        #expect(try await cli.run(["repo", "add", "--store", cli.store("d"), repo.path]).status == 0)
        let session = try await cli.run(["session", "start", "--store", cli.store("d"), "--repo", repo.path]).out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        // Before the phone's first sync the remote does not know it: a clear refusal.
        let early = try await cli.run(["session", "activity", "--store", cli.store("p"), session])
        #expect(early.status == 1 && early.err.contains("sync-cli sync"))
        #expect(try await cli.run(["sync", "--store", cli.store("d")]).status == 0)
        #expect(try await cli.run(["sync", "--store", cli.store("p")]).status == 0)

        let desktopToken = "d0d0d0d0d0d0d0d0d0d0aa11", phoneToken = "f0f0f0f0f0f0f0f0f0f0bb22",
            rotated = "f0f0f0f0f0f0f0f0f0f0cc33"
        #expect(try await cli.run(["push-token", "register", "--store", cli.store("d"), desktopToken]).status == 0)
        let registered = try await cli.run([
            "push-token", "register", "--store", cli.store("p"), phoneToken, "--environment", "development",
        ])
        #expect(registered.status == 0 && registered.out.contains("…f0bb22") && !registered.out.contains(phoneToken))
        let rotation = try await cli.run([
            "push-token", "register", "--store", cli.store("p"), rotated, "--previous", phoneToken,
        ])
        #expect(rotation.out.contains("no longer valid"))
        let status = try await cli.run(["push-token", "status", "--store", cli.store("p"), "--json"])
        let statusObject = try JSONSerialization.jsonObject(with: Data(status.out.utf8)) as? [String: Any]
        #expect(
            statusObject?["deviceTokenRegistered"] as? Bool == true
                && (statusObject?["liveActivityTokens"] as? [Any])?.isEmpty == true)
        let missingActivity = try await cli.run([
            "push-token", "register", "--store", cli.store("p"), "abc", "--type", "live_activity",
        ])
        #expect(missingActivity.status == 64 && missingActivity.err.contains("--activity-id"))

        #expect(
            try await cli.run(["session", "activity", "--store", cli.store("d"), session]).out.contains(
                "not handed off"))
        let handoff = try await cli.run([
            "session", "activity", "--store", cli.store("p"), String(session.prefix(8)), "--json",
        ])
        let claim = try JSONSerialization.jsonObject(with: Data(handoff.out.utf8)) as? [String: Any]
        #expect(claim?["handedOff"] as? Bool == true && claim?["notified"] as? Int == 1)
        let unknownClient = try await cli.run([
            "session", "activity", "--store", cli.store("p"), session, "--client", "android",
        ])
        #expect(unknownClient.status == 64)

        let badSpelling = try await cli.run(["approvals", "clear", "--store", cli.store("p"), "req-9"])
        #expect(badSpelling.status == 64 && badSpelling.err.contains("lowercase UUID"))
        let requestID = UUID().canonical
        for _ in 0..<2 {
            let cleared = try await cli.run([
                "approvals", "clear", "--store", cli.store("p"), requestID, "--exclude-token", rotated, "--json",
            ])
            let answer = try JSONSerialization.jsonObject(with: Data(cleared.out.utf8)) as? [String: Any]
            #expect(answer?["success"] as? Bool == true && answer?["devicesNotified"] as? Int == 1)
        }

        let reported = try await cli.run([
            "session", "status", "--store", cli.store("d"), session, "waiting", "--message", "approve \u{1B}[31m?",
        ])
        #expect(reported.status == 0, "\(reported.err)")
        #expect(
            try await cli.run(["session", "status", "--store", cli.store("p"), session, "idle"]).status == 1,
            "a phone does not report")
        #expect(try await cli.run(["sync", "--store", cli.store("p")]).status == 0)
        let listed = try await cli.run(["session", "list", "--store", cli.store("p")])
        #expect(listed.out.contains("[waiting: approve") && !listed.out.contains("\u{1B}"))

        let outbox = try await cli.run(["outbox", "list", "--store", cli.store("p"), "--json"])
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(outbox.out.utf8)) as? [[String: Any]])
        #expect(rows.count == 2, "one handoff to the desktop, one approval clearing to the desktop")
        #expect(Set(rows.compactMap { $0["token"] as? String }) == ["…" + String(desktopToken.suffix(6))])
        let human = try await cli.run(["outbox", "list", "--store", cli.store("d")])
        #expect(human.out.contains("session_handoff") && human.out.contains("clearApprovalId"))
        for output in [registered, rotation, status, handoff, outbox, human] {
            for token in [desktopToken, phoneToken, rotated] {
                #expect(!output.out.contains(token) && !output.err.contains(token))
            }
        }
        // "online" is a 15 s window: the desktop's presence is refreshed, then listed, until the
        // two ran within it (on a loaded machine the steps above took minutes once).
        let online = try await Waiting.until(every: .milliseconds(250)) {
            _ = try await cli.run(["push", "--store", cli.store("d")])
            return try await cli.run(["devices", "list", "--store", cli.store("p")]).out.contains("online")
        }
        #expect(online, "the desktop never listed online within the ceiling")
    }

    @Test("a key file readable by others stops the command with ssh's advice")
    func openKeyFile() async throws {
        let cli = try CLI()
        #expect(
            try await cli.run(["init", "--store", cli.store("d"), "--role", "desktop", "--name", "laptop"]).status == 0)
        #expect(try await cli.run(["login", "--store", cli.store("d"), "--email", "q@example.com"]).status == 0)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: cli.store("d") + "/device.key")
        let result = try await cli.run(["push", "--store", cli.store("d")])
        #expect(result.status == 1 && result.err.contains("too open") && result.err.contains("chmod 600"))
    }
}

@Suite("sync-cli security findings")
struct SyncCLISecurityTests {
    @Test("repo add strips credentials from the origin URL before storing, printing or pushing it")
    func credentialsInRemoteURL() async throws {
        let cli = try CLI()
        #expect(
            try await cli.run(["init", "--store", cli.store("d"), "--role", "desktop", "--name", "laptop"]).status == 0)
        #expect(try await cli.run(["login", "--store", cli.store("d"), "--email", "q@example.com"]).status == 0)
        let checkout = cli.directory.appendingPathComponent("checkout")
        try FileManager.default.createDirectory(at: checkout, withIntermediateDirectories: true)
        for arguments in [
            ["init", "-q"],
            ["remote", "add", "origin", "https://quinn:ghp_TOPSECRET@github.com/org/repo.git?token=ghp_TOPSECRET"],
        ] {
            let git = try SpawnedChild(
                "/usr/bin/env", ["git", "-C", checkout.path] + arguments,
                environment: ProcessInfo.processInfo.environment)
            try #require(try await git.exited() == 0)
        }
        let added = try await cli.run(["repo", "add", "--store", cli.store("d"), checkout.path])
        #expect(added.status == 0)
        #expect(added.out.contains("https://github.com/org/repo.git"))
        let listed = try await cli.run(["repo", "list", "--store", cli.store("d")])
        let pushed = try await cli.run(["push", "--store", cli.store("d")])
        for output in [added, listed, pushed] {
            #expect(!output.out.contains("TOPSECRET") && !output.err.contains("TOPSECRET"))
        }
        let user = try #require(
            try await DeviceStore(directory: URL(fileURLWithPath: cli.store("d"))).identity()?.userID)
        // The operator's hand: rows written on the remote behind the devices' backs.
        let remote = try EmbeddedRemoteStore.serviceRole(
            path: cli.directory.appendingPathComponent("remote.sqlite").path, userID: user)
        let rows = try await remote.fetchRepositories(after: nil)
        #expect(rows.map(\.record.remoteURL) == ["https://github.com/org/repo.git"])
    }

    @Test("device names and server messages cannot drive the terminal: control characters are escaped")
    func terminalEscapes() async throws {
        let cli = try CLI()
        #expect(
            try await cli.run(["init", "--store", cli.store("d"), "--role", "desktop", "--name", "laptop"]).status == 0)
        #expect(try await cli.run(["login", "--store", cli.store("d"), "--email", "q@example.com"]).status == 0)
        let user = try #require(
            try await DeviceStore(directory: URL(fileURLWithPath: cli.store("d"))).identity()?.userID)
        // The operator's hand: rows written on the remote behind the devices' backs.
        let remote = try EmbeddedRemoteStore.serviceRole(
            path: cli.directory.appendingPathComponent("remote.sqlite").path, userID: user)
        try await remote.upsertOwnDevice(
            OwnDeviceRow(
                id: UUID(), userID: user, name: "evil\u{1B}]0;pwned\u{07}\u{1B}[2J\r\u{9B}31m", deviceType: .iosPhone,
                hostname: nil, publicKey: "bm90IGEga2V5"))
        let listed = try await cli.run(["devices", "list", "--store", cli.store("d")])
        let pushed = try await cli.run(["push", "--store", cli.store("d")])
        for output in [listed, pushed] {
            let text = output.out + output.err
            #expect(!text.unicodeScalars.contains { [0x1B, 0x07, 0x0D, 0x9B].contains($0.value) })
        }
        #expect(listed.out.contains("evil\\u{1B}]0;pwned"))
    }
}

@Suite("sync-cli login against the stack", .enabled(if: !StackEnvironment.skipped))
struct SyncCLILoginTests {
    @Test("login with a password from the environment saves a 0600 session; a wrong password fails without echoing it")
    func login() async throws {
        let stack = try StackEnvironment.require()
        let cli = try CLI()
        let email = "cli-\(UUID().canonical)@example.test"
        let signup = try await stack.request(
            "POST", "/auth/v1/signup", body: #"{"email":"\#(email)","password":"hunter2-but-longer"}"#)
        try #require(signup.status == 200)
        #expect(
            try await cli.run(["init", "--store", cli.store("d"), "--role", "desktop", "--name", "laptop"]).status == 0)
        let environment = ["SUPABASE_ANON_KEY": stack.anonKey, "SYNC_REMOTE": stack.url.absoluteString]
        let wrong = try await cli.run(
            ["login", "--store", cli.store("d"), "--email", email],
            environment: environment.merging(["SYNC_PASSWORD": "not-the-password"]) { a, _ in a })
        #expect(wrong.status != 0)
        #expect(!wrong.out.contains("not-the-password") && !wrong.err.contains("not-the-password"))
        let right = try await cli.run(
            ["login", "--store", cli.store("d"), "--email", email],
            environment: environment.merging(["SYNC_PASSWORD": "hunter2-but-longer"]) { a, _ in a })
        #expect(right.status == 0, "\(right.err)")
        let mode =
            try FileManager.default.attributesOfItem(atPath: cli.store("d") + "/auth.json")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let pushed = try await cli.run(["push", "--store", cli.store("d")], environment: environment)
        #expect(pushed.status == 0, "\(pushed.out) \(pushed.err)")
    }

    @Test(
        "trust revoke ends the revoked devices' logins on the auth server (their refresh fails); --end-other-logins every other login"
    )
    func revokeEndsOtherLogins() async throws {
        let stack = try StackEnvironment.require()
        let cli = try CLI()
        let email = "cli-\(UUID().canonical)@example.test"
        let signup = try await stack.request(
            "POST", "/auth/v1/signup", body: #"{"email":"\#(email)","password":"hunter2-but-longer"}"#)
        try #require(signup.status == 200)
        let environment = [
            "SUPABASE_ANON_KEY": stack.anonKey, "SYNC_REMOTE": stack.url.absoluteString,
            "SYNC_PASSWORD": "hunter2-but-longer",
        ]
        for (name, role) in [("d", "desktop"), ("p", "mobile")] {
            #expect(
                try await cli.run(["init", "--store", cli.store(name), "--role", role, "--name", name]).status == 0)
            let login = try await cli.run(
                ["login", "--store", cli.store(name), "--email", email], environment: environment)
            #expect(login.status == 0, "\(login.err)")
            #expect(try await cli.run(["sync", "--store", cli.store(name)], environment: environment).status == 0)
        }
        #expect(
            try await cli.run(
                ["trust", "init", "--store", cli.store("d"), "--no-recovery-key"], environment: environment
            )
            .status == 0)
        let plain = try await cli.run(
            ["trust", "revoke", "--store", cli.store("d"), "--all-others", "--yes"], environment: environment)
        #expect(
            plain.status == 0 && plain.out.contains("The remote ended them")
                && plain.out.contains("--end-other-logins"),
            "\(plain.out)")
        // The revocation alone ended the phone's login (it registered its credential from it).
        let auth = SupabaseAuth(projectURL: stack.url, apiKey: stack.anonKey)
        let phoneSession = try #require(
            try await DeviceStore.opened(directory: URL(fileURLWithPath: cli.store("p"))).authSessionFile.load())
        await #expect { _ = try await auth.refresh(phoneSession.refreshToken) } throws: {
            ($0 as? RemoteStoreError)?.code == .unauthorized
        }
        let ended = try await cli.run(
            ["trust", "revoke", "--store", cli.store("d"), "--all-others", "--end-other-logins", "--yes"],
            environment: environment)
        #expect(ended.status == 0 && ended.out.contains("Ended every other login"), "\(ended.err)")
        // The desktop's own login goes on.
        #expect(try await cli.run(["sync", "--store", cli.store("d")], environment: environment).status == 0)
    }
}
