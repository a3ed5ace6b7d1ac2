import RemoteRules
import Testing

/// The SessionEvent vectors: every refusal and the allowed answer are reached, only a task kind
/// from the session's own desktop is allowed, and a test whose answer or words are changed fails.
@Suite("remote-rules-v1.json: what a desktop's report of a session event is refused for")
struct SessionEventVectorTests {
    @Test("the group reaches every refusal, and only a task kind from the session's desktop is allowed")
    func everyAnswer() throws {
        let tests = try RemoteRulesFile.tests("SessionEvent")
        #expect(tests.count == 64)
        #expect(
            Set(tests.compactMap { $0["answer"] as? String })
                == Set(["allowed"] + TaskAlertRules.EventRefusal.allCases.map(\.rawValue)))
        let allowed = tests.filter { $0["answer"] as? String == "allowed" }
        #expect(Set(allowed.compactMap { $0["kind"] as? String }) == ["task_complete", "task_failed", "task_paused"])
        #expect(allowed.allSatisfy { $0["mine"] as? Bool == true && $0["runBy"] as? String == "device" })
    }

    @Test("a test whose answer, message or SQLSTATE is changed fails")
    func changedWordsFail() throws {
        let changes: [(String, Any, ([String: Any]) -> Bool)] = [
            ("answer", "allowed", { $0["answer"] as? String == "kind" }),
            ("message", "the session is not one of yours", { $0["answer"] as? String == "not_session_on_device" }),
            ("sqlState", "42501", { $0["answer"] as? String == "kind" }),
        ]
        for (field, value, pick) in changes {
            let (failed, tcId) = try RemoteRulesFile.failures("SessionEvent", changing: field, to: value, where: pick)
            #expect(failed == [tcId], "\(field)")
        }
    }
}
