import Foundation

/// ChaCha20-Poly1305 AEAD, IETF variant (RFC 8439): 32-byte key, 12-byte nonce, 16-byte tag.
///
/// Output layout of ``seal(_:using:nonce:authenticating:)``: `ciphertext || tag(16)`.
public enum ChaCha20Poly1305 {
    /// The key length in bytes.
    public static let keyByteCount = 32
    /// The nonce length in bytes.
    public static let nonceByteCount = 12
    /// The tag length in bytes.
    public static let tagByteCount = 16

    /// Encrypts and authenticates.
    ///
    /// - Parameters:
    ///   - plaintext: The bytes to encrypt.
    ///   - key: A 32-byte key.
    ///   - nonce: A 12-byte nonce, never reused with the same key.
    ///   - aad: Associated data, authenticated but not encrypted.
    /// - Returns: `ciphertext || tag`.
    /// - Throws: ``CryptoError/invalidKeyLength(expected:actual:)``,
    ///   ``CryptoError/invalidNonceLength(actual:)``.
    public static func seal(
        _ plaintext: some ContiguousBytes,
        using key: SecureBytes,
        nonce: some ContiguousBytes,
        authenticating aad: some ContiguousBytes = [UInt8]()
    ) throws -> [UInt8] {
        try check(key: key)
        return try nonce.withUnsafeBytes { nonce in
            guard nonce.count == nonceByteCount else { throw CryptoError.invalidNonceLength(actual: nonce.count) }
            return plaintext.withUnsafeBytes { message in
                aad.withUnsafeBytes { aad in
                    [UInt8](unsafeUninitializedCapacity: message.count + tagByteCount) { out, initialized in
                        key.withUnsafeBytes { key in
                            encrypt(
                                message: message, aad: aad, nonce: nonce.baseAddress!, key: key.baseAddress!,
                                into: UnsafeMutableRawPointer(out.baseAddress!))
                        }
                        initialized = message.count + tagByteCount
                    }
                }
            }
        }
    }

    /// Verifies and decrypts.
    ///
    /// - Parameters:
    ///   - sealed: `ciphertext || tag`.
    ///   - key: A 32-byte key.
    ///   - nonce: The 12-byte nonce used to seal.
    ///   - aad: The associated data used to seal.
    /// - Returns: The plaintext.
    /// - Throws: ``CryptoError/authenticationFailure`` when the tag does not verify or `sealed` is
    ///   shorter than a tag; ``CryptoError/invalidKeyLength(expected:actual:)``,
    ///   ``CryptoError/invalidNonceLength(actual:)``.
    public static func open(
        _ sealed: some ContiguousBytes,
        using key: SecureBytes,
        nonce: some ContiguousBytes,
        authenticating aad: some ContiguousBytes = [UInt8]()
    ) throws -> [UInt8] {
        try check(key: key)
        return try nonce.withUnsafeBytes { nonce in
            guard nonce.count == nonceByteCount else { throw CryptoError.invalidNonceLength(actual: nonce.count) }
            return try sealed.withUnsafeBytes { sealed in
                guard sealed.count >= tagByteCount else { throw CryptoError.authenticationFailure }
                return try aad.withUnsafeBytes { aad in
                    try [UInt8](unsafeUninitializedCapacity: sealed.count - tagByteCount) { out, initialized in
                        try key.withUnsafeBytes { key in
                            try decrypt(
                                sealed: sealed, aad: aad, nonce: nonce.baseAddress!, key: key.baseAddress!,
                                into: UnsafeMutableRawPointer(out.baseAddress))
                        }
                        initialized = sealed.count - tagByteCount
                    }
                }
            }
        }
    }

    private static func check(key: SecureBytes) throws {
        guard key.count == keyByteCount else {
            throw CryptoError.invalidKeyLength(expected: keyByteCount, actual: key.count)
        }
    }

    // MARK: - Raw calls shared with the envelope

    static func encrypt(
        message: UnsafeRawBufferPointer,
        aad: UnsafeRawBufferPointer,
        nonce: UnsafeRawPointer,
        key: UnsafeRawPointer,
        into output: UnsafeMutableRawPointer
    ) {
        Primitives.backend.aeadSeal(message: message, aad: aad, nonce: nonce, key: key, into: output)
    }

    static func decrypt(
        sealed: UnsafeRawBufferPointer,
        aad: UnsafeRawBufferPointer,
        nonce: UnsafeRawPointer,
        key: UnsafeRawPointer,
        into output: UnsafeMutableRawPointer?
    ) throws {
        try Primitives.aeadOpen(sealed: sealed, aad: aad, nonce: nonce, key: key, into: output)
    }
}
