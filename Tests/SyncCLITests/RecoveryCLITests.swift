import Foundation
import TestStack
import Testing

@Suite("sync-cli trust recover")
struct RecoveryCLITests {
    /// Every regular file under `directory` but the `identity.key` files.
    static func files(under directory: URL) -> [URL] {
        let walker = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: [.isRegularFileKey])
        return (walker?.allObjects as? [URL] ?? []).filter {
            (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true
                && $0.lastPathComponent != "identity.key"
        }
    }

    @Test("the root desktop is lost; another desktop recovers with the key; the phone keeps receiving secrets")
    func loseRootAndRecover() async throws {
        let cli = try CLI()
        for (store, role, name) in [("d", "desktop", "laptop"), ("p", "mobile", "phone"), ("s", "desktop", "spare")] {
            #expect(
                try await cli.run(["init", "--store", cli.store(store), "--role", role, "--name", name]).status == 0)
            #expect(try await cli.run(["login", "--store", cli.store(store), "--email", "q@example.com"]).status == 0)
        }
        // The one deliberate print of the key.
        let initialized = try await cli.run(["trust", "init", "--store", cli.store("d"), "--json"])
        #expect(initialized.status == 0, "\(initialized.err)")
        let printed = try #require(
            try JSONSerialization.jsonObject(with: Data(initialized.out.utf8)) as? [String: Any])
        let recoveryKey = try #require(printed["recoveryKey"] as? String)
        #expect(printed["trustRoot"] as? Bool == true)
        let shown = try await cli.run(["trust", "init", "--store", cli.store("s"), "--no-qr"])
        #expect(shown.status != 0, "a second identity must be refused")

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

        // The laptop is gone.
        try FileManager.default.removeItem(atPath: cli.store("d"))

        // A mistyped key: refused, nothing written.
        var typo = Array(recoveryKey)
        typo[0] = typo[0] == "A" ? "B" : "A"
        let mistyped = try await cli.run(["trust", "recover", "--store", cli.store("s")], stdin: String(typo) + "\n")
        #expect(mistyped.status == 1 && mistyped.err.contains("mistyped"))
        #expect(!FileManager.default.fileExists(atPath: cli.store("s") + "/identity.key"))

        // Without a terminal to confirm on, recovery writes nothing unless told --yes.
        let unconfirmed = try await cli.run(["trust", "recover", "--store", cli.store("s")], stdin: recoveryKey + "\n")
        #expect(unconfirmed.status == 1 && unconfirmed.err.contains("not confirmed"))
        // The preview names each device (issue 69 item 14), not only its id.
        #expect(unconfirmed.out.contains("phone  [ios-phone]"), "\(unconfirmed.out)")
        #expect(!FileManager.default.fileExists(atPath: cli.store("s") + "/identity.key"))
        let recovered = try await cli.run(
            ["trust", "recover", "--yes", "--store", cli.store("s")], stdin: recoveryKey + "\n")
        #expect(recovered.status == 0, "\(recovered.err)")
        #expect(recovered.out.contains("trust root"))
        let status = try await cli.run(["trust", "status", "--store", cli.store("s")])
        #expect(status.out.contains("(this device) (trust root)"))

        // The spare desktop's session reaches the phone, which opens it without re-pairing.
        let repo = cli.directory.appendingPathComponent("project")
        try FileManager.default.createDirectory(at: repo, withIntermediateDirectories: true)
        #expect(try await cli.run(["repo", "add", "--store", cli.store("s"), repo.path]).status == 0)
        let session = try await cli.run(["session", "start", "--store", cli.store("s"), "--repo", repo.path]).out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try await cli.run(["sync", "--store", cli.store("s")]).status == 0)
        #expect(try await cli.run(["sync", "--store", cli.store("p")]).status == 0)
        let opened = try await cli.run(["secrets", "show", "--store", cli.store("p"), session, "--json"])
        #expect(opened.status == 0 && opened.out.contains("\"opens\" : true"), "\(opened.out) \(opened.err)")

        // The key and the seed are nowhere but identity.key (and the one print above).
        let seed = try Data(contentsOf: URL(fileURLWithPath: cli.store("s") + "/identity.key"))
        #expect(seed.count == 32)
        let compact = recoveryKey.replacingOccurrences(of: " ", with: "")
        let needles = [
            Data(compact.utf8), Data(recoveryKey.utf8), seed, Data(seed.base64EncodedString().utf8),
            Data(seed.map { String(format: "%02x", $0) }.joined().utf8),
        ]
        for file in Self.files(under: cli.directory) {
            let contents = (try? Data(contentsOf: file)) ?? Data()
            let found = needles.contains { contents.range(of: $0) != nil }
            #expect(!found, "a recovery key or the identity seed is in \(file.lastPathComponent)")
        }
        for output in [recovered.out, recovered.err, mistyped.out, mistyped.err, status.out] {
            #expect(!output.contains(compact) && !output.contains(recoveryKey))
        }

        // The last resort: a new identity, confirmed by the store's email.
        let refused = try await cli.run(
            ["trust", "reset", "--store", cli.store("s"), "--no-qr"], stdin: "someone@else.com\n")
        #expect(refused.status == 1 && refused.err.contains("does not match"))
        let reset = try await cli.run(
            ["trust", "reset", "--store", cli.store("s"), "--json"], stdin: "q@example.com\n")
        #expect(reset.status == 0, "\(reset.err)")
        let again = try #require(try JSONSerialization.jsonObject(with: Data(reset.out.utf8)) as? [String: Any])
        #expect(again["recoveryKey"] as? String != nil && again["recoveryKey"] as? String != recoveryKey)
        #expect(again["inEffect"] as? Bool == true)
        let phone = try await cli.run(["sync", "--store", cli.store("p")])
        #expect(phone.status == 4, "the phone pinned the old identity: \(phone.err)")
        #expect(phone.out.contains("identity was reset"))
    }
}
