import Foundation
import SecretCrypto

/// An answer to a multiple-choice question (docs/agent-hooks.md, "Questions with choices"):
/// the chosen options, signed with the answering device's Ed25519 signing key and sealed under
/// the session secret (`QuestionAnswerCrypto`), so the server neither reads nor forges it.
///
/// ```text
/// answer = "unbound-question-answer-v1" || 0x00 || user_id || 0x00 || session_id || 0x00
///   || question_id || 0x00 || device_id || 0x00
///   || SHA-256(the decoded question body) (32) || answered_at (8 bytes, BE)
///   || epoch (4) || log_seq (8) || log_hash (32)
///   || count (1 byte, 1-4) || for each question, in order: n (1 byte, 1-8) || n indexes (1 byte each)
/// sealed plaintext = answer || Ed25519 signature over answer (64)
/// ```
/// Indexes are strictly increasing and below the question's option count; a single-choice
/// question has exactly one. The log head is the answering device's pinned trust-log head, as in
/// an approval decision: the desktop verifies the device's certificate at that position.
public struct QuestionAnswer: Sendable, Hashable {
    /// The statement's prefix (and the sealing's label).
    public static let prefix = QuestionAnswerCrypto.label

    public var userID: UUID
    public var sessionID: UUID
    public var questionID: UUID
    /// The answering device.
    public var deviceID: UUID
    /// SHA-256 of the question body the answer is about.
    public var bodyHash: [UInt8]
    /// When it was answered, Unix seconds (below 2^63).
    public var answeredAt: UInt64
    /// The answering device's pinned trust-log head.
    public var logHead: ApprovalDecision.LogHead
    /// The chosen option indexes, one list per question, in the question's order.
    public var choices: [[Int]]

    /// Creates an answer.
    public init(
        userID: UUID, sessionID: UUID, questionID: UUID, deviceID: UUID, bodyHash: [UInt8], answeredAt: UInt64,
        logHead: ApprovalDecision.LogHead, choices: [[Int]]
    ) {
        self.userID = userID
        self.sessionID = sessionID
        self.questionID = questionID
        self.deviceID = deviceID
        self.bodyHash = bodyHash
        self.answeredAt = answeredAt
        self.logHead = logHead
        self.choices = choices
    }

    /// The exact bytes that are signed.
    ///
    /// - Throws: ``DeviceTrustError`` `.invalidChoice` for choices that cannot be written (none,
    ///   more than four questions, a question with no index or more than eight, an index out of 0-7
    ///   or not increasing).
    public func body() throws(DeviceTrustError) -> [UInt8] {
        try Self.checkShape(choices)
        var out = StatementWriter(prefix: Self.prefix)
        for id in [userID, sessionID, questionID, deviceID] {
            out.identifier(id)
            out.separator()
        }
        out.bytes(bodyHash)
        out.integer(answeredAt)
        out.bytes((0..<4).map { UInt8(truncatingIfNeeded: logHead.epoch >> (24 - 8 * $0)) })
        out.integer(logHead.seq)
        out.bytes(logHead.hash)
        out.bytes([UInt8(choices.count)])
        for indexes in choices {
            out.bytes([UInt8(indexes.count)] + indexes.map { UInt8($0) })
        }
        return out.bytes
    }

    static func checkShape(_ choices: [[Int]]) throws(DeviceTrustError) {
        guard (1...4).contains(choices.count) else {
            throw DeviceTrustError(.invalidChoice, "an answer answers one to four questions")
        }
        for indexes in choices {
            guard (1...ChoiceQuestion.maxOptions).contains(indexes.count),
                indexes.allSatisfy({ (0..<ChoiceQuestion.maxOptions).contains($0) }),
                zip(indexes, indexes.dropFirst()).allSatisfy({ $0 < $1 })
            else {
                throw DeviceTrustError(
                    .invalidChoice, "each question's choice is one to eight increasing option indexes below 8")
            }
        }
    }

    /// Parses a statement strictly: exact prefix and separators, canonical lowercase identifiers,
    /// exact lengths, a time below 2^63, a head in range, choices of the right shape, nothing after.
    public static func parse(_ bytes: [UInt8]) throws(DeviceTrustError) -> QuestionAnswer {
        var reader = StatementReader(bytes)
        try reader.prefix(prefix)
        var ids: [UUID] = []
        for _ in 0..<4 {
            ids.append(try reader.identifier())
            try reader.separator()
        }
        let hash = Array(try reader.take(32))
        let answered = try reader.integer()
        let epoch = try reader.take(4).reduce(0) { $0 << 8 | UInt32($1) }
        let seq = try reader.integer()
        let headHash = Array(try reader.take(32))
        guard answered < 1 << 63 else { throw DeviceTrustError(.invalidText, "the answer's time is out of range") }
        guard epoch >= 1, seq < 10_000 else {
            throw DeviceTrustError(.invalidText, "the answer's trust-log head is out of range")
        }
        var choices: [[Int]] = []
        let count = Int(try reader.take(1).first!)
        for _ in 0..<min(count, 5) {
            let n = Int(try reader.take(1).first!)
            choices.append(try reader.take(min(n, 9)).map { Int($0) })
            if n > 8 { break }
        }
        try checkShape(choices)
        guard choices.count == count else {
            throw DeviceTrustError(.invalidChoice, "the answer's question count is out of range")
        }
        try reader.end()
        return QuestionAnswer(
            userID: ids[0], sessionID: ids[1], questionID: ids[2], deviceID: ids[3], bodyHash: hash,
            answeredAt: answered, logHead: ApprovalDecision.LogHead(epoch: epoch, seq: seq, hash: headHash),
            choices: choices)
    }

    /// The sealed plaintext: the statement and its signature by `signingKey`.
    public func signed(by signingKey: Ed25519PrivateKey) throws(DeviceTrustError) -> [UInt8] {
        let bytes = try body()
        return bytes + signingKey.signature(for: bytes)
    }

    /// Splits a sealed plaintext into its statement and signature and parses the statement,
    /// unverified: the caller finds the signing key of the device it names, then calls
    /// ``accept(_:signingKey:expecting:)``.
    public static func parseSigned(_ plaintext: [UInt8]) throws(DeviceTrustError) -> QuestionAnswer {
        guard plaintext.count > Ed25519PrivateKey.signatureByteCount else {
            throw DeviceTrustError(.truncated, "the answer ends before its signature")
        }
        return try parse(Array(plaintext.dropLast(Ed25519PrivateKey.signatureByteCount)))
    }

    /// The question as the asking desktop sent it: what an answer must match. Never the server's copy.
    public struct Expectation: Sendable, Hashable {
        public var userID: UUID
        public var sessionID: UUID
        public var questionID: UUID
        public var requesterDeviceID: UUID
        /// The device the answer's row names (the sealing is bound to it too).
        public var deviceID: UUID
        /// Unix seconds.
        public var expiresAt: UInt64
        /// The decoded question body the desktop sealed.
        public var body: [UInt8]
        /// The questions, to check the choices against.
        public var questions: [ChoiceQuestion]

        /// Creates an expectation.
        public init(
            userID: UUID, sessionID: UUID, questionID: UUID, requesterDeviceID: UUID, deviceID: UUID,
            expiresAt: UInt64, body: [UInt8], questions: [ChoiceQuestion]
        ) {
            self.userID = userID
            self.sessionID = sessionID
            self.questionID = questionID
            self.requesterDeviceID = requesterDeviceID
            self.deviceID = deviceID
            self.expiresAt = expiresAt
            self.body = body
            self.questions = questions
        }
    }

    /// Verifies a sealed answer's plaintext under the answering device's certified signing key
    /// and checks that it answers exactly the question `expected`: the checks that need no trust
    /// records (the caller has found the device's certificate and no revocation).
    ///
    /// - Returns: The answer.
    /// - Throws: ``DeviceTrustError``: a statement code, `.badSignature`, `.wrongDevice`,
    ///   `.otherRequest`, `.otherBody`, `.ownRequest`, `.outsideWindow` or `.invalidChoice`.
    public static func accept(
        _ plaintext: [UInt8], signingKey: Ed25519PublicKey, expecting expected: Expectation
    ) throws(DeviceTrustError) -> QuestionAnswer {
        let answer = try parseSigned(plaintext)
        let body = Array(plaintext.dropLast(Ed25519PrivateKey.signatureByteCount))
        guard signingKey.isValidSignature(Array(plaintext.suffix(Ed25519PrivateKey.signatureByteCount)), for: body)
        else { throw DeviceTrustError(.badSignature, "the answer does not verify under the device's certified key") }
        guard answer.deviceID == expected.deviceID else {
            throw DeviceTrustError(.wrongDevice, "the answer names another device than its row")
        }
        guard answer.userID == expected.userID, answer.sessionID == expected.sessionID,
            answer.questionID == expected.questionID
        else { throw DeviceTrustError(.otherRequest, "the answer is for another user, session or question") }
        guard answer.bodyHash == SHA256.hash(expected.body) else {
            throw DeviceTrustError(
                .otherBody, "the answer is about another question body than the one this device sent")
        }
        guard answer.deviceID != expected.requesterDeviceID else {
            throw DeviceTrustError(.ownRequest, "the asking device cannot answer its own question")
        }
        // expires_at - 86,430 <= answered_at <= expires_at + 30: a question stands a day at most.
        let earliest = expected.expiresAt >= 86_430 ? expected.expiresAt - 86_430 : 0
        let (latest, overflow) = expected.expiresAt.addingReportingOverflow(30)
        guard answer.answeredAt >= earliest, overflow || answer.answeredAt <= latest else {
            throw DeviceTrustError(.outsideWindow, "the answer's time is outside the question's window")
        }
        guard answer.choices.count == expected.questions.count else {
            throw DeviceTrustError(.invalidChoice, "the answer answers another number of questions")
        }
        for (indexes, question) in zip(answer.choices, expected.questions) {
            guard indexes.allSatisfy({ $0 < question.options.count }), question.multiSelect || indexes.count == 1
            else { throw DeviceTrustError(.invalidChoice, "a choice does not fit its question's options") }
        }
        return answer
    }
}
