import RemoteContract
import RemoteRules

/// The ApprovalAnswer group of `UNBOUND-REMOTE-RULES-V1`: who may answer an approval request and
/// with what bytes, answered by ``AnswerRules`` as the embedded remote runs it.
extension RemoteRulesGroup {
    /// What an answer from the calling device gets when the caller's request of the call's id is
    /// `approvalBy`'s and `from` its status (not past its time), the device is the caller's
    /// (`mine`) and certified (`certified`), the call says `verdict`, its decision and signature
    /// are `decisionBytes` and `signatureBytes` long (`nil`: not canonical base64) and the decision
    /// `namesDevice`; `nil`: it may answer, and the request's transition decides.
    public static func approvalAnswer(
        approvalBy: RowHolder, from: ApprovalStatus, mine: Bool, certified: Bool, verdict: String,
        decisionBytes: Int?, signatureBytes: Int?, namesDevice: Bool
    ) -> AnswerRules.ApprovalRefusal? {
        let decides = ApprovalVerdict(rawValue: verdict).map {
            RequestRules.transition(approval: from, expired: false, on: .answer($0)).takes
        }
        return AnswerRules.approvalAnswer(
            requestedBy: approvalBy.named(device: scopeDevice, other: scopeOther), device: scopeDevice, mine: mine,
            verdict: verdict, decisionBytes: decisionBytes, signatureBytes: signatureBytes, decides: decides ?? false,
            certified: certified, namesDevice: namesDevice)
    }

    /// Whether an ApprovalAnswer test gets its answer (`allowed`, or the refusal with its words);
    /// `nil` when a field it needs is missing or malformed.
    static func approvalAnswerMatches(_ test: Test) -> Bool? {
        guard let holder = test.approvalBy.flatMap(RowHolder.init(rawValue:)),
            let from = test.from.flatMap(ApprovalStatus.init(rawValue:)), let mine = test.mine,
            let certified = test.trusted, let verdict = test.verdict, let names = test.namesDevice,
            test.answer != nil
        else { return nil }
        let refusal = approvalAnswer(
            approvalBy: holder, from: from, mine: mine, certified: certified, verdict: verdict,
            decisionBytes: test.bodyBytes, signatureBytes: test.signatureBytes, namesDevice: names)
        return answers(test, refusal)
    }
}
