// The strict key checks of the trust log (trust-log.md, "Bytes"): a key that passes has exactly
// one encoding and is not one of the few points every exchange or signature check degenerates on.

extension X25519PublicKey {
    /// Whether the key is canonical and not of small order: its top bit is clear, its
    /// u-coordinate is below 2^255 − 19, and it is none of the points with which every exchange
    /// gives zero (u = 0, 1, p − 1 and the two points of order 8).
    ///
    /// A re-encoding of a key (the top bit set, or u + p) fails the first two checks, so two
    /// keys that pass are the same key exactly when their bytes are equal.
    public var isCanonicalAndNotLowOrder: Bool {
        let bytes = rawRepresentation
        guard bytes[31] & 0x80 == 0 else { return false }
        // u >= p = 2^255 − 19 exactly when the top byte is 0x7f, bytes 1-30 are 0xff and byte 0 >= 0xed.
        if bytes[31] == 0x7F, bytes[1...30].allSatisfy({ $0 == 0xFF }), bytes[0] >= 0xED { return false }
        // Below p, these five are the only u with which every exchange gives zero (libsodium's
        // list, less its non-canonical p and p + 1): a comparison, not a scalar multiplication.
        return !Self.lowOrder.contains(bytes)
    }

    /// u = 0, 1, p − 1 and the two points of order 8, little-endian.
    static let lowOrder: [[UInt8]] = [
        [UInt8](repeating: 0, count: 32),
        [1] + [UInt8](repeating: 0, count: 31),
        [0xEC] + [UInt8](repeating: 0xFF, count: 30) + [0x7F],
        [
            0xE0, 0xEB, 0x7A, 0x7C, 0x3B, 0x41, 0xB8, 0xAE, 0x16, 0x56, 0xE3, 0xFA, 0xF1, 0x9F, 0xC4, 0x6A,
            0xDA, 0x09, 0x8D, 0xEB, 0x9C, 0x32, 0xB1, 0xFD, 0x86, 0x62, 0x05, 0x16, 0x5F, 0x49, 0xB8, 0x00,
        ],
        [
            0x5F, 0x9C, 0x95, 0xBC, 0xA3, 0x50, 0x8C, 0x24, 0xB1, 0xD0, 0xB1, 0x55, 0x9C, 0x83, 0xEF, 0x5B,
            0x04, 0x44, 0x5C, 0xC4, 0x58, 0x1C, 0x8E, 0x86, 0xD8, 0x22, 0x4E, 0xDD, 0xD0, 0x9F, 0x11, 0x57,
        ],
    ]
}

extension Ed25519PublicKey {
    /// Whether libsodium's `crypto_sign_verify_detached` can accept a signature under this key:
    /// its encoding is canonical (y below 2^255 − 19), it decodes to a point of the curve, and
    /// that point is not of small order (eight times it is the identity).
    ///
    /// A key that fails can never verify anything; the trust log refuses it where it is named,
    /// so that two keys that pass are the same key exactly when their bytes are equal.
    public var isCanonicalAndNotSmallOrder: Bool {
        let bytes = rawRepresentation
        guard Ed25519Rules.isCanonical(bytes), !Ed25519Rules.hasSmallOrder(bytes) else { return false }
        // The one check of verify's left: the encoding decodes to a point of the curve
        // (libsodium's ge25519_frombytes_negate_vartime).
        return Primitives.backend.ed25519Decodes(bytes)
    }

    /// The base point's encoding (y = 4/5).
    static let basePoint: [UInt8] = [0x58] + [UInt8](repeating: 0x66, count: 31)
}

/// A key in JSON is its standard base64, as `Data` is by default: a stored form written with
/// `Data` reads back as keys. Decoding validates: anything but base64 of 32 bytes is a
/// `DecodingError.dataCorrupted` whose underlying error is the ``CryptoError``, never a key.
extension X25519PublicKey: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        do {
            try self.init(base64: try container.decode(String.self))
        } catch let error as CryptoError {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: container.codingPath, debugDescription: "not an X25519 public key",
                    underlyingError: error))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(base64)
    }
}

extension Ed25519PublicKey: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        do {
            try self.init(base64: try container.decode(String.self))
        } catch let error as CryptoError {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: container.codingPath, debugDescription: "not an Ed25519 public key",
                    underlyingError: error))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(base64)
    }
}
