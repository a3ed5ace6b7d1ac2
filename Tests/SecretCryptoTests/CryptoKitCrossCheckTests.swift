import Crypto
import Foundation
import SecretCrypto
import Testing

/// Envelopes exchanged with swift-crypto, whose API is the CryptoKit API the iOS app uses.
@Suite("Cross-check with swift-crypto (CryptoKit API)")
struct CryptoKitCrossCheckTests {
    static let info = Data("unbound-session-secret-v1".utf8)

    /// Seals the way the iOS app does, through CryptoKit.
    static func cryptoKitSeal(
        text: String, recipient: Data, sessionID: String
    ) throws -> (ephemeral: String, encrypted: String) {
        let ephemeral = Curve25519.KeyAgreement.PrivateKey()
        let shared = try ephemeral.sharedSecretFromKeyAgreement(with: .init(rawRepresentation: recipient))
        let key = shared.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: Data(sessionID.lowercased().utf8), sharedInfo: info, outputByteCount: 32)
        let box = try ChaChaPoly.seal(Data(text.utf8), using: key)
        return (ephemeral.publicKey.rawRepresentation.base64EncodedString(), box.combined.base64EncodedString())
    }

    /// Opens the way the iOS app does, through CryptoKit.
    static func cryptoKitOpen(
        ephemeral: String, encrypted: [UInt8], privateKey: Data, sessionID: String
    ) throws -> String {
        let recipient = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: privateKey)
        guard let ephemeralBytes = Data(base64Encoded: ephemeral) else { throw CryptoKitError.incorrectParameterSize }
        let shared = try recipient.sharedSecretFromKeyAgreement(with: .init(rawRepresentation: ephemeralBytes))
        let key = shared.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: Data(sessionID.lowercased().utf8), sharedInfo: info, outputByteCount: 32)
        let plaintext = try ChaChaPoly.open(ChaChaPoly.SealedBox(combined: Data(encrypted)), using: key)
        return String(decoding: plaintext, as: UTF8.self)
    }

    @Test("SecretCrypto opens what CryptoKit seals", arguments: 0..<20)
    func cryptoKitToSecretCrypto(_ round: Int) throws {
        let recipient = X25519PrivateKey()
        let sessionID = SessionID(UUID())
        let secret = SessionSecret()
        let (ephemeral, encrypted) = try Self.cryptoKitSeal(
            text: secret.revealTextForm(), recipient: Data(recipient.publicKey.rawRepresentation),
            sessionID: round.isMultiple(of: 2) ? sessionID.canonical.uppercased() : sessionID.canonical
        )
        let envelope = SecretEnvelope(ephemeralPublicKey: ephemeral, encryptedSecret: encrypted)
        #expect(try envelope.open(sessionID: sessionID, using: recipient) == secret)
    }

    @Test("CryptoKit opens what SecretCrypto seals", arguments: 0..<20)
    func secretCryptoToCryptoKit(_ round: Int) throws {
        let recipient = X25519PrivateKey()
        let sessionID = SessionID(UUID())
        let secret = SessionSecret()
        let envelope = try SecretEnvelope.seal(secret, for: recipient.publicKey, sessionID: sessionID)
        let opened = try Self.cryptoKitOpen(
            ephemeral: envelope.ephemeralPublicKey,
            encrypted: SecretEnvelope.decodeEncryptedSecret(envelope.encryptedSecret),
            privateKey: recipient.rawRepresentation.withUnsafeBytes { Data($0) },
            sessionID: sessionID.canonical
        )
        #expect(opened == secret.revealTextForm())
    }

    @Test("CryptoKit derives the same public key and shared secret")
    func keyAgreement() throws {
        let ours = X25519PrivateKey()
        let theirs = try Curve25519.KeyAgreement.PrivateKey(
            rawRepresentation: ours.rawRepresentation.withUnsafeBytes { Data($0) })
        #expect(Array(theirs.publicKey.rawRepresentation) == ours.publicKey.rawRepresentation)
        let peer = X25519PrivateKey()
        let sharedOurs = try ours.sharedSecret(with: peer.publicKey).withUnsafeBytes { Array($0) }
        let sharedTheirs = try theirs.sharedSecretFromKeyAgreement(
            with: .init(rawRepresentation: peer.publicKey.rawRepresentation))
        #expect(sharedTheirs.withUnsafeBytes { Array($0) } == sharedOurs)
    }
}
