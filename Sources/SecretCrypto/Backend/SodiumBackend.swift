#if canImport(CSodium)
internal import CSodium

/// The primitives on libsodium (Linux). Every function's contract is ``Primitives``'.
enum SodiumBackend: PrimitiveSet {
    private static let initialized: Bool = sodium_init() >= 0

    /// Ensures libsodium is initialised; traps if the library cannot start (no entropy source),
    /// since no operation could then be trusted.
    @inline(__always)
    static func ensureInitialized() {
        precondition(initialized, "libsodium failed to initialise")
    }

    static func x25519(into out: UnsafeMutableRawPointer, scalar: UnsafeRawPointer, point: UnsafeRawPointer) -> Bool {
        ensureInitialized()
        // -1 exactly when the result is all zero.
        return crypto_scalarmult(
            out.assumingMemoryBound(to: UInt8.self), scalar.assumingMemoryBound(to: UInt8.self),
            point.assumingMemoryBound(to: UInt8.self)) == 0
    }

    static func x25519Base(into out: UnsafeMutableRawPointer, scalar: UnsafeRawPointer) {
        ensureInitialized()
        let status = crypto_scalarmult_base(
            out.assumingMemoryBound(to: UInt8.self), scalar.assumingMemoryBound(to: UInt8.self))
        precondition(status == 0, "crypto_scalarmult_base failed")
    }

    static func aeadSeal(
        message: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, nonce: UnsafeRawPointer, key: UnsafeRawPointer,
        into output: UnsafeMutableRawPointer
    ) {
        ensureInitialized()
        var written: UInt64 = 0
        let status = crypto_aead_chacha20poly1305_ietf_encrypt(
            output.assumingMemoryBound(to: UInt8.self), &written, message.cPointer(), UInt64(message.count),
            aad.cPointer(), UInt64(aad.count), nil, nonce.assumingMemoryBound(to: UInt8.self),
            key.assumingMemoryBound(to: UInt8.self))
        precondition(status == 0, "crypto_aead_chacha20poly1305_ietf_encrypt failed")
    }

    static func aeadOpen(
        sealed: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, nonce: UnsafeRawPointer, key: UnsafeRawPointer,
        into output: UnsafeMutableRawPointer?
    ) -> Bool {
        ensureInitialized()
        var written: UInt64 = 0
        return crypto_aead_chacha20poly1305_ietf_decrypt(
            output?.assumingMemoryBound(to: UInt8.self), &written, nil, sealed.cPointer(), UInt64(sealed.count),
            aad.cPointer(), UInt64(aad.count), nonce.assumingMemoryBound(to: UInt8.self),
            key.assumingMemoryBound(to: UInt8.self)) == 0
    }

    static func sha256(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer) {
        ensureInitialized()
        let status = crypto_hash_sha256(
            output.assumingMemoryBound(to: UInt8.self), input.cPointer(), UInt64(input.count))
        precondition(status == 0, "crypto_hash_sha256 failed")
    }

    /// An HMAC-SHA256 state with the key absorbed, copied for each message.
    static func hmacKey(_ key: UnsafeRawBufferPointer) -> any KeyedMAC { HMACState(key: key) }

    final class HMACState: KeyedMAC, @unchecked Sendable {
        var state = crypto_auth_hmacsha256_state()

        init(key: UnsafeRawBufferPointer) {
            SodiumBackend.ensureInitialized()
            let status = crypto_auth_hmacsha256_init(&state, key.cPointer(), key.count)
            precondition(status == 0, "crypto_auth_hmacsha256_init failed")
        }

        func mac(parts: [UnsafeRawBufferPointer], into output: UnsafeMutableRawPointer) {
            var copy = state
            defer { withUnsafeMutableBytes(of: &copy) { Primitives.wipe($0) } }
            for part in parts where part.count > 0 {
                let status = crypto_auth_hmacsha256_update(
                    &copy, part.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(part.count))
                precondition(status == 0, "crypto_auth_hmacsha256_update failed")
            }
            let status = crypto_auth_hmacsha256_final(&copy, output.assumingMemoryBound(to: UInt8.self))
            precondition(status == 0, "crypto_auth_hmacsha256_final failed")
        }

        deinit { withUnsafeMutableBytes(of: &state) { Primitives.wipe($0) } }
    }

    static func ed25519PublicKey(seed: UnsafeRawBufferPointer) -> [UInt8] {
        ensureInitialized()
        var publicKey = [UInt8](repeating: 0, count: 32)
        withUnsafeTemporaryAllocation(byteCount: 64, alignment: 16) { expanded in
            defer { Primitives.wipe(expanded) }
            let status = crypto_sign_seed_keypair(
                &publicKey, expanded.baseAddress!.assumingMemoryBound(to: UInt8.self), seed.cPointer())
            precondition(status == 0, "crypto_sign_seed_keypair failed")
        }
        return publicKey
    }

    static func ed25519Sign(
        message: UnsafeRawBufferPointer, seed: UnsafeRawBufferPointer, publicKey: [UInt8]
    )
        -> [UInt8]
    {
        ensureInitialized()
        var signature = [UInt8](repeating: 0, count: 64)
        // libsodium's secret key is the seed followed by the public key.
        withUnsafeTemporaryAllocation(byteCount: 64, alignment: 16) { expanded in
            defer { Primitives.wipe(expanded) }
            expanded.baseAddress!.copyMemory(from: seed.baseAddress!, byteCount: 32)
            publicKey.withUnsafeBytes { (expanded.baseAddress! + 32).copyMemory(from: $0.baseAddress!, byteCount: 32) }
            let status = crypto_sign_detached(
                &signature, nil, message.cPointer(), UInt64(message.count),
                expanded.baseAddress!.assumingMemoryBound(to: UInt8.self))
            precondition(status == 0, "crypto_sign_detached failed")
        }
        return signature
    }

    static func ed25519Verify(
        signature: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer
    ) -> Bool {
        ensureInitialized()
        return crypto_sign_verify_detached(
            signature.cPointer(), message.cPointer(), UInt64(message.count), key.cPointer()) == 0
    }

    /// Whether the encoding decodes to a point (`crypto_core_ed25519_add` checks only that).
    static func ed25519Decodes(_ key: [UInt8]) -> Bool {
        ensureInitialized()
        var sum = [UInt8](repeating: 0, count: 32)
        return crypto_core_ed25519_add(&sum, key, Ed25519PublicKey.basePoint) == 0
    }

    static func randomBytes(_ buffer: UnsafeMutableRawBufferPointer) {
        ensureInitialized()
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        randombytes_buf(base, buffer.count)
    }

    static func base64(_ bytes: UnsafeRawBufferPointer, urlSafe: Bool) -> [UInt8] {
        let variant = urlSafe ? sodium_base64_VARIANT_URLSAFE_NO_PADDING : sodium_base64_VARIANT_ORIGINAL
        let length = sodium_base64_encoded_len(bytes.count, variant)
        return [UInt8](unsafeUninitializedCapacity: length) { out, initialized in
            out.withMemoryRebound(to: CChar.self) { chars in
                _ = sodium_bin2base64(chars.baseAddress!, length, bytes.cPointer(), bytes.count, variant)
            }
            initialized = length - 1 // drop the NUL terminator
        }
    }

    /// `nil` end pointer: libsodium insists that every character is consumed.
    static func decodeBase64(_ text: UnsafeRawBufferPointer, urlSafe: Bool) -> [UInt8]? {
        // libsodium 1.0.18 classifies characters as signed `char` and takes every byte >= 0x80
        // for a digit; the Swift codec refuses them, and so does this.
        guard ByteEncoding.isASCII(text) else { return nil }
        let variant = urlSafe ? sodium_base64_VARIANT_URLSAFE_NO_PADDING : sodium_base64_VARIANT_ORIGINAL
        let capacity = text.count / 4 * 3 + 3
        var decodedCount = 0
        var failed = false
        let result = [UInt8](unsafeUninitializedCapacity: capacity) { out, initialized in
            let status = sodium_base642bin(
                out.baseAddress!, capacity, text.cPointer(to: CChar.self), text.count, nil, &decodedCount, nil,
                variant)
            failed = status != 0
            // A refused text may have decoded most of a secret: wiped, not just dropped.
            if failed { Primitives.wipe(UnsafeMutableRawBufferPointer(out)) }
            initialized = failed ? 0 : decodedCount
        }
        return failed ? nil : result
    }

    static func hex(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        let length = bytes.count * 2 + 1
        return [UInt8](unsafeUninitializedCapacity: length) { out, initialized in
            out.withMemoryRebound(to: CChar.self) { chars in
                _ = sodium_bin2hex(chars.baseAddress!, length, bytes.cPointer(), bytes.count)
            }
            initialized = length - 1 // drop the NUL terminator
        }
    }

    static func decodeHex(_ text: UnsafeRawBufferPointer) -> [UInt8]? {
        guard text.count % 2 == 0 else { return nil }
        guard text.count > 0 else { return [] }
        let capacity = text.count / 2
        var decodedCount = 0
        var failed = false
        let result = [UInt8](unsafeUninitializedCapacity: capacity) { out, initialized in
            let status = sodium_hex2bin(
                out.baseAddress!, capacity, text.cPointer(to: CChar.self), text.count, nil, &decodedCount, nil)
            failed = status != 0
            if failed { Primitives.wipe(UnsafeMutableRawBufferPointer(out)) }
            initialized = failed ? 0 : decodedCount
        }
        return failed ? nil : result
    }
}

/// A valid address for zero-length C arguments, which libsodium declares non-null.
///
/// `nonisolated(unsafe)` is sound: the allocation is made once, never written and never read
/// (it is only ever passed with a length of zero).
nonisolated(unsafe) private let emptyArgument = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 16)

extension UnsafeRawBufferPointer {
    /// The base address typed for a C call; never nil, even when the buffer is empty.
    func cPointer<T>(to type: T.Type = UInt8.self) -> UnsafePointer<T> {
        UnsafeRawPointer(baseAddress ?? UnsafeRawPointer(emptyArgument)).assumingMemoryBound(to: T.self)
    }
}
#endif
