import Foundation
import TestStack
import Testing

extension RemoteRulesSQLVectorTests {
    /// The QuestionClose tests through `private.close_question` (the project's own schema: the
    /// deployed variant has no questions): each test signs in a fresh user and writes the pending
    /// question of a fresh id the test names (due in an hour), then closes it with the test's
    /// status word. Triggers are off, so a row needs no parents. One transaction, rolled back; a
    /// refusal is caught in its own block.
    static func questionCloseStatement(_ tests: [RuleTest]) -> String {
        var parts = [
            "BEGIN", "SET LOCAL session_replication_role = replica",
            "CREATE TEMP TABLE close_calls (n serial, line text)",
        ]
        func fresh() -> String { literal(UUID().uuidString.lowercased()) + "::uuid" }
        for test in tests {
            let (user, stranger, device, other, id) = (fresh(), fresh(), fresh(), fresh(), fresh())
            parts.append(
                "SELECT set_config('request.jwt.claims', json_build_object('sub', \(user), 'role', 'authenticated')::text, true)"
            )
            if let (owner, asker) = heldRow(
                test.questionBy, user: user, stranger: stranger, device: device, other: other)
            {
                parts.append(
                    "INSERT INTO public.agent_questions (id, user_id, session_id, requester_device_id, body, generation, "
                        + "expires_at) VALUES (\(id), \(owner), gen_random_uuid(), \(asker), 'x', 1, "
                        + "floor(extract(epoch FROM now()))::bigint + 3600)")
            }
            parts.append(
                "DO $a$ BEGIN PERFORM private.close_question(\(id), \(literal(test.closedAs))::text); "
                    + "INSERT INTO close_calls (line) VALUES ('\(test.tcId) allowed'); "
                    + "EXCEPTION WHEN others THEN INSERT INTO close_calls (line) "
                    + "VALUES ('\(test.tcId) ' || SQLSTATE || ' <' || SQLERRM || '>'); END $a$")
        }
        return (parts + ["SELECT line FROM close_calls ORDER BY n", "ROLLBACK"]).joined(separator: ";\n") + ";"
    }
}
