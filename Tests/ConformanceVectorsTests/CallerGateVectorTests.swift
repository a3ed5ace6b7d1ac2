import RemoteRules
import Testing

/// The caller gate's vectors and rule: every answer is reached, a word changed fails, and the
/// trust log is read only when a call needs it.
@Suite("remote-rules-v1.json: which device a call acts for")
struct CallerGateVectorTests {
    @Test("the group reaches every refusal and both calling answers")
    func everyAnswer() throws {
        let tests = try RemoteRulesFile.tests("CallerGate")
        let answers = Set(tests.compactMap { $0["answer"] as? String })
        let scoped: [CallerRules.Refusal] = [.notSessionDesktop, .notAsker]
        #expect(answers == Set(["acts"] + CallerRules.Refusal.allCases.filter { !scoped.contains($0) }.map(\.rawValue)))
        #expect(Set(tests.compactMap { $0["calling"] as? Bool }) == [true, false])
    }

    @Test("a test whose answer, hint or calling device is changed fails")
    func changedWordsFail() throws {
        // Each change on a test where it is wrong: an acting call refused, a refusal hinted
        // otherwise, a calling device said not to be.
        let changes: [(String, Any, ([String: Any]) -> Bool)] = [
            ("answer", "not_its_name", { $0["answer"] as? String == "acts" }),
            ("hint", "device-revoked", { $0["answer"] as? String == "no_credential" }),
            ("calling", false, { $0["calling"] as? Bool == true }),
        ]
        for (field, value, pick) in changes {
            let (failed, tcId) = try RemoteRulesFile.failures("CallerGate", changing: field, to: value, where: pick)
            #expect(failed == [tcId], "\(field)")
        }
    }

    @Test("the trust log is asked only by a call that needs trust, after every other check passed")
    func logAskedLast() {
        let device = "aaaaaaaa-0000-4000-8000-00000000000a"
        var asked = 0
        let ask: () -> Bool? = {
            asked += 1
            return false
        }
        #expect(
            CallerRules.acting(named: device, trusted: false, caller: "u", credentialDevice: device, certified: ask)
                == .acts(device))
        #expect(
            CallerRules.acting(named: "b", trusted: true, caller: "u", credentialDevice: device, certified: ask)
                == .refused(.malformedName))
        #expect(
            CallerRules.acting(named: device, trusted: true, caller: nil, credentialDevice: device, certified: ask)
                == .refused(.signedOut))
        #expect(asked == 0)
        #expect(
            CallerRules.acting(named: device, trusted: true, caller: "u", credentialDevice: device, certified: ask)
                == .refused(.notCertified))
        #expect(asked == 1)
    }
}
