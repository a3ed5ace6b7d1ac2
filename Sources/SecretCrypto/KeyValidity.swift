internal import CSodium

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
        Sodium.ensureInitialized()
        let bytes = rawRepresentation
        guard Self.isCanonical(bytes), !Self.hasSmallOrder(bytes) else { return false }
        // crypto_core_ed25519_add checks only that its inputs decode to points of the curve (the
        // one check of verify's left: libsodium's ge25519_frombytes_negate_vartime).
        var sum = [UInt8](repeating: 0, count: 32)
        return crypto_core_ed25519_add(&sum, bytes, Self.basePoint) == 0
    }

    /// The base point's encoding (y = 4/5).
    static let basePoint: [UInt8] = [0x58] + [UInt8](repeating: 0x66, count: 31)

    /// libsodium's `ge25519_has_small_order`: the encoding, its sign bit aside, is one of the
    /// points of order 1, 2, 4 or 8 (with p − 1, p and p + 1 for y = −1, 0 and 1).
    static func hasSmallOrder(_ s: [UInt8]) -> Bool {
        smallOrder.contains { listed in
            var c: UInt8 = (s[31] & 0x7F) ^ listed[31]
            for i in 0..<31 { c |= s[i] ^ listed[i] }
            return c == 0
        }
    }

    static let smallOrder: [[UInt8]] = [
        [UInt8](repeating: 0, count: 32),
        [1] + [UInt8](repeating: 0, count: 31),
        [
            0x26, 0xE8, 0x95, 0x8F, 0xC2, 0xB2, 0x27, 0xB0, 0x45, 0xC3, 0xF4, 0x89, 0xF2, 0xEF, 0x98, 0xF0,
            0xD5, 0xDF, 0xAC, 0x05, 0xD3, 0xC6, 0x33, 0x39, 0xB1, 0x38, 0x02, 0x88, 0x6D, 0x53, 0xFC, 0x05,
        ],
        [
            0xC7, 0x17, 0x6A, 0x70, 0x3D, 0x4D, 0xD8, 0x4F, 0xBA, 0x3C, 0x0B, 0x76, 0x0D, 0x10, 0x67, 0x0F,
            0x2A, 0x20, 0x53, 0xFA, 0x2C, 0x39, 0xCC, 0xC6, 0x4E, 0xC7, 0xFD, 0x77, 0x92, 0xAC, 0x03, 0x7A,
        ],
        [0xEC] + [UInt8](repeating: 0xFF, count: 30) + [0x7F],
        [0xED] + [UInt8](repeating: 0xFF, count: 30) + [0x7F],
        [0xEE] + [UInt8](repeating: 0xFF, count: 30) + [0x7F],
    ]

    /// libsodium's `ge25519_is_canonical`: the 255-bit y (the sign bit aside) is below p.
    static func isCanonical(_ s: [UInt8]) -> Bool {
        var c = (s[31] & 0x7F) ^ 0x7F
        for i in stride(from: 30, to: 0, by: -1) { c |= s[i] ^ 0xFF }
        let high = (Int(c) - 1) >> 8 & 1
        let low = (0xED - 1 - Int(s[0])) >> 8 & 1
        return high & low == 0
    }
}
