import ConformanceVectors
import Foundation
import RemoteRules

/// The CallerGate group: which device a call acts for (``CallerRules``).
extension RemoteRulesVectorGenerator {
    /// The names a call gives: its device's own, another device's, none, its own in capitals.
    static let callerNames: [String?] = [gateDevice, otherDevice, nil, gateDevice.uppercased()]

    /// Names that are not a canonical lowercase UUID, whatever else holds.
    static let malformedNames = [
        "", "{\(gateDevice)}", gateDevice.replacingOccurrences(of: "-", with: ""), gateDevice + "\n",
        String(gateDevice.dropLast()) + "g", " " + gateDevice,
        // A Cyrillic a, and a fullwidth digit: letters and digits, not the ASCII ones.
        String(gateDevice.dropLast()) + "\u{0430}", String(gateDevice.dropLast()) + "\u{FF10}",
    ]

    /// Every credential against every name, with and without the need for trust, under every
    /// state of the trust log; the malformed names; a few calls with no one signed in.
    static func callerGateTests() -> [OutputTest] {
        var tests: [OutputTest] = []
        for credential in RemoteRulesGroup.CallerCredential.allCases {
            for named in callerNames {
                for trusted in [false, true] {
                    for log in RemoteRulesGroup.CallerTrustLog.allCases {
                        tests.append(
                            callerGateTest(
                                signedIn: true, credential: credential, named: named, trusted: trusted, log: log))
                    }
                }
            }
        }
        for named in malformedNames {
            tests.append(
                callerGateTest(signedIn: true, credential: .registered, named: named, trusted: false, log: .none))
        }
        for credential in [RemoteRulesGroup.CallerCredential.none, .registered] {
            for named in [gateDevice, gateDevice.uppercased()] {
                for log in [RemoteRulesGroup.CallerTrustLog.none, .certifies] {
                    tests.append(
                        callerGateTest(signedIn: false, credential: credential, named: named, trusted: true, log: log))
                }
            }
        }
        return tests
    }

    static func callerGateTest(
        signedIn: Bool, credential: RemoteRulesGroup.CallerCredential, named: String?, trusted: Bool,
        log: RemoteRulesGroup.CallerTrustLog
    ) -> OutputTest {
        let answer = RemoteRulesGroup.callerGate(
            signedIn: signedIn, credential: credential, device: gateDevice, named: named, trusted: trusted, log: log)
        let name: String
        switch named {
        case nil: name = "names no device"
        case gateDevice: name = "names its own device"
        case otherDevice: name = "names another device"
        case gateDevice.uppercased(): name = "names its own device in capitals"
        case let other?: name = "names \(other.debugDescription)"
        }
        let who = signedIn ? "a signed-in user" : "no one signed in"
        var test = OutputTest(
            comment: "\(who), credential \(credential.rawValue), trust log \(log.rawValue): a call that "
                + "\(trusted ? "needs trust " : "")\(name)",
            flags: [
                answer.verdict.refusal.map { "Refused" + $0.rawValue.split(separator: "_").map(\.capitalized).joined() }
                    ?? "Acts"
            ]
                + (answer.calling ? ["Calling"] : []))
        (test.signedIn, test.credential, test.device, test.named, test.trusted, test.trustLog) = (
            signedIn, credential.rawValue, gateDevice, named, trusted, log.rawValue
        )
        let refusal = answer.verdict.refusal
        (test.answer, test.message, test.hint, test.sqlState, test.calling) = (
            refusal?.rawValue ?? "acts", refusal?.message, refusal?.hint, refusal?.sqlState, answer.calling
        )
        test.itself = answer.itself.refusal?.rawValue ?? "acts"
        return test
    }
}
