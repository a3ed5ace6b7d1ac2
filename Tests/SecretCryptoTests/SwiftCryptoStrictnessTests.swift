import Crypto
import Foundation
import Testing

@testable import SecretCrypto

#if canImport(CSodium)
import CSodium

/// swift-crypto is laxer than libsodium in two places; the swift-crypto backend writes
/// libsodium's rules out. Each case here is refused by libsodium, accepted by swift-crypto on its
/// own where a valid input can be built, and refused by the swift-crypto backend: removing a rule
/// makes its case fail.
@Suite("The swift-crypto backend is as strict as libsodium")
struct SwiftCryptoStrictnessTests {
    static let message = Array("unbound strictness".utf8)

    static func scalarBase(_ scalar: [UInt8]) -> [UInt8] {
        var point = [UInt8](repeating: 0, count: 32)
        #expect(crypto_scalarmult_ed25519_base_noclamp(&point, scalar) == 0)
        return point
    }

    static func randomScalar() -> [UInt8] {
        var scalar = [UInt8](repeating: 0, count: 32)
        crypto_core_ed25519_scalar_random(&scalar)
        return scalar
    }

    /// h = SHA-512(R || A || M) mod L.
    static func challenge(r: [UInt8], a: [UInt8], message: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 64)
        let input = r + a + message
        crypto_hash_sha512(&digest, input, UInt64(input.count))
        var reduced = [UInt8](repeating: 0, count: 32)
        crypto_core_ed25519_scalar_reduce(&reduced, digest)
        return reduced
    }

    /// Whether each verifier accepts: libsodium, swift-crypto alone, the swift-crypto backend.
    static func verdicts(signature: [UInt8], key: [UInt8]) throws -> (sodium: Bool, raw: Bool, backend: Bool) {
        let publicKey = try Ed25519PublicKey(rawRepresentation: key)
        let sodium = try CryptoBackend.with(.libsodium) { publicKey.isValidSignature(signature, for: message) }
        let raw = (try? Curve25519.Signing.PublicKey(rawRepresentation: key))?.isValidSignature(signature, for: message)
        let backend = try CryptoBackend.with(.swiftCrypto) { publicKey.isValidSignature(signature, for: message) }
        return (sodium, raw ?? false, backend)
    }

    static let identity = [1] + [UInt8](repeating: 0, count: 31)

    @Test("a small-order key (the identity) with a signature that holds for any message")
    func smallOrderKey() throws {
        // [S]B = R + [h]·identity = R: R = [r]B, S = r.
        let r = Self.randomScalar()
        let verdicts = try Self.verdicts(signature: Self.scalarBase(r) + r, key: Self.identity)
        #expect(!verdicts.sodium)
        #expect(verdicts.raw, "swift-crypto alone accepts it: the rule is needed")
        #expect(!verdicts.backend)
    }

    @Test("a small-order R (the identity) under an honest key")
    func smallOrderR() throws {
        // [S]B = identity + [h]A with A = [a]B: S = h·a.
        let a = Self.randomScalar()
        let key = Self.scalarBase(a)
        let h = Self.challenge(r: Self.identity, a: key, message: Self.message)
        var s = [UInt8](repeating: 0, count: 32)
        crypto_core_ed25519_scalar_mul(&s, h, a)
        let verdicts = try Self.verdicts(signature: Self.identity + s, key: key)
        #expect(!verdicts.sodium)
        #expect(verdicts.raw, "swift-crypto alone accepts it: the rule is needed")
        #expect(!verdicts.backend)
    }

    @Test("S + L in place of S", arguments: 0..<8)
    func nonCanonicalS(_ round: Int) throws {
        let key = Ed25519PrivateKey()
        let signature = try CryptoBackend.with(.libsodium) { key.signature(for: Self.message) }
        var s = Array(signature[32...])
        var carry = 0
        for i in 0..<32 {
            let sum = Int(s[i]) + Int(Ed25519Rules.order[i]) + carry
            s[i] = UInt8(sum & 0xFF)
            carry = sum >> 8
        }
        let verdicts = try Self.verdicts(signature: Array(signature[..<32]) + s, key: key.publicKey.rawRepresentation)
        #expect(!verdicts.sodium && !verdicts.backend)
        // The backend refuses it before swift-crypto sees it, whatever swift-crypto would say.
        #expect(
            !Ed25519Rules.admits(
                signature: (Array(signature[..<32]) + s).withUnsafeBytes { UnsafeRawBufferPointer($0) },
                key: key.publicKey.rawRepresentation.withUnsafeBytes { UnsafeRawBufferPointer($0) }))
    }

    @Test("each of libsodium's rules refuses its case on its own")
    func eachRule() {
        let honest = Ed25519PrivateKey()
        let a = honest.publicKey.rawRepresentation
        let signature = honest.signature(for: Self.message)
        func admits(_ signature: [UInt8], _ key: [UInt8]) -> Bool {
            signature.withUnsafeBytes { s in key.withUnsafeBytes { k in Ed25519Rules.admits(signature: s, key: k) } }
        }
        #expect(admits(signature, a))
        // S = L exactly; R of small order; A of small order; A = y + p (non-canonical, y = 2).
        #expect(!admits(Array(signature[..<32]) + Ed25519Rules.order, a))
        #expect(!admits(Self.identity + Array(signature[32...]), a))
        #expect(!admits(signature, Self.identity))
        #expect(!admits(signature, [0xEF] + [UInt8](repeating: 0xFF, count: 30) + [0x7F]))
        #expect(
            Ed25519Rules.isCanonical(a)
                && !Ed25519Rules.isCanonical([0xEF] + [UInt8](repeating: 0xFF, count: 30) + [0x7F]))
    }

    @Test("the swift-crypto backend's point decoding agrees with libsodium's on random and edge encodings")
    func pointDecoding() {
        var cases: [[UInt8]] = (0..<3_000).map { _ in (0..<32).map { _ in UInt8.random(in: 0...255) } }
        cases += (0..<40).map { [UInt8($0)] + [UInt8](repeating: 0, count: 31) }
        cases += (0..<40).map {
            [UInt8(0xED - $0 % 20)] + [UInt8](repeating: 0xFF, count: 30) + [$0 < 20 ? 0x7F : 0xFF]
        }
        var valid = 0
        for bytes in cases {
            var sum = [UInt8](repeating: 0, count: 32)
            let sodium = crypto_core_ed25519_add(&sum, bytes, Ed25519PublicKey.basePoint) == 0
            let canonical = Ed25519Rules.isCanonical(bytes)
            // isCanonicalAndNotSmallOrder decodes only canonical encodings: compare those.
            guard canonical else { continue }
            #expect(Ed25519Rules.decodes(bytes) == sodium, "\(ByteEncoding.hex(bytes))")
            if sodium { valid += 1 }
        }
        #expect(valid > 1_000 && valid < 2_000, "about half of random y decode: \(valid)")
    }

    @Test("an X25519 exchange whose result is all zero is refused by both, though swift-crypto alone gives it")
    func allZeroExchange() throws {
        let scalar = SecureBytes(randomCount: 32)
        for hex in X25519Tests.lowOrder {
            let point = try ByteEncoding.bytes(hex: hex)
            let raw = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: scalar.withUnsafeBytes { Data($0) })
                .sharedSecretFromKeyAgreement(with: .init(rawRepresentation: point))
            #expect(raw.withUnsafeBytes { $0.allSatisfy { $0 == 0 } }, "swift-crypto alone returns zeros")
            for backend in CryptoBackend.available {
                try CryptoBackend.with(backend) {
                    let key = try X25519PrivateKey(rawRepresentation: scalar)
                    #expect(throws: CryptoError.lowOrderPoint) {
                        try key.sharedSecret(with: X25519PublicKey(rawRepresentation: point))
                    }
                }
            }
        }
    }
}
#endif
