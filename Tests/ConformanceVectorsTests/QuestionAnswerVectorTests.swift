import RemoteRules
import Testing

/// The QuestionAnswer vectors: every refusal and the allowed answer are reached, and a test whose
/// answer, message or SQLSTATE is changed fails.
@Suite("remote-rules-v1.json: who may answer a question")
struct QuestionAnswerVectorTests {
    @Test("the group reaches every refusal and the allowed answer")
    func everyAnswer() throws {
        let tests = try RemoteRulesFile.tests("QuestionAnswer")
        #expect(
            Set(tests.compactMap { $0["answer"] as? String })
                == Set(["allowed"] + AnswerRules.Refusal.allCases.map(\.rawValue)))
    }

    @Test("a test whose answer, message or SQLSTATE is changed fails")
    func changedWordsFail() throws {
        let changes: [(String, Any, ([String: Any]) -> Bool)] = [
            ("answer", "own_question", { $0["answer"] as? String == "allowed" }),
            (
                "message", "answer must be canonical base64 of a sealed answer",
                { $0["answer"] as? String == "other_header" }
            ),
            ("sqlState", "42501", { $0["answer"] as? String == "not_sealed" }),
        ]
        for (field, value, pick) in changes {
            let (failed, tcId) = try RemoteRulesFile.failures(
                "QuestionAnswer", changing: field, to: value, where: pick)
            #expect(failed == [tcId], "\(field)")
        }
    }
}
