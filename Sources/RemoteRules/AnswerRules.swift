/// Who may answer an agent's question, and with what bytes (docs/agent-hooks.md, "Questions with
/// choices"): the checks `private.answer_question` makes before the question's transition
/// (``RequestRules/transition(question:expired:on:)``) decides what the answer changes. The call
/// has passed the caller gate (``CallerRules``) already; these checks hold the answering device
/// and the sealed answer to the question. `testvectors/remote-rules-v1.json` (group
/// `QuestionAnswer`) holds the SQL function and this rule to the same answers.
public enum AnswerRules {
    /// Why an answer is refused, in the order the checks are made.
    public enum Refusal: String, Sendable, Hashable, CaseIterable {
        /// The caller has no question of that id (none, or another user's).
        case notYourQuestion = "not_your_question"
        /// The answering device is not one of the caller's.
        case notYourDevice = "not_your_device"
        /// The trust log in force does not certify the answering device, or revokes it.
        case notCertified = "not_certified"
        /// The answering device asked the question.
        case ownQuestion = "own_question"
        /// The answer is not canonical base64 of ``AnswerRules/sealedAnswerBytes`` bytes.
        case notSealed = "not_sealed"
        /// The sealed answer's version byte is not 1, or its generation not the question's.
        case otherHeader = "other_header"

        /// What the refusal says, as the SQL raises it.
        public var message: String {
            switch self {
            case .notYourQuestion: "the question is not one of yours"
            case .notYourDevice: "the device is not one of yours"
            case .notCertified: "only a device the user's trust log certifies may answer"
            case .ownQuestion: "the asking device cannot answer its own question"
            case .notSealed: "answer must be canonical base64 of a sealed answer"
            case .otherHeader: "the answer's version or generation is not the question's"
            }
        }

        /// The SQLSTATE the SQL raises it with: 22023 for the answer's bytes, 42501 for the rest.
        public var sqlState: String {
            switch self {
            case .notSealed, .otherHeader: "22023"
            default: "42501"
            }
        }
    }

    /// The bytes a sealed answer may have: version, generation, nonce, at least one byte of
    /// plaintext, the tag; at most 1,024 bytes of plaintext.
    public static let sealedAnswerBytes = (1 + 4 + 12 + 1 + 16)...(1 + 4 + 12 + 1_024 + 16)

    /// Why `device` may not answer the question of the call's id, or `nil`: `askedBy` is the
    /// device that asked the caller's question of that id (`nil`: the caller has none), `mine`
    /// says whether `device` is one of the caller's, `certified` whether the trust log in force
    /// certifies it, `answerBytes` is the answer's length (`nil`: not canonical base64) and
    /// `headerMatches` whether its version byte is 1 and its generation the question's.
    public static func questionAnswer(
        askedBy: String?, device: String, mine: Bool, certified: Bool, answerBytes: Int?, headerMatches: Bool
    ) -> Refusal? {
        guard let askedBy else { return .notYourQuestion }
        guard mine else { return .notYourDevice }
        guard certified else { return .notCertified }
        guard askedBy != device else { return .ownQuestion }
        guard let answerBytes, sealedAnswerBytes.contains(answerBytes) else { return .notSealed }
        return headerMatches ? nil : .otherHeader
    }
}
