import Foundation
import TestStack
import Testing

extension RemoteRulesSQLVectorTests {
    /// The RequestControl tests through `private.cancel_approval` and `private.reopen_approval`
    /// (the project's own schema: the deployed variant has no approvals): each test signs in a
    /// fresh user and writes the request row of a fresh id the test names (pending for a cancel;
    /// approved with the decision signature the reopen names; due in an hour; reopened as often
    /// as the test says; keeping, when the test keeps a hash, the SHA-256 of 32 bytes of 0x01, or
    /// of 31 for a `short` control), then makes the call with the test's control: those bytes
    /// (`right` and `short`), 32 bytes of 0x02, the right ones in base64 with a line break after
    /// eight characters, text that is not base64, or none (``callsStatement(_:_:)``).
    static func requestControlStatement(_ tests: [RuleTest]) -> String {
        func bytes(_ hex: String, _ count: Int) -> String { "decode(repeat('\(hex)', \(count)), 'hex')" }
        return callsStatement(tests) { test in
            let (user, stranger, device, other, id) = (freshID(), freshID(), freshID(), freshID(), freshID())
            let (cancel, short) = (test.event == "cancel", test.control == "short")
            var setup = [
                "SELECT set_config('request.jwt.claims', json_build_object('sub', \(user), 'role', 'authenticated')::text, true)"
            ]
            if let (owner, asker) = heldRow(
                test.approvalBy, user: user, stranger: stranger, device: device, other: other)
            {
                setup.append(
                    "INSERT INTO public.approval_requests (id, user_id, session_id, requester_device_id, body, generation, "
                        + "expires_at, status, decision_signature, reopened, control_hash) VALUES (\(id), \(owner), "
                        + "gen_random_uuid(), \(asker), 'x', 1, floor(extract(epoch FROM now()))::bigint + 3600, "
                        + "\(cancel ? "'pending', NULL" : "'approved', 'sig'"), \(test.reopened ?? 0), "
                        + "\(test.controlHash == true ? "sha256(\(bytes("01", short ? 31 : 32)))" : "NULL"))")
            }
            func base64(_ bytes: String) -> String { "translate(encode(\(bytes), 'base64'), E'\\n', '')" }
            let right = base64(bytes("01", 32))
            let argument =
                switch test.control {
                case "right": right
                case "wrong": base64(bytes("02", 32))
                case "short": base64(bytes("01", 31))
                case "noncanonical": "substr(\(right), 1, 8) || E'\\n' || substr(\(right), 9)"
                case "malformed": "'not base64!'"
                default: "NULL"
                }
            let call =
                cancel
                ? "private.cancel_approval(\(id), \(argument))" : "private.reopen_approval(\(id), 'sig', \(argument))"
            return RowCall(setup: setup, call: call)
        }
    }
}
