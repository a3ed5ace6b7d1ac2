import RemoteContract
import RemoteRules

/// The RequestControl group of `UNBOUND-REMOTE-RULES-V1`: who may cancel or reopen an approval
/// request, answered by ``RequestRules/control(_:transition:hashKept:controlBytes:digestMatches:)``
/// from the control's length and digest, as the embedded remote asks it.
extension RemoteRulesGroup {
    /// The control a call carries, against a request that keeps the SHA-256 of its right bytes:
    /// those bytes; 32 other bytes; 31 bytes whose digest is the one kept (only the length is
    /// wrong); the right bytes in base64 with a line break (not canonical); text that is not
    /// base64; none.
    public enum ControlWord: String, Sendable, CaseIterable {
        case right, wrong, short, noncanonical, malformed, none

        /// The control's length as the rule reads it (`nil`: none, or not canonical base64) and
        /// whether its digest is the one kept.
        public var shape: (bytes: Int?, digestMatches: Bool) {
            switch self {
            case .right: (RequestRules.controlBytes, true)
            case .wrong: (RequestRules.controlBytes, false)
            case .short: (RequestRules.controlBytes - 1, true)
            case .noncanonical, .malformed, .none: (nil, false)
            }
        }
    }

    /// What a cancel (of a pending request) or a reopen (of an approved one, naming its decision)
    /// gets when the caller's request of the call's id is `approvalBy`'s, keeps a control hash
    /// (`controlHash`) and was reopened `reopened` times, and the call's control is
    /// `controlBytes` long (`nil`: none, or not canonical base64) with a digest that matches or
    /// not; `nil`: the request's transition decides.
    public static func requestControl(
        _ call: RequestRules.ControlCall, approvalBy: RowHolder, controlHash: Bool, controlBytes: Int?,
        digestMatches: Bool, reopened: Int
    ) -> RequestRules.ControlRefusal? {
        let held = approvalBy.named(device: scopeDevice, other: scopeOther) != nil
        let transition =
            held
            ? RequestRules.transition(
                approval: call == .cancel ? .pending : .approved, expired: false,
                on: call == .cancel ? .cancel : .reopen(decisionMatches: true, reopened: reopened)) : nil
        return RequestRules.control(
            call, transition: transition, hashKept: controlHash, controlBytes: controlBytes,
            digestMatches: digestMatches)
    }

    /// Whether a RequestControl test gets its answer (`allowed`, or the refusal with its words);
    /// `nil` when a field it needs is missing or malformed.
    static func requestControlMatches(_ test: Test) -> Bool? {
        guard let call = test.event.flatMap(RequestRules.ControlCall.init(rawValue:)),
            let holder = test.approvalBy.flatMap(RowHolder.init(rawValue:)), let hash = test.controlHash,
            let matches = test.digestMatches, let reopened = test.reopened, test.answer != nil
        else { return nil }
        return answers(
            test,
            requestControl(
                call, approvalBy: holder, controlHash: hash, controlBytes: test.controlBytes, digestMatches: matches,
                reopened: reopened))
    }
}
