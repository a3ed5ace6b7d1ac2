import Foundation
import SecretCrypto

/// A statement as the remote stores it: standard base64 of the body and of the 64-byte
/// Ed25519 signature over it.
public struct SignedStatement: Sendable, Hashable {
    public var body: String
    public var signature: String

    /// Wraps stored text.
    public init(body: String, signature: String) {
        self.body = body
        self.signature = signature
    }

    /// Signs `bytes` with `key` and encodes both as stored.
    init(signing bytes: [UInt8], with key: Ed25519PrivateKey) {
        self.init(body: ByteEncoding.base64(bytes), signature: ByteEncoding.base64(key.signature(for: bytes)))
    }

    /// Checks that a verified statement names the user and device it was filed under.
    static func check(
        kind: String, user: UUID, device: UUID, expectedUser: UUID, expectedDevice: UUID
    ) throws(DeviceTrustError) {
        guard user == expectedUser else { throw DeviceTrustError(.wrongUser, "the \(kind) is for another user") }
        guard device == expectedDevice else {
            throw DeviceTrustError(.wrongDevice, "the \(kind) is for another device")
        }
    }

    /// Decodes both fields and checks the signature under `identityKey`; returns the body's bytes.
    ///
    /// - Throws: ``DeviceTrustError`` `.notBase64` or `.badSignature`.
    func verifiedBody(identityKey: Ed25519PublicKey) throws(DeviceTrustError) -> [UInt8] {
        let bytes: [UInt8], signatureBytes: [UInt8]
        do {
            bytes = try ByteEncoding.bytes(base64: body)
            signatureBytes = try ByteEncoding.bytes(base64: signature)
        } catch {
            throw DeviceTrustError(.notBase64, "the statement's body or signature is not standard base64")
        }
        guard signatureBytes.count == Ed25519PrivateKey.signatureByteCount,
            identityKey.isValidSignature(signatureBytes, for: bytes)
        else {
            throw DeviceTrustError(
                .badSignature, "the statement's signature does not verify under the user's identity key")
        }
        return bytes
    }
}

/// A device certificate (trust.md): the user's identity key vouches that `deviceID` of
/// `userID` holds these two keys.
///
/// ```
/// "unbound-device-certificate-v1" || 0x00 || user_id || 0x00 || device_id || 0x00
///   || x25519_public_key (32) || ed25519_public_key (32)
///   || len8(device_type) || device_type || len8(device_role) || device_role
///   || issued_at (8 bytes, big-endian Unix seconds)
/// ```
public struct DeviceCertificate: Sendable, Hashable {
    /// The body's prefix.
    public static let prefix = "unbound-device-certificate-v1"

    public var userID: UUID
    public var deviceID: UUID
    public var x25519PublicKey: X25519PublicKey
    public var ed25519PublicKey: Ed25519PublicKey
    /// The device's type as its row names it (`mac-desktop`, `ios-phone`, ...).
    public var deviceType: String
    /// The device's role as its row names it (`trusted_executor`, ...).
    public var deviceRole: String
    /// When the certificate was signed, in Unix seconds.
    public var issuedAt: UInt64

    /// Creates a certificate.
    public init(
        userID: UUID, deviceID: UUID, x25519PublicKey: X25519PublicKey, ed25519PublicKey: Ed25519PublicKey,
        deviceType: String, deviceRole: String, issuedAt: UInt64
    ) {
        self.userID = userID
        self.deviceID = deviceID
        self.x25519PublicKey = x25519PublicKey
        self.ed25519PublicKey = ed25519PublicKey
        self.deviceType = deviceType
        self.deviceRole = deviceRole
        self.issuedAt = issuedAt
    }

    /// The exact bytes that are signed.
    ///
    /// - Throws: ``DeviceTrustError`` `.textTooLong` or `.invalidText` for a type or role that
    ///   cannot be encoded.
    public func body() throws(DeviceTrustError) -> [UInt8] {
        var out = StatementWriter(prefix: Self.prefix, userID: userID, deviceID: deviceID)
        out.bytes(x25519PublicKey.rawRepresentation)
        out.bytes(ed25519PublicKey.rawRepresentation)
        try out.text(deviceType)
        try out.text(deviceRole)
        out.integer(issuedAt)
        return out.bytes
    }

    /// Parses a body strictly: exact prefix, canonical identifiers, exact lengths, nothing after.
    public static func parse(_ bytes: [UInt8]) throws(DeviceTrustError) -> DeviceCertificate {
        var reader = StatementReader(bytes)
        let (user, device) = try reader.header(Self.prefix)
        let x25519 = try reader.x25519()
        let ed25519 = try reader.ed25519()
        let type = try reader.text()
        let role = try reader.text()
        let issued = try reader.integer()
        try reader.end()
        return DeviceCertificate(
            userID: user, deviceID: device, x25519PublicKey: x25519, ed25519PublicKey: ed25519,
            deviceType: type, deviceRole: role, issuedAt: issued)
    }

    /// Signs the certificate with the user's identity key.
    public func signed(by identityKey: Ed25519PrivateKey) throws(DeviceTrustError) -> SignedStatement {
        SignedStatement(signing: try body(), with: identityKey)
    }

    /// Verifies a stored certificate under the pinned identity key and checks it is for this
    /// user and device; when `x25519PublicKey` is given, that the certificate names that key.
    ///
    /// - Returns: The certificate, every field verified.
    /// - Throws: ``DeviceTrustError``.
    public static func verify(
        _ statement: SignedStatement, identityKey: Ed25519PublicKey, userID: UUID, deviceID: UUID,
        x25519PublicKey: X25519PublicKey? = nil
    ) throws(DeviceTrustError) -> DeviceCertificate {
        let certificate = try parse(statement.verifiedBody(identityKey: identityKey))
        try SignedStatement.check(
            kind: "certificate", user: certificate.userID, device: certificate.deviceID, expectedUser: userID,
            expectedDevice: deviceID)
        if let x25519PublicKey, certificate.x25519PublicKey != x25519PublicKey {
            throw DeviceTrustError(.wrongKey, "the certificate names another X25519 key than the device row")
        }
        return certificate
    }
}

/// A device revocation (trust.md): the user's identity key withdraws `deviceID`.
///
/// ```
/// "unbound-device-revocation-v1" || 0x00 || user_id || 0x00 || device_id || 0x00
///   || x25519_public_key (32) || revoked_at (8 bytes, big-endian Unix seconds)
/// ```
public struct DeviceRevocation: Sendable, Hashable {
    /// The body's prefix.
    public static let prefix = "unbound-device-revocation-v1"

    public var userID: UUID
    public var deviceID: UUID
    public var x25519PublicKey: X25519PublicKey
    /// When the device was revoked, in Unix seconds.
    public var revokedAt: UInt64

    /// Creates a revocation.
    public init(userID: UUID, deviceID: UUID, x25519PublicKey: X25519PublicKey, revokedAt: UInt64) {
        self.userID = userID
        self.deviceID = deviceID
        self.x25519PublicKey = x25519PublicKey
        self.revokedAt = revokedAt
    }

    /// The exact bytes that are signed.
    public func body() -> [UInt8] {
        var out = StatementWriter(prefix: Self.prefix, userID: userID, deviceID: deviceID)
        out.bytes(x25519PublicKey.rawRepresentation)
        out.integer(revokedAt)
        return out.bytes
    }

    /// Parses a body strictly.
    public static func parse(_ bytes: [UInt8]) throws(DeviceTrustError) -> DeviceRevocation {
        var reader = StatementReader(bytes)
        let (user, device) = try reader.header(Self.prefix)
        let x25519 = try reader.x25519()
        let revoked = try reader.integer()
        try reader.end()
        return DeviceRevocation(userID: user, deviceID: device, x25519PublicKey: x25519, revokedAt: revoked)
    }

    /// Signs the revocation with the user's identity key.
    public func signed(by identityKey: Ed25519PrivateKey) -> SignedStatement {
        SignedStatement(signing: body(), with: identityKey)
    }

    /// Verifies a stored revocation under the pinned identity key and checks it is for this
    /// user and device.
    public static func verify(
        _ statement: SignedStatement, identityKey: Ed25519PublicKey, userID: UUID,
        deviceID: UUID
    ) throws(DeviceTrustError) -> DeviceRevocation {
        let revocation = try parse(statement.verifiedBody(identityKey: identityKey))
        try SignedStatement.check(
            kind: "revocation", user: revocation.userID, device: revocation.deviceID, expectedUser: userID,
            expectedDevice: deviceID)
        return revocation
    }
}

/// The user's identity key's fingerprint for people: the first 16 bytes of SHA-256 of the
/// public key, shown as 8 groups of 4 hex digits.
public struct IdentityFingerprint: Sendable, Hashable, CustomStringConvertible {
    /// The 16 bytes.
    public let bytes: [UInt8]

    /// The fingerprint of an identity public key.
    public init(_ key: Ed25519PublicKey) {
        bytes = Array(SHA256.hash(key.rawRepresentation).prefix(16))
    }

    /// Wraps 16 bytes (from a pairing code).
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// `0a1b 2c3d ...`: 8 groups of 4 lowercase hex digits.
    public var description: String {
        let hex = ByteEncoding.hex(bytes)
        return stride(from: 0, to: hex.count, by: 4).map { start in
            let from = hex.index(hex.startIndex, offsetBy: start)
            return String(hex[from..<hex.index(from, offsetBy: 4)])
        }.joined(separator: " ")
    }
}
