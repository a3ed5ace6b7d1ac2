import Foundation
import TestStack
import Testing

extension RemoteRulesSQLVectorTests {
    /// The QuestionAnswer tests through `private.answer_question` itself (the project's own
    /// schema: the deployed variant has no questions): each test signs in a fresh user, writes
    /// the answering device's row (the caller's, or another user's), the trust log's state and a
    /// mark certifying it when the test says so, and the question row of a fresh id the test
    /// names (generation 1, pending for an hour), then answers it with text of the test's length
    /// and header (`0x01`, generation 1; version 2 or generation 2 when the header must not
    /// match) or text that is not base64 (``callsStatement(_:_:)``; an answer the function
    /// returns as not accepted is recorded as its JSON). Tests a statement holds: some 1.2 KB of
    /// SQL each.
    static func questionAnswerStatement(_ tests: [RuleTest]) -> String {
        callsStatement(tests) { test in
            let (user, stranger, device, other, id) = (freshID(), freshID(), freshID(), freshID(), freshID())
            var setup = answeringDevice(test, user: user, stranger: stranger, device: device)
            let row = heldRow(test.questionBy, user: user, stranger: stranger, device: device, other: other)
            if let (owner, asker) = row {
                setup.append(
                    "INSERT INTO public.agent_questions (id, user_id, session_id, requester_device_id, body, generation, "
                        + "expires_at) VALUES (\(id), \(owner), gen_random_uuid(), \(asker), 'x', 1, "
                        + "floor(extract(epoch FROM now()))::bigint + 3600)")
            }
            let answer =
                test.bodyBytes.map { bytes in
                    // A header that must not match: version 2 at the least length, generation 2
                    // at the others, so that each of the two checks is reached.
                    let header =
                        test.bodyHeaderMatches == true ? "0100000001" : bytes == 34 ? "0200000001" : "0100000002"
                    return
                        "translate(encode(decode('\(header)' || repeat('00', \(bytes - 5)), 'hex'), 'base64'), E'\\n', '')"
                } ?? "'not base64!'"
            return RowCall(
                setup: setup, call: "private.answer_question(\(id), \(device), \(answer))",
                returned: "CASE WHEN r->>'accepted' = 'true' THEN 'allowed' ELSE r::text END")
        }
    }

    /// The statements that sign in `user` and write the answering `device`: the caller's when the
    /// test says `mine`, else `stranger`'s, certified by a mark of the trust log's epoch 1 when the
    /// test says `trusted`.
    static func answeringDevice(_ test: RuleTest, user: String, stranger: String, device: String) -> [String] {
        var parts = [
            "SELECT set_config('request.jwt.claims', json_build_object('sub', \(user), 'role', 'authenticated')::text, true)",
            "INSERT INTO public.devices (id, user_id, name, device_type) VALUES (\(device), "
                + "\(test.mine == true ? user : stranger), 'answering', 'ios-phone')",
        ]
        if test.trusted == true {
            parts += [
                "INSERT INTO private.trust_log_state (user_id, current_epoch, highest_epoch) VALUES (\(user), 1, 1)",
                "SELECT private.tl_mark_device(\(user), 1, \(device)::text, 0, false)",
            ]
        }
        return parts
    }

    /// The owner and the requesting device of the row a holder word (`RemoteRulesGroup.RowHolder`)
    /// names (`device`: the caller's, of the calling device; `other_device`: the caller's, of
    /// another; `another_user`: another user's, naming the calling device); `nil`: no row.
    static func heldRow(
        _ word: String?, user: String, stranger: String, device: String, other: String
    ) -> (owner: String, asker: String)? {
        switch word {
        case "device": (user, device)
        case "other_device": (user, other)
        case "another_user": (stranger, device)
        default: nil
        }
    }
}
