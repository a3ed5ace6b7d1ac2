import RemoteContract

/// The life of an approval request and of an agent's question as values (docs/approvals.md,
/// docs/notifications.md "Questions"): which new request is refused, and what an answer, a
/// cancel, a reopen, a close or the expiry pass does to a row in a given status. Who may make
/// the call (the requester's control, a certified device, the row's owner) is checked before;
/// the rule decides what the call then changes. The SQL states it as
/// `private.rule_request_refusal`, `private.rule_approval_transition` and
/// `private.rule_question_transition`; `testvectors/remote-rules-v1.json` holds the two to the
/// same answers.
public enum RequestRules {
    /// How often the requester may take back a decision it refused (approvals.md, "Reopen").
    public static let reopenLimit = 20

    /// What the push queue gets when a transition takes effect.
    public enum Push: Sendable, Hashable {
        /// Nothing.
        case none
        /// The request's alerts again, to every device that may answer (a reopened request).
        case alerts
        /// The clearing push that takes the prompt off the other devices, with its `reason`.
        case clearing(reason: String)

        /// The words the SQL rule returns: `none`, `alerts` or `clearing`, and the reason.
        public var words: (push: String, reason: String?) {
            switch self {
            case .none: ("none", nil)
            case .alerts: ("alerts", nil)
            case .clearing(let reason): ("clearing", reason)
            }
        }
    }

    /// What a call does to a row.
    public enum Transition<Status: Sendable & Hashable>: Sendable, Hashable {
        /// The call takes effect: the row's status becomes `status` (for an answer to a question,
        /// it stays pending and the answer is kept), and `push` is queued.
        case takes(Status, push: Push)
        /// The call changes nothing; the caller reports the row's status as read (a pending row
        /// past its time reads as expired).
        case stays(reading: Status)
        /// The call would take effect but the row has used its budget
        /// (``RequestRules/reopenLimit``): a refusal, nothing written.
        case overLimit(reading: Status)

        /// The words the SQL rule returns: `takes`, `stays` or `over_limit`, and the status.
        public var words: (action: String, status: Status) {
            switch self {
            case .takes(let status, _): ("takes", status)
            case .stays(let status): ("stays", status)
            case .overLimit(let status): ("over_limit", status)
            }
        }

        /// Whether the call takes effect.
        public var takes: Bool {
            if case .takes = self { return true }
            return false
        }

        /// What is queued when the call takes effect (``Push/none`` otherwise).
        public var push: Push {
            if case .takes(_, let push) = self { return push }
            return .none
        }
    }

    /// The two kinds of request a device raises for another to answer.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case approval, question
    }

    /// The field a new request is refused for.
    public enum Refusal: String, Sendable, Hashable, CaseIterable {
        /// Not 1 to 2,147,483,647.
        case generation
        /// Not within the kind's ``RequestRules/expiryWindow(_:)`` from now.
        case expiresAt = "expires_at"
        /// Not canonical base64 of ``RequestRules/sealedBodyBytes`` bytes, or its version byte is
        /// not 1 or its generation not the request's.
        case body
    }

    /// A new request refused for one field, in the words `private.require_new_request` raises
    /// it with (SQLSTATE 22023).
    public struct NewRequestRefusal: RuleRefusal, Hashable {
        /// The kind of request refused.
        public let kind: Kind
        /// The field it is refused for.
        public let field: Refusal

        /// The refusal of a new request of `kind` for `field`.
        public init(_ kind: Kind, _ field: Refusal) {
            self.kind = kind
            self.field = field
        }

        /// What the refusal says: the field's bounds, the expiry's in grouped thousands.
        public var message: String {
            func grouped(_ n: Int64) -> String {
                n >= 1000 ? "\(n / 1000)," + String(String(n % 1000 + 1000).dropFirst()) : "\(n)"
            }
            let window = expiryWindow(kind)
            return switch field {
            case .generation: "generation must be 1 to 2147483647"
            case .expiresAt:
                "expires_at must be \(grouped(window.lowerBound)) to \(grouped(window.upperBound)) seconds from now"
            case .body:
                "body must be canonical base64 of a sealed \(kind == .approval ? "request" : "question") of this generation"
            }
        }

        /// 22023 (invalid parameter value), for every field.
        public var sqlState: String { "22023" }
    }

    /// How far ahead of now a request's `expires_at` may be, in seconds: an approval 5 to 600, a
    /// question 60 to 86,400.
    public static func expiryWindow(_ kind: Kind) -> ClosedRange<Int64> {
        kind == .approval ? 5...600 : 60...86_400
    }

    /// The bytes a sealed request or question may have: version, generation, nonce, at least the
    /// JSON's braces, the tag; at most 4,096 bytes of JSON.
    public static let sealedBodyBytes = (1 + 4 + 12 + 2 + 16)...(1 + 4 + 12 + 4_096 + 16)

    /// Why a new request of `kind` is refused, or `nil`: its `generation`, its `expires_at`
    /// `expiresIn` seconds from now, and its sealed body of `bodyBytes` bytes (`nil`: not
    /// canonical base64) whose version and generation `bodyHeaderMatches`.
    public static func refusal(
        _ kind: Kind, generation: Int64, expiresIn: Int64, bodyBytes: Int?, bodyHeaderMatches: Bool
    ) -> Refusal? {
        guard generation >= 1, generation <= Int64(Int32.max) else { return .generation }
        guard expiryWindow(kind).contains(expiresIn) else { return .expiresAt }
        guard let bodyBytes, sealedBodyBytes.contains(bodyBytes), bodyHeaderMatches else { return .body }
        return nil
    }

    /// A call on an approval request.
    public enum ApprovalEvent: Sendable, Hashable {
        /// A device's verdict.
        case answer(ApprovalVerdict)
        /// The requester withdraws the request.
        case cancel
        /// The requester refuses the decision whose signature it names: `decisionMatches` says
        /// whether that is the decision stored, `reopened` how often the request was reopened.
        case reopen(decisionMatches: Bool, reopened: Int)
        /// The expiry pass.
        case expire
    }

    /// A call on an agent's question.
    public enum QuestionEvent: Sendable, Hashable {
        /// A device's sealed answer: kept, the question stays pending until the agent closes it.
        case answer
        /// The agent closes the question as `answered` or `cancelled`.
        case close(QuestionStatus)
        /// The expiry pass.
        case expire
    }

    /// What `event` does to an approval request in `status`; `expired` says whether its time
    /// (`expires_at`) has come.
    public static func transition(
        approval status: ApprovalStatus, expired: Bool, on event: ApprovalEvent
    ) -> Transition<ApprovalStatus> {
        let reading: ApprovalStatus = status == .pending && expired ? .expired : status
        switch event {
        case .answer(let verdict) where reading == .pending:
            return verdict == .approve
                ? .takes(.approved, push: .clearing(reason: "approved_on_other_device"))
                : .takes(.denied, push: .clearing(reason: "denied_on_other_device"))
        case .cancel where reading == .pending:
            return .takes(.cancelled, push: .clearing(reason: "cancelled"))
        // Only the decision the requester refused, before its time: a later one (it may be
        // genuine) stays.
        case .reopen(let matches, let reopened) where (status == .approved || status == .denied) && !expired && matches:
            return reopened >= reopenLimit ? .overLimit(reading: reading) : .takes(.pending, push: .alerts)
        case .expire where status == .pending && expired:
            return .takes(.expired, push: .clearing(reason: "timeout"))
        default:
            return .stays(reading: reading)
        }
    }

    /// What `event` does to an agent's question in `status`; `expired` says whether its time has
    /// come. A close to anything but `answered` or `cancelled` changes nothing (the caller
    /// refuses it as invalid before asking).
    public static func transition(
        question status: QuestionStatus, expired: Bool, on event: QuestionEvent
    ) -> Transition<QuestionStatus> {
        let reading: QuestionStatus = status == .pending && expired ? .expired : status
        switch event {
        case .answer where reading == .pending:
            return .takes(.pending, push: .none)
        case .close(let closed) where reading == .pending && (closed == .answered || closed == .cancelled):
            return .takes(closed, push: .clearing(reason: closed.rawValue))
        case .expire where status == .pending && expired:
            return .takes(.expired, push: .clearing(reason: "timeout"))
        default:
            return .stays(reading: reading)
        }
    }
}
