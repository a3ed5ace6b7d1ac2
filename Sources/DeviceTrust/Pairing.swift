import Foundation
import SecretCrypto

/// Why a pairing code or request was refused.
public struct PairingError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// The code is not 64 base32 characters (spaces and hyphens aside).
        case malformedCode
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

/// The pairing code the trust root shows and the new device types or scans:
/// `base32(invite_id (8) || P (16) || identity fingerprint (16))`, 64 characters printed in
/// groups of 4 (trust.md).
///
/// The pairing secret `P` never leaves the two screens; `description` redacts it.
public struct PairingCode: Sendable, CustomStringConvertible {
    /// The invite's 8 random bytes.
    public let inviteID: [UInt8]
    /// The 16-byte pairing secret `P`.
    public let secret: SecureBytes
    /// The identity key's fingerprint.
    public let fingerprint: IdentityFingerprint

    /// Creates a code.
    public init(inviteID: [UInt8], secret: SecureBytes, fingerprint: IdentityFingerprint) throws(PairingError) {
        guard inviteID.count == 8, secret.count == 16 else {
            throw PairingError(.malformedCode, "an invite is 8 bytes and a pairing secret 16")
        }
        self.inviteID = inviteID
        self.secret = secret
        self.fingerprint = fingerprint
    }

    /// Parses a code as typed: case, spaces and hyphens do not matter.
    public init(parsing text: String) throws(PairingError) {
        let letters = text.uppercased().filter { $0 != " " && $0 != "-" && $0 != "\t" }
        guard letters.count == 64, let bytes = Base32.decode(letters), bytes.count == 40 else {
            throw PairingError(
                .malformedCode, "a pairing code is 64 characters of A-Z and 2-7 (spaces and hyphens aside)")
        }
        try self.init(
            inviteID: Array(bytes[0..<8]), secret: SecureBytes(copying: bytes[8..<24]),
            fingerprint: IdentityFingerprint(bytes: Array(bytes[24..<40]))!)
    }

    /// The invite id as the pairing request carries it: 16 lowercase hex digits.
    public var inviteIDText: String { ByteEncoding.hex(inviteID) }

    /// The code to show: 16 groups of 4 base32 characters joined by hyphens. This is the
    /// secret itself: show it on a screen, never log it.
    public func revealText() -> String {
        let raw = secret.withUnsafeBytes { inviteID + Array($0) + fingerprint.bytes }
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
        // 32 bytes is far below HKDF's limit: the derivation cannot fail.
        try! HKDFSHA256.deriveKey(
            inputKeyMaterial: secret, salt: inviteID, info: Array("unbound-pairing-v1".utf8), outputByteCount: 32)
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
