import Foundation
import SecretCrypto

/// The pairing code the trust root shows and the new device types or scans:
/// `base32(invite_id (8) || P (16) || identity fingerprint (16) || C (2))`, where
/// `C = CRC-16/XMODEM` of the 40 bytes before it (big-endian, as the recovery key's): 68
/// characters, the last one's 4 unused bits zero, printed in 17 groups of 4 (docs/trust.md).
///
/// The checksum catches every single mistyped character and every swap of two neighbouring
/// characters offline, before anything is sent. The pairing secret `P` never leaves the two
/// screens; `description` redacts it.
public struct PairingCode: Sendable, CustomStringConvertible {
    /// The invite's 8 random bytes.
    public let inviteID: [UInt8]
    /// The 16-byte pairing secret `P`.
    public let secret: SecureBytes
    /// The identity key's fingerprint.
    public let fingerprint: IdentityFingerprint

    /// The number of characters of the text form, without separators.
    public static let textLength = 68

    /// Creates a code.
    public init(inviteID: [UInt8], secret: SecureBytes, fingerprint: IdentityFingerprint) throws(DeviceTrustError) {
        guard inviteID.count == 8, secret.count == 16 else {
            throw DeviceTrustError(.malformedCode, "an invite is 8 bytes and a pairing secret 16")
        }
        self.inviteID = inviteID
        self.secret = secret
        self.fingerprint = fingerprint
    }

    /// Parses a code as typed: space, tab, CR, LF and `-` are ignored, case does not matter;
    /// only `A-Z`, `a-z` and `2-7` are accepted, exactly 68 of them, the unused bits zero and
    /// the checksum equal.
    ///
    /// - Throws: ``DeviceTrustError`` `.malformedCode` (another length or character),
    ///   `.mistypedCode` (the checksum or the unused bits do not match).
    public init(parsing text: String) throws(DeviceTrustError) {
        var letters: [UInt8] = []
        letters.reserveCapacity(Self.textLength)
        for byte in text.utf8 {
            switch byte {
            case 0x20, 0x09, 0x0D, 0x0A, 0x2D: continue
            case 0x61...0x7A: letters.append(byte - 0x20)
            case 0x41...0x5A, 0x32...0x37: letters.append(byte)
            default: throw Self.malformed
            }
            guard letters.count <= Self.textLength else { throw Self.malformed }
        }
        guard letters.count == Self.textLength else { throw Self.malformed }
        guard let bytes = Base32.decode(String(decoding: letters, as: UTF8.self)), bytes.count == 42 else {
            throw Self.mistyped
        }
        let check = RecoveryKey.crc16(bytes[0..<40])
        guard bytes[40] == UInt8(check >> 8), bytes[41] == UInt8(check & 0xFF) else { throw Self.mistyped }
        try self.init(
            inviteID: Array(bytes[0..<8]), secret: SecureBytes(copying: bytes[8..<24]),
            fingerprint: IdentityFingerprint(bytes: Array(bytes[24..<40]))!)
    }

    static let malformed = DeviceTrustError(
        .malformedCode,
        "a pairing code is 68 characters of A-Z and 2-7, shown in 17 groups of 4 (spaces and hyphens aside); "
            + "copy it from the trust root's screen")
    static let mistyped = DeviceTrustError(
        .mistypedCode,
        "the pairing code does not check out: a character is mistyped or two are swapped; compare it with "
            + "the trust root's screen and type it again (nothing was sent)")

    /// The invite id as the pairing request carries it: 16 lowercase hex digits.
    public var inviteIDText: String { ByteEncoding.hex(inviteID) }

    /// The code to show: 17 groups of 4 base32 characters joined by hyphens. This is the
    /// secret itself: show it on a screen, never log it.
    public func revealText() -> String {
        var raw = secret.withUnsafeBytes { inviteID + Array($0) + fingerprint.bytes }
        defer { raw.withUnsafeMutableBytes { SecureBytes.wipe($0) } }
        let check = RecoveryKey.crc16(raw)
        raw += [UInt8(check >> 8), UInt8(check & 0xFF)]
        let text = Base32.encode(raw)
        return stride(from: 0, to: text.count, by: 4).map { start in
            let from = text.index(text.startIndex, offsetBy: start)
            return String(text[from..<text.index(from, offsetBy: 4)])
        }.joined(separator: "-")
    }

    public var description: String { "PairingCode(invite \(inviteIDText), <redacted>)" }
}

/// The pairing request's MAC (trust.md):
/// `HMAC-SHA256(K, "unbound-pairing-request-v1" || 0x00 || user_id || 0x00 || device_id || 0x00
/// || x25519_pk || ed25519_pk)` with `K = HKDF-SHA256(ikm: P, salt: invite_id, info:
/// "unbound-pairing-v1", L: 32)`.
public enum PairingMAC {
    /// The MAC of a request, 32 bytes.
    public static func mac(
        secret: SecureBytes, inviteID: [UInt8], userID: UUID, deviceID: UUID,
        x25519PublicKey: X25519PublicKey, ed25519PublicKey: Ed25519PublicKey
    ) -> [UInt8] {
        HMACSHA256.authenticationCode(
            for: message(
                userID: userID, deviceID: deviceID, x25519PublicKey: x25519PublicKey,
                ed25519PublicKey: ed25519PublicKey), using: key(secret: secret, inviteID: inviteID))
    }

    /// `K = HKDF-SHA256(ikm: P, salt: invite_id, info: "unbound-pairing-v1", L: 32)`.
    static func key(secret: SecureBytes, inviteID: [UInt8]) -> SecureBytes {
        HKDFSHA256.deriveKey(inputKeyMaterial: secret, salt: inviteID, info: Array("unbound-pairing-v1".utf8))
    }

    /// Checks a request's MAC in constant time.
    public static func isValid(
        _ tag: [UInt8], secret: SecureBytes, inviteID: [UInt8], userID: UUID, deviceID: UUID,
        x25519PublicKey: X25519PublicKey, ed25519PublicKey: Ed25519PublicKey
    ) -> Bool {
        guard tag.count == HMACSHA256.byteCount else { return false }
        return HMACSHA256.isValidAuthenticationCode(
            tag,
            for: message(
                userID: userID, deviceID: deviceID, x25519PublicKey: x25519PublicKey,
                ed25519PublicKey: ed25519PublicKey), using: key(secret: secret, inviteID: inviteID))
    }

    static func message(
        userID: UUID, deviceID: UUID, x25519PublicKey: X25519PublicKey, ed25519PublicKey: Ed25519PublicKey
    ) -> [UInt8] {
        var out = StatementWriter(prefix: "unbound-pairing-request-v1", userID: userID, deviceID: deviceID)
        out.bytes(x25519PublicKey.rawRepresentation)
        out.bytes(ed25519PublicKey.rawRepresentation)
        return out.bytes
    }
}

/// RFC 4648 base32 (alphabet `A-Z2-7`), without padding: the pairing code is 40 bytes, which
/// needs none.
public enum Base32 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    /// Encodes bytes; the length must be a multiple of 5 for the output to need no padding.
    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var buffer = 0, bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | Int(byte)
            bits += 8
            while bits >= 5 {
                out.append(alphabet[(buffer >> (bits - 5)) & 31])
                bits -= 5
            }
        }
        if bits > 0 { out.append(alphabet[(buffer << (5 - bits)) & 31]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes uppercase base32 without padding; `nil` for any other character or for
    /// non-zero leftover bits.
    public static func decode(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        var buffer = 0, bits = 0
        for char in text.utf8 {
            guard let value = alphabet.firstIndex(of: char) else { return nil }
            buffer = ((buffer << 5) | value) & 0xFFFF
            bits += 5
            if bits >= 8 {
                out.append(UInt8((buffer >> (bits - 8)) & 0xFF))
                bits -= 8
            }
        }
        guard buffer & ((1 << bits) - 1) == 0 else { return nil }
        return out
    }
}
