import ConformanceVectors
import RemoteRules

/// The SessionEvent group: what a desktop's report of a session event is refused for
/// (``TaskAlertRules/eventRefusal(deviceMine:sessionOnDevice:kind:)``).
extension RemoteRulesVectorGenerator {
    /// From the caller's device or another user's, on each session row the id can have, with
    /// each task kind, the request kinds, the same word in capitals, an empty one and none.
    static func sessionEventTests() -> [OutputTest] {
        let kinds: [String?] = [
            "task_complete", "task_failed", "task_paused", "approval", "question", "Task_complete", "", nil,
        ]
        return [true, false].flatMap { mine in
            RemoteRulesGroup.RowHolder.allCases.flatMap { holder in
                kinds.map { kind in
                    var test = refusalTest(
                        "\(kind.map { "\"\($0)\"" } ?? "no kind") from \(mine ? "the caller's device" : "another user's device") "
                            + "about \(phrase(holder, "session"))",
                        RemoteRulesGroup.sessionEvent(mine: mine, runBy: holder, kind: kind))
                    (test.mine, test.runBy, test.kind) = (mine, holder.rawValue, kind)
                    return test
                }
            }
        }
    }
}
