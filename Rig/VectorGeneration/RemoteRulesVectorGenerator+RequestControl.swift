import ConformanceVectors
import RemoteContract
import RemoteRules

/// The RequestControl group: who may cancel or reopen an approval request
/// (``RequestRules/control(_:transition:hashKept:controlBytes:digestMatches:)``).
extension RemoteRulesVectorGenerator {
    /// Each call on each row an id can have, with and without a control hash, under each control,
    /// before the reopen budget is spent and once it is.
    static func requestControlTests() -> [OutputTest] {
        RequestRules.ControlCall.allCases.flatMap { call in
            RemoteRulesGroup.RowHolder.allCases.flatMap { holder in
                [true, false].flatMap { hash in
                    RemoteRulesGroup.ControlWord.allCases.flatMap { control in
                        [0, RequestRules.reopenLimit].map { reopened in
                            requestControlTest(call, holder, hash: hash, control: control, reopened: reopened)
                        }
                    }
                }
            }
        }
    }

    static func requestControlTest(
        _ call: RequestRules.ControlCall, _ holder: RemoteRulesGroup.RowHolder, hash: Bool,
        control: RemoteRulesGroup.ControlWord, reopened: Int
    ) -> OutputTest {
        let shape = control.shape
        let refusal = RemoteRulesGroup.requestControl(
            call, approvalBy: holder, controlHash: hash, controlBytes: shape.bytes, digestMatches: shape.digestMatches,
            reopened: reopened)
        let row =
            "\(phrase(holder, call == .cancel ? "pending request" : "approved request")) "
            + "(\(hash ? "a control hash kept" : "no control hash"), reopened \(reopened) times)"
        var test = refusalTest("\(call.rawValue) \(row), with control \(control.rawValue)", refusal)
        (test.event, test.approvalBy, test.controlHash, test.control, test.reopened) = (
            call.rawValue, holder.rawValue, hash, control.rawValue, reopened
        )
        (test.controlBytes, test.digestMatches) = (shape.bytes, shape.digestMatches)
        return test
    }
}
