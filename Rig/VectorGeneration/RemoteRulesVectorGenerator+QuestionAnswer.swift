import ConformanceVectors
import RemoteRules

/// The QuestionAnswer group: who may answer an agent's question and with what bytes
/// (``AnswerRules``).
extension RemoteRulesVectorGenerator {
    /// The sealed answer's lengths a test tries: none (not canonical base64), one short of the
    /// least, the least, the most, one past it.
    static let answerLengths: [Int?] = [
        nil, AnswerRules.sealedAnswerBytes.lowerBound - 1, AnswerRules.sealedAnswerBytes.lowerBound,
        AnswerRules.sealedAnswerBytes.upperBound, AnswerRules.sealedAnswerBytes.upperBound + 1,
    ]

    /// Every question row an id can have, against an answering device of the caller's or not,
    /// certified or not, and an answer of each length with a header that matches or not.
    static func questionAnswerTests() -> [OutputTest] {
        RemoteRulesGroup.RowHolder.allCases.flatMap { holder in
            [true, false].flatMap { mine in
                [true, false].flatMap { certified in
                    answerLengths.flatMap { bytes in
                        [true, false].map { header in
                            questionAnswerTest(holder, mine: mine, certified: certified, bytes: bytes, header: header)
                        }
                    }
                }
            }
        }
    }

    static func questionAnswerTest(
        _ holder: RemoteRulesGroup.RowHolder, mine: Bool, certified: Bool, bytes: Int?, header: Bool
    ) -> OutputTest {
        let refusal = RemoteRulesGroup.questionAnswer(
            questionBy: holder, mine: mine, certified: certified, answerBytes: bytes, headerMatches: header)
        let device = (mine ? "a device of the caller's" : "another user's device") + (certified ? ", certified" : "")
        let answer =
            bytes.map { "\($0) bytes" + (header ? "" : " under another version or generation") }
            ?? "text that is not canonical base64"
        var test = refusalTest("\(phrase(holder, "question")), answered by \(device) with \(answer)", refusal)
        (test.questionBy, test.mine, test.trusted) = (holder.rawValue, mine, certified)
        (test.bodyBytes, test.bodyHeaderMatches) = (bytes, header)
        return test
    }
}
