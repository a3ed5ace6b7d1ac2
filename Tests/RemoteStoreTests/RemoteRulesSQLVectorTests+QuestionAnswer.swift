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
    /// match) or text that is not base64. Triggers are off in the transaction, so a row needs no parents. One
    /// transaction, rolled back; a refusal is caught in its own block. Tests a statement holds:
    /// some 1.2 KB of SQL each.
    static func questionAnswerStatement(_ tests: [RuleTest]) -> String {
        var parts = [
            "BEGIN", "SET LOCAL session_replication_role = replica",
            "CREATE TEMP TABLE answer_calls (n serial, line text)",
        ]
        func fresh() -> String { literal(UUID().uuidString.lowercased()) + "::uuid" }
        for test in tests {
            let (user, stranger, device, other, id) = (fresh(), fresh(), fresh(), fresh(), fresh())
            parts += answeringDevice(test, user: user, stranger: stranger, device: device)
            let row = heldRow(test.questionBy, user: user, stranger: stranger, device: device, other: other)
            if let (owner, asker) = row {
                parts.append(
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
            parts.append(
                "DO $a$ DECLARE r jsonb; BEGIN r := private.answer_question(\(id), \(device), \(answer)); "
                    + "INSERT INTO answer_calls (line) VALUES ('\(test.tcId) ' || CASE WHEN r->>'accepted' = 'true' "
                    + "THEN 'allowed' ELSE r::text END); EXCEPTION WHEN others THEN INSERT INTO answer_calls (line) "
                    + "VALUES ('\(test.tcId) ' || SQLSTATE || ' <' || SQLERRM || '>'); END $a$")
        }
        return (parts + ["SELECT line FROM answer_calls ORDER BY n", "ROLLBACK"]).joined(separator: ";\n") + ";"
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
