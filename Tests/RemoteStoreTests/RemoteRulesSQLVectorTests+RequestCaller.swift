import Foundation
import TestStack
import Testing

extension RemoteRulesSQLVectorTests {
    /// The SessionDesktop and Asker tests through `private.require_session_desktop` and
    /// `private.require_asker` themselves (the project's own schema: the deployed variant has
    /// neither): each test signs in a fresh user with a fresh device (its credential in the
    /// request's headers, for `require_asker`'s caller), writes the rows of a fresh id the test
    /// names and calls the function. Triggers are off in the transaction, so a row needs no
    /// parents. One transaction, rolled back; a refusal is caught in its own block.
    static func requestCallerStatement(_ type: String, _ tests: [RuleTest]) -> String {
        var parts = [
            "BEGIN", "SET LOCAL session_replication_role = replica",
            "CREATE TEMP TABLE scope_calls (n serial, line text)",
        ]
        func fresh() -> String { literal(UUID().uuidString.lowercased()) + "::uuid" }
        for test in tests {
            let (user, stranger, device, other, id) = (fresh(), fresh(), fresh(), fresh(), fresh())
            let credential = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            parts += [
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
                    parts.append(
                        "INSERT INTO public.agent_coding_sessions (id, user_id, device_id, repository_id) "
                            + "VALUES (\(id), \(owner), \(runner), gen_random_uuid())")
                }
                call = "private.require_session_desktop(\(id), \(device))"
            } else {
                for (table, word) in [("approval_requests", test.approvalBy), ("agent_questions", test.questionBy)] {
                    guard let (owner, asker) = row(word) else { continue }
                    parts.append(
                        "INSERT INTO public.\(table) (id, user_id, session_id, requester_device_id, body, generation, "
                            + "expires_at) VALUES (\(id), \(owner), gen_random_uuid(), \(asker), 'x', 1, 0)")
                }
                call = "private.require_asker(\(id))"
            }
            parts.append(
                "DO $r$ BEGIN PERFORM \(call); INSERT INTO scope_calls (line) VALUES ('\(test.tcId) allowed'); "
                    + "EXCEPTION WHEN others THEN INSERT INTO scope_calls (line) "
                    + "VALUES ('\(test.tcId) ' || SQLSTATE || ' <' || SQLERRM || '>'); END $r$")
        }
        return (parts + ["SELECT line FROM scope_calls ORDER BY n", "ROLLBACK"]).joined(separator: ";\n") + ";"
    }

    /// What a SessionDesktop, Asker or QuestionAnswer test expects: `allowed`, or the refusal's SQLSTATE and words.
    static func requestCallerAnswer(_ test: RuleTest) -> String {
        test.answer == "allowed" ? "allowed" : "\(test.sqlState ?? "?") <\(test.message ?? "?")>"
    }
}
