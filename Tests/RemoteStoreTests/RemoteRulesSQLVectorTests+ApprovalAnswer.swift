import Foundation
import TestStack
import Testing

extension RemoteRulesSQLVectorTests {
    /// The ApprovalAnswer tests through `private.answer_approval` and the trigger
    /// `private.approval_answer_device_trusted` (the project's own schema: the deployed variant
    /// has no approvals): each test signs in a fresh user, writes the answering device's row (the
    /// caller's, or another user's), the trust log's state and a mark certifying it when the test
    /// says so, and the request row of a fresh id the test names with its session (generation 1,
    /// in the test's status, due in an hour), then answers it with the test's verdict, a decision of its length
    /// (zeros, but the answering device's id or another at bytes 140-175) and a signature of its
    /// length, or text that is not base64. Triggers are off while the rows are written, so a row
    /// needs no other parents, and on for the call, so that the trigger holds the answer that decides
    /// (``callsStatement(_:_:)``).
    static func approvalAnswerStatement(_ tests: [RuleTest]) -> String {
        func zeros(_ count: Int) -> String { "decode(repeat('00', \(count)), 'hex')" }
        func base64(_ bytes: String) -> String { "translate(encode(\(bytes), 'base64'), E'\\n', '')" }
        return callsStatement(tests) { test in
            let (user, stranger, device, other, id) = (freshID(), freshID(), freshID(), freshID(), freshID())
            var setup = ["SET LOCAL session_replication_role = replica"]
            setup += answeringDevice(test, user: user, stranger: stranger, device: device)
            let row = heldRow(test.approvalBy, user: user, stranger: stranger, device: device, other: other)
            if let (owner, asker) = row {
                // The session too: an update of a row written in this transaction checks its key.
                let session = freshID()
                setup += [
                    "INSERT INTO public.agent_coding_sessions (id, user_id, device_id, repository_id) "
                        + "VALUES (\(session), \(owner), \(asker), gen_random_uuid())",
                    "INSERT INTO public.approval_requests (id, user_id, session_id, requester_device_id, body, generation, "
                        + "expires_at, status) VALUES (\(id), \(owner), \(session), \(asker), 'x', 1, "
                        + "floor(extract(epoch FROM now()))::bigint + 3600, \(literal(test.from)))",
                ]
            }
            let named = test.namesDevice == true ? device : "gen_random_uuid()"
            let decision =
                test.bodyBytes.map {
                    base64("\(zeros(140)) || convert_to(\(named)::text, 'UTF8') || \(zeros($0 - 176))")
                }
                ?? "'not base64!'"
            let signature = test.signatureBytes.map { base64(zeros($0)) } ?? "'not base64!'"
            return RowCall(
                setup: setup + ["SET LOCAL session_replication_role = origin"],
                call: "private.answer_approval(\(id), \(device), \(literal(test.verdict)), \(decision), \(signature))")
        }
    }
}
