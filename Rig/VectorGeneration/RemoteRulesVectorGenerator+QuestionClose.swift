import ConformanceVectors
import RemoteContract
import RemoteRules

/// The QuestionClose group: what closing an agent's question is refused for
/// (``RequestRules/closeRefusal(as:held:)``).
extension RemoteRulesVectorGenerator {
    /// Each status word a close can carry (the two it takes, the two it does not, the same in
    /// capitals, an empty one, none) on each row the question's id can have.
    static func questionCloseTests() -> [OutputTest] {
        let words: [String?] = ["answered", "cancelled", "pending", "expired", "Answered", "", nil]
        return words.flatMap { word in
            RemoteRulesGroup.RowHolder.allCases.map { holder in
                var test = refusalTest(
                    "close \(phrase(holder, "pending question")) as \(word.map { "\"\($0)\"" } ?? "no status")",
                    RemoteRulesGroup.questionClose(closedAs: word, questionBy: holder))
                (test.closedAs, test.questionBy) = (word, holder.rawValue)
                return test
            }
        }
    }
}
