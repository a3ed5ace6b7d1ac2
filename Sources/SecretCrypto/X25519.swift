/// An X25519 public key: 32 raw bytes, on the wire as standard base64.
///
/// Public keys are not secret, so this is a plain value type. Importing validates the length
/// only; a low-order key is caught where it matters, when an exchange yields all zeros (see
/// ``X25519PrivateKey/sharedSecret(with:)``), or up front with ``isLowOrder``.
public struct X25519PublicKey: Sendable, Hashable, CustomStringConvertible {
    /// The key's length in bytes.
    public static let byteCount = 32

    /// The 32 raw bytes.
    public let rawRepresentation: [UInt8]

    /// Imports 32 raw bytes.
    ///
    /// - Parameter rawRepresentation: Exactly 32 bytes.
    /// - Throws: ``CryptoError/invalidKeyLength(expected:actual:)`` for any other length.
    public init(rawRepresentation: some Collection<UInt8>) throws {
        guard rawRepresentation.count == Self.byteCount else {
            throw CryptoError.invalidKeyLength(expected: Self.byteCount, actual: rawRepresentation.count)
        }
        self.rawRepresentation = Array(rawRepresentation)
    }

    /// Wraps bytes a primitive wrote into a 32-byte buffer: the length holds by construction.
    init(computed bytes: [UInt8]) {
        precondition(bytes.count == Self.byteCount, "a primitive wrote a key of another length")
        rawRepresentation = bytes
    }

    /// Imports the standard base64 form (44 characters with padding).
    ///
    /// - Parameter base64: The key as stored in `devices.public_key`.
    /// - Throws: ``CryptoError/invalidEncoding`` for text that is not strict base64,
    ///   ``CryptoError/invalidKeyLength(expected:actual:)`` when it does not decode to 32 bytes.
    public init(base64: String) throws {
        try self.init(rawRepresentation: ByteEncoding.bytes(base64: base64))
    }

    /// The standard base64 form, as sent in `devices.public_key`.
    public var base64: String { ByteEncoding.base64(rawRepresentation) }

    /// Whether the key is one of the low-order points, with which every exchange gives zero.
    ///
    /// Checked by running an exchange with a fixed scalar: X25519 with any clamped scalar maps a
    /// low-order point (and only such a point) to the all-zero output.
    public var isLowOrder: Bool {
        var probe = [UInt8](repeating: 0, count: 32)
        probe[0] = 1
        var out = [UInt8](repeating: 0, count: 32)
        return (try? Primitives.x25519(into: &out, scalar: probe, point: rawRepresentation)) == nil
    }

    /// A short, stable name for the key: hex of the first 16 bytes of its SHA-256.
    ///
    /// The distribution ledger records it to notice when a recipient's key changed.
    public var fingerprint: String {
        ByteEncoding.hex(SHA256.hash(rawRepresentation).prefix(16))
    }

    public var description: String { "X25519PublicKey(\(base64))" }
}

/// An X25519 private key, held in ``SecureBytes``.
///
/// ```swift
/// let device = X25519PrivateKey()
/// let shared = try device.sharedSecret(with: peerPublicKey)
/// ```
public struct X25519PrivateKey: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    /// The key's length in bytes.
    public static let byteCount = 32

    let key: SecureBytes

    /// The matching public key.
    public let publicKey: X25519PublicKey

    /// Generates a fresh key pair from the OS CSPRNG.
    public init() {
        self.init(validated: SecureBytes(randomCount: Self.byteCount))
    }

    /// Imports 32 raw private-key bytes.
    ///
    /// - Parameter rawRepresentation: Exactly 32 bytes, copied into wiped storage.
    /// - Throws: ``CryptoError/invalidKeyLength(expected:actual:)`` for any other length.
    public init(rawRepresentation: SecureBytes) throws {
        guard rawRepresentation.count == Self.byteCount else {
            throw CryptoError.invalidKeyLength(expected: Self.byteCount, actual: rawRepresentation.count)
        }
        self.init(validated: rawRepresentation)
    }

    /// The key whose 32 private bytes are `HKDF-SHA256(ikm, salt, info, L: 32)`: a key a secret
    /// derives, which cannot fail.
    ///
    /// - Parameters:
    ///   - inputKeyMaterial: The secret the key comes from.
    ///   - salt: HKDF's salt.
    ///   - info: HKDF's info: the key's label.
    public init(derivingFrom inputKeyMaterial: SecureBytes, salt: [UInt8], info: [UInt8]) {
        self.init(validated: HKDFSHA256.deriveKey(inputKeyMaterial: inputKeyMaterial, salt: salt, info: info))
    }

    /// Imports the standard base64 form of the 32 raw bytes.
    ///
    /// - Parameter base64: The key's base64 text.
    /// - Throws: ``CryptoError/invalidEncoding`` or ``CryptoError/invalidKeyLength(expected:actual:)``.
    public init(base64: String) throws {
        var decoded = try ByteEncoding.bytes(base64: base64)
        defer { decoded.withUnsafeMutableBytes { Primitives.wipe($0) } }
        try self.init(rawRepresentation: SecureBytes(copying: decoded))
    }

    private init(validated key: SecureBytes) {
        self.key = key
        var publicBytes = [UInt8](repeating: 0, count: X25519PublicKey.byteCount)
        key.withUnsafeBytes { Primitives.backend.x25519Base(into: &publicBytes, scalar: $0.baseAddress!) }
        self.publicKey = X25519PublicKey(computed: publicBytes)
    }

    /// The 32 raw private-key bytes, for writing the device key file.
    public var rawRepresentation: SecureBytes { key }

    /// Runs X25519 with `peer`, refusing an all-zero result.
    ///
    /// - Parameter peer: The other side's public key.
    /// - Returns: The 32-byte shared secret.
    /// - Throws: ``CryptoError/lowOrderPoint`` when `peer` is of low order.
    public func sharedSecret(with peer: X25519PublicKey) throws -> SecureBytes {
        try SecureBytes(count: 32) { out in
            try X25519.exchange(into: out.baseAddress!, privateKey: key.baseAddress, publicKey: peer.rawRepresentation)
        }
    }

    public var description: String { "X25519PrivateKey(<redacted>)" }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}

/// The raw exchange, shared by the key types and the envelope's hot path.
enum X25519 {
    static func exchange(
        into output: UnsafeMutableRawPointer,
        privateKey: UnsafeRawPointer,
        publicKey: UnsafeRawPointer
    ) throws {
        // An all-zero result (a low-order point) is refused; the caller's SecureBytes wipes
        // the output either way.
        try Primitives.x25519(into: output, scalar: privateKey, point: publicKey)
    }

    static func exchange(into output: UnsafeMutableRawPointer, privateKey: UnsafeRawPointer, publicKey: [UInt8]) throws
    {
        try publicKey.withUnsafeBytes { try exchange(into: output, privateKey: privateKey, publicKey: $0.baseAddress!) }
    }
}
