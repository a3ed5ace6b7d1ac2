import Foundation

/// What an agent asks the person (notifications-2.md, "Questions, sealed"; docs/agent-hooks.md,
/// "Questions with choices"): a text, or one to four multiple-choice questions. Only the desktop
/// that asks and the devices that hold the session's secret ever see it.
///
/// On the wire it is UTF-8 JSON of at most 4,096 bytes, one of two shapes:
/// - `{"text": ...}`: a string of 1-2,000 Unicode scalars, no control character but `\n` and
///   `\t`, read as strictly as an approval's content (white space between tokens allowed);
/// - `{"questions":[{"question":...,"header":...,"options":[...],"multiSelect":false}]}`: in
///   exactly this canonical form (these members in this order, no white space, strings escaped as
///   the text form escapes them), each question as ``ChoiceQuestion`` says.
public struct QuestionContent: Sendable, Hashable, CustomStringConvertible {
    /// What the question holds.
    public enum Kind: Sendable, Hashable {
        /// A text the person answers in the session's own channel.
        case text(String)
        /// Multiple-choice questions answered by a signed choice (``QuestionAnswerCrypto``).
        case choices([ChoiceQuestion])
    }

    public let kind: Kind

    /// The most bytes the JSON may have.
    public static let maxBytes = 4_096

    /// A text question.
    ///
    /// - Throws: ``CryptoError/invalidApprovalContent`` when the text is empty, longer than 2,000
    ///   scalars or 4,096 bytes of JSON, or holds a control character other than `\n` and `\t`.
    public init(text: String) throws {
        guard ApprovalContent.isValid(text, maxScalars: 2_000, minScalars: 1, allowsLines: true) else {
            throw CryptoError.invalidApprovalContent
        }
        kind = .text(text)
        guard Self.encode(self).count <= Self.maxBytes else { throw CryptoError.invalidApprovalContent }
    }

    /// Multiple-choice questions: one to four, each question's text distinct.
    ///
    /// - Throws: ``CryptoError/invalidApprovalContent`` for none or more than four, two with the
    ///   same text, or JSON over 4,096 bytes.
    public init(choices: [ChoiceQuestion]) throws {
        guard (1...4).contains(choices.count), Set(choices.map(\.question)).count == choices.count else {
            throw CryptoError.invalidApprovalContent
        }
        kind = .choices(choices)
        guard Self.encode(self).count <= Self.maxBytes else { throw CryptoError.invalidApprovalContent }
    }

    /// The text of a text question, `nil` for choices.
    public var text: String? {
        if case .text(let text) = kind { return text }
        return nil
    }

    /// The questions of a multiple-choice question, `nil` for a text.
    public var choices: [ChoiceQuestion]? {
        if case .choices(let choices) = kind { return choices }
        return nil
    }

    /// Never prints the content: it may say anything about the work.
    public var description: String { "QuestionContent(<redacted>)" }

    /// The canonical JSON: `{"text":...}` or `{"questions":[...]}`, non-ASCII as UTF-8, `"` `\`
    /// newline and tab escaped.
    package static func encode(_ content: QuestionContent) -> [UInt8] {
        switch content.kind {
        case .text(let text):
            var out = Array("{\"text\":".utf8)
            ApprovalContent.string(text, into: &out)
            out.append(UInt8(ascii: "}"))
            return out
        case .choices(let choices):
            return ChoiceQuestion.encode(choices)
        }
    }

    /// Reads the JSON strictly: anything but one of the two shapes within its limits is refused.
    package static func decode(_ bytes: [UInt8]) throws -> QuestionContent {
        guard bytes.count <= maxBytes, let text = String(validating: bytes, as: UTF8.self) else {
            throw CryptoError.authenticationFailure
        }
        if bytes.starts(with: Array(ChoiceQuestion.opening.utf8)) {
            return try ChoiceQuestion.decode(bytes)
        }
        var reader = StrictJSONObjectReader(Array(text.utf8))
        let members = try reader.stringMembers()
        guard members.count == 1, let value = members["text"] else { throw CryptoError.authenticationFailure }
        do {
            return try QuestionContent(text: value)
        } catch {
            throw CryptoError.authenticationFailure
        }
    }
}

/// The question's identity: what the body's AEAD binds, as an approval request's with the
/// question's id in place of the request's and its own prefix.
///
/// ```text
/// aad = "unbound-question-request-v1" || 0x00 || user_id || 0x00 || session_id || 0x00
///       || question_id || 0x00 || requester_device_id || 0x00 || expires_at (8 bytes, BE)
/// ```
public struct QuestionContext: Sendable, Hashable {
    public var userID: UUID
    public var sessionID: UUID
    public var questionID: UUID
    public var requesterDeviceID: UUID
    /// Unix seconds, below 2^63.
    public var expiresAt: UInt64
    /// The session secret's generation, 1 to 2^31 - 1.
    public var generation: UInt32

    /// Creates a context.
    public init(
        userID: UUID, sessionID: UUID, questionID: UUID, requesterDeviceID: UUID, expiresAt: UInt64,
        generation: UInt32
    ) {
        self.userID = userID
        self.sessionID = sessionID
        self.questionID = questionID
        self.requesterDeviceID = requesterDeviceID
        self.expiresAt = expiresAt
        self.generation = generation
    }

    /// The same fields in an approval request's shape (the byte layout is shared).
    var fields: ApprovalRequestContext {
        ApprovalRequestContext(
            userID: userID, sessionID: sessionID, requestID: questionID, requesterDeviceID: requesterDeviceID,
            expiresAt: expiresAt, generation: generation)
    }

    /// The AAD, as the vector files show it.
    package var aad: [UInt8] { fields.aad(.question) }
}

/// A question's key and body (notifications-2.md): byte for byte an approval request's
/// (approvals.md) with two labels changed, so that neither body opens as the other.
///
/// ```text
/// K    = HKDF-SHA256(ikm = the secret's 32 raw bytes, salt = question_id (16 raw bytes),
///                    info = "unbound-question-v1" || 0x00 || generation (4 bytes), L = 32)
/// body = 0x01 || generation (4) || nonce (12) || ChaCha20-Poly1305(K, nonce, aad, plaintext)
/// ```
public enum QuestionCrypto {
    /// The question's key `K`.
    package static func key(secret: SessionSecret, questionID: UUID, generation: UInt32) throws -> SecureBytes {
        try ApprovalCrypto.key(secret: secret, id: questionID, generation: generation, labels: .question)
    }

    /// Seals `content` for the question `context`: the body's bytes, as the remote stores them
    /// in base64.
    ///
    /// - Throws: ``CryptoError/invalidApprovalContent`` for times or a generation out of range.
    public static func seal(
        _ content: QuestionContent, context: QuestionContext, secret: SessionSecret
    ) throws
        -> [UInt8]
    {
        try seal(
            content, context: context, secret: secret, nonce: SecureBytes(randomCount: 12).withUnsafeBytes { Array($0) }
        )
    }

    /// Sealing with a given nonce: for the vector files only.
    package static func seal(
        _ content: QuestionContent, context: QuestionContext, secret: SessionSecret, nonce: [UInt8]
    ) throws -> [UInt8] {
        try ApprovalCrypto.sealBody(
            QuestionContent.encode(content), context: context.fields, secret: secret, nonce: nonce, labels: .question)
    }

    /// Opens a question body (its stored base64) for `context` with the secret of its generation.
    ///
    /// - Throws: ``CryptoError/authenticationFailure`` for anything that is not a body sealed for
    ///   exactly this question (an approval's body included), without saying which check failed.
    public static func open(
        body text: String, context: QuestionContext, secret: SessionSecret
    ) throws
        -> QuestionContent
    {
        try QuestionContent.decode(
            ApprovalCrypto.openBody(text, context: context.fields, secret: secret, labels: .question))
    }

    /// The generation a stored body names, to find the secret that opens it.
    public static func generation(ofBody text: String) -> UInt32? { ApprovalCrypto.generation(ofBody: text) }
}
