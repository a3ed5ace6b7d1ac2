import Testing

@testable import SecretCrypto

/// What a stored identity key that is not a key reads as (`TrustLogState.identityPublicKey`): a
/// key under which nothing verifies, on either backend, instead of a trap.
@Suite("The key that verifies nothing")
struct VerifiesNothingTests {
    @Test("all zero, and no signature verifies under it, on every backend compiled here")
    func verifiesNothing() throws {
        #expect(Ed25519PublicKey.verifiesNothing.rawRepresentation == [UInt8](repeating: 0, count: 32))
        let message = Array("a trust-log entry".utf8)
        for backend in CryptoBackend.available {
            try CryptoBackend.with(backend) {
                let signer = Ed25519PrivateKey()
                let signature = signer.signature(for: message)
                #expect(signer.publicKey.isValidSignature(signature, for: message), "\(backend): the control")
                #expect(!Ed25519PublicKey.verifiesNothing.isValidSignature(signature, for: message), "\(backend)")
                #expect(
                    !Ed25519PublicKey.verifiesNothing.isValidSignature([UInt8](repeating: 0, count: 64), for: message),
                    "\(backend): the all-zero signature")
            }
        }
    }
}
