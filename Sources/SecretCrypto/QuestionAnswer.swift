import Foundation

/// Who answers which question: what a sealed answer's AEAD binds (docs/agent-hooks.md,
/// "Questions with choices").
///
/// ```text
/// aad = "unbound-question-answer-v1" || 0x00 || user_id || 0x00 || session_id || 0x00
///       || question_id || 0x00 || device_id
/// ```
/// `device_id` is the answering device: an answer stored under another device's name does not open.
public struct QuestionAnswerContext: Sendable, Hashable {
    public var userID: UUID
    public var sessionID: UUID
    public var questionID: UUID
    /// The answering device.
    public var deviceID: UUID
    /// The generation of the session secret the question was sealed under, 1 to 2^31 - 1.
    public var generation: UInt32

    /// Creates a context.
    public init(userID: UUID, sessionID: UUID, questionID: UUID, deviceID: UUID, generation: UInt32) {
        self.userID = userID
        self.sessionID = sessionID
        self.questionID = questionID
        self.deviceID = deviceID
        self.generation = generation
    }

    /// The AAD, as the vector files show it.
    package var aad: [UInt8] {
        var out = Array(QuestionAnswerCrypto.label.utf8)
        for id in [userID, sessionID, questionID, deviceID] {
            out.append(0)
            out += Array(id.uuidString.lowercased().utf8)
        }
        return out
    }
}

/// A question's answer on its way back to the asking desktop (docs/agent-hooks.md, "Questions
/// with choices"): the answering device's signed statement, sealed under a key derived from the
/// session secret, so the server can neither read the choice nor store one that opens under
/// another device's name.
///
/// ```text
/// K_a  = HKDF-SHA256(ikm = the secret's 32 raw bytes, salt = question_id (16 raw bytes),
///                    info = "unbound-question-answer-v1" || 0x00 || generation (4 bytes), L = 32)
/// body = 0x01 || generation (4) || nonce (12) || ChaCha20-Poly1305(K_a, nonce, aad, plaintext)
/// ```
/// The plaintext (the signed statement and its signature) is DeviceTrust's `QuestionAnswer`; here
/// it is bytes, 1 to ``maxPlaintext`` of them.
public enum QuestionAnswerCrypto {
    /// The HKDF info's and the AAD's first field.
    public static let label = "unbound-question-answer-v1"
    /// The most plaintext bytes an answer carries.
    public static let maxPlaintext = 1_024

    /// The answer key `K_a`.
    package static func key(secret: SessionSecret, questionID: UUID, generation: UInt32) throws -> SecureBytes {
        try HKDFSHA256.deriveKey(
            inputKeyMaterial: secret.rawRepresentation, salt: ApprovalCrypto.rawUUID(questionID),
            info: Array(label.utf8) + [0] + ApprovalCrypto.bigEndian(generation), outputByteCount: 32)
    }

    /// Seals `plaintext` for `context`: the body's bytes, as the remote stores them in base64.
    ///
    /// - Throws: ``CryptoError/invalidApprovalContent`` for an empty or oversized plaintext or a
    ///   generation out of range.
    public static func seal(
        _ plaintext: [UInt8], context: QuestionAnswerContext, secret: SessionSecret
    ) throws
        -> [UInt8]
    {
        try seal(
            plaintext, context: context, secret: secret,
            nonce: SecureBytes(randomCount: 12).withUnsafeBytes { Array($0) })
    }

    /// Sealing with a given nonce: for the vector files only.
    package static func seal(
        _ plaintext: [UInt8], context: QuestionAnswerContext, secret: SessionSecret, nonce: [UInt8]
    ) throws -> [UInt8] {
        guard (1...maxPlaintext).contains(plaintext.count), (1...UInt32(Int32.max)).contains(context.generation),
            nonce.count == 12
        else { throw CryptoError.invalidApprovalContent }
        let key = try key(secret: secret, questionID: context.questionID, generation: context.generation)
        let sealed = try ChaCha20Poly1305.seal(plaintext, using: key, nonce: nonce, authenticating: context.aad)
        return [ApprovalCrypto.version] + ApprovalCrypto.bigEndian(context.generation) + nonce + sealed
    }

    /// Opens a stored answer (its base64) for `context` with the secret of its generation.
    ///
    /// - Throws: ``CryptoError/authenticationFailure`` for anything that is not an answer sealed
    ///   for exactly this question and device, without saying which check failed.
    public static func open(
        body text: String, context: QuestionAnswerContext, secret: SessionSecret
    ) throws
        -> [UInt8]
    {
        guard let body = try? ByteEncoding.bytes(base64: text), body.count >= 1 + 4 + 12 + 1 + 16,
            body.count <= 1 + 4 + 12 + maxPlaintext + 16, body[0] == ApprovalCrypto.version,
            Array(body[1..<5]) == ApprovalCrypto.bigEndian(context.generation),
            (1...UInt32(Int32.max)).contains(context.generation)
        else { throw CryptoError.authenticationFailure }
        let key = try key(secret: secret, questionID: context.questionID, generation: context.generation)
        do {
            return try ChaCha20Poly1305.open(
                Array(body[17...]), using: key, nonce: Array(body[5..<17]), authenticating: context.aad)
        } catch {
            throw CryptoError.authenticationFailure
        }
    }
}
