import ConformanceVectors
import Crypto
import Foundation
import SecretCrypto
import Testing

/// Envelope v2 against apple/swift-crypto's HPKE (CryptoKit API), in both directions.
@Suite("Envelope v2 cross-checked with swift-crypto's HPKE")
struct HPKECrossCheckTests {
    static var suite: Crypto.HPKE.Ciphersuite {
        Crypto.HPKE.Ciphersuite(kem: .Curve25519_HKDF_SHA256, kdf: .HKDF_SHA256, aead: .chaChaPoly)
    }

    struct ValidCase: Sendable, CustomStringConvertible {
        let test: EnvelopeV2Group.Test
        var description: String { "tcId \(test.tcId)" }
    }

    static var validCases: [ValidCase] {
        let path = VectorPaths.projectDirectory.appendingPathComponent("session-secret-v2.json").path
        guard let data = FileManager.default.contents(atPath: path),
            let file = try? VectorLoader.decode(EnvelopeV2Group.self, from: data, path: path)
        else { return [] }
        return file.testGroups.flatMap(\.tests).filter { $0.result == .valid }.map(ValidCase.init)
    }

    @Test("swift-crypto opens every valid v2 vector", arguments: validCases)
    func swiftCryptoOpensVectors(_ item: ValidCase) throws {
        let test = item.test
        let envelope = SecretCrypto.SecretEnvelope(
            ephemeralPublicKey: test.ephemeralPublicKey, encryptedSecret: test.encryptedSecret)
        let (sender, generation) = try #require(envelope.headerV2)
        let field = try SecretCrypto.SecretEnvelope.decodeEncryptedSecret(test.encryptedSecret)
        let enc = try #require(Data(base64Encoded: String(test.ephemeralPublicKey.dropFirst(3))))
        let info = SecretCrypto.SecretEnvelope.infoV2(
            sessionID: try SessionID(test.sessionId), sender: sender,
            recipient: try #require(UUID(uuidString: test.recipientDeviceId)), generation: generation)
        var recipient = try Crypto.HPKE.Recipient(
            privateKey: try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: test.recipientPrivateKey.bytes),
            ciphersuite: Self.suite,
            info: Data(info), encapsulatedKey: enc,
            authenticatedBy: try Curve25519.KeyAgreement.PublicKey(
                rawRepresentation: try #require(Data(base64Encoded: test.senderPublicKey))))
        let plaintext = try recipient.open(Data(field[21...]))
        #expect(String(decoding: plaintext, as: UTF8.self) == test.plaintext)
    }

    @Test("SecretCrypto opens envelopes swift-crypto sealed in auth mode", arguments: 0..<10)
    func secretCryptoOpensSwiftCrypto(_ round: Int) throws {
        let recipient = X25519PrivateKey(), sender = X25519PrivateKey()
        let recipientID = UUID(), senderID = UUID(), sessionID = SessionID(UUID())
        let secret = SessionSecret()
        let generation = UInt32(round + 1)
        let info = SecretCrypto.SecretEnvelope.infoV2(
            sessionID: sessionID, sender: senderID, recipient: recipientID, generation: generation)
        var hpkeSender = try Crypto.HPKE.Sender(
            recipientKey: try Curve25519.KeyAgreement.PublicKey(
                rawRepresentation: recipient.publicKey.rawRepresentation),
            ciphersuite: Self.suite, info: Data(info),
            authenticatedBy: try Curve25519.KeyAgreement.PrivateKey(
                rawRepresentation: sender.rawRepresentation.withUnsafeBytes { Data($0) }))
        let ct = try hpkeSender.seal(Data(secret.revealTextForm().utf8))
        var field: [UInt8] = [0x02]
        withUnsafeBytes(of: senderID.uuid) { field += $0 }
        field += [
            UInt8(generation >> 24), UInt8((generation >> 16) & 0xFF), UInt8((generation >> 8) & 0xFF),
            UInt8(generation & 0xFF),
        ]
        field += ct
        let envelope = SecretCrypto.SecretEnvelope(
            ephemeralPublicKey: "v2:" + hpkeSender.encapsulatedKey.base64EncodedString(),
            encryptedSecret: Data(field).base64EncodedString())
        let opened = try envelope.open(sessionID: sessionID, recipientDeviceID: recipientID, using: recipient) { id in
            id == senderID ? sender.publicKey : nil
        }
        #expect(
            opened.secret == secret && opened.senderDeviceID == senderID && opened.generation == generation
                && opened.authenticated)
    }

    @Test("swift-crypto's HPKE accepts a low-order enc that ours refuses (RFC 9180 §7.1.4)")
    func allZeroCheckDiffers() throws {
        let recipient = X25519PrivateKey(), sender = X25519PrivateKey()
        let lowOrder = [UInt8](repeating: 0, count: 31) + [0]
        let info = Data("context".utf8)
        // swift-crypto derives a context from an all-zero DH output instead of refusing it.
        let theirs = Result {
            try Crypto.HPKE.Recipient(
                privateKey: try Curve25519.KeyAgreement.PrivateKey(
                    rawRepresentation: recipient.rawRepresentation.withUnsafeBytes { Data($0) }),
                ciphersuite: Self.suite, info: info, encapsulatedKey: Data(lowOrder),
                authenticatedBy: try Curve25519.KeyAgreement.PublicKey(
                    rawRepresentation: sender.publicKey.rawRepresentation))
        }
        let ours = Result {
            try SecretCrypto.HPKE.RecipientContext(
                mode: .auth, encapsulatedKey: lowOrder, recipient: recipient, info: Array(info),
                sender: sender.publicKey)
        }
        if case .failure = theirs {
            Issue.record("swift-crypto refused the low-order enc; this test documents that it does not")
        }
        #expect(throws: CryptoError.authenticationFailure) { try ours.get() }
        // Sealing to a low-order recipient key is refused too.
        let lowOrderKey = try X25519PublicKey(rawRepresentation: lowOrder)
        #expect(throws: CryptoError.lowOrderPoint) {
            _ = try SecretCrypto.HPKE.seal(
                mode: .base, to: lowOrderKey, info: [UInt8](), plaintext: [UInt8](repeating: 1, count: 4))
        }
    }
}
