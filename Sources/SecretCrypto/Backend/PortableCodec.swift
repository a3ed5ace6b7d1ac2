// The swift-crypto backend's text codecs: libsodium's base64 and hex, rule for rule, in Swift.
//
// Characters are classified with arithmetic, not table lookups or branches on their value (as
// libsodium's codecs do), so decoding a key does not leak it through the cache or the branch
// predictor. Strictness is libsodium's with no ignored characters and no end pointer: every
// character consumed, exact padding for the padded variant, none for the other, no non-zero
// trailing bits. A differential test runs both on the same inputs.

enum PortableCodec {
    // libsodium's EQ, GT, GE, LT and LE on values below 2^8: 0xFF when true, 0 when false.
    @inline(__always) private static func eq(_ x: UInt32, _ y: UInt32) -> UInt32 {
        (((0 &- (x ^ y)) >> 8) & 0xFF) ^ 0xFF
    }
    @inline(__always) private static func gt(_ x: UInt32, _ y: UInt32) -> UInt32 { ((y &- x) >> 8) & 0xFF }
    @inline(__always) private static func ge(_ x: UInt32, _ y: UInt32) -> UInt32 { gt(y, x) ^ 0xFF }
    @inline(__always) private static func lt(_ x: UInt32, _ y: UInt32) -> UInt32 { gt(y, x) }
    @inline(__always) private static func le(_ x: UInt32, _ y: UInt32) -> UInt32 { ge(y, x) }

    /// The character of a 6-bit value.
    private static func character(of x: UInt32, urlSafe: Bool) -> UInt8 {
        let c62: UInt32 = urlSafe ? 0x2D : 0x2B // '-' or '+'
        let c63: UInt32 = urlSafe ? 0x5F : 0x2F // '_' or '/'
        let value =
            (lt(x, 26) & (x &+ 0x41)) | (ge(x, 26) & lt(x, 52) & (x &+ (0x61 &- 26)))
            | (ge(x, 52) & lt(x, 62) & (x &- (52 &- 0x30))) | (eq(x, 62) & c62) | (eq(x, 63) & c63)
        return UInt8(truncatingIfNeeded: value)
    }

    /// The 6-bit value of a character, or 0xFF when it is not of the alphabet.
    private static func value(of c: UInt32, urlSafe: Bool) -> UInt32 {
        let c62: UInt32 = urlSafe ? 0x2D : 0x2B
        let c63: UInt32 = urlSafe ? 0x5F : 0x2F
        let x =
            (ge(c, 0x41) & le(c, 0x5A) & (c &- 0x41)) | (ge(c, 0x61) & le(c, 0x7A) & (c &- (0x61 &- 26)))
            | (ge(c, 0x30) & le(c, 0x39) & (c &+ (52 &- 0x30))) | (eq(c, c62) & 62) | (eq(c, c63) & 63)
        return x | (eq(x, 0) & (eq(c, 0x41) ^ 0xFF))
    }

    /// Base64 of `bytes`: padded standard, or URL-safe without padding.
    static func base64(_ bytes: UnsafeRawBufferPointer, urlSafe: Bool) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in bytes {
            accumulator = (accumulator << 8) | UInt32(byte)
            bits += 8
            while bits >= 6 {
                bits -= 6
                out.append(character(of: (accumulator >> UInt32(bits)) & 0x3F, urlSafe: urlSafe))
            }
        }
        if bits > 0 { out.append(character(of: (accumulator << UInt32(6 - bits)) & 0x3F, urlSafe: urlSafe)) }
        if !urlSafe { while out.count % 4 != 0 { out.append(0x3D) } }
        return out
    }

    /// Decodes strict base64 given as UTF-8 bytes; `nil` for anything libsodium refuses.
    static func decodeBase64(_ text: UnsafeRawBufferPointer, urlSafe: Bool) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.count / 4 * 3 + 3)
        var accumulator: UInt32 = 0
        var bits: UInt32 = 0
        var position = 0
        while position < text.count {
            let digit = value(of: UInt32(text[position]), urlSafe: urlSafe)
            if digit == 0xFF { break }
            accumulator = (accumulator << 6) &+ digit
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> bits))
            }
            position += 1
        }
        var accepted = bits <= 4 && accumulator & ((1 << bits) - 1) == 0
        if accepted && !urlSafe {
            var padding = bits / 2
            while padding > 0 && accepted {
                accepted = position < text.count && text[position] == 0x3D
                padding -= 1
                position += 1
            }
        }
        guard accepted && position == text.count else {
            // What was decoded may be most of a secret: wiped, not just dropped.
            out.withUnsafeMutableBytes { Primitives.wipe($0) }
            return nil
        }
        return out
    }

    /// Lowercase hex of `bytes`, as libsodium's `sodium_bin2hex` writes it.
    static func hex(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(hexDigit(UInt32(byte >> 4)))
            out.append(hexDigit(UInt32(byte & 0x0F)))
        }
        return out
    }

    /// 87 + n for a..f, 48 + n for 0..9, without a branch on n.
    @inline(__always) private static func hexDigit(_ nibble: UInt32) -> UInt8 {
        UInt8(truncatingIfNeeded: 87 &+ nibble &+ (((nibble &- 10) >> 8) & ~UInt32(38)))
    }

    /// Decodes hex of either case (an even count of digits, nothing else); `nil` otherwise.
    static func decodeHex(_ text: UnsafeRawBufferPointer) -> [UInt8]? {
        guard text.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(text.count / 2)
        var high: UInt32 = 0
        for (index, byte) in text.enumerated() {
            let c = UInt32(byte)
            let number = c ^ 48
            let isNumber = (number &- 10) >> 8
            let alpha = (c & ~UInt32(32)) &- 55
            let isAlpha = ((alpha &- 10) ^ (alpha &- 16)) >> 8
            guard isNumber | isAlpha != 0 else {
                out.withUnsafeMutableBytes { Primitives.wipe($0) }
                return nil
            }
            let nibble = (isNumber & number) | (isAlpha & alpha)
            if index % 2 == 0 {
                high = nibble << 4
            } else {
                out.append(UInt8(truncatingIfNeeded: high | nibble))
            }
        }
        return out
    }
}
