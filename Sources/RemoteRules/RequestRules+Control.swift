import RemoteContract

extension RequestRules {
    /// The calls only an approval request's requester may make, proving it with the control
    /// whose SHA-256 the request keeps (docs/approvals.md).
    public enum ControlCall: String, Sendable, Hashable, CaseIterable {
        case cancel, reopen
    }

    /// Why a cancel or a reopen is refused, in the words of `private.cancel_approval` and
    /// `private.reopen_approval`.
    public enum ControlRefusal: String, Sendable, Hashable, CaseIterable, RuleRefusal {
        /// The caller has no request of that id.
        case notYourRequest = "not_your_request"
        /// The request keeps a control hash and the call's control does not prove it.
        case cancelNotRequester = "cancel_not_requester"
        /// The request keeps no control hash, or the call's control does not prove it.
        case reopenNotRequester = "reopen_not_requester"
        /// The request was reopened ``RequestRules/reopenLimit`` times already.
        case overLimit = "over_limit"

        /// What the refusal says.
        public var message: String {
            switch self {
            case .notYourRequest: "the request is not one of yours"
            case .cancelNotRequester: "only the requesting device may cancel this request"
            case .reopenNotRequester: "only the requesting device may reopen this request"
            case .overLimit: "a request is reopened at most \(RequestRules.reopenLimit) times"
            }
        }

        /// 54000 (program limit exceeded) for the reopen budget, else 42501.
        public var sqlState: String { self == .overLimit ? "54000" : "42501" }
    }

    /// The bytes a control has: the requester's secret, whose SHA-256 the request keeps.
    public static let controlBytes = 32

    /// Why a cancel or a reopen is refused, or `nil`: the request's transition decides what it
    /// changes. `transition` is what the call does to the caller's request of its id (`nil`: the
    /// caller has none); `hashKept`, whether the request keeps a control hash; `controlBytes`, the
    /// length of the call's control (`nil`: none, or not canonical base64); `digestMatches`,
    /// whether its SHA-256 is the kept hash. The control proves the requester when it is
    /// ``controlBytes`` long and its digest matches. A request without a hash is anyone's to cancel
    /// and no one's to reopen.
    public static func control(
        _ call: ControlCall, transition: Transition<ApprovalStatus>?, hashKept: Bool, controlBytes: Int?,
        digestMatches: Bool
    ) -> ControlRefusal? {
        guard let transition else { return .notYourRequest }
        let proves = hashKept && controlBytes == Self.controlBytes && digestMatches
        switch call {
        case .cancel where hashKept && !proves: return .cancelNotRequester
        case .reopen where !hashKept || !proves: return .reopenNotRequester
        default: break
        }
        if case .overLimit = transition { return .overLimit }
        return nil
    }
}
