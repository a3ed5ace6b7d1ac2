import RemoteRules
import Testing

/// The TrustLogCall vectors: every refusal and the allowed answer are reached, an accept is not
/// held to the 24 hours between resets, and a test whose answer or words are changed fails.
@Suite("remote-rules-v1.json: what the trust log's writing calls refuse before an entry")
struct TrustLogCallVectorTests {
    @Test("the group reaches every refusal and the allowed answer")
    func everyAnswer() throws {
        let tests = try RemoteRulesFile.tests("TrustLogCall")
        #expect(tests.count == 102)
        #expect(
            Set(tests.compactMap { $0["answer"] as? String })
                == Set(["allowed"] + TrustLogCallRules.Reason.allCases.map(\.rawValue)))
    }

    @Test("a reset with an accept is not held to the 24 hours; one without is, up to 86,399 s")
    func resetSpacing() throws {
        let recent = try RemoteRulesFile.tests("TrustLogCall").filter {
            $0["freshSignIn"] as? Bool == true && $0["pending"] as? Bool == false && $0["lastResetAge"] != nil
                && ($0["call"] as? String)?.hasPrefix("reset") == true
        }
        #expect(recent.count == 6)
        for test in recent {
            let held = test["call"] as? String == "reset" && (test["lastResetAge"] as? Int ?? 0) < 86_400
            #expect(test["answer"] as? String == (held ? "reset_too_soon" : "allowed"), "\(test)")
        }
    }

    @Test("a test whose answer, message or SQLSTATE is changed fails")
    func changedWordsFail() throws {
        let changes: [(String, Any, ([String: Any]) -> Bool)] = [
            ("answer", "allowed", { $0["answer"] as? String == "not_heads_next" }),
            (
                "message", "sign in again, then retry (a reset needs a recent sign-in)",
                {
                    $0["answer"] as? String == "not_fresh" && $0["call"] as? String == "reset"
                }
            ),
            ("sqlState", "55000", { $0["answer"] as? String == "log_exists" }),
        ]
        for (field, value, pick) in changes {
            let (failed, tcId) = try RemoteRulesFile.failures("TrustLogCall", changing: field, to: value, where: pick)
            #expect(failed == [tcId], "\(field)")
        }
    }
}
