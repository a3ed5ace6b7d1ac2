#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a backend computes (``SodiumBackend``, ``SwiftCryptoBackend``). Each function's contract
/// is the one of ``Primitives``' function of the same name; `false` and `nil` are refusals.
protocol PrimitiveSet {
    static func x25519(into out: UnsafeMutableRawPointer, scalar: UnsafeRawPointer, point: UnsafeRawPointer) -> Bool
    static func x25519Base(into out: UnsafeMutableRawPointer, scalar: UnsafeRawPointer)
    static func aeadSeal(
        message: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, nonce: UnsafeRawPointer, key: UnsafeRawPointer,
        into output: UnsafeMutableRawPointer)
    static func aeadOpen(
        sealed: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, nonce: UnsafeRawPointer, key: UnsafeRawPointer,
        into output: UnsafeMutableRawPointer?
    ) -> Bool
    static func sha256(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer)
    static func hmacKey(_ key: UnsafeRawBufferPointer) -> any KeyedMAC
    static func ed25519PublicKey(seed: UnsafeRawBufferPointer) -> [UInt8]
    static func ed25519Sign(
        message: UnsafeRawBufferPointer, seed: UnsafeRawBufferPointer, publicKey: [UInt8]
    )
        -> [UInt8]
    static func ed25519Verify(
        signature: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer
    ) -> Bool
    static func ed25519Decodes(_ key: [UInt8]) -> Bool
    static func randomBytes(_ buffer: UnsafeMutableRawBufferPointer)
    static func base64(_ bytes: UnsafeRawBufferPointer, urlSafe: Bool) -> [UInt8]
    static func decodeBase64(_ text: UnsafeRawBufferPointer, urlSafe: Bool) -> [UInt8]?
    static func hex(_ bytes: UnsafeRawBufferPointer) -> [UInt8]
    static func decodeHex(_ text: UnsafeRawBufferPointer) -> [UInt8]?
}

/// HMAC-SHA256 with its key absorbed, for many messages under one key.
protocol KeyedMAC: Sendable {
    /// The tag (32 bytes) of the concatenated `parts` into `output`.
    func mac(parts: [UnsafeRawBufferPointer], into output: UnsafeMutableRawPointer)
}

/// The primitives every construction of this module is built on, computed by
/// ``CryptoBackend/current``. The two backends give the same bytes and refuse the same inputs.
enum Primitives {
    /// The backend of the current task.
    static var backend: any PrimitiveSet.Type {
        switch CryptoBackend.current {
        case .libsodium:
            #if canImport(CSodium)
            return SodiumBackend.self
            #else
            // ``CryptoBackend/with(_:_:)`` and the process default never select it here.
            preconditionFailure("libsodium is not compiled into this build")
            #endif
        case .swiftCrypto:
            #if SESSION_SYNC_SWIFT_CRYPTO
            return SwiftCryptoBackend.self
            #else
            // ``CryptoBackend/with(_:_:)`` and the process default never select it here.
            preconditionFailure("swift-crypto is not compiled into this build")
            #endif
        }
    }

    /// X25519 of `scalar` (32 bytes, clamped as RFC 7748 says) and `point` into `out` (32 bytes).
    ///
    /// - Throws: ``CryptoError/lowOrderPoint`` when the result is all zero.
    static func x25519(into out: UnsafeMutableRawPointer, scalar: UnsafeRawPointer, point: UnsafeRawPointer) throws {
        guard backend.x25519(into: out, scalar: scalar, point: point) else { throw CryptoError.lowOrderPoint }
    }

    /// Opens ChaCha20-Poly1305-IETF `sealed` (at least 16 bytes) into `output`
    /// (`sealed.count - 16` bytes); ``aeadSeal`` is the backend's own.
    ///
    /// - Throws: ``CryptoError/authenticationFailure``.
    static func aeadOpen(
        sealed: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, nonce: UnsafeRawPointer, key: UnsafeRawPointer,
        into output: UnsafeMutableRawPointer?
    ) throws {
        guard backend.aeadOpen(sealed: sealed, aad: aad, nonce: nonce, key: key, into: output) else {
            throw CryptoError.authenticationFailure
        }
    }

    // MARK: - The same on both backends

    /// Clears `buffer` in a way the optimiser cannot remove (`explicit_bzero`, `memset_s`):
    /// what a released key's memory needs whichever backend made it.
    static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        #if canImport(Darwin)
        _ = memset_s(base, buffer.count, 0, buffer.count)
        #else
        explicit_bzero(base, buffer.count)
        #endif
    }

    /// Whether `count` bytes at `a` and `b` are equal, in time that depends only on `count`.
    static func equal(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int) -> Bool {
        var difference: UInt8 = 0
        for i in 0..<count {
            difference |= a.load(fromByteOffset: i, as: UInt8.self) ^ b.load(fromByteOffset: i, as: UInt8.self)
        }
        return difference == 0
    }

    /// Whether every byte is zero, in time that depends only on the count.
    static func isZero(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var accumulated: UInt8 = 0
        for byte in bytes { accumulated |= byte }
        return accumulated == 0
    }
}
