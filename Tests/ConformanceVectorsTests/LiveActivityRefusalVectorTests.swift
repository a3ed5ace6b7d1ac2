import RemoteRules
import Testing

/// The LiveActivityRefusal and QuestionClose vectors: every answer is reached, an end goes to a
/// device that turned live activities off, and a test whose answer is changed fails.
@Suite("remote-rules-v1.json: which live-activity events are queued, and which closes of a question are refused")
struct LiveActivityRefusalVectorTests {
    @Test("LiveActivityRefusal reaches every refusal and none")
    func everyRefusal() throws {
        let tests = try RemoteRulesFile.tests("LiveActivityRefusal")
        #expect(tests.count == 40)
        #expect(
            Set(tests.compactMap { $0["refused"] as? String })
                == Set(["none"] + LiveActivityQueueing.Refusal.allCases.map(\.rawValue)))
    }

    @Test("an end is refused only for a device the log does not vouch for or a token already ended")
    func endsGo() throws {
        let ends = try RemoteRulesFile.tests("LiveActivityRefusal").filter {
            $0["event"] as? String == "end" && $0["settingOff"] as? Bool == true && $0["ended"] as? Bool == false
        }
        #expect(ends.count == 5)
        for test in ends {
            let vouched = ["none", "no_epoch", "certifies"].contains(test["trustLog"] as? String ?? "")
            #expect(test["refused"] as? String == (vouched ? "none" : "not_vouched"), "\(test)")
        }
    }

    @Test("a LiveActivityRefusal or QuestionClose test whose answer or words are changed fails")
    func changedAnswersFail() throws {
        let changes: [(String, String, Any, ([String: Any]) -> Bool)] = [
            ("LiveActivityRefusal", "refused", "ended", { $0["refused"] as? String == "not_vouched" }),
            ("QuestionClose", "answer", "allowed", { $0["answer"] as? String == "status" }),
            ("QuestionClose", "sqlState", "42501", { $0["answer"] as? String == "status" }),
            ("QuestionClose", "message", "the question is not one of yours", { $0["answer"] as? String == "status" }),
        ]
        for (group, field, value, pick) in changes {
            let (failed, tcId) = try RemoteRulesFile.failures(group, changing: field, to: value, where: pick)
            #expect(failed == [tcId], "\(group) \(field)")
        }
    }

    @Test("QuestionClose refuses any status but answered or cancelled before it looks for the question")
    func statusFirst() throws {
        let tests = try RemoteRulesFile.tests("QuestionClose")
        #expect(tests.count == 28)
        for test in tests {
            let word = test["closedAs"] as? String
            let held = ["device", "other_device"].contains(test["questionBy"] as? String ?? "")
            let expected =
                word == "answered" || word == "cancelled" ? (held ? "allowed" : "not_your_question") : "status"
            #expect(test["answer"] as? String == expected, "\(test)")
        }
    }
}
