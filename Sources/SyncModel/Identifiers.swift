import Foundation

extension UUID {
    /// The canonical lowercase, hyphenated, 36-character text used on the wire, in salts, in
    /// filters and in local keys.
    ///
    /// Foundation's `uuidString` is uppercase; deployed clients that used it failed to match
    /// lowercase rows and derived the wrong HKDF salt.
    public var canonical: String {
        // Formatted by hand: ids are printed by the hundred thousand (ledgers, digests, filters)
        // and `uuidString.lowercased()` formats and then copies again.
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { out in
                var position = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        out[position] = 45
                        position += 1
                    }
                    out[position] = Self.hexDigit(byte >> 4)
                    out[position + 1] = Self.hexDigit(byte & 0x0F)
                    position += 2
                }
                return position
            }
        }
    }

    /// Whether this id sorts before `other` in ``canonical`` text order, without building the
    /// text: the lowercase hex of the bytes, in their order, compares as the bytes do.
    public func canonicallyPrecedes(_ other: UUID) -> Bool {
        let (a, b) = (orderKey, other.orderKey)
        return a.high != b.high ? a.high < b.high : a.low < b.low
    }

    /// The 16 bytes as two big-endian halves.
    private var orderKey: (high: UInt64, low: UInt64) {
        withUnsafeBytes(of: uuid) { raw in
            (
                UInt64(bigEndian: raw.loadUnaligned(as: UInt64.self)),
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            )
        }
    }

    @inline(__always) private static func hexDigit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 48 + nibble : 87 + nibble }

    /// Parses UUID text in any case.
    ///
    /// - Parameter text: A hyphenated UUID, upper, lower or mixed case.
    /// - Returns: The UUID, or `nil` when `text` is not one.
    public static func parse(_ text: some StringProtocol) -> UUID? {
        guard text.utf8.count == 36 else { return nil }
        // Hyphenated hex in either case, parsed by hand: ids arrive by the hundred thousand and
        // Foundation's parser costs several times more.
        if let parsed = text.utf8.withContiguousStorageIfAvailable({ parseHex($0) }) { return parsed }
        var copy = String(text)
        return copy.withUTF8 { parseHex($0) }
    }

    private static func parseHex(_ bytes: UnsafeBufferPointer<UInt8>) -> UUID? {
        @inline(__always) func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: return c - 48
            case 97...102: return c - 87
            case 65...70: return c - 55
            default: return nil
            }
        }
        var out = [UInt8](repeating: 0, count: 16)
        var index = 0
        var position = 0
        while position < 36 {
            if position == 8 || position == 13 || position == 18 || position == 23 {
                guard bytes[position] == 45 else { return nil }
                position += 1
                continue
            }
            guard let high = nibble(bytes[position]), let low = nibble(bytes[position + 1]) else { return nil }
            out[index] = high << 4 | low
            index += 1
            position += 2
        }
        return UUID(
            uuid: (
                out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7],
                out[8], out[9], out[10], out[11], out[12], out[13], out[14], out[15]
            ))
    }
}
