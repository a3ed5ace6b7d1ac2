import DeviceTrust
import Foundation

/// The TrustLogMarks group: what each kind of stored entry says of the devices it names
/// (``TrustLogMarks``), which the SQL reads at fixed offsets (`private.tl_record_devices`).
extension TrustLogVectorCases {
    static func marks(_ b: inout G.Builder) throws {
        let main = try Main()
        // What each of the main log's entries names, from the devices the log was written with.
        let expected: [(String, certified: [G.Device], revoked: [G.Device])] = [
            ("a genesis certifies its author", [main.root], []), ("a certify of a phone", [main.phone], []),
            ("a certify of a desktop", [main.desktop], []), ("a root grant names no device to the gate", [], []),
            ("a certify of a viewer tablet", [main.tablet], []), ("a revoke of the tablet", [], [main.tablet]),
            ("a succession revoking one root", [], [main.desktop]), ("a reset answer names no device", [], []),
        ]
        for (seq, (comment, certified, revoked)) in expected.enumerated() {
            b.add(
                "TrustLogMarks", comment, ["Normal"], valid: true,
                try marksTest(main.texts[seq], user: main.user, certified: certified, revoked: revoked))
        }
        // A succession revoking two devices, with a grant after the revocations, and one revoking none.
        let user = try G.source.uuid("user:marks")
        let root = try G.Device("marks root", type: "linux-desktop")
        let second = try G.Device("marks second root", type: "mac-desktop")
        let phones = try ["marks phone a", "marks phone b"].map { try G.Device($0, type: "ios-phone") }
        var writer = try TrustLogWriter.genesis(
            userID: user, epoch: 1, priorEpoch: 0, identity: try G.identity("marks"), recoveryKey: nil,
            certificate: G.certificate(user, root, role: "trust_root", at: G.start), signingKey: root.ed25519,
            createdAt: G.start, ephemerals: try G.ephemerals("marks"))
        var time = G.start
        for device in [second] + phones {
            time += 1
            try writer.append(
                .certify(G.certificate(user, device, role: "trusted_executor", at: time)), createdAt: time)
        }
        time += 1
        try writer.grantRoot(to: second.id, createdAt: time)
        time += 1
        try writer.succeed(
            to: try G.identity("marks next"), reason: .rootRevoked, newRecoveryKey: nil,
            revocations: phones.map { G.revocation(user, $0, at: time) }, createdAt: time)
        time += 1
        try writer.succeed(
            to: try G.identity("marks last"), reason: .seedSuspected, newRecoveryKey: nil, revocations: [],
            createdAt: time)
        let texts = writer.written.map(\.text)
        b.add(
            "TrustLogMarks", "a succession revoking two phones, a grant after them", ["Normal", "Succession"],
            valid: true, try marksTest(texts[texts.count - 2], user: user, certified: [], revoked: phones))
        b.add(
            "TrustLogMarks", "a succession revoking no device", ["Normal", "Succession"], valid: true,
            try marksTest(texts[texts.count - 1], user: user, certified: [], revoked: []))
        try unreadableMarks(&b, main)
    }

    /// Entries the gate cannot read: it then trusts nobody in their epoch.
    static func unreadableMarks(_ b: inout G.Builder, _ main: Main) throws {
        let other = try G.source.uuid("user:other")
        var test = Test()
        test.userId = G.id(main.user)
        for (text, comment) in [
            ("not base64!", "not base64"), ("", "empty"),
            (
                Data(base64Encoded: main.texts[1])?.prefix(100).base64EncodedString() ?? "",
                "a certify cut inside its header"
            ),
        ] {
            test.entry = text
            b.add("TrustLogMarks", comment, ["Unreadable"], valid: false, test)
        }
        // The genesis with its certificate's user id (its last) changed: the body names two users.
        var genesis = Array(Data(base64Encoded: main.texts[0]) ?? Data())
        let (mine, theirs) = (Array(G.id(main.user).utf8), Array(G.id(other).utf8))
        guard
            let at = (0...(genesis.count - mine.count)).last(where: {
                genesis[$0..<$0 + mine.count].elementsEqual(mine)
            })
        else { throw Unbuildable() }
        genesis.replaceSubrange(at..<at + mine.count, with: theirs)
        test.entry = Data(genesis).base64EncodedString()
        b.add(
            "TrustLogMarks", "a genesis whose certificate names another user", ["Unreadable", "OtherUser"],
            valid: false,
            test)
        test.userId = G.id(other)
        for (seq, comment) in [(1, "a certify"), (5, "a revoke")] {
            test.entry = main.texts[seq]
            b.add("TrustLogMarks", "\(comment) read for another user", ["Unreadable", "OtherUser"], valid: false, test)
        }
    }

    /// A valid test naming the devices the generator wrote into the entry; the reading the
    /// verifier runs (``TrustLogMarks``) must agree, or nothing is generated.
    static func marksTest(_ text: String, user: UUID, certified: [G.Device], revoked: [G.Device]) throws -> Test {
        let named = TrustLogMarks.of(text, userID: user)
        let wrote =
            certified.map { TrustLogMarks.Named(deviceID: $0.id, revokes: false) }
            + revoked.map { TrustLogMarks.Named(deviceID: $0.id, revokes: true) }
        guard let named, Set(named) == Set(wrote) else { throw Unbuildable() }
        var test = Test()
        test.userId = G.id(user)
        test.entry = text
        test.certified = certified.map { G.id($0.id) }.sorted()
        test.revoked = revoked.map { G.id($0.id) }.sorted()
        return test
    }
}
