import DeviceTrust
import EmbeddedRemote
import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Testing

/// A user's log written by a root, for the remote tests.
struct RemoteLogWriter {
    let user: UUID
    let root = UUID()
    let rootX = X25519PrivateKey()
    let rootEd = Ed25519PrivateKey()
    var writer: TrustLogWriter
    var sent = 0

    init(user: UUID, epoch: UInt32 = 1, priorEpoch: UInt32 = 0, recovery: RecoveryKey? = RecoveryKey()) throws {
        self.user = user
        let certificate = DeviceCertificate(
            userID: user, deviceID: root, x25519PublicKey: rootX.publicKey, ed25519PublicKey: rootEd.publicKey,
            deviceType: "linux-desktop", deviceRole: "trust_root", issuedAt: Self.now)
        writer = try TrustLogWriter.genesis(
            userID: user, epoch: epoch, priorEpoch: priorEpoch, identity: Ed25519PrivateKey(),
            recoveryKey: recovery?.agreementKey(userID: user).publicKey, certificate: certificate, signingKey: rootEd,
            createdAt: Self.now)
    }

    static var now: UInt64 { UInt64(Date().timeIntervalSince1970) }

    /// A certify of a fresh phone, appended to the writer (not yet sent).
    mutating func certifyPhone() throws -> UUID {
        let id = UUID()
        let certificate = DeviceCertificate(
            userID: user, deviceID: id, x25519PublicKey: X25519PrivateKey().publicKey,
            ed25519PublicKey: Ed25519PrivateKey().publicKey, deviceType: "ios-phone", deviceRole: "trusted_executor",
            issuedAt: Self.now)
        try writer.append(.certify(certificate), createdAt: Self.now)
        return id
    }

    /// What was written and not yet sent, marked sent.
    mutating func unsent() -> [TrustLogAppend] {
        defer { sent = writer.written.count }
        return writer.written[sent...].map { TrustLogAppend(entry: $0.text, backup: $0.backup) }
    }

    /// An entry at the next position, signed with the key in force, after `change`.
    func craft(
        _ body: [UInt8], type: TrustLogEntryType = .certify, change: (inout TrustLogEntry) -> Void = { _ in }
    )
        -> String
    {
        let state = writer.state
        let seq = state.headSeq + 1
        var entry = TrustLogEntry(
            userID: user, epoch: state.epoch, seq: seq, prev: Array(state.headHash), type: type,
            createdAt: max(Self.now, state.headCreatedAt), author: root,
            appendProof: AppendChain.proof(
                seed: writer.identity.seedRepresentation, userID: user, epoch: state.epoch,
                steps: Int(seq - state.identityKeySince)),
            body: body)
        change(&entry)
        entry.sign(identity: writer.identity)
        return entry.text
    }
}

/// The trust log on every remote (trust-log.md, "The remote"): the same rules and codes on the
/// embedded remote and on the stack's two schema variants.
@Suite("The trust log on the remote: appends only at the head with the chain's next proof")
struct TrustLogRemoteTests {
    /// A remote for `user` (signed in `signedIn` ago, `nil`: no recent sign-in), acting for the
    /// device of `credential` (by default a fresh device of the user's).
    static func remote(
        _ kind: RemoteKind, _ harness: any RemoteHarness, user: UUID, signedIn: Date? = Date(),
        credential: DeviceCredential = .random(for: UUID())
    ) throws -> any TrustLogRemote {
        switch kind {
        case .embedded:
            return try EmbeddedRemoteStore(
                path: (harness as! EmbeddedHarness).path, userID: user, signedInAt: signedIn, credential: credential)
        case .postgrest, .postgrestDeployedSchema:
            let stack = try StackEnvironment.require()
            let base = kind == .postgrest ? stack.url : stack.deployedURL
            var configuration = PostgRESTConfiguration(projectURL: base, apiKey: stack.anonKey, userID: user) { _ in
                stack.token(for: user, signedIn: signedIn)
            }
            configuration.baseBackoff = .milliseconds(10)
            configuration.deviceCredential = credential
            return PostgRESTRemoteStore(configuration: configuration)
        }
    }

    static func code(_ body: () async throws -> Void) async -> String? {
        do {
            try await body()
            return nil
        } catch let error as RemoteStoreError {
            return error.postgrestCode?.rawValue ?? "\(error.code)"
        } catch {
            return "\(error)"
        }
    }

    @Test(
        "start needs a fresh sign-in (28000), once (23505); appends go at the head, read back in order",
        arguments: RemoteKind.available)
    func startAndAppend(kind: RemoteKind) async throws {
        let harness = try kind.harness()
        let user = UUID()
        var log = try RemoteLogWriter(user: user)
        let stale = try Self.remote(kind, harness, user: user, signedIn: Date(timeIntervalSinceNow: -700))
        let genesis = log.unsent()
        #expect(await Self.code { try await stale.startTrustLog(genesis) } == "28000")
        let remote = try Self.remote(kind, harness, user: user)
        try await remote.startTrustLog(genesis)
        #expect(await Self.code { try await remote.startTrustLog(genesis) } == "23505")
        let phone = try log.certifyPhone()
        _ = try log.certifyPhone()
        try await remote.appendTrustEntries(epoch: 1, firstSeq: 1, log.unsent())
        let rows = try await remote.trustLogRows(epoch: 1, fromSeq: 0)
        #expect(rows.map(\.seq) == [0, 1, 2] && rows.map(\.entry) == log.writer.written.map(\.text))
        #expect(rows[1].backup != nil && LogBackup.hasShape(rows[1].backup!))
        let verified = try TrustLogVerifier.verify(rows.map(\.entry), userID: user, epoch: 1).state
        #expect(verified.devices[phone]?.isTrusted == true)
        #expect(try await remote.trustLogRows(epoch: 1, fromSeq: 2).map(\.seq) == [2])
        #expect(try await remote.trustLogGeneses().map(\.seq) == [0])
        // Another user reads nothing of it.
        let other = try Self.remote(kind, harness, user: UUID())
        #expect(try await other.trustLogRows(epoch: 1, fromSeq: 0).isEmpty)
    }

    @Test(
        "a token holder without the seed: garbage or a wrong proof 22023, off the head 40001, another user 42501",
        arguments: RemoteKind.available)
    func tokenHolder(kind: RemoteKind) async throws {
        let harness = try kind.harness()
        let user = UUID()
        var log = try RemoteLogWriter(user: user)
        let remote = try Self.remote(kind, harness, user: user)
        try await remote.startTrustLog(log.unsent())
        let certificate = try DeviceCertificate(
            userID: user, deviceID: UUID(), x25519PublicKey: X25519PrivateKey().publicKey,
            ed25519PublicKey: Ed25519PrivateKey().publicKey, deviceType: "ios-phone", deviceRole: "trusted_executor",
            issuedAt: RemoteLogWriter.now
        ).body()
        func append(_ text: String, firstSeq: UInt64 = 1, backup: String? = nil) async -> String? {
            await Self.code {
                try await remote.appendTrustEntries(
                    epoch: 1, firstSeq: firstSeq, [TrustLogAppend(entry: text, backup: backup)])
            }
        }
        #expect(await append("AAAA") == "22023")
        #expect(await append(log.craft(certificate) { $0.appendProof = SHA256.hash([1]) }) == "22023")
        #expect(await append(log.craft(certificate) { $0.seq = 2 }) == "40001")
        #expect(await append(log.craft(certificate), firstSeq: 2) == "40001")
        #expect(await append(log.craft(certificate) { $0.createdAt += 1_000 }) == "22023")
        #expect(await append(log.writer.written[0].text) == "40001")
        #expect(await append(log.craft(certificate), backup: "AAAA") == "22023")
        let foreign = try Self.remote(kind, harness, user: UUID())
        #expect(
            await Self.code {
                try await foreign.appendTrustEntries(
                    epoch: 1, firstSeq: 1, [TrustLogAppend(entry: log.craft(certificate), backup: nil)])
            } == "42501")
        // Nothing changed: the head is still the genesis.
        #expect(try await remote.trustLogRows(epoch: 1, fromSeq: 0).count == 1)
        #expect(await append(log.craft(certificate)) == nil)
    }

    @Test(
        "a UUID in uppercase is a malformed entry (22023), never another user (42501) nor stored",
        arguments: RemoteKind.available)
    func nonCanonicalUUIDs(kind: RemoteKind) async throws {
        let harness = try kind.harness()
        // Ids with hex letters in them, so that uppercase changes them.
        let user = Self.lettered()
        var log = try RemoteLogWriter(user: user)
        let remote = try Self.remote(kind, harness, user: user)
        let genesis = log.unsent()
        // The genesis body's user_id (body offset 29, after the 182 bytes of the header).
        let upperGenesis = try Self.uppercased(genesis[0].entry, 182 + 29..<182 + 65)
        #expect(
            await Self.code {
                try await remote.startTrustLog([TrustLogAppend(entry: upperGenesis, backup: genesis[0].backup)])
            } == "22023")
        try await remote.startTrustLog(genesis)
        let certificate = try DeviceCertificate(
            userID: user, deviceID: UUID(), x25519PublicKey: X25519PrivateKey().publicKey,
            ed25519PublicKey: Ed25519PrivateKey().publicKey, deviceType: "ios-phone", deviceRole: "trusted_executor",
            issuedAt: RemoteLogWriter.now
        ).body()
        let entry = log.craft(certificate)
        for range in [21..<57, 111..<147] { // the header's user_id, its author
            let upper = try Self.uppercased(entry, range)
            #expect(
                await Self.code {
                    try await remote.appendTrustEntries(
                        epoch: 1, firstSeq: 1, [TrustLogAppend(entry: upper, backup: nil)])
                } == "22023", "bytes \(range)")
        }
        #expect(try await remote.trustLogRows(epoch: 1, fromSeq: 0).count == 1)
        try await remote.appendTrustEntries(epoch: 1, firstSeq: 1, [TrustLogAppend(entry: entry, backup: nil)])
    }

    /// A random UUID whose text has hex letters in every group that matters here.
    static func lettered() -> UUID {
        while true {
            let id = UUID()
            if id.canonical.contains(where: { ("a"..."f").contains($0) }) { return id }
        }
    }

    /// `text` (an entry in base64) with the hex letters at `range` made uppercase.
    static func uppercased(_ text: String, _ range: Range<Int>) throws -> String {
        var bytes = try #require(Data(base64Encoded: text)).map { $0 }
        let before = bytes
        for index in range where (0x61...0x66).contains(bytes[index]) { bytes[index] -= 0x20 }
        try #require(bytes != before, "no hex letter at \(range)")
        return Data(bytes).base64EncodedString()
    }

    @Test(
        "a reset: pending, a veto cancels it (the number is not reused), an accept is in effect at once",
        arguments: RemoteKind.available)
    func resets(kind: RemoteKind) async throws {
        let harness = try kind.harness()
        let user = UUID()
        var log = try RemoteLogWriter(user: user)
        let remote = try Self.remote(kind, harness, user: user)
        try await remote.startTrustLog(log.unsent())
        var reset = try RemoteLogWriter(user: user, epoch: 2, priorEpoch: 1, recovery: nil)
        let genesis = reset.unsent()[0]
        let stale = try Self.remote(kind, harness, user: user, signedIn: nil)
        #expect(await Self.code { try await stale.requestIdentityReset(genesis, accept: nil) } == "28000")
        // Fresh is at most 600 s old: 700 s is not; a sign-in time ahead of the server's clock
        // is not refused (a skewed clock locks nobody out), on both backends alike.
        let old = try Self.remote(kind, harness, user: user, signedIn: Date().addingTimeInterval(-700))
        #expect(await Self.code { try await old.requestIdentityReset(genesis, accept: nil) } == "28000")
        let ahead = try Self.remote(kind, harness, user: user, signedIn: Date().addingTimeInterval(3_600))
        try await ahead.requestIdentityReset(genesis, accept: nil)
        #expect(await Self.code { try await remote.requestIdentityReset(genesis, accept: nil) } == "55000")
        // Appends to the pending epoch: 55000.
        _ = try reset.certifyPhone()
        #expect(
            await Self.code { try await remote.appendTrustEntries(epoch: 2, firstSeq: 1, reset.unsent()) } == "55000")
        // A veto naming another genesis: 55000; an accept through append: 22023; the veto: cancelled.
        func answer(_ verdict: ResetAnswer.Verdict, hash: [UInt8]) throws -> ResetAnswer {
            ResetAnswer(userID: user, resetEpoch: 2, resetGenesisHash: hash, verdict: verdict)
        }
        var wrong = log
        try wrong.writer.append(.resetAnswer(try answer(.veto, hash: SHA256.hash([1]))), createdAt: RemoteLogWriter.now)
        #expect(
            await Self.code { try await remote.appendTrustEntries(epoch: 1, firstSeq: 1, wrong.unsent()) } == "55000")
        let hash = reset.writer.written[0].hash
        var accept = log
        try accept.writer.append(.resetAnswer(try answer(.accept, hash: hash)), createdAt: RemoteLogWriter.now)
        #expect(
            await Self.code { try await remote.appendTrustEntries(epoch: 1, firstSeq: 1, accept.unsent()) } == "22023")
        try log.writer.append(.resetAnswer(try answer(.veto, hash: hash)), createdAt: RemoteLogWriter.now)
        try await remote.appendTrustEntries(epoch: 1, firstSeq: 1, log.unsent())
        // Within 24 h of the last request, without an accept: 55000.
        var third = try RemoteLogWriter(user: user, epoch: 3, priorEpoch: 1, recovery: nil)
        let thirdGenesis = third.unsent()[0]
        #expect(await Self.code { try await remote.requestIdentityReset(thirdGenesis, accept: nil) } == "55000")
        // The same epoch number again (the vetoed one is never reused): 22023; epoch 3 with an accept: at once.
        var again = try RemoteLogWriter(user: user, epoch: 2, priorEpoch: 1, recovery: nil)
        let againGenesis = again.unsent()[0]
        var accepting = log
        try accepting.writer.append(
            .resetAnswer(
                ResetAnswer(
                    userID: user, resetEpoch: 2,
                    resetGenesisHash: againGenesis.entry.isEmpty ? [] : again.writer.written[0].hash, verdict: .accept)),
            createdAt: RemoteLogWriter.now)
        #expect(
            await Self.code { try await remote.requestIdentityReset(againGenesis, accept: accepting.unsent()[0]) }
                == "22023")
        var accept3 = log
        try accept3.writer.append(
            .resetAnswer(
                ResetAnswer(
                    userID: user, resetEpoch: 3, resetGenesisHash: third.writer.written[0].hash, verdict: .accept)),
            createdAt: RemoteLogWriter.now)
        try await remote.requestIdentityReset(thirdGenesis, accept: accept3.unsent()[0])
        // Epoch 3 is current: appends to it go; epoch 1 is closed (55000).
        _ = try third.certifyPhone()
        try await remote.appendTrustEntries(epoch: 3, firstSeq: 1, third.unsent())
        _ = try log.certifyPhone()
        #expect(await Self.code { try await remote.appendTrustEntries(epoch: 1, firstSeq: 3, log.unsent()) } == "55000")
        #expect(try await remote.trustLogGeneses().map(\.epoch) == [1, 2, 3])
    }

    @Test(
        "witnesses: published for the head in the caller's own name; an older one 22023, one beyond the head 22023, another device's or user's 42501, its own ids in uppercase or a witness out of range 22023",
        arguments: RemoteKind.available)
    func witnesses(kind: RemoteKind) async throws {
        let harness = try kind.harness()
        let user = Self.lettered()
        var log = try RemoteLogWriter(user: user)
        let remote = try Self.remote(kind, harness, user: user) as! any CompleteRemote
        try await remote.startTrustLog(log.unsent())
        let device = try log.certifyPhone()
        try await remote.appendTrustEntries(epoch: 1, firstSeq: 1, log.unsent())
        // The certified phone publishes, through its own credential.
        let phone = try Self.remote(kind, harness, user: user, credential: .random(for: device)) as! any CompleteRemote
        try await phone.upsertOwnDevice(
            OwnDeviceRow(
                id: device, userID: user, name: "phone", deviceType: .iosPhone, hostname: nil,
                publicKey: X25519PrivateKey().publicKey.base64))
        let key = Ed25519PrivateKey()
        func publish(seq: UInt64, seen: UInt64 = RemoteLogWriter.now, device id: UUID? = nil) async -> String? {
            let witness = TrustLogWitness(
                userID: user, deviceID: id ?? device, epoch: 1, seq: seq,
                entryHash: log.writer.written[Int(min(seq, 1))].hash, seenAt: seen)
            let (body, signature) = witness.signed(by: key)
            return await Self.code {
                try await phone.publishWitness(deviceID: id ?? device, body: body, signature: signature)
            }
        }
        #expect(await publish(seq: 0) == nil)
        #expect(await publish(seq: 1) == nil)
        #expect(await publish(seq: 0) == "22023")
        // Another witness of the seq it holds: kept beside it (the signature is in the key).
        #expect(await publish(seq: 1, seen: RemoteLogWriter.now + 1) == nil)
        #expect(await publish(seq: 2) == "22023")
        #expect(await publish(seq: 1, device: UUID()) == "42501")
        // The caller's own ids in uppercase are a malformed witness (22023), never another
        // user's or device's (42501), as for an entry. Body bytes 29..<65: user_id; 66..<102: device_id.
        let fresh = TrustLogWitness(
            userID: user, deviceID: device, epoch: 1, seq: 1, entryHash: log.writer.written[1].hash,
            seenAt: RemoteLogWriter.now + 3
        ).signed(by: key)
        let ranges = device.canonical.contains(where: { ("a"..."f").contains($0) }) ? [29..<65, 66..<102] : [29..<65]
        for range in ranges {
            let upper = try Self.uppercased(fresh.body, range)
            #expect(
                await Self.code {
                    try await phone.publishWitness(deviceID: device, body: upper, signature: fresh.signature)
                }
                    == "22023", "bytes \(range)")
        }
        // Out of range is malformed too, before whom it names: epoch 0, seq 10,000, seen_at 2^63.
        for (epoch, seq, seen) in [
            (UInt32(0), UInt64(1), RemoteLogWriter.now), (1, 10_000, RemoteLogWriter.now), (1, 1, 1 << 63),
        ] {
            let (body, signature) = TrustLogWitness(
                userID: user, deviceID: UUID(), epoch: epoch, seq: seq, entryHash: log.writer.written[1].hash,
                seenAt: seen
            ).signed(by: key)
            #expect(
                await Self.code { try await phone.publishWitness(deviceID: device, body: body, signature: signature) }
                    == "22023", "epoch \(epoch), seq \(seq), seen_at \(seen)")
        }
        // The root's login without the phone's credential cannot witness in the phone's name.
        let witness = TrustLogWitness(
            userID: user, deviceID: device, epoch: 1, seq: 1, entryHash: log.writer.written[1].hash,
            seenAt: RemoteLogWriter.now + 2)
        let (body, signature) = witness.signed(by: key)
        #expect(
            await Self.code { try await remote.publishWitness(deviceID: device, body: body, signature: signature) }
                == "42501")
        // Five witnesses of one seq: the first published gives way, the newest four stay.
        func seen() async throws -> Set<UInt64> {
            Set(
                try await remote.trustLogWitnesses(epoch: 1).filter { $0.seq == 1 }.map {
                    try TrustLogWitness.parse($0.body).seenAt
                })
        }
        let held = try await seen()
        let base = RemoteLogWriter.now
        for offset: UInt64 in [4, 5, 6] {
            #expect(await publish(seq: 1, seen: base + offset) == nil, "seen_at now + \(offset)")
        }
        #expect(try await remote.trustLogWitnesses(epoch: 1).map(\.seq) == [0, 1, 1, 1, 1])
        #expect(held.count == 2)
        #expect(try await seen() == [held.max() ?? 0, base + 4, base + 5, base + 6])
    }
}
