import DeviceTrust
import Foundation
import SecretCrypto

// The invalid logs of `trust-log-v1.json`: each fails at a known position and step.
extension TrustLogVectorCases {
    static func structureFailures(_ b: inout G.Builder, _ main: Main) throws {
        let user = main.user
        let rows = main.texts
        func invalid(_ comment: String, _ flags: [String], _ list: [String], seq: UInt64, reason: String) {
            b.add("TrustLogVerify", comment, flags, valid: false, invalidTest(user, list, seq: seq, reason: reason))
        }
        invalid("a gap: seq 1 missing", ["Gap"], [rows[0], rows[2]], seq: 1, reason: "header")
        invalid("seq 1 twice", ["Duplicate"], [rows[0], rows[1], rows[1]], seq: 2, reason: "header")
        invalid("seq 3 before seq 2", ["Reordered"], [rows[0], rows[1], rows[3], rows[2]], seq: 2, reason: "header")
        var trailing = try ByteEncoding.bytes(base64: rows[1])
        trailing.append(0)
        invalid(
            "a trailing byte", ["TrailingBytes"], [rows[0], ByteEncoding.base64(trailing)], seq: 1, reason: "parse")
        let genesis = try ByteEncoding.bytes(base64: rows[0])
        invalid(
            "a genesis without its author signature", ["MissingSignature"],
            [ByteEncoding.base64(Array(genesis.dropLast(64)))], seq: 0, reason: "parse")
        let succession = try ByteEncoding.bytes(base64: rows[6])
        invalid(
            "a succession without its successor signature", ["MissingSignature"],
            main.rows(6) + [ByteEncoding.base64(Array(succession.dropLast(64)))], seq: 6, reason: "parse")
        invalid("not base64", ["Encoding"], [rows[0], "not base64!"], seq: 1, reason: "parse")
        invalid(
            "base64 with a line break", ["Encoding"],
            [rows[0], String(rows[1].prefix(40)) + "\n" + rows[1].dropFirst(40)], seq: 1, reason: "parse")

        let one = main.writer(after: 0)
        let phoneBody = try G.certificate(user, main.phone, role: "trusted_executor", at: G.start).body()
        invalid(
            "a wrong prev", ["WrongPrev"],
            [rows[0], G.craft(one, .certify, body: phoneBody) { $0.prev = SHA256.hash([1]) }], seq: 1, reason: "header")
        invalid(
            "another user's entry", ["OtherUser"],
            [
                rows[0],
                G.craft(one, .certify, body: phoneBody) {
                    $0.userID = UUID(uuid: (1, 2, 3, 4, 5, 6, 0x47, 8, 0x89, 10, 11, 12, 13, 14, 15, 16))
                },
            ], seq: 1, reason: "parse")
        invalid(
            "an entry of another epoch", ["OtherEpoch"],
            [rows[0], G.craft(one, .certify, body: phoneBody) { $0.epoch = 2 }], seq: 1, reason: "header")
        invalid(
            "a genesis at seq 1", ["Position"],
            [
                rows[0],
                G.craft(one, .genesis, body: try ParsedLogEntry(text: rows[0]).entry.body, second: main.root.ed25519),
            ], seq: 1, reason: "header")
        var unknown = try ByteEncoding.bytes(base64: G.craft(one, .certify, body: phoneBody))
        unknown[102] = 0x07
        invalid("an unknown type", ["UnknownType"], [rows[0], ByteEncoding.base64(unknown)], seq: 1, reason: "header")
        invalid(
            "an append proof that does not extend the chain", ["Proof"],
            [rows[0], G.craft(one, .certify, body: phoneBody) { $0.appendProof = SHA256.hash([2]) }], seq: 1,
            reason: "proof")
        invalid(
            "a proof replayed from the entry before", ["Proof"],
            main.rows(2) + [
                G.craft(
                    main.writer(after: 1), .certify,
                    body: try G.certificate(user, main.desktop, role: "trusted_executor", at: G.start).body()
                ) { $0.appendProof = try! ParsedLogEntry(text: rows[1]).entry.appendProof }
            ], seq: 2, reason: "proof")
        invalid(
            "signed by another key", ["Signature"],
            [rows[0], G.craft(one, .certify, body: phoneBody, identity: try G.identity("stranger"))], seq: 1,
            reason: "signature")
        var altered = try ByteEncoding.bytes(base64: rows[1])
        altered[110] &+= 1
        invalid(
            "created_at altered after signing", ["Signature"], [rows[0], ByteEncoding.base64(altered)], seq: 1,
            reason: "signature")
        var forgedGenesis = try ParsedLogEntry(text: rows[0]).entry
        forgedGenesis.sign(identity: main.firstIdentity, second: main.phone.ed25519)
        invalid(
            "a genesis signed by another device than its author", ["Signature"], [forgedGenesis.text], seq: 0,
            reason: "signature")
        var forgedSuccession = try ParsedLogEntry(text: rows[6]).entry
        forgedSuccession.sign(identity: main.firstIdentity, second: main.firstIdentity)
        invalid(
            "a succession whose second signature is not the new key's", ["Signature"],
            main.rows(6) + [forgedSuccession.text], seq: 6, reason: "signature")
        let retired = G.craft(
            main.writer(after: 7), .certify,
            body: try G.certificate(
                user, try G.Device("late", type: "ios-phone"), role: "trusted_executor", at: G.start
            ).body(), identity: main.firstIdentity)
        invalid(
            "a certify under the retired key (a revoked root that kept the seed)", ["RetiredKey"], rows + [retired],
            seq: 8, reason: "signature")
        invalid(
            "created_at before its predecessor's", ["Time"],
            [rows[0], G.craft(one, .certify, body: phoneBody) { $0.createdAt = G.start - 1 }], seq: 1, reason: "time")
        var nonzero = try ParsedLogEntry(text: rows[0]).entry
        nonzero.prev = SHA256.hash([3])
        nonzero.sign(identity: main.firstIdentity, second: main.root.ed25519)
        invalid("a genesis with a non-zero prev", ["Position"], [nonzero.text], seq: 0, reason: "header")
        var proofGenesis = try ParsedLogEntry(text: rows[0]).entry
        proofGenesis.appendProof = SHA256.hash([4])
        proofGenesis.sign(identity: main.firstIdentity, second: main.root.ed25519)
        invalid("a genesis with a non-zero append proof", ["Proof"], [proofGenesis.text], seq: 0, reason: "proof")
    }

    static func ruleFailures(_ b: inout G.Builder, _ main: Main) throws {
        let user = main.user
        func invalid(_ comment: String, _ flags: [String], upTo count: Int, _ entry: String, reason: String) {
            b.add(
                "TrustLogVerify", comment, flags, valid: false,
                invalidTest(user, main.rows(count) + [entry], seq: UInt64(count), reason: reason))
        }
        let stranger = try G.Device("stranger", type: "ios-phone")
        func cert(_ device: G.Device, _ role: String = "trusted_executor") throws -> [UInt8] {
            try G.certificate(user, device, role: role, at: G.start).body()
        }
        let w1 = main.writer(after: 1), w3 = main.writer(after: 3), w5 = main.writer(after: 5)
        let w7 = main.writer(after: 7)
        invalid(
            "a certify by a non-root author", ["Author"], upTo: 2,
            G.craft(main.writer(after: 1), .certify, body: try cert(stranger), author: main.phone.id), reason: "author")
        invalid(
            "a certify with role trust_root", ["Role"], upTo: 2,
            G.craft(w1, .certify, body: try cert(stranger, "trust_root")), reason: "state")
        invalid(
            "a certify of a device already certified", ["Repeat"], upTo: 2,
            G.craft(w1, .certify, body: try cert(main.phone)), reason: "state")
        let samePhoneKey = G.Device(
            id: stranger.id, x25519: main.phone.x25519, ed25519: stranger.ed25519, type: "ios-phone")
        invalid(
            "a certify of another device's X25519 key", ["KeyReuse"], upTo: 2,
            G.craft(w1, .certify, body: try cert(samePhoneKey)), reason: "state")
        invalid(
            "a revoke of a root", ["RootRevoked"], upTo: 4,
            G.craft(w3, .revoke, body: G.revocation(user, main.desktop, at: G.start).body()), reason: "state")
        invalid(
            "a root grant to a phone", ["Grant"], upTo: 4,
            G.craft(
                w3, .rootGrant,
                body: RootGrant(
                    userID: user, deviceID: main.phone.id,
                    sealedSeed: try SealedSeed.seal(
                        main.firstIdentity, to: main.phone.x25519.publicKey, userID: user, deviceID: main.phone.id,
                        epoch: 1, seq: 4, ephemeral: try G.ephemerals("grant")[0])
                ).bytes()), reason: "state")
        invalid(
            "a root grant to a revoked device", ["Grant"], upTo: 6,
            G.craft(
                w5, .rootGrant,
                body: RootGrant(
                    userID: user, deviceID: main.tablet.id,
                    sealedSeed: try SealedSeed.seal(
                        main.firstIdentity, to: main.tablet.x25519.publicKey, userID: user, deviceID: main.tablet.id,
                        epoch: 1, seq: 6, ephemeral: try G.ephemerals("grant")[1])
                ).bytes()), reason: "state")
        invalid(
            "a certify of a burned id (the revoked tablet again)", ["Burned"], upTo: 6,
            G.craft(w5, .certify, body: try cert(main.tablet)), reason: "state")
        let burnedKey = G.Device(
            id: stranger.id, x25519: main.tablet.x25519, ed25519: stranger.ed25519, type: "ios-phone")
        invalid(
            "a certify of a burned X25519 key under a new id", ["Burned"], upTo: 6,
            G.craft(w5, .certify, body: try cert(burnedKey)), reason: "state")
        var topBit = try cert(burnedKey)
        topBit[67 + 37 + 31] |= 0x80
        invalid(
            "a burned key re-encoded with its top bit set", ["Burned", "NonCanonical"], upTo: 6,
            G.craft(w5, .certify, body: topBit), reason: "parse")
        invalid(
            "a revoke of a device already revoked", ["Repeat"], upTo: 6,
            G.craft(w5, .revoke, body: G.revocation(user, main.tablet, at: G.start).body()), reason: "state")
        let next = try G.identity("next")
        func succession(
            _ revocations: [DeviceRevocation], grants: [Succession.Grant], new: Ed25519PrivateKey = next,
            recovery: X25519PublicKey? = nil, old: Ed25519PrivateKey? = nil
        ) -> [UInt8] {
            Succession(
                userID: user, oldKey: (old ?? main.firstIdentity).publicKey, newKey: new.publicKey,
                newAnchor: AppendChain.anchor(seed: new.seedRepresentation, userID: user, epoch: 1),
                reason: .rootRevoked,
                newRecoveryKey: recovery, revocations: revocations, grants: grants
            ).bytes()
        }
        invalid(
            "a succession revoking its own author", ["Succession"], upTo: 6,
            G.craft(
                w5, .succession, body: succession([G.revocation(user, main.root, at: G.start)], grants: []),
                second: next), reason: "state")
        invalid(
            "a succession whose grants omit a remaining root", ["Succession"], upTo: 6,
            G.craft(w5, .succession, body: succession([], grants: []), second: next), reason: "state")
        invalid(
            "a succession to a key already used in the epoch", ["Succession"], upTo: 8,
            G.craft(
                w7, .succession, body: succession([], grants: [], new: main.firstIdentity, old: main.secondIdentity),
                identity: main.secondIdentity, second: main.firstIdentity), reason: "state")
        invalid(
            "a succession bringing back a retired recovery key", ["Succession"], upTo: 8,
            G.craft(
                w7, .succession,
                body: succession(
                    [], grants: [], recovery: main.recovery.agreementKey(userID: user).publicKey,
                    old: main.secondIdentity), identity: main.secondIdentity, second: next), reason: "state")
        invalid(
            "a reset answer naming this epoch", ["Reset"], upTo: 2,
            G.craft(
                w1, .resetAnswer,
                body: ResetAnswer(userID: user, resetEpoch: 1, resetGenesisHash: SHA256.hash([5]), verdict: .veto)
                    .bytes()), reason: "state")
        try tenthRoot(&b)
    }

    /// Nine roots, then a grant to a tenth desktop.
    static func tenthRoot(_ b: inout G.Builder) throws {
        let user = try G.source.uuid("user:roots")
        let root = try G.Device("roots root", type: "win-desktop")
        var writer = try TrustLogWriter.genesis(
            userID: user, epoch: 1, priorEpoch: 0, identity: try G.identity("roots"), recoveryKey: nil,
            certificate: G.certificate(user, root, role: "trust_root", at: G.start), signingKey: root.ed25519,
            createdAt: G.start, ephemerals: try G.ephemerals("roots"))
        var desktops: [G.Device] = []
        for index in 0..<9 {
            let desktop = try G.Device("roots desktop \(index)", type: "linux-desktop")
            try writer.append(
                .certify(G.certificate(user, desktop, role: "trusted_executor", at: G.start)), createdAt: G.start)
            desktops.append(desktop)
        }
        for desktop in desktops.prefix(8) { try writer.grantRoot(to: desktop.id, createdAt: G.start) }
        let sealed = try SealedSeed.seal(
            writer.identity, to: desktops[8].x25519.publicKey, userID: user, deviceID: desktops[8].id, epoch: 1,
            seq: writer.state.headSeq + 1, ephemeral: try G.ephemerals("tenth")[0])
        let tenth = G.craft(
            writer, .rootGrant, body: RootGrant(userID: user, deviceID: desktops[8].id, sealedSeed: sealed).bytes())
        let rows = writer.written.map(\.text)
        b.add("TrustLogVerify", "nine roots", ["Normal", "Roots"], valid: true, validTest(writer.state, rows))
        b.add(
            "TrustLogVerify", "a tenth root", ["Roots"], valid: false,
            invalidTest(user, rows + [tenth], seq: writer.state.headSeq + 1, reason: "state"))
    }
}
