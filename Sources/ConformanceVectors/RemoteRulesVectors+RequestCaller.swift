import RemoteRules

/// The SessionDesktop and Asker groups of `UNBOUND-REMOTE-RULES-V1`: which device may make a call
/// on a session or a request, answered by ``CallerRules`` as the embedded remote runs it.
extension RemoteRulesGroup {
    /// Who a session or request row of the call's id names, as a word.
    public enum RowHolder: String, Sendable, CaseIterable {
        /// There is no such row.
        case none
        /// A row of the caller's names the calling device.
        case device
        /// A row of the caller's names another of the caller's devices.
        case otherDevice = "other_device"
        /// Another user's row names the calling device.
        case anotherUser = "another_user"

        /// The device the caller's row names (`nil`: the caller has no such row).
        func named(device: String, other: String) -> String? {
            switch self {
            case .none, .anotherUser: nil
            case .device: device
            case .otherDevice: other
            }
        }
    }

    static let scopeDevice = "cccccccc-0000-4000-8000-00000000000c"
    static let scopeOther = "dddddddd-0000-4000-8000-00000000000d"

    /// What a call on a session whose row `runBy` gets from the calling device (`nil`: allowed).
    public static func sessionDesktop(runBy: RowHolder) -> CallerRules.Refusal? {
        CallerRules.sessionDesktop(runBy: runBy.named(device: scopeDevice, other: scopeOther), device: scopeDevice)
    }

    /// What a call on a request gets from the calling device, when the approval request and the
    /// question of its id are `approvalBy`'s and `questionBy`'s (`nil`: allowed).
    public static func asker(approvalBy: RowHolder, questionBy: RowHolder) -> CallerRules.Refusal? {
        let askers = [approvalBy, questionBy].compactMap { $0.named(device: scopeDevice, other: scopeOther) }
        return CallerRules.asker(askers: askers, device: scopeDevice)
    }

    /// Whether a SessionDesktop or Asker test gets its answer (`allowed`, or the refusal with its
    /// words); `nil` when a field it needs is missing or malformed.
    static func requestCallerMatches(_ kind: Kind, _ test: Test) -> Bool? {
        let refusal: CallerRules.Refusal?
        if kind == .sessionDesktop {
            guard let runBy = test.runBy.flatMap(RowHolder.init(rawValue:)) else { return nil }
            refusal = sessionDesktop(runBy: runBy)
        } else {
            guard let approval = test.approvalBy.flatMap(RowHolder.init(rawValue:)),
                let question = test.questionBy.flatMap(RowHolder.init(rawValue:))
            else { return nil }
            refusal = asker(approvalBy: approval, questionBy: question)
        }
        guard test.answer != nil else { return nil }
        return answers(test, refusal)
    }
}
