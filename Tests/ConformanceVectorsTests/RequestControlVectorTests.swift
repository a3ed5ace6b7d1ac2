import RemoteRules
import Testing

/// The RequestControl vectors: every refusal and the allowed answer are reached, a request
/// without a control hash is anyone's to cancel and no one's to reopen, and a test whose answer,
/// message or SQLSTATE is changed fails.
@Suite("remote-rules-v1.json: who may cancel or reopen an approval request")
struct RequestControlVectorTests {
    @Test("the group reaches every refusal and the allowed answer")
    func everyAnswer() throws {
        let tests = try RemoteRulesFile.tests("RequestControl")
        #expect(
            Set(tests.compactMap { $0["answer"] as? String })
                == Set(["allowed"] + RequestRules.ControlRefusal.allCases.map(\.rawValue)))
    }

    @Test("without a control hash, any control cancels the caller's request and none reopens it")
    func withoutHash() throws {
        let unkept = try RemoteRulesFile.tests("RequestControl").filter {
            $0["controlHash"] as? Bool == false && $0["approvalBy"] as? String == "device"
        }
        #expect(unkept.count == 24)
        for test in unkept {
            let cancel = test["event"] as? String == "cancel"
            #expect(test["answer"] as? String == (cancel ? "allowed" : "reopen_not_requester"), "\(test)")
        }
    }

    @Test("a test whose answer, message or SQLSTATE is changed fails")
    func changedWordsFail() throws {
        let changes: [(String, Any, ([String: Any]) -> Bool)] = [
            ("answer", "not_your_request", { $0["answer"] as? String == "over_limit" }),
            (
                "message", "only the requesting device may reopen this request",
                {
                    $0["answer"] as? String == "cancel_not_requester"
                }
            ),
            ("sqlState", "42501", { $0["answer"] as? String == "over_limit" }),
        ]
        for (field, value, pick) in changes {
            let (failed, tcId) = try RemoteRulesFile.failures(
                "RequestControl", changing: field, to: value, where: pick)
            #expect(failed == [tcId], "\(field)")
        }
    }
}

extension RequestControlVectorTests {
    @Test("a control of the wrong length proves nothing, even when its digest is the one kept")
    func lengthCounts() throws {
        let short = try RemoteRulesFile.tests("RequestControl").filter {
            $0["control"] as? String == "short" && $0["controlHash"] as? Bool == true
                && $0["approvalBy"] as? String == "device" && $0["reopened"] as? Int == 0
        }
        #expect(short.count == 2)
        #expect(short.allSatisfy { $0["digestMatches"] as? Bool == true && $0["controlBytes"] as? Int == 31 })
        #expect(Set(short.compactMap { $0["answer"] as? String }) == ["cancel_not_requester", "reopen_not_requester"])
    }
}
