import RemoteContract

extension RequestRules {
    /// Why closing an agent's question is refused, in the words of `private.close_question`
    /// (after the asker's check, ``CallerRules/asker(askers:device:)``).
    public enum CloseRefusal: String, Sendable, Hashable, CaseIterable, RuleRefusal {
        /// The status asked for is not `answered` or `cancelled`.
        case status
        /// The caller has no question of that id.
        case notYourQuestion = "not_your_question"

        /// What the refusal says.
        public var message: String {
            switch self {
            case .status: "status must be answered or cancelled"
            case .notYourQuestion: "the question is not one of yours"
            }
        }

        /// 22023 (invalid parameter value) for the status, 42501 for the question.
        public var sqlState: String { self == .status ? "22023" : "42501" }
    }

    /// The statuses a question is closed as.
    public static let closingStatuses: Set<QuestionStatus> = [.answered, .cancelled]

    /// Why closing a question as `status` (the call's word; `nil`: none) is refused, in this
    /// order, or `nil`: the question's transition decides what the close changes. `held`: the
    /// caller has a question of the call's id.
    public static func closeRefusal(as status: String?, held: Bool) -> CloseRefusal? {
        guard let closed = status.flatMap(QuestionStatus.init(rawValue:)), closingStatuses.contains(closed) else {
            return .status
        }
        return held ? nil : .notYourQuestion
    }
}
