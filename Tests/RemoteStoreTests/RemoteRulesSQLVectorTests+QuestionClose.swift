import Foundation
import TestStack
import Testing

extension RemoteRulesSQLVectorTests {
    /// The QuestionClose tests through `private.close_question` (the project's own schema: the
    /// deployed variant has no questions): each test signs in a fresh user and writes the pending
    /// question of a fresh id the test names (due in an hour), then closes it with the test's
    /// status word (``callsStatement(_:_:)``).
    static func questionCloseStatement(_ tests: [RuleTest]) -> String {
        callsStatement(tests) { test in
            let (user, stranger, device, other, id) = (freshID(), freshID(), freshID(), freshID(), freshID())
            var setup = [
                "SELECT set_config('request.jwt.claims', json_build_object('sub', \(user), 'role', 'authenticated')::text, true)"
            ]
            if let (owner, asker) = heldRow(
                test.questionBy, user: user, stranger: stranger, device: device, other: other)
            {
                setup.append(
                    "INSERT INTO public.agent_questions (id, user_id, session_id, requester_device_id, body, generation, "
                        + "expires_at) VALUES (\(id), \(owner), gen_random_uuid(), \(asker), 'x', 1, "
                        + "floor(extract(epoch FROM now()))::bigint + 3600)")
            }
            return RowCall(setup: setup, call: "private.close_question(\(id), \(literal(test.closedAs))::text)")
        }
    }
}
