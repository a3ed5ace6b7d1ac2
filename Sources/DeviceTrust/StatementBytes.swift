import Foundation
import SecretCrypto

// The exact byte layout of trust statements: written and read field by field.

struct StatementWriter {
    var bytes: [UInt8]

    init(prefix: String) {
        bytes = Array(prefix.utf8)
        bytes.append(0)
    }

    /// `prefix || 0x00 || user_id || 0x00 || device_id || 0x00`: every statement's start.
    init(prefix: String, userID: UUID, deviceID: UUID) {
        self.init(prefix: prefix)
        identifier(userID)
        separator()
        identifier(deviceID)
        separator()
    }

    mutating func separator() { bytes.append(0) }
    mutating func identifier(_ id: UUID) { bytes += Array(id.uuidString.lowercased().utf8) }
    mutating func bytes(_ raw: [UInt8]) { bytes += raw }

    mutating func text(_ value: String) throws(DeviceTrustError) {
        let utf8 = Array(value.utf8)
        guard utf8.count <= 255 else {
            throw DeviceTrustError(.textTooLong, "a certificate's text field is longer than 255 bytes")
        }
        guard StatementReader.isPrintableASCII(utf8) else {
            throw DeviceTrustError(.invalidText, "a certificate's text field is empty or not printable ASCII")
        }
        bytes.append(UInt8(utf8.count))
        bytes += utf8
    }

    mutating func integer(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }
}

struct StatementReader {
    let bytes: [UInt8]
    var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    static func isPrintableASCII(_ bytes: some Collection<UInt8>) -> Bool {
        !bytes.isEmpty && bytes.allSatisfy { (0x20...0x7E).contains($0) }
    }

    mutating func take(_ count: Int) throws(DeviceTrustError) -> ArraySlice<UInt8> {
        guard bytes.count - offset >= count else {
            throw DeviceTrustError(.truncated, "the statement ends before its last field")
        }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    mutating func prefix(_ text: String) throws(DeviceTrustError) {
        let expected = Array(text.utf8) + [0]
        if bytes.count < expected.count && expected.starts(with: bytes) {
            throw DeviceTrustError(.truncated, "the statement ends inside its prefix")
        }
        guard bytes.count >= expected.count, Array(bytes[0..<expected.count]) == expected else {
            throw DeviceTrustError(.wrongPrefix, "the statement does not start with \(text)")
        }
        offset = expected.count
    }

    /// Reads every statement's start; returns its user and device ids.
    mutating func header(_ prefix: String) throws(DeviceTrustError) -> (UUID, UUID) {
        try self.prefix(prefix)
        let user = try identifier()
        try separator()
        let device = try identifier()
        try separator()
        return (user, device)
    }

    mutating func separator() throws(DeviceTrustError) {
        guard try take(1).first == 0 else {
            throw DeviceTrustError(.malformedIdentifier, "a field separator is not 0x00")
        }
    }

    /// 36 bytes of canonical lowercase hyphenated UUID text.
    mutating func identifier() throws(DeviceTrustError) -> UUID {
        let raw = try take(36)
        let text = String(decoding: raw, as: UTF8.self)
        guard let id = UUID(uuidString: text), id.uuidString.lowercased() == text else {
            throw DeviceTrustError(.malformedIdentifier, "an identifier is not a canonical lowercase UUID")
        }
        return id
    }

    mutating func text() throws(DeviceTrustError) -> String {
        let length = Int(try take(1).first!)
        let raw = try take(length)
        guard Self.isPrintableASCII(raw) else {
            throw DeviceTrustError(.invalidText, "a certificate's text field is empty or not printable ASCII")
        }
        return String(decoding: raw, as: UTF8.self)
    }

    mutating func x25519() throws(DeviceTrustError) -> X25519PublicKey {
        let raw = try take(32)
        guard let key = try? X25519PublicKey(rawRepresentation: raw) else {
            throw DeviceTrustError(.truncated, "a key is cut short")
        }
        return key
    }

    mutating func ed25519() throws(DeviceTrustError) -> Ed25519PublicKey {
        let raw = try take(32)
        guard let key = try? Ed25519PublicKey(rawRepresentation: raw) else {
            throw DeviceTrustError(.truncated, "a key is cut short")
        }
        return key
    }

    mutating func integer() throws(DeviceTrustError) -> UInt64 {
        try take(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    func end() throws(DeviceTrustError) {
        guard offset == bytes.count else {
            throw DeviceTrustError(.trailingBytes, "bytes follow the statement's last field")
        }
    }
}
