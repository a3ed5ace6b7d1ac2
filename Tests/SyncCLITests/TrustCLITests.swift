import Foundation
import GRDB
import LocalStore
import SecretCrypto
import SyncModel
import TestStack
import Testing

@Suite("sync-cli trust")
struct TrustCLITests {
    /// The README's flow: init, login, trust init, trust invite, trust join CODE, trust approve, sync on both.
    @Test(
        "pairing by hand: a desktop and a phone that verify each other, then revocation with rotation; the code is printed only by invite"
    )
    func pairing() async throws {
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
        // Before trust init: mode any, and status says to init.
        #expect(try await cli.run(["trust", "status", "--store", cli.store("d")]).out.contains("trust init"))
        #expect(try await cli.run(["trust", "invite", "--store", cli.store("d")]).status == 1)

        let initialised = try await cli.run(["trust", "init", "--store", cli.store("d")])
        #expect(initialised.status == 0 && initialised.out.contains("trust root"))
        let again = try await cli.run(["trust", "init", "--store", cli.store("p")])
        #expect(again.status == 1 && again.err.contains("already has a trust log"))
        let keyMode =
            try FileManager.default.attributesOfItem(atPath: cli.store("d") + "/identity.key")[.posixPermissions]
            as? Int
        #expect(keyMode == 0o600)

        let invite = try await cli.run(["trust", "invite", "--store", cli.store("d"), "--device-type", "ios-phone"])
        let drewQR = invite.out.contains("█")
        #expect(invite.status == 0 && drewQR)
        let code = try #require(
            invite.out.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.count == 84 && $0.split(separator: "-").count == 17 })
        // A mistyped code is refused before anything is pinned. Given as an argument it still
        // works, with a warning that other local users can read it (the warning never quotes it).
        let typo = String(code.dropLast()) + (code.hasSuffix("A") ? "B" : "A")
        let refused = try await cli.run(["trust", "join", "--store", cli.store("p"), typo])
        let refusedClearly =
            refused.err.contains("does not check out") && refused.err.contains("process list")
        #expect(refused.status == 1 && refusedClearly)
        // The code on standard input (what a prompt reads on a terminal): no argument, no warning.
        let joined = try await cli.run(
            ["trust", "join", "--no-wait", "--store", cli.store("p")], stdin: code.lowercased() + "\n")
        #expect(joined.status == 0 && !joined.err.contains("process list"))
        let approved = try await cli.run(["trust", "approve", "--store", cli.store("d"), "--json"])
        #expect(approved.status == 0 && approved.out.contains("\"approved\""))
        let replay = try await cli.run(["trust", "approve", "--store", cli.store("d")])
        #expect(replay.out.contains("No pairing requests"))

        #expect(try await cli.run(["repo", "add", "--store", cli.store("d"), repo.path]).status == 0)
        let session = try await cli.run(["session", "start", "--store", cli.store("d"), "--repo", repo.path]).out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let push = try await cli.run(["sync", "--store", cli.store("d")])
        #expect(
            push.status == 0 && push.out.contains("trust verified") && push.out.contains("2 verified, 0 unverified"))
        let pull = try await cli.run(["sync", "--store", cli.store("p")])
        #expect(pull.status == 0 && pull.out.contains("1 opened"))
        let shown = try await cli.run(["secrets", "show", "--store", cli.store("p"), session])
        #expect(shown.out.contains("(authenticated), generation 1"))
        let shownJSON = try await cli.run(["secrets", "show", "--store", cli.store("p"), session, "--json"])
        let facts = try #require(JSONSerialization.jsonObject(with: Data(shownJSON.out.utf8)) as? [String: Any])
        #expect(
            facts["authenticated"] as? Bool == true && facts["envelopeVersion"] as? Int == 2
                && facts["generation"] as? Int == 1)
        #expect(
            try await cli.run(["secrets", "show", "--store", cli.store("p"), session, "--json", "--reveal"]).status != 0
        )
        for store in ["d", "p"] {
            let status = try await cli.run(["trust", "status", "--store", cli.store(store), "--json"])
            let json = try #require(JSONSerialization.jsonObject(with: Data(status.out.utf8)) as? [String: Any])
            #expect(json["thisDevice"] as? String == "verified")
            #expect((json["devices"] as? [[String: Any]])?.allSatisfy { $0["status"] as? String == "verified" } == true)
        }
        let devices = try await cli.run(["devices", "list", "--store", cli.store("d")])
        #expect(devices.out.contains("Trust mode verified: 2 of 2 devices receive secrets"))

        // Revocation rotates the session's secret at once; generation 1 stays readable here.
        let before = try await cli.run(["secrets", "show", "--store", cli.store("d"), session, "--reveal"]).out
        let revoked = try await cli.run(["trust", "revoke", "--store", cli.store("d"), "--all-others", "--yes"])
        #expect(revoked.status == 0 && revoked.out.contains("Revoked"))
        #expect(revoked.out.contains("Rotated 1 of this desktop's sessions"), "\(revoked.out)")
        let rotated = try await cli.run(["push", "--store", cli.store("d"), "--json"])
        #expect(rotated.status == 0 && rotated.out.contains("\"sessionsRotated\" : 0"))
        let after = try await cli.run(["secrets", "show", "--store", cli.store("d"), session, "--reveal"]).out
        let old = try await cli.run([
            "secrets", "show", "--store", cli.store("d"), session, "--reveal", "--generation", "1",
        ])
        .out
        #expect(after != before && old == before)
        #expect(
            try await cli.run(["secrets", "show", "--store", cli.store("d"), session]).out.contains(
                "Generations held: 2, 1"))

        // The pairing code appears only in invite's output.
        // (The check is computed apart so that a failure never prints the code itself.)
        let leaks = [initialised, joined, approved, push, pull, shown, revoked, rotated, refused].filter {
            $0.out.contains(code) || $0.err.contains(code)
        }.count
        #expect(leaks == 0)

        // The log's genesis altered behind everyone's back: nothing sealed (the other phases run, the
        // report names the fork), and every trust command exits 4.
        let database = try DatabaseQueue(path: cli.directory.appendingPathComponent("remote.sqlite").path)
        try await database.write {
            try $0.execute(
                sql: "UPDATE trust_log SET entry = (SELECT entry FROM trust_log WHERE seq = 1) WHERE seq = 0")
        }
        let changed = try await cli.run(["push", "--store", cli.store("d")])
        #expect(changed.status == 4 && changed.out.contains("forked"), "\(changed.out)")
        // The revoked phone is refused by the remote before it could read any log.
        let revokedStatus = try await cli.run(["trust", "status", "--store", cli.store("p")])
        #expect(
            revokedStatus.status != 0 && revokedStatus.err.contains("this device was revoked"), "\(revokedStatus.err)")
        #expect(try await cli.run(["devices", "list", "--store", cli.store("d")]).status == 4)
    }

    @Test(
        "an invite opened without a device type waits, without a terminal, for the person to confirm; with one the row's type must match"
    )
    func pairingTypeConfirmed() async throws {
        let cli = try CLI()
        #expect(
            try await cli.run(["init", "--store", cli.store("d"), "--role", "desktop", "--name", "laptop"]).status == 0)
        #expect(
            try await cli.run([
                "init", "--store", cli.store("t"), "--role", "mobile", "--name", "tablet", "--device-type",
                "ios-tablet",
            ]).status == 0)
        for store in ["d", "t"] {
            #expect(try await cli.run(["login", "--store", cli.store(store), "--email", "q@example.com"]).status == 0)
        }
        #expect(try await cli.run(["trust", "init", "--store", cli.store("d")]).status == 0)
        func code(_ arguments: [String]) async throws -> String {
            let invite = try await cli.run(["trust", "invite", "--store", cli.store("d"), "--json"] + arguments)
            let json = try #require(JSONSerialization.jsonObject(with: Data(invite.out.utf8)) as? [String: String])
            return try #require(json["code"])
        }
        // Opened for a phone, joined by a tablet: refused, the row's type is not the invite's.
        let wrongType = try await code(["--device-type", "ios-phone"])
        #expect(
            try await cli.run(["trust", "join", "--no-wait", "--store", cli.store("t")], stdin: wrongType + "\n").status
                == 0)
        let refused = try await cli.run(["trust", "approve", "--store", cli.store("d")])
        #expect(refused.status == 1 && refused.out.contains("the invite was opened for ios-phone"))
        // Opened without a type: no terminal to ask on, so the request waits, untouched.
        let untyped = try await code([])
        #expect(
            try await cli.run(["trust", "join", "--no-wait", "--store", cli.store("t")], stdin: untyped + "\n").status
                == 0)
        let waiting = try await cli.run(["trust", "approve", "--store", cli.store("d"), "--json"])
        let report = try #require(JSONSerialization.jsonObject(with: Data(waiting.out.utf8)) as? [String: Any])
        #expect((report["pending"] as? [[String: Any]])?.first?["deviceType"] as? String == "ios-tablet")
        #expect((report["approved"] as? [Any])?.isEmpty == true && (report["refused"] as? [Any])?.isEmpty == true)
        // Approving nothing while a request waits is not done: exit 1, naming the way out.
        #expect(waiting.status == 1 && waiting.err.contains("--yes"), "\(waiting.err)")
        let human = try await cli.run(["trust", "approve", "--store", cli.store("d")])
        #expect(human.status == 1 && human.out.contains("Waiting: tablet"))
        // A script confirms: --yes --device-type certifies that type and refuses any other (as
        // a person answering no would).
        #expect(
            try await cli.run(["trust", "approve", "--store", cli.store("d"), "--device-type", "ios-tablet"]).status
                == 64)
        let phoneOnly = try await cli.run([
            "trust", "approve", "--store", cli.store("d"), "--yes", "--device-type", "ios-phone",
        ])
        #expect(phoneOnly.status == 1 && phoneOnly.out.contains("Refused"), "\(phoneOnly.out)")
        let again = try await code([])
        #expect(
            try await cli.run(["trust", "join", "--no-wait", "--store", cli.store("t")], stdin: again + "\n").status
                == 0)
        let confirmed = try await cli.run([
            "trust", "approve", "--store", cli.store("d"), "--yes", "--device-type", "ios-tablet",
        ])
        #expect(confirmed.status == 0 && confirmed.out.contains("Certified tablet"), "\(confirmed.out)\(confirmed.err)")
    }

    @Test("--trust is validated, --require-trusted stays an alias, and help tells the modes")
    func options() async throws {
        let cli = try CLI()
        let help = try await cli.run(["push", "--help"])
        #expect(help.out.contains("--trust") && help.out.contains("verified") && help.out.contains("--require-trusted"))
        #expect(try await cli.run(["pull", "--help"]).out.contains("--require-authenticated"))
        #expect(try await cli.run(["push", "--trust", "sometimes"]).status != 0)
        #expect(try await cli.run(["push", "--trust", "any", "--require-trusted"]).status != 0)
    }
}

extension TrustCLITests {
    /// Issue 69 item 5: a reset asked on a desktop that is not a root says what is true at each
    /// step: pending (no pairing yet), shown where it was asked, vetoed by the root's sync, said
    /// on the root and then, once, on the asking desktop.
    @Test("a pending reset: the truth at each step, and a veto reported on both desktops")
    func pendingResetAndVeto() async throws {
        let cli = try CLI()
        let (root, spare) = (cli.store("root"), cli.store("spare"))
        for (store, name) in [(root, "laptop"), (spare, "spare")] {
            #expect(try await cli.run(["init", "--store", store, "--role", "desktop", "--name", name]).status == 0)
            #expect(try await cli.run(["login", "--store", store, "--email", "q@example.com"]).status == 0)
        }
        #expect(try await cli.run(["trust", "init", "--store", root, "--no-recovery-key"]).status == 0)
        let invite = try await cli.run([
            "trust", "invite", "--store", root, "--device-type", "linux-desktop", "--no-qr",
        ])
        let code = try #require(
            invite.out.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.count == 84 && $0.split(separator: "-").count == 17 })
        #expect(try await cli.run(["trust", "join", "--no-wait", "--store", spare], stdin: code + "\n").status == 0)
        #expect(try await cli.run(["trust", "approve", "--store", root]).status == 0)
        #expect(try await cli.run(["sync", "--store", spare]).status == 0)

        let asked = try await cli.run(
            ["trust", "reset", "--store", spare, "--no-recovery-key"],
            environment: ["SYNC_CONFIRM_EMAIL": "q@example.com"])
        #expect(asked.status == 0, "\(asked.err)")
        #expect(asked.out.contains("Until then nothing changes"), "\(asked.out)")
        #expect(!asked.out.contains("Pair your other devices again:"), "told to pair while nothing is in effect")
        let pending = try await cli.run(["trust", "status", "--store", spare])
        #expect(pending.out.contains(/epoch 2\) is pending: it takes effect at \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z/))
        let vetoing = try await cli.run(["sync", "--store", root])
        #expect(vetoing.out.contains("this trust root vetoed a pending reset"), "\(vetoing.out)")
        let told = try await cli.run(["sync", "--store", spare])
        #expect(told.out.contains("the identity reset this device asked for (epoch 2) was vetoed"), "\(told.out)")
        let again = try await cli.run(["sync", "--store", spare])
        #expect(!again.out.contains("vetoed"), "said more than once: \(again.out)")
    }
}

extension TrustCLITests {
    /// Issue 68: a pinned trust log damaged on disk (one byte of the identity key changed) makes
    /// `sync` exit 4 and say what to do.
    @Test("a damaged pin: sync exits 4 with what to do")
    func damagedPin() async throws {
        let cli = try CLI()
        _ = try await ApprovalCLITests.paired(cli)
        let database = try DatabaseQueue(path: cli.store("p") + "/store.sqlite")
        try await database.write { db in
            let stored = try #require(try Data.fetchOne(db, sql: "SELECT state FROM trust_log_pin"))
            try db.execute(
                sql: "UPDATE trust_log_pin SET state = ?",
                arguments: [try DamagedPin.identityKeyChanged(stored, byte: 0)])
        }
        let synced = try await cli.run(["sync", "--store", cli.store("p")])
        #expect(synced.status == 4, "\(synced.status) \(synced.out) \(synced.err)")
        let said = synced.out + synced.err
        #expect(said.contains("the trust log pinned in this store is damaged"), "\(said)")
        #expect(said.contains("pair this device again from a new store"), "\(said)")
    }
}
