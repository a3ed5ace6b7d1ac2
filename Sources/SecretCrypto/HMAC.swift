import Foundation

/// HMAC-SHA256 (RFC 2104, FIPS 198-1) on the crypto backend (libsodium or swift-crypto).
///
/// Keys of any length are accepted: longer than 64 bytes are hashed first, shorter are padded,
/// exactly as RFC 2104 says (both backends do).
public enum HMACSHA256 {
    /// The tag length in bytes.
    public static let byteCount = 32

    /// Computes the full 32-byte tag of `message` under `key`.
    ///
    /// - Parameters:
    ///   - message: The authenticated bytes.
    ///   - key: The MAC key, any length.
    /// - Returns: The 32-byte tag (not secret once computed over public data; callers deriving
    ///   keys use ``HKDFSHA256`` instead).
    public static func authenticationCode(for message: some ContiguousBytes, using key: SecureBytes) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: byteCount) { out, initialized in
            key.withUnsafeBytes { keyBytes in
                message.withUnsafeBytes { messageBytes in
                    mac(key: keyBytes, parts: [messageBytes], into: UnsafeMutableRawPointer(out.baseAddress!))
                }
            }
            initialized = byteCount
        }
    }

    /// Checks `tag` against the (possibly truncated) HMAC of `message`, in constant time.
    ///
    /// - Parameters:
    ///   - tag: The expected tag; 1 to 32 bytes, compared against that many leading bytes.
    ///   - message: The authenticated bytes.
    ///   - key: The MAC key.
    /// - Returns: Whether the tag matches.
    public static func isValidAuthenticationCode(
        _ tag: some ContiguousBytes,
        for message: some ContiguousBytes,
        using key: SecureBytes
    ) -> Bool {
        let full = authenticationCode(for: message, using: key)
        return tag.withUnsafeBytes { expected in
            guard expected.count > 0, expected.count <= byteCount else { return false }
            return full.withUnsafeBytes {
                Primitives.equal($0.baseAddress!, expected.baseAddress!, count: expected.count)
            }
        }
    }

    /// One HMAC over the concatenation of `parts`, written to `output` (32 bytes).
    static func mac(key: UnsafeRawBufferPointer, parts: [UnsafeRawBufferPointer], into output: UnsafeMutableRawPointer)
    {
        Primitives.backend.hmacKey(key).mac(parts: parts, into: output)
    }
}

/// HMAC-SHA256 keyed once, for several messages under one key: each MAC starts from a copy of
/// the keyed state, which saves hashing the two key pads (two SHA-256 blocks) per message. The
/// result is exactly ``HMACSHA256``'s. The state is derived from the key: ``wipe()`` it when the
/// key is secret.
struct HMACKey: Sendable {
    private let key: SecureBytes
    private let backend: CryptoBackend
    private let keyed: any KeyedMAC

    init(_ key: UnsafeRawBufferPointer) {
        self.key = SecureBytes(copying: key)
        backend = CryptoBackend.current
        keyed = Primitives.backend.hmacKey(key)
    }

    /// The tag of the concatenated `parts`, by the current task's backend (the one that keyed
    /// this value, or the key absorbed again for another).
    func mac(parts: [UnsafeRawBufferPointer], into output: UnsafeMutableRawPointer) {
        if CryptoBackend.current == backend {
            keyed.mac(parts: parts, into: output)
        } else {
            key.withUnsafeBytes { Primitives.backend.hmacKey($0).mac(parts: parts, into: output) }
        }
    }
}

/// HKDF-SHA256 (RFC 5869), built on ``HMACSHA256``: one implementation over both backends
/// (libsodium 1.0.18 has no HKDF).
///
/// ```swift
/// let key = try HKDFSHA256.deriveKey(inputKeyMaterial: shared, salt: Array(sessionID.utf8),
///                                    info: Array("unbound-session-secret-v1".utf8), outputByteCount: 32)
/// ```
public enum HKDFSHA256 {
    /// The largest output RFC 5869 allows: 255 blocks of 32 bytes.
    public static let maximumOutputByteCount = 255 * 32

    /// Extracts and expands `outputByteCount` bytes.
    ///
    /// - Parameters:
    ///   - inputKeyMaterial: The IKM.
    ///   - salt: The salt, any length; empty means 32 zero bytes, as RFC 5869 says.
    ///   - info: Context and application-specific information.
    ///   - outputByteCount: 0 to 8160.
    /// - Returns: The output key material.
    /// - Throws: ``CryptoError/outputLengthTooLarge(requested:maximum:)`` above 8160 bytes.
    public static func deriveKey(
        inputKeyMaterial: SecureBytes,
        salt: some ContiguousBytes,
        info: some ContiguousBytes,
        outputByteCount: Int
    ) throws -> SecureBytes {
        guard outputByteCount >= 0, outputByteCount <= maximumOutputByteCount else {
            throw CryptoError.outputLengthTooLarge(requested: outputByteCount, maximum: maximumOutputByteCount)
        }
        return derive(inputKeyMaterial: inputKeyMaterial, salt: salt, info: info, count: outputByteCount)
    }

    /// Extracts and expands one 32-byte key: the size every key in the product has, so this
    /// form cannot fail.
    ///
    /// - Parameters:
    ///   - inputKeyMaterial: The IKM.
    ///   - salt: The salt, any length; empty means 32 zero bytes, as RFC 5869 says.
    ///   - info: Context and application-specific information.
    /// - Returns: 32 bytes of output key material.
    public static func deriveKey(
        inputKeyMaterial: SecureBytes, salt: some ContiguousBytes, info: some ContiguousBytes
    ) -> SecureBytes {
        derive(inputKeyMaterial: inputKeyMaterial, salt: salt, info: info, count: 32)
    }

    /// `count` bytes (at most ``maximumOutputByteCount``, which the callers check or fix).
    private static func derive(
        inputKeyMaterial: SecureBytes, salt: some ContiguousBytes, info: some ContiguousBytes, count: Int
    ) -> SecureBytes {
        SecureBytes(count: count) { out in
            inputKeyMaterial.withUnsafeBytes { ikm in
                salt.withUnsafeBytes { salt in
                    info.withUnsafeBytes { info in
                        derive(ikm: ikm, salt: salt, info: info, into: out)
                    }
                }
            }
        }
    }

    /// Extract then expand into `output`; every intermediate is wiped.
    static func derive(
        ikm: UnsafeRawBufferPointer,
        salt: UnsafeRawBufferPointer,
        info: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) {
        withUnsafeTemporaryAllocation(byteCount: 64, alignment: 16) { scratch in
            defer { Primitives.wipe(scratch) }
            let prk = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<32])
            let block = UnsafeMutableRawBufferPointer(rebasing: scratch[32..<64])
            // An empty HMAC key is zero-padded to the block size, which equals HashLen zeros.
            HMACSHA256.mac(key: salt, parts: [ikm], into: prk.baseAddress!)
            var written = 0
            var counter: UInt8 = 1
            var previous = UnsafeRawBufferPointer(start: nil, count: 0)
            while written < output.count {
                withUnsafeBytes(of: &counter) { counterByte in
                    HMACSHA256.mac(
                        key: UnsafeRawBufferPointer(prk), parts: [previous, info, counterByte], into: block.baseAddress!
                    )
                }
                let take = Swift.min(32, output.count - written)
                output.baseAddress!.advanced(by: written).copyMemory(from: block.baseAddress!, byteCount: take)
                written += take
                previous = UnsafeRawBufferPointer(block)
                counter &+= 1
            }
        }
    }

    /// HKDF-Extract: `PRK = HMAC(salt, ikm parts...)`, 32 bytes into `prk`.
    static func extract(salt: UnsafeRawBufferPointer, ikm: [UnsafeRawBufferPointer], into prk: UnsafeMutableRawPointer)
    {
        HMACSHA256.mac(key: salt, parts: ikm, into: prk)
    }

    /// HKDF-Expand with `info` given in parts; every intermediate block is wiped.
    static func expand(
        prk: UnsafeRawBufferPointer, info: [UnsafeRawBufferPointer], into output: UnsafeMutableRawBufferPointer
    ) {
        withUnsafeTemporaryAllocation(byteCount: 32, alignment: 16) { block in
            defer { Primitives.wipe(block) }
            var written = 0
            var counter: UInt8 = 1
            var previous = UnsafeRawBufferPointer(start: nil, count: 0)
            while written < output.count {
                withUnsafeBytes(of: &counter) { counterByte in
                    HMACSHA256.mac(key: prk, parts: [previous] + info + [counterByte], into: block.baseAddress!)
                }
                let take = Swift.min(32, output.count - written)
                output.baseAddress!.advanced(by: written).copyMemory(from: block.baseAddress!, byteCount: take)
                written += take
                previous = UnsafeRawBufferPointer(block)
                counter &+= 1
            }
        }
    }
}
