import Foundation
import Testing

/// Issue 69, item 1, with the real `sync-cli`: a second desktop that only ran `init`, `login`,
/// `repo add`, `session start` and `push` for a user with a trust log seals nothing and says
/// how to pair; the paired phone's pulls stay clean.
@Suite("sync-cli on a desktop outside the trust log")
struct UnpairedCLITests {
    @Test("push on an unpaired desktop exits 4 naming trust join; the phone's sync exits 0")
    func unpairedDesktopPush() async throws {
        let cli = try CLI()
        for (store, role, name) in [("d", "desktop", "laptop"), ("p", "mobile", "phone"), ("e", "desktop", "second")] {
            #expect(
                try await cli.run(["init", "--store", cli.store(store), "--role", role, "--name", name]).status == 0)
            #expect(try await cli.run(["login", "--store", cli.store(store), "--email", "u@example.com"]).status == 0)
        }
        #expect(try await cli.run(["trust", "init", "--store", cli.store("d"), "--no-qr"]).status == 0)
        let invite = try await cli.run([
            "trust", "invite", "--store", cli.store("d"), "--device-type", "ios-phone", "--no-qr",
        ])
        let code = try #require(
            invite.out.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.count == 84 && $0.split(separator: "-").count == 17 })
        #expect(
            try await cli.run(["trust", "join", "--no-wait", "--store", cli.store("p")], stdin: code + "\n").status == 0
        )
        #expect(try await cli.run(["trust", "approve", "--store", cli.store("d")]).status == 0)
        #expect(try await cli.run(["sync", "--store", cli.store("d")]).status == 0)
        #expect(try await cli.run(["sync", "--store", cli.store("p")]).status == 0)

        let project = cli.directory.appendingPathComponent("project")
        try FileManager.default.createDirectory(at: project, withIntermediateDirectories: true)
        #expect(try await cli.run(["repo", "add", "--store", cli.store("e"), project.path]).status == 0)
        #expect(try await cli.run(["session", "start", "--store", cli.store("e"), "--repo", project.path]).status == 0)
        let push = try await cli.run(["push", "--store", cli.store("e")])
        #expect(push.status == 4, "\(push.out) \(push.err)")
        #expect((push.out + push.err).contains("sync-cli trust join"), "\(push.out) \(push.err)")
        #expect(!push.out.contains("trust any"), "\(push.out)")
        for _ in 0..<2 {
            let pull = try await cli.run(["sync", "--store", cli.store("p")])
            #expect(pull.status == 0, "\(pull.out) \(pull.err)")
        }

        // Item 8: trust init on the root says so, and warns of no device to pair.
        let again = try await cli.run(["trust", "init", "--store", cli.store("d"), "--no-qr"])
        #expect(again.status == 1)
        #expect(again.err.contains("already a trust root") && again.err.contains("nothing to do"), "\(again.err)")
        #expect(!again.err.contains("Warning") && !again.err.contains("trust join"), "\(again.err)")

        // Item 6: a revoked device is told to pair a new store, and join refuses at once.
        let status = try await cli.run(["trust", "status", "--store", cli.store("p"), "--json"])
        let phone = try #require(
            (try JSONSerialization.jsonObject(with: Data(status.out.utf8)) as? [String: Any])?["deviceId"] as? String)
        let revoke = try await cli.run(["trust", "revoke", "--store", cli.store("d"), phone, "--yes"])
        #expect(revoke.status == 0, "\(revoke.out) \(revoke.err)")
        let reinvite = try await cli.run([
            "trust", "invite", "--store", cli.store("d"), "--device-type", "ios-phone", "--no-qr",
        ])
        let newCode = try #require(
            reinvite.out.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.count == 84 && $0.split(separator: "-").count == 17 })
        let rejoin = try await cli.run(
            ["trust", "join", "--no-wait", "--store", cli.store("p")], stdin: newCode + "\n")
        #expect(rejoin.status != 0, "a revoked device's join was taken: \(rejoin.out)")
        // The server takes nothing from a revoked device's credential (issue 64): refused before
        // anything is sent, saying to pair a new store.
        #expect(rejoin.err.contains("new store"), "\(rejoin.err)")
    }
}
