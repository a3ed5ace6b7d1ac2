import ConformanceVectors
import RemoteRules

/// The SessionDesktop and Asker groups: which device may make a call on a session or a request
/// (``CallerRules``).
extension RemoteRulesVectorGenerator {
    /// A row holder in a comment's words.
    static func phrase(_ holder: RemoteRulesGroup.RowHolder, _ row: String) -> String {
        switch holder {
        case .none: "no \(row)"
        case .device: "the caller's \(row), of the calling device"
        case .otherDevice: "the caller's \(row), of another of the caller's devices"
        case .anotherUser: "another user's \(row), naming the calling device"
        }
    }

    /// A test answered by `refusal` (`nil`: `allowed`) with its words and SQLSTATE.
    static func refusalTest<Refusal: RuleRefusal & RawRepresentable<String>>(
        _ comment: String, _ refusal: Refusal?
    ) -> OutputTest {
        var test = OutputTest(comment: comment, flags: [refusal == nil ? "Allowed" : "Refused"])
        (test.answer, test.message, test.sqlState) = (
            refusal?.rawValue ?? "allowed", refusal?.message, refusal?.sqlState
        )
        return test
    }

    /// A call on a session: each row its id can have.
    static func sessionDesktopTests() -> [OutputTest] {
        RemoteRulesGroup.RowHolder.allCases.map { holder in
            var test = refusalTest(
                "a call on \(phrase(holder, "session"))", RemoteRulesGroup.sessionDesktop(runBy: holder))
            test.runBy = holder.rawValue
            return test
        }
    }

    /// A call on a request: each approval request against each question its id can have.
    static func askerTests() -> [OutputTest] {
        RemoteRulesGroup.RowHolder.allCases.flatMap { approval in
            RemoteRulesGroup.RowHolder.allCases.map { question in
                var test = refusalTest(
                    "a call on a request id with \(phrase(approval, "approval request")) and \(phrase(question, "question"))",
                    RemoteRulesGroup.asker(approvalBy: approval, questionBy: question))
                (test.approvalBy, test.questionBy) = (approval.rawValue, question.rawValue)
                return test
            }
        }
    }
}
