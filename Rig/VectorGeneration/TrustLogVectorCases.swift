import DeviceTrust
import Foundation
import SecretCrypto

/// The cases of `trust-log-v1.json`, by group.
enum TrustLogVectorCases {
    typealias G = TrustLogVectorGenerator
    typealias Test = TrustLogVectorGenerator.OutputTest

    /// The main log: a root, a phone, a second desktop made a root, a viewer tablet revoked, a
    /// succession revoking the second root with a new recovery key, a veto.
    struct Main {
        let user: UUID
        let root: G.Device, phone: G.Device, desktop: G.Device, tablet: G.Device
        let recovery: RecoveryKey, nextRecovery: RecoveryKey
        let firstIdentity: Ed25519PrivateKey, secondIdentity: Ed25519PrivateKey
        /// The writer after each entry (index = seq).
        var writers: [TrustLogWriter] = []

        init() throws {
            user = try G.source.uuid("user")
            root = try G.Device("root", type: "linux-desktop")
            phone = try G.Device("phone", type: "ios-phone")
            desktop = try G.Device("desktop", type: "mac-desktop")
            tablet = try G.Device("tablet", type: "ios-tablet")
            recovery = try RecoveryKey(bytes: G.source.derive("recovery:a"))
            nextRecovery = try RecoveryKey(bytes: G.source.derive("recovery:b"))
            firstIdentity = try G.identity("a")
            secondIdentity = try G.identity("b")
            var time = G.start
            var writer = try TrustLogWriter.genesis(
                userID: user, epoch: 1, priorEpoch: 0, identity: firstIdentity,
                recoveryKey: recovery.agreementKey(userID: user).publicKey,
                certificate: G.certificate(user, root, role: "trust_root", at: time), signingKey: root.ed25519,
                createdAt: time, ephemerals: try G.ephemerals("main"))
            writers.append(writer)
            func next(_ change: (inout TrustLogWriter) throws -> Void) throws {
                time += 60
                try change(&writer)
                writers.append(writer)
            }
            let (user, phone, desktop, tablet) = (user, phone, desktop, tablet)
            try next {
                try $0.append(.certify(G.certificate(user, phone, role: "trusted_executor", at: time)), createdAt: time)
            }
            try next {
                try $0.append(
                    .certify(G.certificate(user, desktop, role: "trusted_executor", at: time)), createdAt: time)
            }
            try next { try $0.grantRoot(to: desktop.id, createdAt: time) }
            try next {
                try $0.append(
                    .certify(G.certificate(user, tablet, role: "temporary_viewer", at: time)), createdAt: time)
            }
            try next { try $0.append(.revoke(G.revocation(user, tablet, at: time)), createdAt: time) }
            let (second, next2) = (secondIdentity, nextRecovery.agreementKey(userID: user).publicKey)
            try next {
                try $0.succeed(
                    to: second, reason: .rootRevoked, newRecoveryKey: next2,
                    revocations: [G.revocation(user, desktop, at: time)], createdAt: time)
            }
            let veto = ResetAnswer(
                userID: user, resetEpoch: 2, resetGenesisHash: SHA256.hash(Array("a reset".utf8)), verdict: .veto)
            try next { try $0.append(.resetAnswer(veto), createdAt: time) }
        }

        var texts: [String] { writers.last!.written.map(\.text) }
        func rows(_ count: Int) -> [String] { Array(texts.prefix(count)) }
        func writer(after seq: Int) -> TrustLogWriter { writers[seq] }
    }

    static func validTest(_ state: TrustLogState, _ rows: [String]) -> Test {
        var test = Test()
        test.userId = G.id(state.userID)
        test.epoch = state.epoch
        test.entries = rows
        test.headSeq = state.headSeq
        test.headHash = G.hex(state.headHash)
        test.identityPublicKey = state.identityKey.base64
        test.recoveryPublicKey = state.recoveryKey.map { G.hex($0.rawRepresentation) }
        test.roots = state.roots.map(G.id).sorted()
        test.certified = state.devices.values.filter(\.isTrusted).map { G.id($0.id) }.sorted()
        test.revoked = state.devices.values.filter(\.isRevoked).map { G.id($0.id) }.sorted()
        return test
    }

    static func invalidTest(_ user: UUID, _ rows: [String], seq: UInt64, reason: String, epoch: UInt32 = 1) -> Test {
        var test = Test()
        test.userId = G.id(user)
        test.epoch = epoch
        test.entries = rows
        test.failureSeq = seq
        test.failureReason = reason
        return test
    }

    static func verify(_ b: inout G.Builder) throws {
        let main = try Main()
        let user = main.user
        for (count, comment) in [
            (1, "a genesis alone, with a recovery key"), (3, "a genesis and two certified devices"),
            (4, "a root grant to a second desktop"), (6, "a viewer certified, then revoked"),
            (7, "a succession revoking a root, with a new recovery key"), (8, "a veto of a reset"),
        ] {
            let rows = main.rows(count)
            b.add(
                "TrustLogVerify", comment, ["Normal"], valid: true,
                validTest(try TrustLogVerifier.verify(rows, userID: user, epoch: 1).state, rows))
        }
        try otherValidLogs(&b)
        try structureFailures(&b, main)
        try ruleFailures(&b, main)
    }

    /// A migration's shape (no recovery key, then a succession with one), a closed epoch, an epoch 3.
    static func otherValidLogs(_ b: inout G.Builder) throws {
        let user = try G.source.uuid("user:migration")
        let root = try G.Device("migration root", type: "mac-desktop")
        var writer = try TrustLogWriter.genesis(
            userID: user, epoch: 1, priorEpoch: 0, identity: try G.identity("legacy"), recoveryKey: nil,
            certificate: G.certificate(user, root, role: "trust_root", at: G.start), signingKey: root.ed25519,
            createdAt: G.start, ephemerals: try G.ephemerals("migration"))
        let recovery = try RecoveryKey(bytes: G.source.derive("recovery:migration"))
        try writer.succeed(
            to: try G.identity("migrated"), reason: .seedSuspected,
            newRecoveryKey: recovery.agreementKey(userID: user).publicKey, revocations: [], createdAt: G.start + 1)
        let migrated = writer.written.map(\.text)
        b.add(
            "TrustLogVerify", "a migration: a genesis without a recovery key, a succession (reason 3) with one",
            ["Normal", "Migration"], valid: true, validTest(writer.state, migrated))
        let accept = ResetAnswer(
            userID: user, resetEpoch: 3, resetGenesisHash: SHA256.hash(Array("accepted".utf8)), verdict: .accept)
        try writer.append(.resetAnswer(accept), createdAt: G.start + 2)
        let rows = writer.written.map(\.text)
        b.add(
            "TrustLogVerify", "an epoch closed by an accepted reset", ["Normal", "Reset"], valid: true,
            validTest(writer.state, rows))
        let late = G.craft(
            writer, .revoke, body: G.revocation(user, try G.Device("late", type: "ios-phone"), at: G.start).body())
        b.add(
            "TrustLogVerify", "an entry after an accept", ["Reset"], valid: false,
            invalidTest(user, rows + [late], seq: 3, reason: "header"))

        let reset = try TrustLogWriter.genesis(
            userID: user, epoch: 3, priorEpoch: 1, identity: try G.identity("reset"), recoveryKey: nil,
            certificate: G.certificate(user, root, role: "trust_root", at: G.start), signingKey: root.ed25519,
            createdAt: G.start + 10, ephemerals: [])
        let resetRows = reset.written.map(\.text)
        b.add(
            "TrustLogVerify", "the genesis of epoch 3, a reset of epoch 1", ["Normal", "Reset"], valid: true,
            validTest(reset.state, resetRows))
        b.add(
            "TrustLogVerify", "epoch 3's genesis read as epoch 1", ["Reset"], valid: false,
            invalidTest(user, resetRows, seq: 0, reason: "header", epoch: 1))
        var genesis = try ParsedLogEntry(text: migrated[0]).entry
        genesis.body[133] = 1 // prior_epoch 1 in epoch 1
        genesis.sign(identity: try G.identity("legacy"), second: root.ed25519)
        b.add(
            "TrustLogVerify", "epoch 1's genesis naming prior epoch 1", ["BadGenesis"], valid: false,
            invalidTest(user, [genesis.text], seq: 0, reason: "state"))
    }
}
