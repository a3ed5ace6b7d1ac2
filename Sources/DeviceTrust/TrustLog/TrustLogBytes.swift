import Foundation
import SecretCrypto

/// Writes the trust log's fields: big-endian integers, 36-byte lowercase UUID text, `len16`.
struct LogWriter {
    var bytes: [UInt8] = []

    init() {}

    /// `prefix || 0x00`.
    init(prefix: String) {
        bytes = Array(prefix.utf8) + [0]
    }

    mutating func zero() { bytes.append(0) }
    mutating func identifier(_ id: UUID) { bytes += Array(id.canonical.utf8) }
    mutating func raw(_ data: some Sequence<UInt8>) { bytes += data }
    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func u32(_ value: UInt32) {
        for shift in [24, 16, 8, 0] { bytes.append(UInt8(truncatingIfNeeded: value >> shift)) }
    }
    mutating func u64(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }
    mutating func len16(_ data: [UInt8]) {
        precondition(data.count <= 0xFFFF)
        bytes += [UInt8(data.count >> 8), UInt8(data.count & 0xFF)]
        bytes += data
    }
}

/// Reads the trust log's fields strictly: exact prefixes and separators, canonical UUIDs,
/// lengths within bounds, nothing after the last field.
struct LogReader {
    let bytes: [UInt8]
    var offset = 0
    /// What is being read, for messages.
    let what: String

    init(_ bytes: [UInt8], _ what: String) {
        self.bytes = bytes
        self.what = what
    }

    var remaining: Int { bytes.count - offset }

    mutating func take(_ count: Int) throws(DeviceTrustError) -> [UInt8] {
        guard count >= 0, remaining >= count else { throw DeviceTrustError(.malformedLogBytes, "\(what) ends early") }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func prefix(_ text: String) throws(DeviceTrustError) {
        let expected = Array(text.utf8) + [0]
        guard try take(expected.count) == expected else {
            throw DeviceTrustError(.malformedLogBytes, "\(what) does not start with \(text)")
        }
    }

    mutating func zero() throws(DeviceTrustError) {
        guard try take(1) == [0] else {
            throw DeviceTrustError(.malformedLogBytes, "a separator of \(what) is not 0x00")
        }
    }

    /// 36 bytes of canonical lowercase hyphenated UUID text.
    mutating func identifier() throws(DeviceTrustError) -> UUID {
        let raw = try take(36)
        let text = String(decoding: raw, as: UTF8.self)
        guard let id = UUID(uuidString: text), id.canonical == text else {
            throw DeviceTrustError(.malformedLogBytes, "an identifier of \(what) is not a canonical lowercase UUID")
        }
        return id
    }

    mutating func u8() throws(DeviceTrustError) -> UInt8 { try take(1)[0] }

    mutating func u32() throws(DeviceTrustError) -> UInt32 {
        try take(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func u64() throws(DeviceTrustError) -> UInt64 {
        try take(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// A time: Unix seconds below 2^63.
    mutating func time() throws(DeviceTrustError) -> UInt64 {
        let value = try u64()
        guard value < 1 << 63 else { throw DeviceTrustError(.malformedLogBytes, "a time of \(what) is out of range") }
        return value
    }

    mutating func len16() throws(DeviceTrustError) -> [UInt8] {
        let length = try take(2).reduce(0) { $0 << 8 | Int($1) }
        return try take(length)
    }

    /// An Ed25519 public key that is canonical and not of small order.
    mutating func ed25519() throws(DeviceTrustError) -> Ed25519PublicKey {
        let raw = try take(32)
        guard let key = try? Ed25519PublicKey(rawRepresentation: raw), key.isCanonicalAndNotSmallOrder else {
            throw DeviceTrustError(
                .malformedLogBytes, "an Ed25519 key of \(what) is not canonical or is of small order")
        }
        return key
    }

    /// An X25519 public key that is canonical and not of small order.
    mutating func x25519() throws(DeviceTrustError) -> X25519PublicKey {
        try x25519Key(take(32))
    }

    /// An X25519 key or 32 zero bytes (none).
    mutating func optionalX25519() throws(DeviceTrustError) -> X25519PublicKey? {
        let raw = try take(32)
        if raw.allSatisfy({ $0 == 0 }) { return nil }
        return try x25519Key(raw)
    }

    private func x25519Key(_ raw: [UInt8]) throws(DeviceTrustError) -> X25519PublicKey {
        guard let key = try? X25519PublicKey(rawRepresentation: raw), key.isCanonicalAndNotLowOrder else {
            throw DeviceTrustError(.malformedLogBytes, "an X25519 key of \(what) is not canonical or is of small order")
        }
        return key
    }

    func end() throws(DeviceTrustError) {
        guard offset == bytes.count else {
            throw DeviceTrustError(.malformedLogBytes, "bytes follow the last field of \(what)")
        }
    }
}

/// Stored text of the trust log (entries, backups, witnesses): canonical padded standard
/// base64, checked before anything is parsed.
enum LogText {
    static func decode(_ text: String, what: String, maxBytes: Int) throws(DeviceTrustError) -> [UInt8] {
        guard text.utf8.count <= (maxBytes + 2) / 3 * 4, let bytes = try? ByteEncoding.bytes(base64: text) else {
            throw DeviceTrustError(.malformedLogBytes, "\(what) is not canonical base64 of an allowed length")
        }
        return bytes
    }
}

extension UUID {
    /// The 16 raw bytes in RFC 4122 order (the order the text reads): a salt.
    var rawBytes: [UInt8] { withUnsafeBytes(of: uuid) { Array($0) } }
    /// The 36 canonical lowercase characters.
    var canonical: String { uuidString.lowercased() }
}

/// 32 zero bytes.
let zero32 = [UInt8](repeating: 0, count: 32)
