import ConformanceVectors
import DeviceTrust
import Foundation
import SecretCrypto
import Testing

/// The two crypto backends are one implementation to every peer: the same vector results, and
/// what one makes the other opens or verifies, byte for byte where the construction is
/// deterministic.
@Suite("libsodium and swift-crypto backends agree")
struct BackendParityTests {
    static let backends = CryptoBackend.available
    static var pairs: [(CryptoBackend, CryptoBackend)] {
        backends.flatMap { maker in backends.filter { $0 != maker }.map { (maker, $0) } }
    }
    static let third = VectorPaths.projectDirectory.appendingPathComponent("third_party")
    static var everyFile: [String] {
        VectorPaths.project + VectorPaths.wycheproof + VectorPaths.jsonFiles(in: third.appendingPathComponent("eddsa"))
            + VectorPaths.jsonFiles(in: third.appendingPathComponent("hpke"))
    }

    @Test("both backends are compiled on Linux")
    func bothCompiled() {
        #if os(Linux)
        #expect(Self.backends == [.libsodium, .swiftCrypto])
        #endif
        #expect(Self.backends.contains(.swiftCrypto))
    }

    @Test("every vector file gives the same counts under each backend, and all pass", arguments: everyFile)
    func vectorFile(path: String) throws {
        let reports = try Self.backends.map { backend in
            try CryptoBackend.with(backend) { try VectorVerifier.verify(path: path) }
        }
        for report in reports {
            #expect(report.passed > 0)
            #expect(report.failures.isEmpty, "\(report.failures.prefix(3))")
        }
        #expect(Set(reports.map(\.passed)).count == 1, "\(path): \(reports.map(\.passed))")
    }

    /// Runs `make` under the first backend and `check` under the second, for each ordered pair.
    static func across<Made>(
        _ rounds: Int, make: () throws -> Made, check: (Made) throws -> Void
    ) throws {
        for (maker, checker) in pairs {
            for _ in 0..<rounds {
                let made = try CryptoBackend.with(maker, make)
                try CryptoBackend.with(checker) { try check(made) }
            }
        }
    }

    static func randomBytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255) } }

    @Test("a version-1 envelope sealed by one backend opens with the other")
    func envelopeV1() throws {
        try Self.across(
            1_500,
            make: { () throws -> (SessionSecret, X25519PrivateKey, SessionID, SecretEnvelope) in
                let recipient = X25519PrivateKey()
                let secret = SessionSecret()
                let session = SessionID(UUID())
                return (
                    secret, recipient, session,
                    try SecretEnvelope.seal(secret, for: recipient.publicKey, sessionID: session)
                )
            },
            check: { (made) throws in
                let (secret, recipient, session, envelope) = made
                #expect(try envelope.open(sessionID: session, using: recipient) == secret)
            })
    }

    @Test("a version-2 envelope: opened across backends, and the same bytes from a fixed ephemeral key")
    func envelopeV2() throws {
        let senderID = UUID()
        let recipientID = UUID()
        try Self.across(
            1_000,
            make: { () throws -> (SessionSecret, X25519PrivateKey, X25519PrivateKey, SessionID, SecretEnvelope) in
                let sender = X25519PrivateKey()
                let recipient = X25519PrivateKey()
                let secret = SessionSecret()
                let session = SessionID(UUID())
                let envelope = try SecretEnvelope.sealV2(
                    secret, for: recipient.publicKey, recipientDeviceID: recipientID, sessionID: session,
                    sender: sender, senderDeviceID: senderID, generation: 3)
                return (secret, sender, recipient, session, envelope)
            },
            check: { (made) throws in
                let (secret, sender, recipient, session, envelope) = made
                let opened = try envelope.open(
                    sessionID: session, recipientDeviceID: recipientID, using: recipient,
                    senderKey: { $0 == senderID ? sender.publicKey : nil })
                #expect(opened.secret == secret && opened.authenticated && opened.generation == 3)
            })
        for _ in 0..<200 {
            let keys = try (0..<3).map { _ in try X25519PrivateKey(rawRepresentation: SecureBytes(randomCount: 32)) }
            let plaintext = Self.randomBytes(Int.random(in: 0...200))
            let session = SessionID(UUID())
            let sealed = try Self.backends.map { backend in
                try CryptoBackend.with(backend) {
                    try SecretEnvelope.sealV2Deterministically(
                        plaintext: plaintext, for: keys[0].publicKey, recipientDeviceID: recipientID,
                        sessionID: session,
                        sender: keys[1], senderDeviceID: senderID, generation: 1, ephemeral: keys[2])
                }
            }
            #expect(Set(sealed.map(\.encryptedSecret)).count == 1)
            #expect(Set(sealed.map(\.ephemeralPublicKey)).count == 1)
        }
    }

    @Test("a certificate signed by one backend verifies with the other, with the same signature bytes")
    func certificate() throws {
        try Self.across(
            1_500,
            make: { () throws -> (Ed25519PublicKey, DeviceCertificate, SignedStatement, [UInt8]) in
                let identity = Ed25519PrivateKey()
                let certificate = DeviceCertificate(
                    userID: UUID(), deviceID: UUID(), x25519PublicKey: X25519PrivateKey().publicKey,
                    ed25519PublicKey: Ed25519PrivateKey().publicKey, deviceType: "ios", deviceRole: "mobile",
                    issuedAt: UInt64.random(in: 0..<1 << 40))
                return (
                    identity.publicKey, certificate, try certificate.signed(by: identity),
                    identity.seedRepresentation.withUnsafeBytes { Array($0) }
                )
            },
            check: { (made) throws in
                let (identity, certificate, statement, seed) = made
                let verified = try DeviceCertificate.verify(
                    statement, identityKey: identity, userID: certificate.userID, deviceID: certificate.deviceID)
                #expect(verified == certificate)
                // Ed25519 is deterministic on both here (libsodium, BoringSSL): the same signature.
                let again = try certificate.signed(by: Ed25519PrivateKey(seed: SecureBytes(copying: seed)))
                #expect(again == statement)
            })
    }

    @Test("an approval request sealed and a decision signed by one backend open and verify with the other")
    func approval() throws {
        try Self.across(
            1_000,
            make: {
                () throws -> (
                    SessionSecret, ApprovalRequestContext, String, Ed25519PublicKey, SignedStatement, ApprovalDecision
                ) in
                let secret = SessionSecret()
                let context = ApprovalRequestContext(
                    userID: UUID(), sessionID: UUID(), requestID: UUID(), requesterDeviceID: UUID(),
                    expiresAt: UInt64.random(in: 0..<1 << 40), generation: UInt32.random(in: 1...1_000))
                let content = try ApprovalContent(tool: "Bash", summary: "run \(UInt32.random(in: 0...UInt32.max))")
                let body = ByteEncoding.base64(try ApprovalCrypto.seal(content, context: context, secret: secret))
                let signer = Ed25519PrivateKey()
                let decision = ApprovalDecision(
                    userID: context.userID, sessionID: context.sessionID, requestID: context.requestID,
                    deviceID: UUID(), verdict: .approve, bodyHash: SHA256.hash(Array(body.utf8)),
                    read: try ApprovalCrypto.readProof(
                        secret: secret, requestID: context.requestID, generation: context.generation),
                    decidedAt: 1_800_000_000, logHead: .init(epoch: 1, seq: 4, hash: Self.randomBytes(32)))
                return (secret, context, body, signer.publicKey, decision.signed(by: signer), decision)
            },
            check: { (made) throws in
                let (secret, context, body, signer, statement, decision) = made
                #expect(try ApprovalCrypto.open(body: body, context: context, secret: secret).tool == "Bash")
                #expect(
                    try ApprovalCrypto.readProof(
                        secret: secret, requestID: context.requestID, generation: context.generation)
                        == decision.read)
                let bytes = try ByteEncoding.bytes(base64: statement.body)
                #expect(signer.isValidSignature(try ByteEncoding.bytes(base64: statement.signature), for: bytes))
                #expect(try ApprovalDecision.parse(bytes) == decision)
            })
    }

    @Test("an identity backup sealed by one backend opens with the other; a fixed nonce gives the same bytes")
    func backup() throws {
        try Self.across(
            1_000,
            make: { () throws -> (Ed25519PrivateKey, UUID, RecoveryKey, String) in
                let identity = Ed25519PrivateKey()
                let user = UUID()
                let recovery = RecoveryKey()
                return (
                    identity, user, recovery, try IdentityBackup.seal(identity, userID: user, recoveryKey: recovery)
                )
            },
            check: { (made) throws in
                let (identity, user, recovery, stored) = made
                let opened = try IdentityBackup.open(
                    stored, userID: user, identityPublicKey: identity.publicKey, recoveryKey: recovery)
                #expect(opened.publicKey == identity.publicKey)
                let nonce = Self.randomBytes(12)
                let fixed = try Self.backends.map { backend in
                    try CryptoBackend.with(backend) {
                        try IdentityBackup.seal(identity, userID: user, recoveryKey: recovery, nonce: nonce)
                    }
                }
                #expect(Set(fixed).count == 1)
            })
    }

    @Test("the text codecs agree byte for byte, on valid text and on random one-character changes")
    func codecs() throws {
        guard Self.backends.count == 2 else { return }
        for length in 0..<70 {
            let bytes = Self.randomBytes(length)
            let encoded = Self.backends.map { backend in try! CryptoBackend.with(backend) { ByteEncoding.base64(bytes) }
            }
            let hex = Self.backends.map { backend in try! CryptoBackend.with(backend) { ByteEncoding.hex(bytes) } }
            #expect(Set(encoded).count == 1 && Set(hex).count == 1)
            var candidates = [encoded[0], hex[0], encoded[0] + "=", String(encoded[0].dropLast()), hex[0].uppercased()]
            for _ in 0..<40 where !encoded[0].isEmpty {
                var chars = Array(encoded[0].utf8)
                chars[Int.random(in: 0..<chars.count)] = UInt8.random(in: 0...0x7F)
                candidates.append(String(decoding: chars, as: UTF8.self))
            }
            for text in candidates {
                let base64 = Self.backends.map { backend in
                    try! CryptoBackend.with(backend) { try? ByteEncoding.bytes(base64: text) }
                }
                let hexDecoded = Self.backends.map { backend in
                    try! CryptoBackend.with(backend) { try? ByteEncoding.bytes(hex: text) }
                }
                #expect(base64[0] == base64[1], "base64 \(text)")
                #expect(hexDecoded[0] == hexDecoded[1], "hex \(text)")
            }
        }
        for _ in 0..<300 {
            let secret = SessionSecret()
            let text = secret.revealTextForm()
            let parsed = Self.backends.map { backend in
                try! CryptoBackend.with(backend) { try? SessionSecret(textForm: text) }
            }
            #expect(parsed.allSatisfy { $0 == secret })
            let texts = Self.backends.map { backend in try! CryptoBackend.with(backend) { secret.revealTextForm() } }
            #expect(Set(texts).count == 1)
        }
    }
}
