import Foundation

/// An Ed25519 public key: 32 raw bytes, on the wire as standard base64.
///
/// Verification has libsodium's rules (`crypto_sign_verify_detached`) on both backends: it
/// refuses non-canonical `S`, small-order keys and `R` values, non-canonical keys, and any
/// signature that is not exactly 64 bytes.
public struct Ed25519PublicKey: Sendable, Hashable, CustomStringConvertible {
    /// The size of a public key.
    public static let byteCount = 32

    /// The 32 raw bytes.
    public let rawRepresentation: [UInt8]

    /// Wraps 32 raw bytes.
    ///
    /// - Throws: ``CryptoError/invalidKeyLength(expected:actual:)`` for any other length.
    public init(rawRepresentation: some Collection<UInt8>) throws {
        guard rawRepresentation.count == Self.byteCount else {
            throw CryptoError.invalidKeyLength(expected: Self.byteCount, actual: rawRepresentation.count)
        }
        self.rawRepresentation = Array(rawRepresentation)
    }

    /// Wraps bytes a primitive returned as a public key: 32 by its contract.
    init(computed bytes: [UInt8]) {
        precondition(bytes.count == Self.byteCount, "a primitive wrote a key of another length")
        rawRepresentation = bytes
    }

    /// Decodes standard base64 of exactly 32 bytes.
    ///
    /// - Throws: ``CryptoError/invalidEncoding`` or ``CryptoError/invalidKeyLength(expected:actual:)``.
    public init(base64: String) throws {
        try self.init(rawRepresentation: ByteEncoding.bytes(base64: base64))
    }

    /// The standard base64 form.
    public var base64: String { ByteEncoding.base64(rawRepresentation) }

    /// Whether `signature` is a valid Ed25519 signature of `message` by this key.
    ///
    /// - Parameters:
    ///   - signature: Exactly 64 bytes; any other length is simply invalid.
    ///   - message: The signed bytes.
    public func isValidSignature(_ signature: some ContiguousBytes, for message: some ContiguousBytes) -> Bool {
        return signature.withUnsafeBytes { signature in
            guard signature.count == Ed25519PrivateKey.signatureByteCount else { return false }
            return message.withUnsafeBytes { message in
                rawRepresentation.withUnsafeBytes { key in
                    Primitives.backend.ed25519Verify(signature: signature, message: message, key: key)
                }
            }
        }
    }

    public var description: String { "Ed25519PublicKey(\(base64))" }
}

/// An Ed25519 signing key, held as its 32-byte seed in self-wiping memory.
///
/// A device keeps one in `signing.key` (the seed, with the same file rules as `device.key`).
/// ```swift
/// let key = Ed25519PrivateKey()
/// let signature = key.signature(for: Array("statement".utf8))
/// key.publicKey.isValidSignature(signature, for: Array("statement".utf8))   // true
/// ```
public struct Ed25519PrivateKey: Sendable, CustomStringConvertible, CustomReflectable {
    /// The size of a seed.
    public static let seedByteCount = 32
    /// The size of a signature.
    public static let signatureByteCount = 64

    /// The seed.
    let seed: SecureBytes
    /// The matching public key.
    public let publicKey: Ed25519PublicKey

    /// A fresh key from the OS CSPRNG.
    public init() {
        self.init(validSeed: SecureBytes(randomCount: Self.seedByteCount))
    }

    /// The key of a 32-byte seed.
    ///
    /// - Throws: ``CryptoError/invalidKeyLength(expected:actual:)`` for any other length.
    public init(seed: SecureBytes) throws {
        guard seed.count == Self.seedByteCount else {
            throw CryptoError.invalidKeyLength(expected: Self.seedByteCount, actual: seed.count)
        }
        self.init(validSeed: seed)
    }

    /// The key of a seed of ``seedByteCount`` bytes.
    private init(validSeed seed: SecureBytes) {
        self.seed = seed
        publicKey = Ed25519PublicKey(computed: seed.withUnsafeBytes { Primitives.backend.ed25519PublicKey(seed: $0) })
    }

    /// The seed, for writing the key file.
    public var seedRepresentation: SecureBytes { seed }

    /// The detached signature of `message` (64 bytes). Ed25519 is deterministic on libsodium
    /// and on swift-crypto over BoringSSL; CryptoKit on Apple platforms adds randomness, which
    /// changes the bytes and never their validity.
    public func signature(for message: some ContiguousBytes) -> [UInt8] {
        message.withUnsafeBytes { message in
            seed.withUnsafeBytes { seed in
                Primitives.backend.ed25519Sign(message: message, seed: seed, publicKey: publicKey.rawRepresentation)
            }
        }
    }

    public var description: String { "Ed25519PrivateKey(<redacted>)" }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
