import Foundation
import SecretCrypto

/// What recovering the identity refuses (recovery.md). Neither case says more: a key that does
/// not open the backup never tells which check failed.
public enum RecoveryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The text is not a recovery key (a character out of the alphabet, the wrong length, unused
    /// bits set, a checksum that does not match): found offline, before any network call.
    case mistyped
    /// A well-formed key that does not open this account's backup, or a backup for another user
    /// or identity, or a tampered or malformed one.
    case doesNotOpen

    public var description: String {
        switch self {
        case .mistyped: "the recovery key is mistyped: check it character by character"
        case .doesNotOpen: "the recovery key does not open this account's backup"
        }
    }
}

/// A recovery key: 32 random bytes `R` the person writes down, shown as 55 base32 characters
/// (`R` and its CRC-16/XMODEM) in groups of four.
///
/// The 16-bit check catches every change confined to 16 consecutive bits, and the last
/// character's unused bits must be zero, so every single mistyped character and every swap of
/// two neighbouring characters is refused offline.
public struct RecoveryKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// `R`, in wiped memory.
    public let bytes: SecureBytes

    /// The number of characters of the text form, without separators.
    public static let textLength = 55

    /// A fresh random key.
    public init() { bytes = SecureBytes(randomCount: 32) }

    /// A key of these 32 bytes (the vector generator's; a person's key is random).
    public init(bytes: SecureBytes) throws {
        guard bytes.count == 32 else { throw RecoveryError.mistyped }
        self.bytes = bytes
    }

    /// Parses a key as typed: space, tab, CR, LF and `-` are ignored; only `A-Z`, `a-z` and `2-7`
    /// are accepted; exactly 55 of them, the unused bits zero, the checksum equal.
    ///
    /// - Throws: ``RecoveryError/mistyped``.
    public init(text: String) throws {
        var values: [UInt8] = []
        values.reserveCapacity(Self.textLength)
        for byte in text.utf8 {
            switch byte {
            case 0x20, 0x09, 0x0D, 0x0A, 0x2D: continue
            case 0x41...0x5A: values.append(byte - 0x41)
            case 0x61...0x7A: values.append(byte - 0x61)
            case 0x32...0x37: values.append(byte - 0x32 + 26)
            default: throw RecoveryError.mistyped
            }
            guard values.count <= Self.textLength else { throw RecoveryError.mistyped }
        }
        guard values.count == Self.textLength else { throw RecoveryError.mistyped }
        // 55 characters carry 275 bits: 272 of R || C and 3 that must be zero.
        guard values[Self.textLength - 1] & 0x07 == 0 else { throw RecoveryError.mistyped }
        var decoded = [UInt8](repeating: 0, count: 34)
        defer { decoded.withUnsafeMutableBytes { SecureBytes.wipe($0) } }
        var accumulator: UInt32 = 0
        var bits = 0
        var index = 0
        for value in values {
            accumulator = (accumulator << 5) | UInt32(value)
            bits += 5
            if bits >= 8 {
                bits -= 8
                if index < 34 { decoded[index] = UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)) }
                index += 1
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        let check = Self.crc16(decoded[0..<32])
        guard decoded[32] == UInt8(check >> 8), decoded[33] == UInt8(check & 0xFF) else {
            throw RecoveryError.mistyped
        }
        bytes = SecureBytes(copying: decoded[0..<32])
    }

    /// The 55 characters without separators (what the QR code holds). A Swift `String` cannot
    /// be wiped: call this only to show the key to the person, once.
    public func revealCompactText() -> String {
        var input = bytes.withUnsafeBytes { Array($0) }
        defer { input.withUnsafeMutableBytes { SecureBytes.wipe($0) } }
        let check = Self.crc16(input[0..<32])
        input += [UInt8(check >> 8), UInt8(check & 0xFF)]
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(Self.textLength)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in input {
            accumulator = (accumulator << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(alphabet[Int((accumulator >> UInt32(bits)) & 0x1F)])
            }
            accumulator &= (1 << UInt32(bits)) - 1
        }
        if bits > 0 { out.append(alphabet[Int((accumulator << UInt32(5 - bits)) & 0x1F)]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// The 55 characters in groups of four separated by spaces (the last group three): the form
    /// to write down. Call it only to show the key to the person, once.
    public func revealText() -> String {
        let compact = Array(revealCompactText())
        return stride(from: 0, to: compact.count, by: 4).map { String(compact[$0..<min($0 + 4, compact.count)]) }
            .joined(separator: " ")
    }

    /// CRC-16/XMODEM: polynomial 0x1021, initial value 0, no reflection, no final XOR.
    public static func crc16(_ data: some Collection<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in data {
            crc ^= UInt16(byte) << 8
            for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        }
        return crc
    }

    public var description: String { "RecoveryKey(<redacted>)" }
    public var debugDescription: String { description }
}

/// The encrypted backup of the identity seed (recovery.md): what the server keeps and cannot
/// open.
///
/// ```
/// K    = HKDF-SHA256(ikm = R, salt = user_id (16 raw bytes), info = "unbound-identity-backup-v1", L = 32)
/// aad  = "unbound-identity-backup-v1" || 0x00 || user_id (36 bytes) || 0x00 || identity public key (32 bytes)
/// body = 0x01 || nonce (12 bytes) || ChaCha20-Poly1305(K, nonce, aad, identity seed (32 bytes))
/// ```
/// 61 bytes, stored as padded, canonical standard base64.
public enum IdentityBackup {
    static let label = Array("unbound-identity-backup-v1".utf8)
    /// The version byte.
    public static let version: UInt8 = 1
    /// The body's length in bytes.
    public static let byteCount = 1 + 12 + 32 + 16

    /// The backup key `K`.
    public static func key(recoveryKey: RecoveryKey, userID: UUID) throws -> SecureBytes {
        let salt = withUnsafeBytes(of: userID.uuid) { Array($0) }
        return try HKDFSHA256.deriveKey(
            inputKeyMaterial: recoveryKey.bytes, salt: salt, info: label, outputByteCount: 32)
    }

    /// The associated data for `userID` and the identity's public key.
    public static func aad(userID: UUID, identityPublicKey: Ed25519PublicKey) -> [UInt8] {
        label + [0] + Array(userID.uuidString.lowercased().utf8) + [0] + identityPublicKey.rawRepresentation
    }

    /// Seals `identity`'s seed: the body as stored (base64).
    ///
    /// - Parameters:
    ///   - identity: The identity key whose seed is sealed.
    ///   - userID: The user it belongs to (bound in the associated data).
    ///   - recoveryKey: The key the backup opens with.
    ///   - nonce: 12 bytes; random unless a test vector fixes it.
    public static func seal(
        _ identity: Ed25519PrivateKey, userID: UUID, recoveryKey: RecoveryKey,
        nonce: [UInt8] = SecureBytes(randomCount: 12).withUnsafeBytes { Array($0) }
    ) throws -> String {
        let sealed = try ChaCha20Poly1305.seal(
            identity.seedRepresentation, using: try key(recoveryKey: recoveryKey, userID: userID), nonce: nonce,
            authenticating: aad(userID: userID, identityPublicKey: identity.publicKey))
        return Data([version] + nonce + sealed).base64EncodedString()
    }

    /// Opens a stored backup and returns the identity key, only if its public key is
    /// `identityPublicKey`.
    ///
    /// - Throws: ``RecoveryError/doesNotOpen`` for anything else: text that is not padded,
    ///   canonical base64 of 61 bytes, another version byte, a tag that does not verify (another
    ///   key, user or identity, tampering), or a seed of another public key.
    public static func open(
        _ stored: String, userID: UUID, identityPublicKey: Ed25519PublicKey, recoveryKey: RecoveryKey
    ) throws -> Ed25519PrivateKey {
        guard let data = Data(base64Encoded: stored), data.count == byteCount,
            data.base64EncodedString() == stored, data[data.startIndex] == version
        else { throw RecoveryError.doesNotOpen }
        let bytes = Array(data)
        do {
            var seed = try ChaCha20Poly1305.open(
                bytes[13...], using: try key(recoveryKey: recoveryKey, userID: userID), nonce: bytes[1..<13],
                authenticating: aad(userID: userID, identityPublicKey: identityPublicKey))
            defer { seed.withUnsafeMutableBytes { SecureBytes.wipe($0) } }
            let identity = try Ed25519PrivateKey(seed: SecureBytes(copying: seed))
            guard identity.publicKey == identityPublicKey else { throw RecoveryError.doesNotOpen }
            return identity
        } catch {
            throw RecoveryError.doesNotOpen
        }
    }
}
