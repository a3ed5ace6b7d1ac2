import RemoteContract

/// Who may answer an approval request, and with what bytes (docs/approvals.md): the checks
/// `private.answer_approval` makes around the request's transition
/// (``RequestRules/transition(approval:expired:on:)``), with those of the trigger
/// `private.approval_answer_device_trusted`, which holds the answer that decides. The call has
/// passed the caller gate (``CallerRules``) already. `testvectors/remote-rules-v1.json` (group
/// `ApprovalAnswer`) holds the SQL and this rule to the same answers.
extension AnswerRules {
    /// Why an answer to an approval request is refused, in the order the checks are made.
    public enum ApprovalRefusal: String, Sendable, Hashable, CaseIterable {
        /// The answering device is not one of the caller's.
        case notYourDevice = "not_your_device"
        /// The verdict is neither `approve` nor `deny`.
        case unknownVerdict = "unknown_verdict"
        /// The decision is not canonical base64 of ``AnswerRules/decisionBytes`` bytes, or its
        /// signature not of ``AnswerRules/signatureBytes``.
        case notSigned = "not_signed"
        /// The caller has no approval request of that id (none, or another user's).
        case notYourRequest = "not_your_request"
        /// The answering device asked for the approval.
        case ownRequest = "own_request"
        /// The answer would decide, and the trust log in force does not certify the answering
        /// device, or revokes it.
        case notCertified = "not_certified"
        /// The answer would decide, and the decision names another device than the answering one.
        case otherDevice = "other_device"

        /// What the refusal says, as the SQL raises it.
        public var message: String {
            switch self {
            case .notYourDevice: "the device is not one of yours"
            case .unknownVerdict: "verdict must be approve or deny"
            case .notSigned:
                "decision_body and decision_signature must be canonical base64 of a decision and its signature"
            case .notYourRequest: "the request is not one of yours"
            case .ownRequest: "the requesting device cannot answer its own request"
            case .notCertified: "the answering device is not certified in your trust log, or is revoked"
            case .otherDevice: "the decision names another device than the one answering"
            }
        }

        /// The SQLSTATE the SQL raises it with: 42501 for whose the device, the request and the
        /// trust are, 22023 for the call's words and bytes.
        public var sqlState: String {
            switch self {
            case .notYourDevice, .notYourRequest, .notCertified: "42501"
            case .unknownVerdict, .notSigned, .ownRequest, .otherDevice: "22023"
            }
        }
    }

    /// The bytes of a version-2 decision, the only one taken: its prefix, four ids, the verdict,
    /// two digests, the time and the answering device's head of the trust log.
    public static let decisionBytes = 29 + 4 * 37 + 1 + 32 + 32 + 8 + 44

    /// The bytes of the decision's Ed25519 signature.
    public static let signatureBytes = 64

    /// Where a decision names the device that answers: its `device_id`, 36 characters.
    public static let decisionDevice = (29 + 3 * 37)..<(29 + 4 * 37 - 1)

    /// Why `device` may not answer the approval request of the call's id, or `nil`.
    /// `requestedBy` is the device that asked the caller's request of that id (`nil`: the caller
    /// has none), `mine` whether `device` is one of the caller's, `verdict` the call's word,
    /// `decisionBytes` and `signatureBytes` the lengths of the decision and its signature (`nil`:
    /// not canonical base64). `decides` says whether the request's transition takes the answer;
    /// only then do `certified` (the trust log in force certifies `device`) and `namesDevice`
    /// (the decision's ``decisionDevice`` is `device`) count, as the SQL checks them when the
    /// answer is written.
    public static func approvalAnswer(
        requestedBy: String?, device: String, mine: Bool, verdict: String, decisionBytes: Int?, signatureBytes: Int?,
        decides: Bool, certified: Bool, namesDevice: Bool
    ) -> ApprovalRefusal? {
        guard mine else { return .notYourDevice }
        guard ApprovalVerdict(rawValue: verdict) != nil else { return .unknownVerdict }
        guard decisionBytes == Self.decisionBytes, signatureBytes == Self.signatureBytes else { return .notSigned }
        guard let requestedBy else { return .notYourRequest }
        guard requestedBy != device else { return .ownRequest }
        guard decides else { return nil }
        guard certified else { return .notCertified }
        return namesDevice ? nil : .otherDevice
    }
}
