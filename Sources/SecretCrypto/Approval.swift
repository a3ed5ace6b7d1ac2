import Foundation

/// What an approval request is about (approvals.md): the tool the agent wants to run, a one-line
/// summary, and the detail. Only the desktop that asks and the devices that hold the session's
/// secret ever see it.
///
/// On the wire it is UTF-8 JSON, an object with exactly the members `tool`, `summary` and
/// `detail` (1-64, 1-200 and 0-2,000 Unicode scalars), all strings, nothing else, no control
/// character but `\n` and `\t` in `detail`, at most 4,096 bytes.
public struct ApprovalContent: Sendable, Hashable, CustomStringConvertible {
    public let tool: String
    public let summary: String
    public let detail: String

    /// The most bytes the JSON may have.
    public static let maxBytes = 4_096

    /// Checks the limits of approvals.md.
    ///
    /// - Throws: ``CryptoError/invalidApprovalContent`` when a field is empty (tool, summary),
    ///   too long, or holds a control character it may not.
    public init(tool: String, summary: String, detail: String = "") throws {
        guard Self.isValid(tool, maxScalars: 64, minScalars: 1, allowsLines: false),
            Self.isValid(summary, maxScalars: 200, minScalars: 1, allowsLines: false),
            Self.isValid(detail, maxScalars: 2_000, minScalars: 0, allowsLines: true)
        else { throw CryptoError.invalidApprovalContent }
        self.tool = tool
        self.summary = summary
        self.detail = detail
        guard Self.encode(self).count <= Self.maxBytes else { throw CryptoError.invalidApprovalContent }
    }

    /// Never prints the content: it is what the agent wants to run.
    public var description: String { "ApprovalContent(<redacted>)" }

    static func isValid(_ text: String, maxScalars: Int, minScalars: Int, allowsLines: Bool) -> Bool {
        let scalars = text.unicodeScalars
        guard scalars.count >= minScalars, scalars.count <= maxScalars else { return false }
        return scalars.allSatisfy { scalar in
            guard scalar.properties.generalCategory == .control else { return true }
            return allowsLines && (scalar == "\n" || scalar == "\t")
        }
    }

    /// The canonical JSON: `{"tool":...,"summary":...,"detail":...}`, non-ASCII as UTF-8,
    /// `"` `\` newline and tab escaped.
    package static func encode(_ content: ApprovalContent) -> [UInt8] {
        var out = Array("{\"tool\":".utf8)
        string(content.tool, into: &out)
        out += Array(",\"summary\":".utf8)
        string(content.summary, into: &out)
        out += Array(",\"detail\":".utf8)
        string(content.detail, into: &out)
        out.append(UInt8(ascii: "}"))
        return out
    }

    static func string(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Reads the JSON strictly: anything but exactly the three string members within their
    /// limits, in valid UTF-8 JSON, is refused.
    package static func decode(_ bytes: [UInt8]) throws -> ApprovalContent {
        guard bytes.count <= maxBytes, let text = String(validating: bytes, as: UTF8.self) else {
            throw CryptoError.authenticationFailure
        }
        var reader = StrictJSONObjectReader(Array(text.utf8))
        let members = try reader.stringMembers()
        guard members.count == 3, let tool = members["tool"], let summary = members["summary"],
            let detail = members["detail"]
        else { throw CryptoError.authenticationFailure }
        do {
            return try ApprovalContent(tool: tool, summary: summary, detail: detail)
        } catch {
            throw CryptoError.authenticationFailure
        }
    }
}

/// An object of string members, read strictly (RFC 8259): each name once, every value a string,
/// escapes checked (a lone surrogate is refused), white space only between tokens.
struct StrictJSONObjectReader {
    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func stringMembers() throws -> [String: String] {
        var members: [String: String] = [:]
        skipSpace()
        try expect(UInt8(ascii: "{"))
        skipSpace()
        if peek() == UInt8(ascii: "}") {
            index += 1
        } else {
            while true {
                skipSpace()
                let name = try string()
                skipSpace()
                try expect(UInt8(ascii: ":"))
                skipSpace()
                let value = try string()
                guard members.updateValue(value, forKey: name) == nil else { throw CryptoError.authenticationFailure }
                skipSpace()
                if peek() == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                try expect(UInt8(ascii: "}"))
                break
            }
        }
        skipSpace()
        guard index == bytes.count else { throw CryptoError.authenticationFailure }
        return members
    }

    func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func skipSpace() {
        while let byte = peek(), byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }

    mutating func expect(_ byte: UInt8) throws {
        guard peek() == byte else { throw CryptoError.authenticationFailure }
        index += 1
    }

    mutating func string() throws -> String {
        try expect(UInt8(ascii: "\""))
        var scalars = String.UnicodeScalarView()
        var utf8: [UInt8] = []
        func flush() throws {
            guard !utf8.isEmpty else { return }
            guard let text = String(validating: utf8, as: UTF8.self) else { throw CryptoError.authenticationFailure }
            scalars.append(contentsOf: text.unicodeScalars)
            utf8.removeAll()
        }
        while let byte = peek() {
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                try flush()
                return String(scalars)
            case UInt8(ascii: "\\"):
                try flush()
                guard let escape = peek() else { throw CryptoError.authenticationFailure }
                index += 1
                switch escape {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    var value = try hex4()
                    if (0xD800..<0xDC00).contains(value) {
                        guard peek() == UInt8(ascii: "\\") else { throw CryptoError.authenticationFailure }
                        index += 1
                        try expect(UInt8(ascii: "u"))
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw CryptoError.authenticationFailure }
                        value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(value) {
                        throw CryptoError.authenticationFailure
                    }
                    guard let scalar = Unicode.Scalar(value) else { throw CryptoError.authenticationFailure }
                    scalars.append(scalar)
                default:
                    throw CryptoError.authenticationFailure
                }
            default:
                guard byte >= 0x20 else { throw CryptoError.authenticationFailure }
                utf8.append(byte)
            }
        }
        throw CryptoError.authenticationFailure
    }

    mutating func hex4() throws -> UInt32 {
        guard bytes.count - index >= 4 else { throw CryptoError.authenticationFailure }
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = Character(Unicode.Scalar(bytes[index])).hexDigitValue else {
                throw CryptoError.authenticationFailure
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }
}

/// The request's identity: what the body's AEAD binds (approvals.md, "Bytes").
///
/// ```text
/// aad = "unbound-approval-request-v1" || 0x00 || user_id || 0x00 || session_id || 0x00
///       || request_id || 0x00 || requester_device_id || 0x00 || expires_at (8 bytes, BE)
/// ```
public struct ApprovalRequestContext: Sendable, Hashable {
    public var userID: UUID
    public var sessionID: UUID
    public var requestID: UUID
    public var requesterDeviceID: UUID
    /// Unix seconds, below 2^63.
    public var expiresAt: UInt64
    /// The session secret's generation, 1 to 2^31 - 1.
    public var generation: UInt32

    /// Creates a context.
    public init(
        userID: UUID, sessionID: UUID, requestID: UUID, requesterDeviceID: UUID, expiresAt: UInt64, generation: UInt32
    ) {
        self.userID = userID
        self.sessionID = sessionID
        self.requestID = requestID
        self.requesterDeviceID = requesterDeviceID
        self.expiresAt = expiresAt
        self.generation = generation
    }

    /// Whether the times and the generation are in range.
    var isInRange: Bool { expiresAt < 1 << 63 && (1...UInt32(Int32.max)).contains(generation) }

    package var aad: [UInt8] { aad(SealedRequestLabels.approval) }

    /// The AAD under one kind's prefix.
    func aad(_ labels: SealedRequestLabels) -> [UInt8] {
        var out = Array(labels.aadPrefix.utf8)
        for id in [userID, sessionID, requestID, requesterDeviceID] {
            out.append(0)
            out += Array(id.uuidString.lowercased().utf8)
        }
        out.append(0)
        out += ApprovalCrypto.bigEndian(expiresAt)
        return out
    }
}

/// The approval's key and request body (approvals.md): the request sealed under a key derived
/// from the session secret, so that only the desktop that asks and the devices that hold the
/// secret can read it.
///
/// ```text
/// K    = HKDF-SHA256(ikm = the secret's 32 raw bytes, salt = request_id (16 raw bytes),
///                    info = "unbound-approval-v1" || 0x00 || generation (4 bytes), L = 32)
/// body = 0x01 || generation (4) || nonce (12) || ChaCha20-Poly1305(K, nonce, aad, plaintext)
/// read = HMAC-SHA256(K, "unbound-approval-read-v1" || 0x00 || request_id)
/// ```
public enum ApprovalCrypto {
    /// The body's version byte.
    public static let version: UInt8 = 0x01

    static func bigEndian(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> UInt64(56 - 8 * $0)) }
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: value >> UInt32(24 - 8 * $0)) }
    }

    static func rawUUID(_ id: UUID) -> [UInt8] {
        withUnsafeBytes(of: id.uuid) { Array($0) }
    }

    /// The request's key `K`.
    package static func key(secret: SessionSecret, requestID: UUID, generation: UInt32) throws -> SecureBytes {
        try key(secret: secret, id: requestID, generation: generation, labels: .approval)
    }

    /// One kind's key: `HKDF-SHA256(secret, salt: id, info: labels.keyInfo || 0x00 || generation)`.
    static func key(
        secret: SessionSecret, id: UUID, generation: UInt32, labels: SealedRequestLabels
    ) throws -> SecureBytes {
        try HKDFSHA256.deriveKey(
            inputKeyMaterial: secret.rawRepresentation, salt: rawUUID(id),
            info: Array(labels.keyInfo.utf8) + [0] + bigEndian(generation), outputByteCount: 32)
    }

    /// `version || generation || nonce || ChaCha20-Poly1305(K, nonce, aad, plaintext)` for one kind.
    static func sealBody(
        _ plaintext: [UInt8], context: ApprovalRequestContext, secret: SessionSecret, nonce: [UInt8],
        labels: SealedRequestLabels
    ) throws -> [UInt8] {
        guard context.isInRange, nonce.count == 12 else { throw CryptoError.invalidApprovalContent }
        let key = try key(secret: secret, id: context.requestID, generation: context.generation, labels: labels)
        let sealed = try ChaCha20Poly1305.seal(plaintext, using: key, nonce: nonce, authenticating: context.aad(labels))
        return [version] + bigEndian(context.generation) + nonce + sealed
    }

    /// The plaintext of a stored body of one kind, or ``CryptoError/authenticationFailure``
    /// without saying which check failed.
    static func openBody(
        _ text: String, context: ApprovalRequestContext, secret: SessionSecret, labels: SealedRequestLabels
    ) throws -> [UInt8] {
        guard context.isInRange, let body = try? ByteEncoding.bytes(base64: text), body.count >= 1 + 4 + 12 + 16,
            body[0] == version, Array(body[1..<5]) == bigEndian(context.generation)
        else { throw CryptoError.authenticationFailure }
        let key = try key(secret: secret, id: context.requestID, generation: context.generation, labels: labels)
        do {
            return try ChaCha20Poly1305.open(
                Array(body[17...]), using: key, nonce: Array(body[5..<17]), authenticating: context.aad(labels))
        } catch {
            throw CryptoError.authenticationFailure
        }
    }

    /// Seals `content` for the request `context`: the body's bytes, as the remote stores them
    /// in base64.
    ///
    /// - Throws: ``CryptoError/invalidApprovalContent`` for times or a generation out of range.
    public static func seal(
        _ content: ApprovalContent, context: ApprovalRequestContext, secret: SessionSecret
    ) throws -> [UInt8] {
        try seal(
            content, context: context, secret: secret, nonce: SecureBytes(randomCount: 12).withUnsafeBytes { Array($0) }
        )
    }

    /// Sealing with a given nonce: for the vector files only (a nonce used twice with one key
    /// breaks the AEAD).
    package static func seal(
        _ content: ApprovalContent, context: ApprovalRequestContext, secret: SessionSecret, nonce: [UInt8]
    ) throws -> [UInt8] {
        try sealBody(ApprovalContent.encode(content), context: context, secret: secret, nonce: nonce, labels: .approval)
    }

    /// Opens a request body (its stored base64) for `context` with the session secret of the
    /// body's generation.
    ///
    /// - Throws: ``CryptoError/authenticationFailure`` for anything that is not a body sealed for
    ///   exactly this request (without saying which check failed): base64 that is not padded
    ///   and canonical, another version byte, another generation than the context's, a short
    ///   body, a tag that does not verify, a plaintext that is not the content's strict JSON.
    public static func open(
        body text: String, context: ApprovalRequestContext, secret: SessionSecret
    ) throws -> ApprovalContent {
        try ApprovalContent.decode(openBody(text, context: context, secret: secret, labels: .approval))
    }

    /// The generation a stored body names (bytes 1-4), to find the secret that opens it; `nil`
    /// for text that is not a body.
    public static func generation(ofBody text: String) -> UInt32? {
        guard let body = try? ByteEncoding.bytes(base64: text), body.count >= 5, body[0] == version else { return nil }
        return body[1..<5].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// `read`: the proof that whoever answers derived this request's key, so held the secret.
    public static func readProof(secret: SessionSecret, requestID: UUID, generation: UInt32) throws -> [UInt8] {
        let key = try key(secret: secret, requestID: requestID, generation: generation)
        return HMACSHA256.authenticationCode(
            for: Array("unbound-approval-read-v1".utf8) + [0] + Array(requestID.uuidString.lowercased().utf8),
            using: key)
    }
}

/// The labels that keep one kind of sealed request from opening as another: an approval's body
/// never opens as an agent's question, nor the reverse (notifications-2.md).
struct SealedRequestLabels: Sendable {
    /// The HKDF info's text, before `0x00 || generation`.
    let keyInfo: String
    /// The AAD's first field.
    let aadPrefix: String

    static let approval = SealedRequestLabels(keyInfo: "unbound-approval-v1", aadPrefix: "unbound-approval-request-v1")
    static let question = SealedRequestLabels(keyInfo: "unbound-question-v1", aadPrefix: "unbound-question-request-v1")
}
