import DeviceTrust
import Foundation
import SecretCrypto
import Testing

@Suite("The trust log's bytes, and what a verified log says")
struct TrustLogBytesTests {
    @Test("an entry is 182 + body + 64 bytes, 64 more for a genesis or succession, and parses back to itself")
    func layout() throws {
        var log = try LogFixture()
        let phone = try log.certify()
        try log.succeed()
        try log.revoke(phone)
        let rows = log.texts
        let lengths = try rows.map { try ByteEncoding.bytes(base64: $0).count }
        let genesisBody = try ParsedLogEntry(text: rows[0]).entry.body.count
        #expect(lengths[0] == 182 + genesisBody + 128)
        #expect(lengths[1] == 182 + 203 + 64) // a certificate of a 9-byte type and a 16-byte role
        #expect(lengths[3] == 182 + 143 + 64) // a revocation body is 143 bytes
        for text in rows {
            let parsed = try ParsedLogEntry(text: text)
            #expect(parsed.entry.text == text)
            #expect(parsed.hash == TrustLogEntry.hash(of: try ByteEncoding.bytes(base64: text)))
        }
        let (state, hashes) = try TrustLogVerifier.verify(rows, userID: log.user, epoch: 1)
        #expect(state == log.state && hashes.count == 4 && state.headSeq == 3)
    }

    @Test("the append chain: each proof hashes to the one before, the anchor is H^10000(c)")
    func appendChain() {
        let seed = SecureBytes(randomCount: 32), user = UUID()
        let anchor = AppendChain.anchor(seed: seed, userID: user, epoch: 1)
        let first = AppendChain.proof(seed: seed, userID: user, epoch: 1, steps: 1)
        let second = AppendChain.proof(seed: seed, userID: user, epoch: 1, steps: 2)
        #expect(SHA256.hash(first) == anchor && SHA256.hash(second) == first)
        #expect(AppendChain.anchor(seed: seed, userID: user, epoch: 2) != anchor)
        #expect(AppendChain.anchor(seed: seed, userID: UUID(), epoch: 1) != anchor)
    }

    @Test("strict keys: X25519 with the top bit set, u + p or of small order, Ed25519 non-canonical or of small order")
    func keys() throws {
        let good = X25519PrivateKey().publicKey
        #expect(good.isCanonicalAndNotLowOrder)
        var top = good.rawRepresentation
        top[31] |= 0x80
        #expect(!(try X25519PublicKey(rawRepresentation: top)).isCanonicalAndNotLowOrder)
        let p: [UInt8] = [0xED] + [UInt8](repeating: 0xFF, count: 30) + [0x7F]
        #expect(!(try X25519PublicKey(rawRepresentation: p)).isCanonicalAndNotLowOrder)
        // u = 9 + p is 9 re-encoded: 0xF6, 0xFF... 0x7F.
        let ninePlusP: [UInt8] = [0xF6] + [UInt8](repeating: 0xFF, count: 30) + [0x7F]
        #expect(!(try X25519PublicKey(rawRepresentation: ninePlusP)).isCanonicalAndNotLowOrder)
        for u: UInt8 in [0, 1] {
            #expect(
                !(try X25519PublicKey(rawRepresentation: [u] + [UInt8](repeating: 0, count: 31)))
                    .isCanonicalAndNotLowOrder)
        }
        let minusOne: [UInt8] = [0xEC] + [UInt8](repeating: 0xFF, count: 30) + [0x7F]
        #expect(!(try X25519PublicKey(rawRepresentation: minusOne)).isCanonicalAndNotLowOrder)

        #expect(Ed25519PrivateKey().publicKey.isCanonicalAndNotSmallOrder)
        let identity: [UInt8] = [1] + [UInt8](repeating: 0, count: 31)
        #expect(!(try Ed25519PublicKey(rawRepresentation: identity)).isCanonicalAndNotSmallOrder)
        let nonCanonical: [UInt8] = [0xEE] + [UInt8](repeating: 0xFF, count: 30) + [0x7F]
        #expect(!(try Ed25519PublicKey(rawRepresentation: nonCanonical)).isCanonicalAndNotSmallOrder)
        let minusOneY: [UInt8] = [0xEC] + [UInt8](repeating: 0xFF, count: 30) + [0x7F]
        #expect(!(try Ed25519PublicKey(rawRepresentation: minusOneY)).isCanonicalAndNotSmallOrder)
        // y = 2 is not on the curve.
        let notOnCurve: [UInt8] = [2] + [UInt8](repeating: 0, count: 31)
        #expect(!(try Ed25519PublicKey(rawRepresentation: notOnCurve)).isCanonicalAndNotSmallOrder)
    }

    @Test("a sealed seed opens only for its device, entry and key; a backup binds epoch and seq")
    func sealedSeedAndBackup() throws {
        let user = UUID(), device = UUID(), x = X25519PrivateKey(), identity = Ed25519PrivateKey()
        let sealed = try SealedSeed.seal(identity, to: x.publicKey, userID: user, deviceID: device, epoch: 1, seq: 4)
        #expect(sealed.count == 80)
        let opened = try SealedSeed.open(
            sealed, with: x, userID: user, deviceID: device, epoch: 1, seq: 4, identityKey: identity.publicKey)
        #expect(opened.publicKey == identity.publicKey)
        #expect {
            try SealedSeed.open(
                sealed, with: x, userID: user, deviceID: device, epoch: 1, seq: 5, identityKey: identity.publicKey)
        } throws: { ($0 as? DeviceTrustError)?.code == .malformedLogBytes }
        #expect {
            try SealedSeed.open(
                sealed, with: x, userID: user, deviceID: device, epoch: 1, seq: 4,
                identityKey: Ed25519PrivateKey().publicKey)
        } throws: { ($0 as? DeviceTrustError)?.code == .malformedLogBytes }
        let recovery = RecoveryKey()
        let rk = recovery.agreementKey(userID: user)
        #expect(rk.publicKey == recovery.agreementKey(userID: user).publicKey)
        #expect(rk.publicKey != recovery.agreementKey(userID: UUID()).publicKey)
        let hash = SHA256.hash([1, 2, 3])
        let backup = try LogBackup.seal(identity, entryHash: hash, to: rk.publicKey, userID: user, epoch: 2, seq: 7)
        #expect(backup.count == 152 && LogBackup.hasShape(backup))
        let open = try #require(LogBackup.open(backup, with: rk, userID: user, epoch: 2, seq: 7))
        #expect(open.identity.publicKey == identity.publicKey && open.entryHash == hash)
        #expect(LogBackup.open(backup, with: rk, userID: user, epoch: 2, seq: 8) == nil)
        #expect(
            LogBackup.open(backup, with: RecoveryKey().agreementKey(userID: user), userID: user, epoch: 2, seq: 7)
                == nil)
    }

    @Test("a witness is 155 bytes, parses back, and verifies only under its device's key")
    func witness() throws {
        let device = Ed25519PrivateKey()
        let witness = TrustLogWitness(
            userID: UUID(), deviceID: UUID(), epoch: 1, seq: 3, entryHash: SHA256.hash([0]), seenAt: 1_800_000_000)
        #expect(witness.bytes().count == 155)
        let (body, signature) = witness.signed(by: device)
        #expect(try TrustLogWitness.parse(body) == witness)
        #expect(TrustLogWitness.verifies(body: body, signature: signature, key: device.publicKey))
        #expect(!TrustLogWitness.verifies(body: body, signature: signature, key: Ed25519PrivateKey().publicKey))
    }
}

@Suite("The trust log's verifier refuses every altered history at its position and step")
struct TrustLogVerifierTests {
    /// A log of genesis, a phone and a second desktop that is a root: 4 entries.
    static func base() throws -> (LogFixture, LogFixture.Device, LogFixture.Device) {
        var log = try LogFixture()
        let phone = try log.certify()
        let desktop = try log.certify(type: "mac-desktop")
        try log.grantRoot(desktop)
        return (log, phone, desktop)
    }

    @Test("gap, reorder, duplicate, wrong prev, trailing bytes and unknown type fail at the expected position")
    func structure() throws {
        let (log, _, _) = try Self.base()
        let rows = log.texts
        #expect(TrustLogVerifier.failure(rows, user: log.user) == nil)
        #expect(
            TrustLogVerifier.failure([rows[0], rows[2], rows[3]], user: log.user).map {
                [$0.seq ?? .max, UInt64($0.step == .header ? 1 : 0)]
            } == [1, 1])
        #expect(TrustLogVerifier.failure([rows[0], rows[1], rows[3], rows[2]], user: log.user)?.seq == 2)
        #expect(TrustLogVerifier.failure([rows[0], rows[1], rows[1]], user: log.user)?.seq == 2)
        let wrongPrev = log.craft(
            .certify,
            body: try log.certificate(.init(id: UUID(), x25519: .init(), ed25519: .init(), type: "ios-phone")).body()
        ) {
            $0.prev = SHA256.hash([9])
        }
        #expect(TrustLogVerifier.failure(rows + [wrongPrev], user: log.user)?.step == .header)
        // The right prev, signed and proved, but a seq one ahead: the header, at the expected position.
        let aheadBody = try log.certificate(.init(id: UUID(), x25519: .init(), ed25519: .init(), type: "ios-phone"))
            .body()
        let ahead = log.craft(.certify, body: aheadBody) { $0.seq += 1 }
        let aheadFailure = TrustLogVerifier.failure(rows + [ahead], user: log.user)
        #expect(aheadFailure?.seq == 4 && aheadFailure?.step == .header)
        var trailing = try ByteEncoding.bytes(base64: rows[3])
        trailing.append(0)
        let failure = TrustLogVerifier.failure(rows.dropLast() + [ByteEncoding.base64(trailing)], user: log.user)
        #expect(failure?.seq == 3 && failure?.step == .parse)
        let unknown = log.craft(.resetAnswer, body: [1, 2, 3]) { $0.type = .resetAnswer }
        var unknownBytes = try ByteEncoding.bytes(base64: unknown)
        unknownBytes[102] = 0x07
        let unknownFailure = TrustLogVerifier.failure(rows + [ByteEncoding.base64(unknownBytes)], user: log.user)
        #expect(unknownFailure?.seq == 4 && unknownFailure?.step == .header)
    }

    @Test("a missing author or successor signature, or a signature by a retired key, fails at signature")
    func signatures() throws {
        var log = try LogFixture()
        let old = log.writer.identity
        try log.succeed()
        let rows = log.texts
        // The genesis without its author signature: the entry is 64 bytes short, a parse failure.
        let genesis = try ByteEncoding.bytes(base64: rows[0])
        let shortGenesis = TrustLogVerifier.failure([ByteEncoding.base64(Array(genesis.dropLast(64)))], user: log.user)
        #expect(shortGenesis?.seq == 0 && shortGenesis?.step == .parse)
        // The author signature replaced by another device's.
        var forged = try ParsedLogEntry(text: rows[0]).entry
        forged.sign(identity: old, second: Ed25519PrivateKey())
        #expect(TrustLogVerifier.failure([forged.text], user: log.user)?.step == .signature)
        // A succession whose successor signature is by another key.
        var succession = try ParsedLogEntry(text: rows[1]).entry
        succession.sign(identity: old, second: Ed25519PrivateKey())
        #expect(TrustLogVerifier.failure([rows[0], succession.text], user: log.user)?.step == .signature)
        // A certify signed by the retired key (a revoked root that kept the old seed).
        let phone = LogFixture.Device(id: UUID(), x25519: .init(), ed25519: .init(), type: "ios-phone")
        let retired = log.craft(.certify, body: try log.certificate(phone).body(), identity: old)
        let failure = TrustLogVerifier.failure(rows + [retired], user: log.user)
        #expect(failure?.seq == 2 && failure?.step == .signature)
    }

    @Test("the proof must extend the chain, and time must not go back (an altered time fails the signature)")
    func proofAndTime() throws {
        let (log, _, _) = try Self.base()
        let rows = log.texts
        let device = LogFixture.Device(id: UUID(), x25519: .init(), ed25519: .init(), type: "ios-phone")
        let body = try log.certificate(device).body()
        let noProof = log.craft(.certify, body: body) { $0.appendProof = SHA256.hash([1]) }
        #expect(TrustLogVerifier.failure(rows + [noProof], user: log.user)?.step == .proof)
        let backwards = log.craft(.certify, body: body) { $0.createdAt = log.state.headCreatedAt - 1 }
        let failure = TrustLogVerifier.failure(rows + [backwards], user: log.user)
        #expect(failure?.seq == 4 && failure?.step == .time)
        // The operator changes a stored row's created_at: the signature no longer verifies.
        var altered = try ByteEncoding.bytes(base64: rows[2])
        altered[110] &+= 1
        #expect(
            TrustLogVerifier.failure([rows[0], rows[1], ByteEncoding.base64(altered)], user: log.user)?.step
                == .signature)
    }

    @Test(
        "a non-root author, a trust_root certify, a revoked root, a succession revoking its author, grants omitting a root"
    )
    func rules() throws {
        let (log, phone, desktop) = try Self.base()
        let rows = log.texts
        let newDevice = LogFixture.Device(id: UUID(), x25519: .init(), ed25519: .init(), type: "ios-phone")
        let byPhone = log.craft(.certify, body: try log.certificate(newDevice).body(), author: phone.id)
        #expect(TrustLogVerifier.failure(rows + [byPhone], user: log.user)?.step == .author)
        let rootRole = log.craft(.certify, body: try log.certificate(newDevice, role: "trust_root").body())
        #expect(TrustLogVerifier.failure(rows + [rootRole], user: log.user)?.step == .state)
        let revokeRoot = log.craft(.revoke, body: log.revocation(desktop).body())
        #expect(TrustLogVerifier.failure(rows + [revokeRoot], user: log.user)?.step == .state)

        var writer = log.writer
        let next = Ed25519PrivateKey()
        #expect {
            try writer.succeed(
                to: next, reason: .rootRevoked, newRecoveryKey: nil, revocations: [log.revocation(log.root)],
                createdAt: log.clock + 1)
        } throws: { ($0 as? DeviceTrustError)?.code == .logDoesNotVerify }
        // Grants omitting the other root.
        let omitting = Succession(
            userID: log.user, oldKey: log.writer.identity.publicKey, newKey: next.publicKey,
            newAnchor: AppendChain.anchor(seed: next.seedRepresentation, userID: log.user, epoch: 1),
            reason: .seedSuspected, newRecoveryKey: nil, revocations: [], grants: [])
        let entry = log.craft(.succession, body: omitting.bytes(), second: next)
        let failure = TrustLogVerifier.failure(rows + [entry], user: log.user)
        #expect(failure?.seq == 4 && failure?.step == .state)
    }

    @Test("a tenth root, a grant to a revoked device, a certify of a burned id or key (also re-encoded)")
    func burnedAndRoots() throws {
        var log = try LogFixture()
        var desktops: [LogFixture.Device] = []
        for _ in 0..<9 { desktops.append(try log.certify(type: "linux-desktop")) }
        for desktop in desktops.prefix(8) { try log.grantRoot(desktop) }
        #expect(log.state.roots.count == 9)
        #expect {
            var copy = log
            try copy.grantRoot(desktops[8])
        } throws: { ($0 as? DeviceTrustError)?.code == .logDoesNotVerify }

        var small = try LogFixture()
        let phone = try small.certify()
        let desktop = try small.certify(type: "mac-desktop")
        try small.revoke(desktop)
        let sealed = try SealedSeed.seal(
            small.writer.identity, to: desktop.x25519.publicKey, userID: small.user, deviceID: desktop.id, epoch: 1,
            seq: small.state.headSeq + 1)
        let grant = small.craft(
            .rootGrant, body: RootGrant(userID: small.user, deviceID: desktop.id, sealedSeed: sealed).bytes())
        #expect(TrustLogVerifier.failure(small.texts + [grant], user: small.user)?.step == .state)
        try small.revoke(phone)
        // The same id again, or the same X25519 key under a new id, or re-encoded with the top bit set or as u + p.
        let again = small.craft(.certify, body: try small.certificate(phone).body())
        #expect(TrustLogVerifier.failure(small.texts + [again], user: small.user)?.step == .state)
        let newID = LogFixture.Device(id: UUID(), x25519: phone.x25519, ed25519: .init(), type: "ios-phone")
        let sameKey = small.craft(.certify, body: try small.certificate(newID).body())
        #expect(TrustLogVerifier.failure(small.texts + [sameKey], user: small.user)?.step == .state)
        var body = try small.certificate(newID).body()
        body[67 + 37 + 31] |= 0x80 // the top bit of the X25519 key
        let topBit = small.craft(.certify, body: body)
        #expect(TrustLogVerifier.failure(small.texts + [topBit], user: small.user)?.step == .parse)

        // A device revoked before it was ever certified (a stolen device that never paired):
        // its id and its X25519 key are burned all the same, so neither can be certified later.
        var early = try LogFixture()
        let stranger = LogFixture.Device(id: UUID(), x25519: .init(), ed25519: .init(), type: "ios-phone")
        try early.revoke(stranger)
        #expect(early.state.devices[stranger.id]?.isTrusted != true)
        let sameID = LogFixture.Device(id: stranger.id, x25519: .init(), ed25519: .init(), type: "ios-phone")
        let byID = early.craft(.certify, body: try early.certificate(sameID).body())
        #expect(TrustLogVerifier.failure(early.texts + [byID], user: early.user)?.step == .state)
        let sameX = LogFixture.Device(id: UUID(), x25519: stranger.x25519, ed25519: .init(), type: "ios-phone")
        let byKey = early.craft(.certify, body: try early.certificate(sameX).body())
        #expect(TrustLogVerifier.failure(early.texts + [byKey], user: early.user)?.step == .state)
    }

    @Test("a certify or grant of itself by a non-root is allowed (recovery), a certify of another is not")
    func recoveryShape() throws {
        var log = try LogFixture()
        let desktop = LogFixture.Device(id: UUID(), x25519: .init(), ed25519: .init(), type: "linux-desktop")
        log.clock += 1
        let own = log.craft(.certify, body: try log.certificate(desktop).body(), author: desktop.id)
        var (state, _) = try TrustLogVerifier.verify(log.texts + [own], userID: log.user, epoch: 1)
        #expect(state.devices[desktop.id]?.isTrusted == true)
        var writer = try TrustLogWriter(state: state, identity: log.writer.identity, author: desktop.id)
        try writer.grantRoot(to: desktop.id, createdAt: log.clock + 2)
        state = writer.state
        #expect(state.isRoot(desktop.id))
    }

    @Test("from seq 9,000 only revocations, successions, reset answers and self-certify fit; 10,000 entries at most")
    func reserve() throws {
        var log = try LogFixture(recovery: nil)
        // Fill to 8,999 with certifies of fresh devices (no backups: no recovery key bound).
        while log.state.headSeq < 8_999 { try log.certify() }
        #expect {
            var copy = log
            try copy.certify()
        } throws: { ($0 as? DeviceTrustError)?.code == .logDoesNotVerify }
        var reserve = log
        try reserve.succeed()
        let desktop = LogFixture.Device(id: UUID(), x25519: .init(), ed25519: .init(), type: "linux-desktop")
        let own = reserve.craft(.certify, body: try reserve.certificate(desktop).body(), author: desktop.id)
        #expect(TrustLogVerifier.failure(reserve.texts + [own], user: reserve.user) == nil)
    }
}

@Suite("The server's append rules (E), resets and witnesses, as pure decisions")
struct TrustLogRulesTests {
    static let now: UInt64 = 1_800_000_100

    func check(_ log: LogFixture, _ text: String, head: TrustLogServerRules.Head?, now: UInt64? = now) -> String? {
        do {
            _ = try TrustLogServerRules.check(text, backup: nil, userID: log.user, epoch: 1, head: head, now: now)
            return nil
        } catch {
            return error.sqlState
        }
    }

    @Test("E: another user 42501, off the head 40001, garbage or no valid proof 22023, the reserve 55000")
    func serverCodes() throws {
        var log = try LogFixture()
        log.clock = Self.now
        try log.certify()
        let rows = log.texts
        var head: TrustLogServerRules.Head?
        for row in rows {
            head = try TrustLogServerRules.check(
                row, backup: nil, userID: log.user, epoch: 1, head: head, now: Self.now
            )
            .head
        }
        let device = LogFixture.Device(id: UUID(), x25519: .init(), ed25519: .init(), type: "ios-phone")
        let body = try log.certificate(device).body()
        #expect(check(log, log.craft(.certify, body: body), head: head) == nil)
        #expect(check(log, "AAAA", head: head) == "22023")
        #expect(check(log, log.craft(.certify, body: body) { $0.userID = UUID() }, head: head) == "42501")
        #expect(check(log, log.craft(.certify, body: body) { $0.seq += 1 }, head: head) == "40001")
        #expect(
            check(log, log.craft(.certify, body: body) { $0.appendProof = SHA256.hash([7]) }, head: head) == "22023")
        #expect(check(log, log.craft(.certify, body: body) { $0.createdAt = Self.now + 601 }, head: head) == "22023")
        #expect(check(log, rows[1], head: head) == "40001") // the same entry again
        #expect(check(log, log.craft(.genesis, body: body), head: head) == "22023")
        // Without the clock window (a client counting answers) the far future passes E.
        #expect(
            check(log, log.craft(.certify, body: body) { $0.createdAt = Self.now + 601 }, head: head, now: nil) == nil)
        var reserve = try #require(head)
        reserve.seq = 8_999
        // At the reserve, a certify of another device: 55000 (its proof is not checked before that).
        let atReserve = log.craft(.certify, body: body) {
            $0.seq = 9_000
            $0.prev = reserve.hash
        }
        #expect(check(log, atReserve, head: reserve, now: nil) == "55000")
    }

    @Test("a reset is pending until T + 600, in effect after with no veto, at once with an accept, never with a veto")
    func resetEffect() throws {
        let genesis = TrustLogEpochs.GenesisInfo(
            epoch: 2, priorEpoch: 1, createdAt: 1_800_000_000, hash: SHA256.hash([2]), text: "")
        let t = genesis.createdAt + TrustLogEpochs.resetDelay
        let empty = TrustLogEpochs.Answers()
        #expect(TrustLogEpochs.effect(of: genesis, answers: empty, now: t + 599) == .pending(deadline: t + 600))
        #expect(TrustLogEpochs.effect(of: genesis, answers: empty, now: t + 600) == .inEffect)
        let veto = TrustLogEpochs.Answers(vetoes: [genesis.reference], headCreatedAt: t - 1)
        #expect(TrustLogEpochs.effect(of: genesis, answers: veto, now: t + 10_000) == .vetoed)
        let accept = TrustLogEpochs.Answers(accepts: [genesis.reference])
        #expect(TrustLogEpochs.effect(of: genesis, answers: accept, now: genesis.createdAt) == .inEffect)
        // The prior epoch went on after T + 600 (a backdated reset raw-inserted into an active epoch).
        let active = TrustLogEpochs.Answers(headCreatedAt: t + 601)
        #expect(TrustLogEpochs.effect(of: genesis, answers: active, now: t + 100_000) == .vetoed)
        // Two in effect: forked; an accept naming a genesis nobody can read: truncated.
        var other = genesis
        other.epoch = 3
        other.hash = SHA256.hash([3])
        #expect(
            TrustLogEpochs.step(from: 1, answers: empty, geneses: [genesis, other], now: t + 100_000).step == .forked)
        let missing = ResetReference(epoch: 4, genesisHash: SHA256.hash([4]))
        #expect(
            TrustLogEpochs.step(from: 1, answers: .init(accepts: [missing]), geneses: [genesis], now: 0).step
                == .truncated(missing))
        #expect(TrustLogEpochs.step(from: 1, answers: accept, geneses: [genesis], now: 0).step == .move(genesis))
    }

    @Test("witnesses: a fork or a truncation counts, garbage, foreign and revoked devices' rows are ignored")
    func witnesses() throws {
        var log = try LogFixture()
        let phone = try log.certify()
        let revoked = try log.certify()
        try log.revoke(revoked)
        let state = log.state
        let hashes = try TrustLogVerifier.verify(log.texts, userID: log.user, epoch: 1).hashes
        func row(
            _ device: LogFixture.Device, seq: UInt64, hash: [UInt8]? = nil, user: UUID? = nil
        ) -> TrustLogWitnesses.Row {
            let witness = TrustLogWitness(
                userID: user ?? log.user, deviceID: device.id, epoch: 1, seq: seq,
                entryHash: hash ?? (seq < hashes.count ? hashes[Int(seq)] : SHA256.hash([9])), seenAt: Self.now)
            let (body, signature) = witness.signed(by: device.ed25519)
            return TrustLogWitnesses.Row(deviceID: device.id, body: body, signature: signature)
        }
        let hashAt: (UInt64) -> [UInt8]? = { $0 < hashes.count ? hashes[Int($0)] : nil }
        let clean = TrustLogWitnesses.evaluate([row(phone, seq: 2)], state: state, hashAt: hashAt, now: Self.now)
        #expect(clean.counted.count == 1 && clean.forkedAt == nil && clean.beyondHead == nil)
        let fork = TrustLogWitnesses.evaluate(
            [row(phone, seq: 1, hash: SHA256.hash([1]))], state: state, hashAt: hashAt, now: Self.now)
        #expect(fork.forkedAt == 1)
        let ahead = TrustLogWitnesses.evaluate([row(phone, seq: 9)], state: state, hashAt: hashAt, now: Self.now)
        #expect(ahead.beyondHead == 9)
        let garbage = TrustLogWitnesses.Row(deviceID: phone.id, body: "AAAA", signature: "AAAA")
        let ignored = TrustLogWitnesses.evaluate(
            [
                garbage, row(revoked, seq: 1, hash: SHA256.hash([1])), row(phone, seq: 2, user: UUID()),
                row(phone, seq: 1),
            ],
            state: state, hashAt: hashAt, now: Self.now)
        #expect(ignored.ignored == 3 && ignored.forkedAt == nil && ignored.counted[phone.id]?.seq == 1)
        // A well-formed witness of another entry, signed by another key than the device's: it
        // does not count, so it can neither fork nor cut the log.
        var forged = row(phone, seq: 1, hash: SHA256.hash([1]))
        forged.signature = ByteEncoding.base64(
            Ed25519PrivateKey().signature(for: try ByteEncoding.bytes(base64: forged.body)))
        let unsigned = TrustLogWitnesses.evaluate([forged], state: state, hashAt: hashAt, now: Self.now)
        #expect(unsigned.ignored == 1 && unsigned.forkedAt == nil && unsigned.counted.isEmpty)
    }
}
