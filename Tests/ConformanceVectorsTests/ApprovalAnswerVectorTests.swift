import RemoteRules
import Testing

/// The ApprovalAnswer vectors: every refusal and the allowed answer are reached, the trust and
/// the decision's device count only for an answer that decides, and a test whose answer, message
/// or SQLSTATE is changed fails.
@Suite("remote-rules-v1.json: who may answer an approval request")
struct ApprovalAnswerVectorTests {
    @Test("the group reaches every refusal and the allowed answer")
    func everyAnswer() throws {
        let tests = try RemoteRulesFile.tests("ApprovalAnswer")
        #expect(
            Set(tests.compactMap { $0["answer"] as? String })
                == Set(["allowed"] + AnswerRules.ApprovalRefusal.allCases.map(\.rawValue)))
    }

    @Test("an answer to a request decided already is not refused for the device's trust or the decision's device")
    func decidedAlready() throws {
        let decided = try RemoteRulesFile.tests("ApprovalAnswer").filter {
            $0["from"] as? String == "approved" && $0["approvalBy"] as? String == "other_device"
                && $0["mine"] as? Bool == true && $0["verdict"] as? String == "approve"
                && $0["bodyBytes"] as? Int == AnswerRules.decisionBytes
                && $0["signatureBytes"] as? Int == AnswerRules.signatureBytes
        }
        #expect(decided.count == 4)
        #expect(decided.allSatisfy { $0["answer"] as? String == "allowed" })
    }

    @Test("a test whose answer, message or SQLSTATE is changed fails")
    func changedWordsFail() throws {
        let changes: [(String, Any, ([String: Any]) -> Bool)] = [
            ("answer", "not_certified", { $0["answer"] as? String == "allowed" }),
            ("message", "the request is not one of yours", { $0["answer"] as? String == "own_request" }),
            ("sqlState", "42501", { $0["answer"] as? String == "other_device" }),
        ]
        for (field, value, pick) in changes {
            let (failed, tcId) = try RemoteRulesFile.failures(
                "ApprovalAnswer", changing: field, to: value, where: pick)
            #expect(failed == [tcId], "\(field)")
        }
    }
}
