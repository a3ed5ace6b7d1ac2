// libsodium's rules for Ed25519 (1.0.18, `crypto_sign_verify_detached` without ED25519_COMPAT),
// written out so that the swift-crypto backend refuses exactly what libsodium refuses: a
// signature whose S is not below L, whose R is of small order, or whose key is not canonical or
// of small order. Each rule has a test that fails when it is removed.

enum Ed25519Rules {
    /// Whether libsodium's extra checks pass for `signature` (64 bytes) under `key` (32 bytes).
    static func admits(signature: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer) -> Bool {
        let r = Array(signature[0..<32])
        let s = Array(signature[32..<64])
        let a = Array(key)
        return isCanonicalScalar(s) && !hasSmallOrder(r) && isCanonical(a) && !hasSmallOrder(a)
    }

    /// L = 2^252 + 27742317777372353535851937790883648493, little-endian.
    static let order: [UInt8] = [
        0xED, 0xD3, 0xF5, 0x5C, 0x1A, 0x63, 0x12, 0x58, 0xD6, 0x9C, 0xF7, 0xA2, 0xDE, 0xF9, 0xDE, 0x14,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
    ]

    /// libsodium's `sc25519_is_canonical`: the little-endian scalar is below L.
    static func isCanonicalScalar(_ s: [UInt8]) -> Bool {
        for i in stride(from: 31, through: 0, by: -1) where s[i] != order[i] {
            return s[i] < order[i]
        }
        return false
    }

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

    /// Whether the encoding decodes to a point of the curve −x² + y² = 1 + d·x²·y² (libsodium's
    /// `ge25519_frombytes`): x² = (y² − 1) / (d·y² + 1) has a square root modulo p. A public
    /// key's check, so the arithmetic need not be constant-time.
    static func decodes(_ s: [UInt8]) -> Bool {
        var y = FieldElement(littleEndian: s)
        y.limbs[3] &= 0x7FFF_FFFF_FFFF_FFFF
        let y2 = (y * y).canonical
        let u = y2.isZero ? FieldElement.pMinusOne : y2 - 1
        let v = FieldElement.d * y2 + 1
        // (u·v)^((p−1)/2) is 0 or 1 exactly when u/v is a square (v ≠ 0: d is not a square).
        let character = (u * v).power(FieldElement.halfOrderMinusOne).canonical
        return character.isZero || character == FieldElement(1)
    }
}

/// An element of GF(2^255 − 19) in four 64-bit limbs, little-endian, below 2^256.
struct FieldElement: Equatable {
    var limbs: [UInt64]

    init(_ small: UInt64) { limbs = [small, 0, 0, 0] }
    init(limbs: [UInt64]) { self.limbs = limbs }
    init(littleEndian bytes: [UInt8]) {
        limbs = (0..<4).map { (limb: Int) -> UInt64 in
            var value: UInt64 = 0
            for index in 0..<8 { value |= UInt64(bytes[limb * 8 + index]) << UInt64(8 * index) }
            return value
        }
    }

    static let p = FieldElement(limbs: [
        0xFFFF_FFFF_FFFF_FFED, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF,
    ])
    static let pMinusOne = FieldElement(limbs: [
        0xFFFF_FFFF_FFFF_FFEC, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF,
    ])
    /// (p − 1) / 2 = 2^254 − 10.
    static let halfOrderMinusOne = FieldElement(limbs: [
        0xFFFF_FFFF_FFFF_FFF6, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0x3FFF_FFFF_FFFF_FFFF,
    ])
    /// d = −121665/121666.
    static let d = FieldElement(limbs: [
        0x75EB_4DCA_1359_78A3, 0x0070_0A4D_4141_D8AB, 0x8CC7_4079_7779_E898, 0x5203_6CEE_2B6F_FE73,
    ])

    var isZero: Bool { limbs.allSatisfy { $0 == 0 } }

    /// The same element below p.
    var canonical: FieldElement {
        var value = self
        while !value.isBelow(Self.p) { value = value.subtractingP() }
        return value
    }

    private func isBelow(_ other: FieldElement) -> Bool {
        for i in stride(from: 3, through: 0, by: -1) where limbs[i] != other.limbs[i] {
            return limbs[i] < other.limbs[i]
        }
        return false
    }

    private func subtractingP() -> FieldElement {
        var out = [UInt64](repeating: 0, count: 4)
        var borrow: UInt64 = 0
        for i in 0..<4 {
            let (a, o1) = limbs[i].subtractingReportingOverflow(Self.p.limbs[i])
            let (b, o2) = a.subtractingReportingOverflow(borrow)
            out[i] = b
            borrow = (o1 ? 1 : 0) + (o2 ? 1 : 0)
        }
        return FieldElement(limbs: out)
    }

    /// Folds a value of four limbs plus a carry, using 2^256 ≡ 38 (mod p).
    private static func fold(_ limbs: [UInt64], carry: UInt128) -> FieldElement {
        var out = limbs
        var carry = carry
        while carry != 0 {
            var add = carry * 38
            for i in 0..<4 {
                let sum = UInt128(out[i]) + add
                out[i] = UInt64(truncatingIfNeeded: sum)
                add = sum >> 64
            }
            carry = add
        }
        return FieldElement(limbs: out)
    }

    static func * (a: FieldElement, b: FieldElement) -> FieldElement {
        var wide = [UInt64](repeating: 0, count: 8)
        for i in 0..<4 {
            var carry: UInt128 = 0
            for j in 0..<4 {
                let product = UInt128(a.limbs[i]) * UInt128(b.limbs[j]) + UInt128(wide[i + j]) + carry
                wide[i + j] = UInt64(truncatingIfNeeded: product)
                carry = product >> 64
            }
            wide[i + 4] = UInt64(truncatingIfNeeded: carry)
        }
        var low = [UInt64](repeating: 0, count: 4)
        var carry: UInt128 = 0
        for i in 0..<4 {
            let sum = UInt128(wide[i]) + 38 * UInt128(wide[i + 4]) + carry
            low[i] = UInt64(truncatingIfNeeded: sum)
            carry = sum >> 64
        }
        return fold(low, carry: carry)
    }

    static func + (a: FieldElement, small: UInt64) -> FieldElement {
        var out = a.limbs
        var carry = UInt128(small)
        for i in 0..<4 {
            let sum = UInt128(out[i]) + carry
            out[i] = UInt64(truncatingIfNeeded: sum)
            carry = sum >> 64
        }
        return fold(out, carry: carry)
    }

    /// `a − small` for a canonical `a` at least `small`.
    static func - (a: FieldElement, small: UInt64) -> FieldElement {
        var out = a.limbs
        var borrow = small
        for i in 0..<4 where borrow != 0 {
            let (value, overflow) = out[i].subtractingReportingOverflow(borrow)
            out[i] = value
            borrow = overflow ? 1 : 0
        }
        return FieldElement(limbs: out)
    }

    /// `self` to the power `exponent`, square and multiply from the top bit.
    func power(_ exponent: FieldElement) -> FieldElement {
        var result = FieldElement(1)
        for bit in stride(from: 255, through: 0, by: -1) {
            result = result * result
            if exponent.limbs[bit / 64] >> UInt64(bit % 64) & 1 == 1 { result = result * self }
        }
        return result
    }
}
