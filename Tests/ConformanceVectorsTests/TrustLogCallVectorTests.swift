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

/// The TrustEpochStatus vectors: every status is reached, an epoch with rows is never written
/// again unless current, and a test whose status is changed fails.
@Suite("remote-rules-v1.json: what an append's named epoch is")
struct TrustEpochStatusVectorTests {
    @Test("the group reaches every status; an epoch with rows that is not current is pending or closed")
    func everyStatus() throws {
        let tests = try RemoteRulesFile.tests("TrustEpochStatus")
        #expect(tests.count == 90)
        #expect(Set(tests.compactMap { $0["epochStatus"] as? String }) == ["open", "pending_or_closed", "not_current"])
        let written = tests.filter {
            $0["hasHead"] as? Bool == true && $0["epoch"] as? Int != $0["currentEpoch"] as? Int
        }
        #expect(written.count == 39)
        #expect(written.allSatisfy { $0["epochStatus"] as? String == "pending_or_closed" })
    }

    @Test("a test whose status is changed fails")
    func changedStatusFails() throws {
        let (failed, tcId) = try RemoteRulesFile.failures(
            "TrustEpochStatus", changing: "epochStatus", to: "open",
            where: { $0["epochStatus"] as? String == "not_current" })
        #expect(failed == [tcId])
    }
}

/// The TrustPlacement vectors: every refusal and the allowed answer are reached, an accept goes
/// only with its reset, and a test whose answer, message or SQLSTATE is changed fails.
@Suite("remote-rules-v1.json: what the trust log's writing calls refuse of an entry where it goes")
struct TrustPlacementVectorTests {
    @Test("the group reaches every refusal and the allowed answer; an appended accept is always refused")
    func everyAnswer() throws {
        let tests = try RemoteRulesFile.tests("TrustPlacement")
        #expect(tests.count == 39)
        #expect(
            Set(tests.compactMap { $0["answer"] as? String })
                == Set(["allowed"] + TrustLogCallRules.PlacementReason.allCases.map(\.rawValue)))
        let appendedAccepts = tests.filter {
            $0["placement"] as? String == "append" && $0["answerVerdict"] as? String == "accept"
        }
        #expect(appendedAccepts.count == 2)
        #expect(appendedAccepts.allSatisfy { $0["answer"] as? String == "accept_appended" })
    }

    @Test("a test whose answer, message or SQLSTATE is changed fails")
    func changedWordsFail() throws {
        let changes: [(String, Any, ([String: Any]) -> Bool)] = [
            ("answer", "allowed", { $0["answer"] as? String == "veto_unnamed" }),
            ("message", "the accept must name the reset", { $0["answer"] as? String == "accept_unnamed" }),
            ("sqlState", "22023", { $0["answer"] as? String == "no_current_epoch" }),
        ]
        for (field, value, pick) in changes {
            let (failed, tcId) = try RemoteRulesFile.failures("TrustPlacement", changing: field, to: value, where: pick)
            #expect(failed == [tcId], "\(field)")
        }
    }
}
