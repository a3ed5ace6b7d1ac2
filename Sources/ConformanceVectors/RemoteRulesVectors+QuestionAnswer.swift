import RemoteRules

/// The QuestionAnswer group of `UNBOUND-REMOTE-RULES-V1`: who may answer an agent's question and
/// with what bytes, answered by ``AnswerRules`` as the embedded remote runs it.
extension RemoteRulesGroup {
    /// What an answer from the calling device gets when the caller's question of the call's id is
    /// `questionBy`'s, the device is the caller's (`mine`) and certified (`certified`), and the
    /// answer is `answerBytes` long (`nil`: not canonical base64) with a header that
    /// `headerMatches`; `nil`: it may answer, and the question's transition decides.
    public static func questionAnswer(
        questionBy: RowHolder, mine: Bool, certified: Bool, answerBytes: Int?, headerMatches: Bool
    ) -> AnswerRules.Refusal? {
        AnswerRules.questionAnswer(
            askedBy: questionBy.named(device: scopeDevice, other: scopeOther), device: scopeDevice, mine: mine,
            certified: certified, answerBytes: answerBytes, headerMatches: headerMatches)
    }

    /// Whether a QuestionAnswer test gets its answer (`allowed`, or the refusal with its words);
    /// `nil` when a field it needs is missing or malformed.
    static func questionAnswerMatches(_ test: Test) -> Bool? {
        guard let holder = test.questionBy.flatMap(RowHolder.init(rawValue:)), let mine = test.mine,
            let certified = test.trusted, let headerMatches = test.bodyHeaderMatches, test.answer != nil
        else { return nil }
        let refusal = questionAnswer(
            questionBy: holder, mine: mine, certified: certified, answerBytes: test.bodyBytes,
            headerMatches: headerMatches)
        return answers(test, refusal)
    }
}
