import RemoteContract
import RemoteRules

/// The RequestControl group of `UNBOUND-REMOTE-RULES-V1`: who may cancel or reopen an approval
/// request, answered by ``RequestRules/control(_:transition:hashKept:proves:)`` as the embedded
/// remote runs it.
extension RemoteRulesGroup {
    /// The control a call carries: the one whose SHA-256 the request keeps, 32 other bytes, 31 of
    /// its bytes, text that is not base64, or none.
    public enum ControlWord: String, Sendable, CaseIterable {
        case right, wrong, short, malformed, none
    }

    /// What a cancel (of a pending request) or a reopen (of an approved one, naming its decision)
    /// gets when the caller's request of the call's id is `approvalBy`'s, keeps a control hash
    /// (`controlHash`) and was reopened `reopened` times, and the call carries `control`; `nil`:
    /// the request's transition decides.
    public static func requestControl(
        _ call: RequestRules.ControlCall, approvalBy: RowHolder, controlHash: Bool, control: ControlWord,
        reopened: Int
    ) -> RequestRules.ControlRefusal? {
        let held = approvalBy.named(device: scopeDevice, other: scopeOther) != nil
        let transition =
            held
            ? RequestRules.transition(
                approval: call == .cancel ? .pending : .approved, expired: false,
                on: call == .cancel ? .cancel : .reopen(decisionMatches: true, reopened: reopened)) : nil
        return RequestRules.control(
            call, transition: transition, hashKept: controlHash, proves: controlHash && control == .right)
    }

    /// Whether a RequestControl test gets its answer (`allowed`, or the refusal with its words);
    /// `nil` when a field it needs is missing or malformed.
    static func requestControlMatches(_ test: Test) -> Bool? {
        guard let call = test.event.flatMap(RequestRules.ControlCall.init(rawValue:)),
            let holder = test.approvalBy.flatMap(RowHolder.init(rawValue:)), let hash = test.controlHash,
            let control = test.control.flatMap(ControlWord.init(rawValue:)), let reopened = test.reopened,
            test.answer != nil
        else { return nil }
        return answers(
            test,
            requestControl(call, approvalBy: holder, controlHash: hash, control: control, reopened: reopened))
    }
}
