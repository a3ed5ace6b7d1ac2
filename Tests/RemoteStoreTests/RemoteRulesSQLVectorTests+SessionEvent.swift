import Foundation
import TestStack
import Testing

extension RemoteRulesSQLVectorTests {
    /// The SessionEvent tests through `private.notify_session_event` (the project's own schema:
    /// the deployed variant has no task alerts): each test signs in a fresh user, writes the
    /// reporting device (the caller's when the test says `mine`, else another user's) and the
    /// session row of a fresh id the test names, then reports the test's kind. No device has a
    /// push token, so an allowed report queues nothing (``callsStatement(_:_:)``).
    static func sessionEventStatement(_ tests: [RuleTest]) -> String {
        callsStatement(tests) { test in
            let (user, stranger, device, other, id) = (freshID(), freshID(), freshID(), freshID(), freshID())
            var setup = [
                "SELECT set_config('request.jwt.claims', json_build_object('sub', \(user), 'role', 'authenticated')::text, true)",
                "INSERT INTO public.devices (id, user_id, name, device_type) VALUES (\(device), "
                    + "\(test.mine == true ? user : stranger), 'reporting', 'mac-desktop')",
            ]
            if let (owner, runner) = heldRow(test.runBy, user: user, stranger: stranger, device: device, other: other) {
                setup.append(
                    "INSERT INTO public.agent_coding_sessions (id, user_id, device_id, repository_id) "
                        + "VALUES (\(id), \(owner), \(runner), gen_random_uuid())")
            }
            return RowCall(
                setup: setup, call: "private.notify_session_event(\(id), \(device), \(literal(test.kind))::text)")
        }
    }
}
