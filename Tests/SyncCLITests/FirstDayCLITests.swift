import DeviceTrust
import Foundation
import GRDB
import SecretCrypto
import TestStack
import Testing

@testable import sync_cli

/// What a new user met on the first day, each fixed (docs/cli.md): typos that created things, a
/// pairing code stuck in a pipe's buffer, ids in two cases, lists without JSON.
@Suite("sync-cli: the first day")
struct FirstDayCLITests {
    @Test func aMistypedStoreIsNeverCreated() async throws {
        let cli = try CLI()
        let typo = cli.store("desktpo")
        for command in [
            ["status"], ["push"], ["devices", "list"], ["session", "list"], ["login", "--email", "a@b.c"],
        ] {
            let result = try await cli.run(command + ["--store", typo])
            #expect(result.status == 1, "\(command)")
            #expect(
                result.err.contains("no store at \(typo)")
                    && result.err.contains("sync-cli init --store \(typo) --role desktop|mobile --name NAME"))
            #expect(!FileManager.default.fileExists(atPath: typo))
        }
    }

    @Test func anEmbeddedRemoteNeedsAnExistingDirectoryAndIsPrivate() async throws {
        let cli = try CLI()
        let store = cli.store("desktop")
        #expect(try await cli.run(["init", "--store", store, "--role", "desktop", "--name", "d"]).status == 0)
        let missing = try await cli.run([
            "login", "--store", store, "--remote", "embedded:/nonexistent/r.sqlite", "--email", "a@b.c",
        ])
        #expect(missing.status == 1 && missing.err.contains("/nonexistent does not exist"))
        #expect(!FileManager.default.fileExists(atPath: "/nonexistent"))
        let empty = try await cli.run(["login", "--store", store, "--remote", "embedded:", "--email", "a@b.c"])
        #expect(empty.status == 64 && empty.err.contains("embedded: needs a file path"))
        // Neither was remembered: the next login uses the default, beside the store, 0600.
        let remote = cli.directory.appendingPathComponent("own-remote.sqlite").path
        #expect(
            try await cli.run(["login", "--store", store, "--remote", "embedded:" + remote, "--email", "a@b.c"]).status
                == 0)
        // The environment's remote ($SYNC_REMOTE, which the test's CLI sets) would be read first;
        // only `login` creates one, so the push names the one login made.
        #expect(
            try await cli.run(["push", "--store", store], environment: ["SYNC_REMOTE": "embedded:" + remote]).status
                == 0)
        let mode = try FileManager.default.attributesOfItem(atPath: remote)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
    }

    @Test func versionAndJSONListsWithLowercaseIDs() async throws {
        let cli = try CLI()
        let version = try await cli.run(["--version"])
        #expect(version.status == 0 && version.out.range(of: #"^\d+\.\d+\.\d+\n$"#, options: .regularExpression) != nil)
        let store = cli.store("desktop")
        #expect(try await cli.run(["init", "--store", store, "--role", "desktop", "--name", "d"]).status == 0)
        #expect(try await cli.run(["login", "--store", store, "--email", "a@b.c"]).status == 0)
        #expect(try await cli.run(["repo", "add", "--store", store, cli.directory.path]).status == 0)
        let session = try await cli.run([
            "session", "start", "--store", store, "--repo", cli.directory.path, "--title", "t",
        ])
        let id = session.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(id == id.lowercased() && UUID(uuidString: id) != nil)
        #expect(try await cli.run(["push", "--store", store]).status == 0)
        #expect(try await cli.run(["trust", "init", "--store", store, "--no-recovery-key"]).status == 0)

        func json(_ arguments: [String]) async throws -> (Any, String) {
            let result = try await cli.run(arguments + ["--store", store, "--json"])
            #expect(result.status == 0, "\(arguments): \(result.err)")
            return (try JSONSerialization.jsonObject(with: Data(result.out.utf8)), result.out)
        }
        let (sessions, sessionsText) = try await json(["session", "list"])
        #expect((sessions as? [[String: Any]])?.first?["id"] as? String == id)
        #expect((sessions as? [[String: Any]])?.first?["sessionStartedAt"] is String)
        let (repositories, _) = try await json(["repo", "list"])
        #expect((repositories as? [[String: Any]])?.count == 1)
        let (status, _) = try await json(["status"])
        let device = ((status as? [String: Any])?["device"] as? [String: Any])?["id"] as? String
        #expect(device != nil && device == device?.lowercased())
        let (devices, devicesText) = try await json(["devices", "list"])
        #expect(((devices as? [String: Any])?["devices"] as? [[String: Any]])?.first?["thisDevice"] as? Bool == true)
        let (_, trustText) = try await json(["trust", "status"])
        // No uppercase id anywhere in any of them.
        for text in [sessionsText, devicesText, trustText] {
            #expect(
                text.range(
                    of: #"[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}"#, options: .regularExpression)
                    == nil)
        }
    }

    @Test func aPairingCodeReachesAPipeAtOnce() async throws {
        let cli = try CLI()
        let store = cli.store("desktop")
        #expect(try await cli.run(["init", "--store", store, "--role", "desktop", "--name", "d"]).status == 0)
        #expect(try await cli.run(["login", "--store", store, "--email", "a@b.c"]).status == 0)
        #expect(try await cli.run(["trust", "init", "--store", store, "--no-recovery-key"]).status == 0)
        var environment = ProcessInfo.processInfo.environment
        environment["SYNC_REMOTE"] = "embedded:" + cli.directory.appendingPathComponent("remote.sqlite").path
        let process = try SpawnedChild(
            CLI.path, ["trust", "invite", "--store", store, "--device-type", "ios-phone", "--no-qr", "--wait"],
            environment: environment, pipeOutput: true)
        defer { process.kill(SIGKILL) }
        let pipe = process.outputPipe!
        // The invite waits for ten minutes; its code must be readable long before.
        let found = Task.detached { () -> Bool in
            var text = ""
            while true {
                let data = pipe.availableData
                if data.isEmpty { return false }
                text += String(decoding: data, as: UTF8.self)
                if text.range(of: #"([A-Z2-7]{4}-){16}[A-Z2-7]{4}"#, options: .regularExpression) != nil { return true }
            }
        }
        let outcome = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask { await found.value }
            group.addTask {
                try await Task.sleep(for: Waiting.ceiling)
                return false
            }
            let first = try await group.next()!
            group.cancelAll()
            return first
        }
        #expect(outcome)
        #expect(process.isRunning)
    }

    @Test func aPhonesWatchPrintsOnlyTicksThatReceivedSomething() async throws {
        let cli = try CLI()
        let phone = cli.store("phone")
        let desktop = cli.store("desktop")
        for (store, role) in [(phone, "mobile"), (desktop, "desktop")] {
            #expect(try await cli.run(["init", "--store", store, "--role", role, "--name", role]).status == 0)
            #expect(try await cli.run(["login", "--store", store, "--email", "a@b.c"]).status == 0)
        }
        #expect(try await cli.run(["pull", "--store", phone]).status == 0)
        #expect(try await cli.run(["repo", "add", "--store", desktop, cli.directory.path]).status == 0)
        var environment = ProcessInfo.processInfo.environment
        environment["SYNC_REMOTE"] = "embedded:" + cli.directory.appendingPathComponent("remote.sqlite").path
        // Every tick records its report in the phone's store: the ticks are counted there.
        let reports = try DatabaseQueue(
            path: URL(fileURLWithPath: phone).appendingPathComponent("store.sqlite").path,
            configuration: {
                var c = Configuration()
                c.readonly = true
                return c
            }())
        @Sendable func ticks(_ count: Int) async throws -> Bool {
            var seen = Set<Double>()
            let first = try await reports.read {
                try Double.fetchOne($0, sql: "SELECT finished_at FROM last_sync_report")
            }
            for _ in 0..<3_000 where seen.count < count {
                let last = try await reports.read {
                    try Double.fetchOne($0, sql: "SELECT finished_at FROM last_sync_report")
                }
                if let last, last != first { seen.insert(last) }
                try await Task.sleep(for: .milliseconds(20))
            }
            return seen.count >= count
        }
        let process = try SpawnedChild(
            CLI.path, ["sync", "--watch", "--interval", "0.3", "--store", phone], environment: environment)
        // Quiet ticks: nothing to print.
        #expect(try await ticks(3), "the watch did not tick")
        let quiet = process.output
        // A session arrives: one line says so, and the ticks after it say nothing more.
        #expect(try await cli.run(["session", "start", "--store", desktop, "--repo", cli.directory.path]).status == 0)
        #expect(try await cli.run(["push", "--store", desktop]).status == 0)
        #expect(
            await WatchCLITests.wait(for: "\n", in: process.outputFile, seconds: 120), "no line for the new session")
        #expect(try await ticks(3), "the watch did not tick")
        process.kill(SIGTERM)
        let status = try await offThePool { try process.wait() }
        let all = process.output
        #expect(quiet.isEmpty, "quiet ticks printed: \(quiet)")
        let lines = all.split(separator: "\n")
        #expect(lines.count >= 1 && lines.count <= 2, "\(all)")
        #expect(status == 0)
    }

    @Test func aPushToADeadServerExitsThreeWithOrWithoutRowsToSend() async throws {
        let cli = try CLI()
        // A token whose subject is a user id; nothing listens on port 1.
        let token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmMDMwMzVkOC1hZjk2LTQ5MTMtODM0ZC1iNzhhMTE3MjIwNTcifQ.x"
        let environment = [
            "SYNC_ACCESS_TOKEN": token, "SUPABASE_ANON_KEY": "anon", "SYNC_REMOTE": "http://127.0.0.1:1",
        ]
        let store = cli.store("desktop")
        #expect(try await cli.run(["init", "--store", store, "--role", "desktop", "--name", "d"]).status == 0)
        #expect(try await cli.run(["login", "--store", store], environment: environment).status == 0)
        let empty = try await cli.run(["push", "--store", store], environment: environment)
        #expect(empty.status == 3, "\(empty.out)")
        #expect(try await cli.run(["repo", "add", "--store", store, cli.directory.path]).status == 0)
        let rows = try await cli.run(["push", "--store", store], environment: environment)
        #expect(rows.status == 3, "\(rows.out)")
        // Network errors say what to check, in a report and when a command fails outright.
        #expect(rows.out.components(separatedBy: "hint: Check the remote's address").count == 2)
        let listed = try await cli.run(["devices", "list", "--store", store], environment: environment)
        #expect(listed.status == 1 && listed.err.contains("Check the remote's address"))
    }

    @Test func aRepositoryCanBeNamedByItsName() async throws {
        let cli = try CLI()
        let store = cli.store("desktop")
        #expect(try await cli.run(["init", "--store", store, "--role", "desktop", "--name", "d"]).status == 0)
        #expect(try await cli.run(["login", "--store", store, "--email", "a@b.c"]).status == 0)
        let added = try await cli.run(["repo", "add", "--store", store, cli.directory.path, "--name", "my-project"])
        #expect(added.out.contains("Added repository my-project"))
        let started = try await cli.run(["session", "start", "--store", store, "--repo", "my-project", "--title", "t"])
        #expect(started.status == 0, "\(started.err)")
        #expect(try await cli.run(["repo", "remove", "--store", store, "my-project"]).status == 0)
        let gone = try await cli.run(["session", "start", "--store", store, "--repo", "my-project"])
        #expect(gone.status == 1)
    }

    @Test func trustInitSaysWhichDevicesStopReceivingAndPushesKeepSayingIt() async throws {
        let cli = try CLI()
        let phone = cli.store("phone")
        let desktop = cli.store("desktop")
        #expect(
            try await cli.run([
                "init", "--store", phone, "--role", "mobile", "--name", "Old phone", "--device-type", "ios-phone",
            ]).status == 0)
        #expect(try await cli.run(["login", "--store", phone, "--email", "a@b.c"]).status == 0)
        #expect(try await cli.run(["pull", "--store", phone]).status == 0)
        #expect(try await cli.run(["init", "--store", desktop, "--role", "desktop", "--name", "d"]).status == 0)
        #expect(try await cli.run(["login", "--store", desktop, "--email", "a@b.c"]).status == 0)
        let initialised = try await cli.run(["trust", "init", "--store", desktop, "--no-recovery-key"])
        #expect(initialised.status == 0)
        #expect(initialised.err.contains("1 device(s) stop receiving secrets until they are paired"))
        #expect(initialised.err.contains("Old phone") && initialised.err.contains("--trust any"))
        let pushed = try await cli.run(["push", "--store", desktop])
        #expect(pushed.out.contains("1 device(s) receive no secrets until paired"))
        // Sealing to it anyway is one flag away, and then nothing is said.
        let anyway = try await cli.run(["push", "--store", desktop, "--trust", "any"])
        #expect(!anyway.out.contains("receive no secrets until paired"))
    }

    /// Two logged-in stores on one embedded remote: a desktop with a session and a phone.
    static func desktopAndPhone(_ cli: CLI) async throws -> (desktop: String, phone: String, session: String) {
        let phone = cli.store("phone")
        let desktop = cli.store("desktop")
        for (store, role) in [(desktop, "desktop"), (phone, "mobile")] {
            #expect(try await cli.run(["init", "--store", store, "--role", role, "--name", role]).status == 0)
            #expect(try await cli.run(["login", "--store", store, "--email", "a@b.c"]).status == 0)
        }
        #expect(try await cli.run(["repo", "add", "--store", desktop, cli.directory.path]).status == 0)
        let session = try await cli.run(["session", "start", "--store", desktop, "--repo", cli.directory.path]).out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return (desktop, phone, session)
    }

    @Test func joinWaitsAndSaysCertifiedOrRefused() async throws {
        let cli = try CLI()
        let (desktop, phone, _) = try await Self.desktopAndPhone(cli)
        #expect(try await cli.run(["pull", "--store", phone]).status == 0)
        #expect(try await cli.run(["trust", "init", "--store", desktop, "--no-recovery-key"]).status == 0)

        func invite() async throws -> String {
            let out = try await cli.run([
                "trust", "invite", "--store", desktop, "--device-type", "ios-phone", "--no-qr",
            ]).out
            let range = try #require(out.range(of: #"([A-Z2-7]{4}-){16}[A-Z2-7]{4}"#, options: .regularExpression))
            return String(out[range])
        }
        /// Joins in the background while the root approves until a round says something.
        func joinWhileApproving(_ code: String) async throws -> (status: Int32, out: String, err: String, root: String)
        {
            let joining = Task.detached {
                try await cli.run(["trust", "join", "--store", phone, "--timeout", "60"], stdin: code + "\n")
            }
            var root = ""
            _ = try await Waiting.until(every: .milliseconds(100)) {
                root = try await cli.run(["trust", "approve", "--store", desktop]).out
                return !root.isEmpty && !root.contains("No pairing requests")
            }
            let joined = try await joining.value
            return (joined.status, joined.out, joined.err, root)
        }

        // A mistyped code (one character of the pairing secret): its checksum refuses it before
        // anything is sent, and join says so at once.
        let code = try await invite()
        var typo = Array(code)
        typo[25] = typo[25] == "A" ? "B" : "A"
        let offline = try await cli.run(
            ["trust", "join", "--store", phone, "--timeout", "60"], stdin: String(typo) + "\n")
        #expect(offline.status == 1 && offline.err.contains("does not check out"), "\(offline.err)")
        // A wrong secret whose checksum holds (a one-in-65,536 typo, or a forger): the root says
        // mistyped, join exits 1 saying refused, with what to do next.
        let parsed = try PairingCode(parsing: code)
        var secret = parsed.secret.withUnsafeBytes { Array($0) }
        secret[5] ^= 0x01
        let wrong = try PairingCode(
            inviteID: parsed.inviteID, secret: SecureBytes(copying: secret), fingerprint: parsed.fingerprint)
        let refused = try await joinWhileApproving(wrong.revealText())
        #expect(refused.root.contains("mistyped"), "\(refused.root)")
        #expect(refused.status == 1 && refused.err.contains("refused") && refused.err.contains("new code"))

        // The right code: "Certified", exit 0; once more: already certified, exit 0.
        let certified = try await joinWhileApproving(code)
        #expect(certified.status == 0 && certified.out.contains("Certified"), "\(certified.err)")
        let again = try await cli.run(["trust", "join", "--store", phone], stdin: code + "\n")
        #expect(again.status == 0 && again.out.contains("already certified"))
        #expect(!again.out.contains("replay") && !again.err.contains("replay"))
    }

    @Test func aMissingSecretSaysWhyAndWhatToDo() async throws {
        let cli = try CLI()
        let (desktop, phone, session) = try await Self.desktopAndPhone(cli)
        // The desktop pushed before the phone had a row: not pushed yet.
        #expect(try await cli.run(["push", "--store", desktop]).status == 0)
        #expect(try await cli.run(["pull", "--store", phone]).status == 0)
        let notYet = try await cli.run(["secrets", "show", "--store", phone, session])
        #expect(notYet.status == 1 && notYet.err.contains("not sealed the secret to it"), "\(notYet.err)")
        #expect(notYet.err.contains("`sync-cli sync` on that desktop"))

        // The desktop pins an identity: it seals to certified devices only; the phone is not paired.
        #expect(try await cli.run(["trust", "init", "--store", desktop, "--no-recovery-key"]).status == 0)
        #expect(try await cli.run(["push", "--store", desktop]).status == 0)
        #expect(try await cli.run(["pull", "--store", phone]).status == 0)
        let unpaired = try await cli.run(["secrets", "show", "--store", phone, session])
        #expect(unpaired.status == 1 && unpaired.err.contains("not paired"), "\(unpaired.err)")
        #expect(unpaired.err.contains("trust join"))
    }

    @Test func revokeSaysWhatItDoesAndOnlyOffersWhatTheServerCanDo() async throws {
        let cli = try CLI()
        let (desktop, phone, _) = try await Self.desktopAndPhone(cli)
        #expect(try await cli.run(["pull", "--store", phone]).status == 0)
        let help = try await cli.run(["trust", "revoke", "--help"]).out
        #expect(help.contains("the logins it used end") && help.contains("lasts until it expires"))
        let alone = try await cli.run(["trust", "revoke", "--store", desktop, "x", "--end-other-logins"])
        #expect(alone.status == 64 && alone.err.contains("cannot end one device's login alone"))
        #expect(try await cli.run(["trust", "init", "--store", desktop, "--no-recovery-key"]).status == 0)
        let embedded = try await cli.run(["trust", "revoke", "--store", desktop, "--all-others", "--end-other-logins"])
        #expect(embedded.status == 1 && embedded.err.contains("no auth server"))
        // Without a terminal to ask on and without --yes, nothing is revoked (issue 69 item 14).
        let unasked = try await cli.run(["trust", "revoke", "--store", desktop, "--all-others"])
        #expect(unasked.status == 1 && unasked.err.contains("add --yes (nothing was revoked)"), "\(unasked.err)")
        #expect(try await cli.run(["pull", "--store", phone]).status == 0, "the phone was revoked unasked")
        let revoked = try await cli.run(["trust", "revoke", "--store", desktop, "--all-others", "--yes"])
        #expect(revoked.status == 0 && revoked.out.contains("The remote ended them: their credentials, their logins"))
        #expect(!revoked.out.contains("--end-other-logins"))
    }

    /// `trust revoke` on a terminal (a pseudo-terminal from util-linux's `script`): it names each
    /// device and asks; anything but yes revokes nothing (issue 69 item 14).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script")))
    func revokeAsksOnATerminalNamingTheDevices() async throws {
        let cli = try CLI()
        let (desktop, phone, _) = try await Self.desktopAndPhone(cli)
        #expect(try await cli.run(["pull", "--store", phone]).status == 0)
        #expect(try await cli.run(["trust", "init", "--store", desktop, "--no-recovery-key"]).status == 0)
        func onATerminal(_ answer: String) async throws -> String {
            try await offThePool {
                let child = try SpawnedChild(
                    "/usr/bin/script",
                    ["-qec", "\(CLI.path) trust revoke --store \(desktop) --all-others", "/dev/null"],
                    environment: cli.environment([:]), workingDirectory: cli.directory, stdin: answer + "\n")
                _ = try child.wait()
                return child.output
            }
        }
        let declined = try await onATerminal("n")
        #expect(declined.contains("mobile  [ios-phone]") && declined.contains("Revoke 1 device? [y/N]"), "\(declined)")
        #expect(declined.contains("not confirmed: nothing was revoked"), "\(declined)")
        #expect(try await cli.run(["pull", "--store", phone]).status == 0, "the phone was revoked though declined")
        let confirmed = try await onATerminal("y")
        #expect(confirmed.contains("Revoked "), "\(confirmed)")
        #expect(try await cli.run(["pull", "--store", phone]).status != 0, "the phone was not revoked")
    }
}

extension FirstDayCLITests {
    /// Issue 69 item 11: a hint that names the next command keeps the store it was given, and a
    /// date a person reads is in the one form (RFC 3339, UTC, `Z`), the pairing code's validity too.
    @Test func hintsKeepTheStoreAndDatesHaveOneForm() async throws {
        let cli = try CLI()
        let desktop = cli.store("desk top")
        let created = try await cli.run(["init", "--store", desktop, "--role", "desktop", "--name", "laptop"])
        #expect(created.out.contains("Next: `sync-cli login --store '\(desktop)'`"), "\(created.out)")
        // An error's hint too, and a command meant for another device is left alone.
        let notLoggedIn = try await cli.run(["repo", "add", "--store", desktop, cli.directory.path])
        #expect(notLoggedIn.err.contains("run `sync-cli login --store '\(desktop)'` first"), "\(notLoggedIn.err)")
        #expect(
            HintFlags.apply(
                "`sync-cli trust invite` here, `sync-cli trust join` there",
                flags: HintFlags.flags(["x", "--store", "/s"]))
                == "`sync-cli trust invite --store /s` here, `sync-cli trust join` there")
        // A remote URL with user information is never repeated (it may hold a password).
        #expect(
            HintFlags.flags(["x", "--remote", "https://me:secret@host", "--remote=https://a:b@h"]).isEmpty)
        #expect(try await cli.run(["login", "--store", desktop, "--email", "a@b.c"]).status == 0)
        // The embedded remote answers in the process: requests are counted, no bytes claimed.
        let synced = try await cli.run(["sync", "--store", desktop])
        #expect(synced.out.contains(/success in [0-9.]+ s: \d+ requests?, 0 envelopes sealed/), "\(synced.out)")
        #expect(!synced.out.contains("bytes"), "\(synced.out)")
        #expect(try await cli.run(["trust", "init", "--store", desktop, "--no-recovery-key"]).status == 0)
        let invite = try await cli.run(["trust", "invite", "--store", desktop, "--device-type", "ios-phone", "--no-qr"])
        #expect(
            invite.out.contains(/valid until \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z, single use/), "\(invite.out)")
    }
}
