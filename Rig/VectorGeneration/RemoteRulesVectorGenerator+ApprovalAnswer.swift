import ConformanceVectors
import RemoteContract
import RemoteRules

/// The ApprovalAnswer group: who may answer an approval request and with what bytes
/// (``AnswerRules``).
extension RemoteRulesVectorGenerator {
    /// The call's words and bytes a test tries: a good answer of each verdict, an unknown verdict,
    /// then one flaw at a time in the decision (not base64, one byte short, one past) and in its
    /// signature (one byte short, not base64).
    static let approvalCalls: [(verdict: String, decision: Int?, signature: Int?)] = [
        ("approve", AnswerRules.decisionBytes, AnswerRules.signatureBytes),
        ("deny", AnswerRules.decisionBytes, AnswerRules.signatureBytes),
        ("maybe", AnswerRules.decisionBytes, AnswerRules.signatureBytes),
        ("approve", nil, AnswerRules.signatureBytes),
        ("approve", AnswerRules.decisionBytes - 1, AnswerRules.signatureBytes),
        ("approve", AnswerRules.decisionBytes + 1, AnswerRules.signatureBytes),
        ("approve", AnswerRules.decisionBytes, AnswerRules.signatureBytes - 1),
        ("approve", AnswerRules.decisionBytes, nil),
    ]

    /// Every request row an id can have, pending or decided already, against an answering device
    /// of the caller's or not, certified or not, each call of ``approvalCalls``, with a decision
    /// that names the answering device or another.
    static func approvalAnswerTests() -> [OutputTest] {
        RemoteRulesGroup.RowHolder.allCases.flatMap { holder in
            [ApprovalStatus.pending, .approved].flatMap { from in
                [true, false].flatMap { mine in
                    [true, false].flatMap { certified in
                        approvalCalls.flatMap { call in
                            [true, false].map { names in
                                approvalAnswerTest(
                                    holder, from: from, mine: mine, certified: certified, call: call, names: names)
                            }
                        }
                    }
                }
            }
        }
    }

    static func approvalAnswerTest(
        _ holder: RemoteRulesGroup.RowHolder, from: ApprovalStatus, mine: Bool, certified: Bool,
        call: (verdict: String, decision: Int?, signature: Int?), names: Bool
    ) -> OutputTest {
        let refusal = RemoteRulesGroup.approvalAnswer(
            approvalBy: holder, from: from, mine: mine, certified: certified, verdict: call.verdict,
            decisionBytes: call.decision, signatureBytes: call.signature, namesDevice: names)
        let device = (mine ? "a device of the caller's" : "another user's device") + (certified ? ", certified" : "")
        func bytes(_ count: Int?) -> String { count.map { "\($0) bytes" } ?? "text that is not canonical base64" }
        let words =
            "\(call.verdict), a decision of \(bytes(call.decision)) naming "
            + (names ? "the answering device" : "another device") + ", a signature of \(bytes(call.signature))"
        var test = refusalTest(
            "\(phrase(holder, "request")) (\(from.rawValue)), answered by \(device): \(words)", refusal)
        (test.approvalBy, test.from, test.mine, test.trusted) = (holder.rawValue, from.rawValue, mine, certified)
        (test.verdict, test.bodyBytes, test.signatureBytes, test.namesDevice) = (
            call.verdict, call.decision, call.signature, names
        )
        return test
    }
}
