#if SESSION_SYNC_SWIFT_CRYPTO
internal import Crypto
import Foundation

/// The primitives on swift-crypto: CryptoKit on Apple platforms, BoringSSL elsewhere. Every
/// function's contract is ``Primitives``'; where swift-crypto is laxer than libsodium the rule
/// is written out here (the all-zero X25519 result, ``Ed25519Rules``).
enum SwiftCryptoBackend: PrimitiveSet {
    static func x25519(into out: UnsafeMutableRawPointer, scalar: UnsafeRawPointer, point: UnsafeRawPointer) -> Bool {
        do {
            let privateKey = try Curve25519.KeyAgreement.PrivateKey(
                rawRepresentation: UnsafeRawBufferPointer(start: scalar, count: 32))
            let publicKey = try Curve25519.KeyAgreement.PublicKey(
                rawRepresentation: UnsafeRawBufferPointer(start: point, count: 32))
            let shared = try privateKey.sharedSecretFromKeyAgreement(with: publicKey)
            let result = UnsafeMutableRawBufferPointer(start: out, count: 32)
            shared.withUnsafeBytes { result.copyMemory(from: $0) }
            // libsodium refuses an all-zero result (a low-order point); swift-crypto does not.
            return !Primitives.isZero(UnsafeRawBufferPointer(result))
        } catch {
            return false
        }
    }

    static func x25519Base(into out: UnsafeMutableRawPointer, scalar: UnsafeRawPointer) {
        // A 32-byte raw representation cannot be refused.
        let privateKey = try! Curve25519.KeyAgreement.PrivateKey(
            rawRepresentation: UnsafeRawBufferPointer(start: scalar, count: 32))
        privateKey.publicKey.rawRepresentation.withUnsafeBytes { out.copyMemory(from: $0.baseAddress!, byteCount: 32) }
    }

    static func aeadSeal(
        message: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, nonce: UnsafeRawPointer, key: UnsafeRawPointer,
        into output: UnsafeMutableRawPointer
    ) {
        // A 32-byte key and a 12-byte nonce: the only inputs ChaChaPoly refuses are other sizes.
        let box = try! ChaChaPoly.seal(
            message, using: SymmetricKey(data: UnsafeRawBufferPointer(start: key, count: 32)),
            nonce: ChaChaPoly.Nonce(data: UnsafeRawBufferPointer(start: nonce, count: 12)), authenticating: aad)
        box.ciphertext.withUnsafeBytes { output.copyMemory(from: $0.baseAddress ?? nonce, byteCount: $0.count) }
        box.tag.withUnsafeBytes { (output + message.count).copyMemory(from: $0.baseAddress!, byteCount: 16) }
    }

    static func aeadOpen(
        sealed: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, nonce: UnsafeRawPointer, key: UnsafeRawPointer,
        into output: UnsafeMutableRawPointer?
    ) -> Bool {
        guard sealed.count >= 16 else { return false }
        let length = sealed.count - 16
        do {
            let box = try ChaChaPoly.SealedBox(
                nonce: ChaChaPoly.Nonce(data: UnsafeRawBufferPointer(start: nonce, count: 12)),
                ciphertext: UnsafeRawBufferPointer(rebasing: sealed[0..<length]),
                tag: UnsafeRawBufferPointer(rebasing: sealed[length...]))
            var plaintext = try ChaChaPoly.open(
                box, using: SymmetricKey(data: UnsafeRawBufferPointer(start: key, count: 32)), authenticating: aad)
            defer { plaintext.withUnsafeMutableBytes { Primitives.wipe($0) } }
            if let output, length > 0 {
                plaintext.withUnsafeBytes { output.copyMemory(from: $0.baseAddress!, byteCount: length) }
            }
            return true
        } catch {
            return false
        }
    }

    static func sha256(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer) {
        var hasher = Crypto.SHA256()
        hasher.update(bufferPointer: input)
        hasher.finalize().withUnsafeBytes { output.copyMemory(from: $0.baseAddress!, byteCount: 32) }
    }

    /// An HMAC-SHA256 with the key absorbed, copied for each message.
    static func hmacKey(_ key: UnsafeRawBufferPointer) -> any KeyedMAC { HMACState(key: key) }

    struct HMACState: KeyedMAC, @unchecked Sendable {
        let state: HMAC<Crypto.SHA256>

        init(key: UnsafeRawBufferPointer) {
            state = HMAC<Crypto.SHA256>(key: SymmetricKey(data: key))
        }

        func mac(parts: [UnsafeRawBufferPointer], into output: UnsafeMutableRawPointer) {
            var copy = state
            for part in parts where part.count > 0 { copy.update(data: part) }
            copy.finalize().withUnsafeBytes { output.copyMemory(from: $0.baseAddress!, byteCount: 32) }
        }
    }

    static func ed25519PublicKey(seed: UnsafeRawBufferPointer) -> [UInt8] {
        // The seed is 32 bytes (Primitives' contract): the only size the key refuses is another.
        let key = try! Curve25519.Signing.PrivateKey(rawRepresentation: seed)
        return Array(key.publicKey.rawRepresentation)
    }

    /// Deterministic (RFC 8032) on BoringSSL, so the bytes equal libsodium's; CryptoKit on Apple
    /// platforms adds randomness, which changes the bytes and not their validity.
    static func ed25519Sign(
        message: UnsafeRawBufferPointer, seed: UnsafeRawBufferPointer, publicKey: [UInt8]
    )
        -> [UInt8]
    {
        // A 32-byte seed (Primitives' contract); signing a message has no failure of its own.
        let key = try! Curve25519.Signing.PrivateKey(rawRepresentation: seed)
        return Array(try! key.signature(for: message))
    }

    static func ed25519Verify(
        signature: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer
    ) -> Bool {
        guard Ed25519Rules.admits(signature: signature, key: key),
            let publicKey = try? Curve25519.Signing.PublicKey(rawRepresentation: key)
        else { return false }
        return publicKey.isValidSignature(signature, for: message)
    }

    static func randomBytes(_ buffer: UnsafeMutableRawBufferPointer) {
        // getrandom(2) on Linux, arc4random_buf on Apple platforms: the OS CSPRNG.
        var generator = SystemRandomNumberGenerator()
        var offset = 0
        while offset < buffer.count {
            var word = generator.next()
            let take = Swift.min(8, buffer.count - offset)
            withUnsafeBytes(of: &word) {
                (buffer.baseAddress! + offset).copyMemory(from: $0.baseAddress!, byteCount: take)
            }
            withUnsafeMutableBytes(of: &word) { Primitives.wipe($0) }
            offset += take
        }
    }

    static func ed25519Decodes(_ key: [UInt8]) -> Bool { Ed25519Rules.decodes(key) }

    static func base64(_ bytes: UnsafeRawBufferPointer, urlSafe: Bool) -> [UInt8] {
        PortableCodec.base64(bytes, urlSafe: urlSafe)
    }

    static func decodeBase64(_ text: UnsafeRawBufferPointer, urlSafe: Bool) -> [UInt8]? {
        PortableCodec.decodeBase64(text, urlSafe: urlSafe)
    }

    static func hex(_ bytes: UnsafeRawBufferPointer) -> [UInt8] { PortableCodec.hex(bytes) }

    static func decodeHex(_ text: UnsafeRawBufferPointer) -> [UInt8]? { PortableCodec.decodeHex(text) }
}
#endif
