import RemoteRules

/// The QuestionClose group of `UNBOUND-REMOTE-RULES-V1`: what closing an agent's question is
/// refused for, answered by ``RequestRules/closeRefusal(as:held:)`` as the embedded remote asks it.
extension RemoteRulesGroup {
    /// What closing the question of the call's id, `questionBy`'s, as `closedAs` (absent: no
    /// status) gets; `nil`: the question's transition decides.
    public static func questionClose(closedAs: String?, questionBy: RowHolder) -> RequestRules.CloseRefusal? {
        RequestRules.closeRefusal(
            as: closedAs, held: questionBy.named(device: scopeDevice, other: scopeOther) != nil)
    }

    /// Whether a QuestionClose test gets its answer (`allowed`, or the refusal with its words);
    /// `nil` when a field it needs is missing or malformed.
    static func questionCloseMatches(_ test: Test) -> Bool? {
        guard let holder = test.questionBy.flatMap(RowHolder.init(rawValue:)), test.answer != nil else { return nil }
        return answers(test, questionClose(closedAs: test.closedAs, questionBy: holder))
    }
}
