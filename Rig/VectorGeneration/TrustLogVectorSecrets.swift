import DeviceTrust
import Foundation
import SecretCrypto

// The server's append rules, backups, sealed root seeds, witnesses, the recovery key's
// agreement key and the append chain, in `trust-log-v1.json`.
extension TrustLogVectorCases {
    static func head(_ head: TrustLogServerRules.Head) -> G.Head {
        G.Head(seq: head.seq, hash: G.hex(head.hash), createdAt: head.createdAt, lastProof: G.hex(head.lastProof))
    }

    static func append(_ b: inout G.Builder) throws {
        let main = try Main()
        let user = main.user
        let written = main.writers.last!.written
        var heads: [TrustLogServerRules.Head] = []
        var current: TrustLogServerRules.Head?
        for row in written {
            current = try TrustLogServerRules.check(
                row.text, backup: row.backup, userID: user, epoch: 1, head: current, now: nil
            ).head
            heads.append(current!)
        }
        func test(
            _ entry: String, backup: String? = nil, head: TrustLogServerRules.Head?, now: UInt64?, epoch: UInt32 = 1
        ) -> G.OutputTest {
            var test = G.OutputTest()
            test.userId = G.id(user)
            test.epoch = epoch
            test.entry = entry
            test.backup = backup
            test.head = head.map(Self.head)
            test.now = now
            return test
        }
        func valid(
            _ comment: String, _ entry: String, backup: String?, head: TrustLogServerRules.Head?, now: UInt64?
        ) throws {
            var t = test(entry, backup: backup, head: head, now: now)
            t.newHead = Self.head(
                try TrustLogServerRules.check(entry, backup: backup, userID: user, epoch: 1, head: head, now: now).head)
            b.add("TrustLogAppend", comment, ["Normal"], valid: true, t)
        }
        func invalid(
            _ comment: String, _ flags: [String], _ code: String, _ entry: String, backup: String? = nil,
            head: TrustLogServerRules.Head?, now: UInt64? = nil, epoch: UInt32 = 1
        ) {
            var t = test(entry, backup: backup, head: head, now: now, epoch: epoch)
            t.sqlState = code
            b.add("TrustLogAppend", comment, flags, valid: false, t)
        }
        try valid(
            "a genesis on an empty epoch, with its backup", written[0].text, backup: written[0].backup, head: nil,
            now: G.start + 599)
        try valid(
            "a certify at the head, with its backup", written[1].text, backup: written[1].backup, head: heads[0],
            now: G.start + 60)
        try valid("a succession at the head", written[6].text, backup: written[6].backup, head: heads[5], now: nil)
        try valid(
            "after a succession, the next proof is of the new key's chain", written[7].text, backup: nil,
            head: heads[6], now: nil)
        let one = main.writer(after: 0)
        let stranger = try G.Device("append stranger", type: "ios-phone")
        let body = try G.certificate(user, stranger, role: "trusted_executor", at: G.start).body()
        invalid("not base64", ["Shape"], "22023", "not base64!", head: heads[0])
        invalid(
            "a length that is not the body's", ["Shape"], "22023",
            ByteEncoding.base64(try ByteEncoding.bytes(base64: written[1].text) + [0]), head: heads[0])
        invalid(
            "another user in the header", ["OtherUser"], "42501",
            G.craft(one, .certify, body: body) {
                $0.userID = UUID(uuid: (1, 2, 3, 4, 5, 6, 0x47, 8, 0x89, 10, 11, 12, 13, 14, 15, 16))
            }, head: heads[0])
        let foreignAnswer = ResetAnswer(
            userID: UUID(uuid: (9, 2, 3, 4, 5, 6, 0x47, 8, 0x89, 10, 11, 12, 13, 14, 15, 16)), resetEpoch: 2,
            resetGenesisHash: SHA256.hash([1]), verdict: .veto)
        invalid(
            "a reset answer naming another user", ["OtherUser"], "42501",
            G.craft(one, .resetAnswer, body: foreignAnswer.bytes()), head: heads[0])
        invalid(
            "an entry of another epoch than the call names", ["Epoch"], "22023", G.craft(one, .certify, body: body),
            head: heads[0], epoch: 2)
        invalid(
            "not at the head: seq + 1", ["Position"], "40001", G.craft(one, .certify, body: body) { $0.seq += 1 },
            head: heads[0])
        invalid(
            "not at the head: a wrong prev", ["Position"], "40001",
            G.craft(one, .certify, body: body) { $0.prev = SHA256.hash([6]) }, head: heads[0])
        invalid("the same entry again", ["Replay"], "40001", written[1].text, head: heads[1])
        invalid("a genesis on an epoch that has one", ["Position"], "40001", written[0].text, head: heads[0])
        invalid(
            "a certify as seq 0 of an empty epoch (its position passes, its type does not)", ["Type"], "22023",
            G.craft(one, .certify, body: body) {
                $0.seq = 0
                $0.prev = [UInt8](repeating: 0, count: 32)
                $0.appendProof = [UInt8](repeating: 0, count: 32)
            }, head: nil)
        invalid("seq 1 on an empty epoch", ["Position"], "40001", G.craft(one, .certify, body: body), head: nil)
        invalid(
            "a genesis after seq 0", ["Type"], "22023",
            G.craft(
                one, .genesis, body: try ParsedLogEntry(text: written[0].text).entry.body, second: main.root.ed25519),
            head: heads[0])
        var unknown = try ByteEncoding.bytes(base64: G.craft(one, .certify, body: body))
        unknown[102] = 0x07
        invalid("an unknown type", ["Type"], "22023", ByteEncoding.base64(unknown), head: heads[0])
        invalid(
            "no valid proof (a token holder without the seed)", ["Proof"], "22023",
            G.craft(one, .certify, body: body) { $0.appendProof = SHA256.hash([7]) }, head: heads[0])
        invalid(
            "601 s ahead of the server's clock", ["Time"], "22023",
            G.craft(one, .certify, body: body) { $0.createdAt = G.start + 1_000 }, head: heads[0], now: G.start + 399)
        invalid(
            "601 s behind the server's clock (backdated)", ["Time"], "22023",
            G.craft(one, .certify, body: body) { $0.createdAt = G.start + 1 }, head: heads[0], now: G.start + 602)
        invalid(
            "before the head's created_at", ["Time"], "22023",
            G.craft(one, .certify, body: body) { $0.createdAt = G.start - 1 }, head: heads[0])
        invalid(
            "a backup that is not 152 characters", ["Backup"], "22023", written[1].text, backup: "AAAA", head: heads[0])
        var reserve = heads[0]
        reserve.seq = 8_999
        let link = SHA256.hash(Array("reserve link".utf8))
        reserve.lastProof = SHA256.hash(link)
        let atReserve: (UUID?) throws -> String = { author in
            G.craft(
                one, .certify, body: try G.certificate(user, stranger, role: "trusted_executor", at: G.start).body(),
                author: author
            ) {
                $0.seq = 9_000
                $0.prev = reserve.hash
                $0.appendProof = link
            }
        }
        invalid("a certify of another device from seq 9,000", ["Reserve"], "55000", try atReserve(nil), head: reserve)
        var selfCertify = test(try atReserve(stranger.id), head: reserve, now: nil)
        selfCertify.newHead = Self.head(
            try TrustLogServerRules.check(
                try atReserve(stranger.id), backup: nil, userID: user, epoch: 1, head: reserve, now: nil
            ).head)
        b.add(
            "TrustLogAppend", "a certify of its own author from seq 9,000 (recovery)", ["Reserve"], valid: true,
            selfCertify)
        var full = heads[0]
        full.seq = 9_999
        full.lastProof = SHA256.hash(link)
        invalid(
            "the 10,001st entry", ["Bound"], "22023",
            G.craft(one, .revoke, body: G.revocation(user, stranger, at: G.start).body()) {
                $0.seq = 10_000
                $0.prev = full.hash
                $0.appendProof = link
            }, head: full)
    }

    static func secrets(_ b: inout G.Builder) throws {
        let main = try Main()
        let user = main.user
        let written = main.writers.last!.written
        func backupTest(_ key: RecoveryKey, _ backup: String, seq: UInt64) -> G.OutputTest {
            var t = G.OutputTest()
            t.userId = G.id(user)
            t.recoveryKey = key.revealText()
            t.backup = backup
            t.epoch = 1
            t.seq = seq
            return t
        }
        for (seq, key, comment) in [
            (1, main.recovery, "the backup of a certify"),
            (6, main.nextRecovery, "a succession's backup opens with the new recovery key"),
        ] {
            var t = backupTest(key, written[seq].backup!, seq: UInt64(seq))
            t.expected = main.writers[seq].identity.seedRepresentation.withUnsafeBytes { G.hex($0) }
            t.entryHash = G.hex(written[seq].hash)
            b.add("TrustLogBackupOpen", comment, ["Normal"], valid: true, t)
        }
        b.add(
            "TrustLogBackupOpen", "a succession's backup with the replaced recovery key", ["Retired"], valid: false,
            backupTest(main.recovery, written[6].backup!, seq: 6))
        b.add(
            "TrustLogBackupOpen", "a backup copied into a newer row", ["Replayed"], valid: false,
            backupTest(main.recovery, written[1].backup!, seq: 2))
        var version = try ByteEncoding.bytes(base64: written[1].backup!)
        version[0] = 1
        b.add(
            "TrustLogBackupOpen", "version byte 1", ["BadVersion"], valid: false,
            backupTest(main.recovery, ByteEncoding.base64(version), seq: 1))
        var flipped = try ByteEncoding.bytes(base64: written[1].backup!)
        flipped[60] ^= 1
        b.add(
            "TrustLogBackupOpen", "a flipped bit", ["Tampered"], valid: false,
            backupTest(main.recovery, ByteEncoding.base64(flipped), seq: 1))

        // The root grant at seq 3 sealed the first identity's seed to the desktop.
        guard case .rootGrant(let grant)? = try? ParsedLogEntry(text: written[3].text).body.get() else { return }
        func seedTest(
            _ recipient: X25519PrivateKey, device: UUID, seq: UInt64, identity: Ed25519PublicKey
        ) -> G.OutputTest {
            var t = G.OutputTest()
            t.userId = G.id(user)
            t.deviceId = G.id(device)
            t.epoch = 1
            t.seq = seq
            t.identityPublicKey = identity.base64
            t.sealed = G.hex(grant.sealedSeed)
            t.recipientPrivateKey = recipient.rawRepresentation.withUnsafeBytes { G.hex($0) }
            return t
        }
        var validSeed = seedTest(
            main.desktop.x25519, device: main.desktop.id, seq: 3, identity: main.firstIdentity.publicKey)
        validSeed.expected = main.firstIdentity.seedRepresentation.withUnsafeBytes { G.hex($0) }
        // The writer's ephemeral keys go in order: the backups of seq 0, 1 and 2, then the grant's seal.
        validSeed.ephemeralPrivateKey = try G.ephemerals("main")[3].rawRepresentation.withUnsafeBytes { G.hex($0) }
        b.add("RootSeedOpen", "the root grant to the second desktop", ["Normal"], valid: true, validSeed)
        b.add(
            "RootSeedOpen", "opened as another device", ["Binding"], valid: false,
            seedTest(main.desktop.x25519, device: main.phone.id, seq: 3, identity: main.firstIdentity.publicKey))
        b.add(
            "RootSeedOpen", "opened for another seq", ["Binding"], valid: false,
            seedTest(main.desktop.x25519, device: main.desktop.id, seq: 4, identity: main.firstIdentity.publicKey))
        b.add(
            "RootSeedOpen", "claimed to carry another identity key", ["Binding"], valid: false,
            seedTest(main.desktop.x25519, device: main.desktop.id, seq: 3, identity: main.secondIdentity.publicKey))
        b.add(
            "RootSeedOpen", "opened with another device's key", ["WrongKey"], valid: false,
            seedTest(main.phone.x25519, device: main.desktop.id, seq: 3, identity: main.firstIdentity.publicKey))

        let witness = TrustLogWitness(
            userID: user, deviceID: main.phone.id, epoch: 1, seq: 2, entryHash: written[2].hash, seenAt: G.start + 200)
        let (body, signature) = witness.signed(by: main.phone.ed25519)
        func witnessTest(_ body: String, _ signature: String, key: Ed25519PublicKey) -> G.OutputTest {
            var t = G.OutputTest()
            t.userId = G.id(user)
            t.body = body
            t.signature = signature
            t.publicKey = key.base64
            t.deviceId = G.id(main.phone.id)
            t.epoch = 1
            t.seq = 2
            t.entryHash = G.hex(written[2].hash)
            return t
        }
        b.add(
            "TrustLogWitnessVerify", "a phone's witness of seq 2", ["Normal"], valid: true,
            witnessTest(body, signature, key: main.phone.ed25519.publicKey))
        b.add(
            "TrustLogWitnessVerify", "verified under another device's key", ["WrongKey"], valid: false,
            witnessTest(body, signature, key: main.root.ed25519.publicKey))
        var long = try ByteEncoding.bytes(base64: body)
        long.append(0)
        b.add(
            "TrustLogWitnessVerify", "a trailing byte", ["TrailingBytes"], valid: false,
            witnessTest(
                ByteEncoding.base64(long), ByteEncoding.base64(main.phone.ed25519.signature(for: long)),
                key: main.phone.ed25519.publicKey))

        for (key, comment) in [
            (main.recovery, "a recovery key's agreement key"), (main.nextRecovery, "another recovery key's"),
        ] {
            var t = G.OutputTest()
            t.userId = G.id(user)
            t.recoveryKey = key.revealText()
            t.expected = G.hex(key.agreementKey(userID: user).publicKey.rawRepresentation)
            b.add("RecoveryKeyAgreement", comment, ["Normal"], valid: true, t)
        }
        for (epoch, label) in [(UInt32(1), "chain:a"), (UInt32(7), "chain:b")] {
            let seed = try G.source.derive(label)
            var t = G.OutputTest()
            t.userId = G.id(user)
            t.epoch = epoch
            t.seed = seed.withUnsafeBytes { G.hex($0) }
            t.anchor = G.hex(AppendChain.anchor(seed: seed, userID: user, epoch: epoch))
            t.proofs = (1...2).map { G.hex(AppendChain.proof(seed: seed, userID: user, epoch: epoch, steps: $0)) }
            b.add("AppendChain", "the chain of epoch \(epoch)", ["Normal"], valid: true, t)
        }
    }
}
