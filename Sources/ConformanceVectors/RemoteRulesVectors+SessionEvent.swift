import RemoteRules

/// The SessionEvent group of `UNBOUND-REMOTE-RULES-V1`: what a desktop's report of a session
/// event is refused for, answered by
/// ``TaskAlertRules/eventRefusal(deviceMine:sessionOnDevice:kind:)`` as the embedded remote asks it.
extension RemoteRulesGroup {
    /// What a report of `kind` (absent: none) from the calling device (the caller's when `mine`)
    /// about the session of the call's id, `runBy`'s, gets; `nil`: its task alerts are queued.
    public static func sessionEvent(mine: Bool, runBy: RowHolder, kind: String?) -> TaskAlertRules.EventRefusal? {
        TaskAlertRules.eventRefusal(
            deviceMine: mine, sessionOnDevice: runBy.named(device: scopeDevice, other: scopeOther) == scopeDevice,
            kind: kind)
    }

    /// Whether a SessionEvent test gets its answer (`allowed`, or the refusal with its words);
    /// `nil` when a field it needs is missing or malformed.
    static func sessionEventMatches(_ test: Test) -> Bool? {
        guard let mine = test.mine, let runBy = test.runBy.flatMap(RowHolder.init(rawValue:)), test.answer != nil
        else { return nil }
        return answers(test, sessionEvent(mine: mine, runBy: runBy, kind: test.kind))
    }
}
