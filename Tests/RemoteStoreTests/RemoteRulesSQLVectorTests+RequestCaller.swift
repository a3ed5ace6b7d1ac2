import Foundation
import TestStack
import Testing

extension RemoteRulesSQLVectorTests {
    /// The SessionDesktop and Asker tests through `private.require_session_desktop` and
    /// `private.require_asker` themselves (the project's own schema: the deployed variant has
    /// neither): each test signs in a fresh user with a fresh device (its credential in the
    /// request's headers, for `require_asker`'s caller), writes the rows of a fresh id the test
    /// names and calls the function (``callsStatement(_:_:)``).
    static func requestCallerStatement(_ type: String, _ tests: [RuleTest]) -> String {
        callsStatement(tests) { test in
            let (user, stranger, device, other, id) = (freshID(), freshID(), freshID(), freshID(), freshID())
            let credential = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            var setup = [
                "SELECT set_config('request.jwt.claims', json_build_object('sub', \(user), 'role', 'authenticated')::text, true)",
                "SET LOCAL request.headers = \(literal("{\"x-device-credential\": \"\(credential)\"}"))",
                "INSERT INTO private.device_credentials (device_id, user_id, hash) VALUES (\(device), \(user), "
                    + "sha256(decode('\(credential)', 'hex')))",
            ]
            func row(_ word: String?) -> (owner: String, asker: String)? {
                heldRow(word, user: user, stranger: stranger, device: device, other: other)
            }
            let call: String
            if type == "SessionDesktop" {
                if let (owner, runner) = row(test.runBy) {
                    setup.append(
                        "INSERT INTO public.agent_coding_sessions (id, user_id, device_id, repository_id) "
                            + "VALUES (\(id), \(owner), \(runner), gen_random_uuid())")
                }
                call = "private.require_session_desktop(\(id), \(device))"
            } else {
                for (table, word) in [("approval_requests", test.approvalBy), ("agent_questions", test.questionBy)] {
                    guard let (owner, asker) = row(word) else { continue }
                    setup.append(
                        "INSERT INTO public.\(table) (id, user_id, session_id, requester_device_id, body, generation, "
                            + "expires_at) VALUES (\(id), \(owner), gen_random_uuid(), \(asker), 'x', 1, 0)")
                }
                call = "private.require_asker(\(id))"
            }
            return RowCall(setup: setup, call: call)
        }
    }

    /// What a SessionDesktop, Asker or QuestionAnswer test expects: `allowed`, or the refusal's SQLSTATE and words.
    static func requestCallerAnswer(_ test: RuleTest) -> String {
        test.answer == "allowed" ? "allowed" : "\(test.sqlState ?? "?") <\(test.message ?? "?")>"
    }
}
