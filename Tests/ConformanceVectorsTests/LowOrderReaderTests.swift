import ConformanceVectors
import Crypto
import Foundation
import SecretCrypto
import Testing

/// The low-order cases of session-secret-v1.json catch a reader that lacks the low-order check:
/// each is sealed under the key such a reader derives, so only that check refuses it.
@Suite("session-secret-v1.json low-order cases")
struct LowOrderReaderTests {
    struct File: Decodable {
        struct Group: Decodable { let tests: [Test] }
        struct Test: Decodable {
            let tcId: Int
            let flags: [String]
            let recipientPrivateKey: String
            let sessionId: String
            let plaintext: String
            let ephemeralPublicKey: String
            let encryptedSecret: String
        }
        let testGroups: [Group]
    }

    static func hex(_ text: String) -> Data {
        Data(
            stride(from: 0, to: text.count, by: 2).map { i in
                UInt8(
                    text[text.index(text.startIndex, offsetBy: i)..<text.index(text.startIndex, offsetBy: i + 2)],
                    radix: 16)!
            })
    }

    @Test("a reader without the low-order check (swift-crypto's X25519) opens every one; ours refuses")
    func laxReaderAccepts() throws {
        let path = VectorPaths.projectDirectory.appendingPathComponent("session-secret-v1.json")
        let file = try JSONDecoder().decode(File.self, from: Data(contentsOf: path))
        let cases = file.testGroups.flatMap(\.tests).filter { $0.flags.contains("LowOrderEphemeral") }
        #expect(cases.count == 7)
        for test in cases {
            let recipient = try Curve25519.KeyAgreement.PrivateKey(
                rawRepresentation: Self.hex(test.recipientPrivateKey))
            let ephemeral = try #require(Data(base64Encoded: test.ephemeralPublicKey))
            // swift-crypto hands back the all-zero result instead of refusing it.
            let shared = try recipient.sharedSecretFromKeyAgreement(
                with: Curve25519.KeyAgreement.PublicKey(rawRepresentation: ephemeral))
            #expect(shared.withUnsafeBytes { $0.allSatisfy { $0 == 0 } })
            let key = shared.hkdfDerivedSymmetricKey(
                using: SHA256.self, salt: Data(test.sessionId.lowercased().utf8),
                sharedInfo: Data("unbound-session-secret-v1".utf8), outputByteCount: 32)
            let sealed = try #require(Data(base64Encoded: test.encryptedSecret))
            let opened = try ChaChaPoly.open(ChaChaPoly.SealedBox(combined: sealed), using: key)
            #expect(String(decoding: opened, as: UTF8.self) == test.plaintext, "tcId \(test.tcId)")
            // Ours refuses it.
            let envelope = SecretEnvelope(
                ephemeralPublicKey: test.ephemeralPublicKey, encryptedSecret: test.encryptedSecret)
            #expect(throws: CryptoError.authenticationFailure) {
                try envelope.open(
                    sessionID: SessionID(test.sessionId),
                    using: X25519PrivateKey(rawRepresentation: SecureBytes(copying: Self.hex(test.recipientPrivateKey)))
                )
            }
        }
    }
}
