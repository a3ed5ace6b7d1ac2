import Foundation
import SecretCrypto

/// Why a signed statement (a device certificate or revocation) was refused.
///
/// Every refusal names what was wrong and never quotes the statement's bytes.
public struct TrustStatementError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The ways a statement is refused (trust.md).
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// `body` or `signature` is not canonical standard base64.
        case notBase64
        /// The signature is not 64 bytes, or does not verify under the pinned identity key.
        case badSignature
        /// The body does not start with the statement's prefix and its 0x00.
        case wrongPrefix
        /// The body ends before its last field.
        case truncated
        /// Bytes follow the last field.
        case trailingBytes
        /// A UUID field is not 36 bytes of canonical lowercase hyphenated text, or a separator
        /// is not 0x00.
        case malformedIdentifier
        /// `device_type` or `device_role` is empty or not printable ASCII.
        case invalidText
        /// The statement is for another user than the one expected.
        case wrongUser
        /// The statement is for another device than the one expected.
        case wrongDevice
        /// The statement's X25519 key is not the one expected.
        case wrongKey
        /// A text field is longer than 255 bytes (it cannot be encoded).
        case textTooLong
    }

    public let code: Code
    public let message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

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
    ) throws(TrustStatementError) {
        guard user == expectedUser else { throw TrustStatementError(.wrongUser, "the \(kind) is for another user") }
        guard device == expectedDevice else {
            throw TrustStatementError(.wrongDevice, "the \(kind) is for another device")
        }
    }

    /// Decodes both fields and checks the signature under `identityKey`; returns the body's bytes.
    ///
    /// - Throws: ``TrustStatementError`` `.notBase64` or `.badSignature`.
    func verifiedBody(identityKey: Ed25519PublicKey) throws(TrustStatementError) -> [UInt8] {
        let bytes: [UInt8], signatureBytes: [UInt8]
        do {
            bytes = try ByteEncoding.bytes(base64: body)
            signatureBytes = try ByteEncoding.bytes(base64: signature)
        } catch {
            throw TrustStatementError(.notBase64, "the statement's body or signature is not standard base64")
        }
        guard signatureBytes.count == Ed25519PrivateKey.signatureByteCount,
            identityKey.isValidSignature(signatureBytes, for: bytes)
        else {
            throw TrustStatementError(
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
    /// - Throws: ``TrustStatementError`` `.textTooLong` or `.invalidText` for a type or role that
    ///   cannot be encoded.
    public func body() throws(TrustStatementError) -> [UInt8] {
        var out = StatementWriter(prefix: Self.prefix, userID: userID, deviceID: deviceID)
        out.bytes(x25519PublicKey.rawRepresentation)
        out.bytes(ed25519PublicKey.rawRepresentation)
        try out.text(deviceType)
        try out.text(deviceRole)
        out.integer(issuedAt)
        return out.bytes
    }

    /// Parses a body strictly: exact prefix, canonical identifiers, exact lengths, nothing after.
    public static func parse(_ bytes: [UInt8]) throws(TrustStatementError) -> DeviceCertificate {
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
    public func signed(by identityKey: Ed25519PrivateKey) throws(TrustStatementError) -> SignedStatement {
        SignedStatement(signing: try body(), with: identityKey)
    }

    /// Verifies a stored certificate under the pinned identity key and checks it is for this
    /// user and device; when `x25519PublicKey` is given, that the certificate names that key.
    ///
    /// - Returns: The certificate, every field verified.
    /// - Throws: ``TrustStatementError``.
    public static func verify(
        _ statement: SignedStatement, identityKey: Ed25519PublicKey, userID: UUID, deviceID: UUID,
        x25519PublicKey: X25519PublicKey? = nil
    ) throws(TrustStatementError) -> DeviceCertificate {
        let certificate = try parse(statement.verifiedBody(identityKey: identityKey))
        try SignedStatement.check(
            kind: "certificate", user: certificate.userID, device: certificate.deviceID, expectedUser: userID,
            expectedDevice: deviceID)
        if let x25519PublicKey, certificate.x25519PublicKey != x25519PublicKey {
            throw TrustStatementError(.wrongKey, "the certificate names another X25519 key than the device row")
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
    public static func parse(_ bytes: [UInt8]) throws(TrustStatementError) -> DeviceRevocation {
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
    ) throws(TrustStatementError) -> DeviceRevocation {
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

// MARK: - Exact byte layout

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

    mutating func text(_ value: String) throws(TrustStatementError) {
        let utf8 = Array(value.utf8)
        guard utf8.count <= 255 else {
            throw TrustStatementError(.textTooLong, "a certificate's text field is longer than 255 bytes")
        }
        guard StatementReader.isPrintableASCII(utf8) else {
            throw TrustStatementError(.invalidText, "a certificate's text field is empty or not printable ASCII")
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

    mutating func take(_ count: Int) throws(TrustStatementError) -> ArraySlice<UInt8> {
        guard bytes.count - offset >= count else {
            throw TrustStatementError(.truncated, "the statement ends before its last field")
        }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    mutating func prefix(_ text: String) throws(TrustStatementError) {
        let expected = Array(text.utf8) + [0]
        if bytes.count < expected.count && expected.starts(with: bytes) {
            throw TrustStatementError(.truncated, "the statement ends inside its prefix")
        }
        guard bytes.count >= expected.count, Array(bytes[0..<expected.count]) == expected else {
            throw TrustStatementError(.wrongPrefix, "the statement does not start with \(text)")
        }
        offset = expected.count
    }

    /// Reads every statement's start; returns its user and device ids.
    mutating func header(_ prefix: String) throws(TrustStatementError) -> (UUID, UUID) {
        try self.prefix(prefix)
        let user = try identifier()
        try separator()
        let device = try identifier()
        try separator()
        return (user, device)
    }

    mutating func separator() throws(TrustStatementError) {
        guard try take(1).first == 0 else {
            throw TrustStatementError(.malformedIdentifier, "a field separator is not 0x00")
        }
    }

    /// 36 bytes of canonical lowercase hyphenated UUID text.
    mutating func identifier() throws(TrustStatementError) -> UUID {
        let raw = try take(36)
        let text = String(decoding: raw, as: UTF8.self)
        guard let id = UUID(uuidString: text), id.uuidString.lowercased() == text else {
            throw TrustStatementError(.malformedIdentifier, "an identifier is not a canonical lowercase UUID")
        }
        return id
    }

    mutating func text() throws(TrustStatementError) -> String {
        let length = Int(try take(1).first!)
        let raw = try take(length)
        guard Self.isPrintableASCII(raw) else {
            throw TrustStatementError(.invalidText, "a certificate's text field is empty or not printable ASCII")
        }
        return String(decoding: raw, as: UTF8.self)
    }

    mutating func x25519() throws(TrustStatementError) -> X25519PublicKey {
        let raw = try take(32)
        guard let key = try? X25519PublicKey(rawRepresentation: raw) else {
            throw TrustStatementError(.truncated, "a key is cut short")
        }
        return key
    }

    mutating func ed25519() throws(TrustStatementError) -> Ed25519PublicKey {
        let raw = try take(32)
        guard let key = try? Ed25519PublicKey(rawRepresentation: raw) else {
            throw TrustStatementError(.truncated, "a key is cut short")
        }
        return key
    }

    mutating func integer() throws(TrustStatementError) -> UInt64 {
        try take(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    func end() throws(TrustStatementError) {
        guard offset == bytes.count else {
            throw TrustStatementError(.trailingBytes, "bytes follow the statement's last field")
        }
    }
}

/// An answer to an approval request (approvals.md), signed with the answering device's Ed25519
/// signing key.
///
/// ```
/// "unbound-approval-decision-v2" || 0x00 || user_id || 0x00 || session_id || 0x00
///   || request_id || 0x00 || device_id || 0x00 || verdict (1 byte: 0x01 approve, 0x02 deny)
///   || SHA-256(the decoded request body) (32) || read (32) || decided_at (8 bytes, BE)
///   || epoch (4) || log_seq (8) || log_hash (32)
/// ```
/// Version 2 (approvals.md) carries the answering device's pinned trust-log head; a
/// version-1 decision (`unbound-approval-decision-v1`, without it) still parses, and every
/// desktop refuses it.
public struct ApprovalDecision: Sendable, Hashable {
    /// The version-1 prefix (no trust-log head).
    public static let prefix = "unbound-approval-decision-v1"
    /// The version-2 prefix.
    public static let prefixV2 = "unbound-approval-decision-v2"

    /// The answering device's pinned trust-log head.
    public struct LogHead: Sendable, Hashable {
        public var epoch: UInt32
        public var seq: UInt64
        public var hash: [UInt8]

        public init(epoch: UInt32, seq: UInt64, hash: [UInt8]) {
            self.epoch = epoch
            self.seq = seq
            self.hash = hash
        }
    }

    /// What the person answered.
    public enum Verdict: UInt8, Sendable, Hashable, CaseIterable {
        case approve = 0x01
        case deny = 0x02
    }

    public var userID: UUID
    public var sessionID: UUID
    public var requestID: UUID
    /// The answering device.
    public var deviceID: UUID
    public var verdict: Verdict
    /// SHA-256 of the request body the answer is about.
    public var bodyHash: [UInt8]
    /// `HMAC-SHA256(K, ...)`: proof the answering device derived the request's key.
    public var read: [UInt8]
    /// When it was answered, in Unix seconds (below 2^63).
    public var decidedAt: UInt64
    /// Version 2: the answering device's pinned trust-log head; `nil` for version 1.
    public var logHead: LogHead?

    /// Creates a decision (version 2 when `logHead` is given).
    public init(
        userID: UUID, sessionID: UUID, requestID: UUID, deviceID: UUID, verdict: Verdict, bodyHash: [UInt8],
        read: [UInt8], decidedAt: UInt64, logHead: LogHead? = nil
    ) {
        self.logHead = logHead
        self.userID = userID
        self.sessionID = sessionID
        self.requestID = requestID
        self.deviceID = deviceID
        self.verdict = verdict
        self.bodyHash = bodyHash
        self.read = read
        self.decidedAt = decidedAt
    }

    /// The exact bytes that are signed.
    public func body() -> [UInt8] {
        var out = StatementWriter(prefix: logHead == nil ? Self.prefix : Self.prefixV2)
        for id in [userID, sessionID, requestID, deviceID] {
            out.identifier(id)
            out.separator()
        }
        out.bytes([verdict.rawValue])
        out.bytes(bodyHash)
        out.bytes(read)
        out.integer(decidedAt)
        if let logHead {
            out.bytes((0..<4).map { UInt8(truncatingIfNeeded: logHead.epoch >> (24 - 8 * $0)) })
            out.integer(logHead.seq)
            out.bytes(logHead.hash)
        }
        return out.bytes
    }

    /// Parses a body strictly: exact prefix and separators, canonical lowercase identifiers, a
    /// known verdict, exact lengths, a time below 2^63, nothing after.
    public static func parse(_ bytes: [UInt8]) throws(TrustStatementError) -> ApprovalDecision {
        var reader = StatementReader(bytes)
        let v2 = bytes.starts(with: Array(prefixV2.utf8) + [0])
        try reader.prefix(v2 ? prefixV2 : prefix)
        var ids: [UUID] = []
        for _ in 0..<4 {
            ids.append(try reader.identifier())
            try reader.separator()
        }
        guard let verdict = Verdict(rawValue: try reader.take(1).first!) else {
            throw TrustStatementError(.invalidText, "the decision's verdict is neither approve nor deny")
        }
        let hash = Array(try reader.take(32))
        let read = Array(try reader.take(32))
        let decided = try reader.integer()
        guard decided < 1 << 63 else { throw TrustStatementError(.invalidText, "the decision's time is out of range") }
        var head: LogHead?
        if v2 {
            let epoch = try reader.take(4).reduce(0) { $0 << 8 | UInt32($1) }
            let seq = try reader.integer()
            let hash = Array(try reader.take(32))
            guard epoch >= 1, seq < 10_000 else {
                throw TrustStatementError(.invalidText, "the decision's trust-log head is out of range")
            }
            head = LogHead(epoch: epoch, seq: seq, hash: hash)
        }
        try reader.end()
        return ApprovalDecision(
            userID: ids[0], sessionID: ids[1], requestID: ids[2], deviceID: ids[3], verdict: verdict, bodyHash: hash,
            read: read, decidedAt: decided, logHead: head)
    }

    /// Signs the decision with the answering device's signing key.
    public func signed(by signingKey: Ed25519PrivateKey) -> SignedStatement {
        SignedStatement(signing: body(), with: signingKey)
    }

    /// Verifies a stored decision under the answering device's (certified) signing key.
    ///
    /// - Returns: The decision, parsed from the bytes the signature covers.
    /// - Throws: ``TrustStatementError``.
    public static func verify(
        _ statement: SignedStatement, signingKey: Ed25519PublicKey
    ) throws(TrustStatementError)
        -> ApprovalDecision
    {
        try parse(statement.verifiedBody(identityKey: signingKey))
    }

    /// The request as the asking desktop stored it when it created it: what a decision must match
    /// (approvals.md, "What the asking desktop accepts"). Never the server's copy.
    public struct Expectation: Sendable, Hashable {
        public var userID: UUID
        public var sessionID: UUID
        public var requestID: UUID
        public var requesterDeviceID: UUID
        /// Unix seconds.
        public var expiresAt: UInt64
        /// The decoded request body the desktop sealed.
        public var body: [UInt8]
        /// The desktop's own `read` for the request.
        public var read: [UInt8]

        /// Creates an expectation.
        public init(
            userID: UUID, sessionID: UUID, requestID: UUID, requesterDeviceID: UUID, expiresAt: UInt64, body: [UInt8],
            read: [UInt8]
        ) {
            self.userID = userID
            self.sessionID = sessionID
            self.requestID = requestID
            self.requesterDeviceID = requesterDeviceID
            self.expiresAt = expiresAt
            self.body = body
            self.read = read
        }
    }

    /// Why a signed decision does not count.
    public enum Rejection: Error, Sendable, Hashable, CustomStringConvertible {
        /// The signature does not verify under the device's key, or the bytes are not a decision.
        case statement(TrustStatementError.Code)
        /// For another user, session or request.
        case otherRequest
        /// Over another request body than the one the desktop sealed.
        case otherBody
        /// `read` is not the desktop's: the device never derived this request's key.
        case noProofOfSecret
        /// The requesting device answered its own request.
        case ownRequest
        /// `decided_at` is outside `expires_at - 630 ... expires_at + 30`.
        case outsideWindow

        public var description: String {
            switch self {
            case .statement(let code): "the decision does not verify under the device's certified key (\(code))"
            case .otherRequest: "the decision is for another user, session or request"
            case .otherBody: "the decision answers another request body than the one this device sent"
            case .noProofOfSecret:
                "the decision does not prove its device derived this request's key (it never held the secret)"
            case .ownRequest: "the requesting device cannot answer its own request"
            case .outsideWindow: "the decision's time is outside the request's window"
            }
        }
    }

    /// Verifies a stored decision by `deviceID`'s certified signing key and checks it answers
    /// exactly the request `expected`: the checks of approvals.md that need no trust records (the
    /// caller has already found the device's certificate and no revocation).
    ///
    /// - Returns: The decision.
    /// - Throws: ``Rejection``.
    public static func accept(
        _ statement: SignedStatement, deviceID: UUID, signingKey: Ed25519PublicKey, expecting expected: Expectation
    ) throws(Rejection) -> ApprovalDecision {
        let decision: ApprovalDecision
        do {
            decision = try verify(statement, signingKey: signingKey)
        } catch {
            throw .statement(error.code)
        }
        guard decision.deviceID == deviceID else { throw .statement(.wrongDevice) }
        guard decision.userID == expected.userID, decision.sessionID == expected.sessionID,
            decision.requestID == expected.requestID
        else { throw .otherRequest }
        guard decision.bodyHash == SHA256.hash(expected.body) else { throw .otherBody }
        guard decision.read == expected.read else { throw .noProofOfSecret }
        guard decision.deviceID != expected.requesterDeviceID else { throw .ownRequest }
        // expires_at - 630 <= decided_at <= expires_at + 30, computed without overflow.
        let earliest = expected.expiresAt >= 630 ? expected.expiresAt - 630 : 0
        let (latest, overflow) = expected.expiresAt.addingReportingOverflow(30)
        guard decision.decidedAt >= earliest, overflow || decision.decidedAt <= latest else { throw .outsideWindow }
        return decision
    }
}
