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
        return !isLowOrder
    }
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
        guard Self.isCanonical(bytes) else { return false }
        // crypto_core_ed25519_add checks only that its inputs decode to points of the curve, so
        // doubling three times both checks that and computes 8·A.
        var twice = [UInt8](repeating: 0, count: 32)
        guard crypto_core_ed25519_add(&twice, bytes, bytes) == 0 else { return false }
        var four = [UInt8](repeating: 0, count: 32)
        guard crypto_core_ed25519_add(&four, twice, twice) == 0 else { return false }
        var eight = [UInt8](repeating: 0, count: 32)
        guard crypto_core_ed25519_add(&eight, four, four) == 0 else { return false }
        let identity: [UInt8] = [1] + [UInt8](repeating: 0, count: 31)
        return eight != identity
    }

    /// libsodium's `ge25519_is_canonical`: the 255-bit y (the sign bit aside) is below p.
    static func isCanonical(_ s: [UInt8]) -> Bool {
        var c = (s[31] & 0x7F) ^ 0x7F
        for i in stride(from: 30, to: 0, by: -1) { c |= s[i] ^ 0xFF }
        let high = (Int(c) - 1) >> 8 & 1
        let low = (0xED - 1 - Int(s[0])) >> 8 & 1
        return high & low == 0
    }
}
