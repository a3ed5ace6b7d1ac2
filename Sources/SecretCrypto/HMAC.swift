internal import CSodium
import Foundation

/// HMAC-SHA256 (RFC 2104, FIPS 198-1) on libsodium's incremental `crypto_auth_hmacsha256`.
///
/// Keys of any length are accepted: longer than 64 bytes are hashed first, shorter are padded,
/// exactly as RFC 2104 says (libsodium does both).
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
            return full.withUnsafeBytes { sodium_memcmp($0.baseAddress, expected.baseAddress, expected.count) == 0 }
        }
    }

    /// One HMAC over the concatenation of `parts`, written to `output` (32 bytes).
    static func mac(key: UnsafeRawBufferPointer, parts: [UnsafeRawBufferPointer], into output: UnsafeMutableRawPointer)
    {
        Sodium.ensureInitialized()
        var state = crypto_auth_hmacsha256_state()
        defer { withUnsafeMutableBytes(of: &state) { sodium_memzero($0.baseAddress, $0.count) } }
        var status = crypto_auth_hmacsha256_init(&state, key.cPointer(), key.count)
        precondition(status == 0, "crypto_auth_hmacsha256_init failed")
        for part in parts where part.count > 0 {
            status = crypto_auth_hmacsha256_update(
                &state, part.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(part.count))
            precondition(status == 0, "crypto_auth_hmacsha256_update failed")
        }
        status = crypto_auth_hmacsha256_final(&state, output.assumingMemoryBound(to: UInt8.self))
        precondition(status == 0, "crypto_auth_hmacsha256_final failed")
    }
}

/// HMAC-SHA256 keyed once, for several messages under one key: each MAC starts from a copy of
/// the keyed state, which saves hashing the two key pads (two SHA-256 blocks) per message. The
/// result is exactly ``HMACSHA256``'s. The state is derived from the key: ``wipe()`` it when the
/// key is secret.
struct HMACKey: Sendable {
    private var state = crypto_auth_hmacsha256_state()

    /// Keys the state with `key` (any length, as ``HMACSHA256``).
    init(_ key: UnsafeRawBufferPointer) {
        Sodium.ensureInitialized()
        let status = crypto_auth_hmacsha256_init(&state, key.cPointer(), key.count)
        precondition(status == 0, "crypto_auth_hmacsha256_init failed")
    }

    /// One HMAC over the concatenation of `parts`, written to `output` (32 bytes).
    func mac(parts: [UnsafeRawBufferPointer], into output: UnsafeMutableRawPointer) {
        var copy = state
        defer { withUnsafeMutableBytes(of: &copy) { sodium_memzero($0.baseAddress, $0.count) } }
        for part in parts where part.count > 0 {
            let status = crypto_auth_hmacsha256_update(
                &copy, part.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(part.count))
            precondition(status == 0, "crypto_auth_hmacsha256_update failed")
        }
        let status = crypto_auth_hmacsha256_final(&copy, output.assumingMemoryBound(to: UInt8.self))
        precondition(status == 0, "crypto_auth_hmacsha256_final failed")
    }

    /// Overwrites the keyed state with zeros.
    mutating func wipe() {
        withUnsafeMutableBytes(of: &state) { sodium_memzero($0.baseAddress, $0.count) }
    }
}

/// HKDF-SHA256 (RFC 5869), built on ``HMACSHA256`` because libsodium 1.0.18 has no HKDF.
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
        return SecureBytes(count: outputByteCount) { out in
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
            defer { sodium_memzero(scratch.baseAddress, scratch.count) }
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
            defer { sodium_memzero(block.baseAddress, block.count) }
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
