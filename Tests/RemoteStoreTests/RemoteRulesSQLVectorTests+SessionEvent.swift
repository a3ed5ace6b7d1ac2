import Foundation
import TestStack
import Testing

extension RemoteRulesSQLVectorTests {
    /// The SessionEvent tests through `private.notify_session_event` (the project's own schema:
    /// the deployed variant has no task alerts): each test signs in a fresh user, writes the
    /// reporting device (the caller's when the test says `mine`, else another user's) and the
    /// session row of a fresh id the test names, then reports the test's kind. No device has a
    /// push token, so an allowed report queues nothing. Triggers are off, so a row needs no
    /// parents. One transaction, rolled back; each call in its own block.
    static func sessionEventStatement(_ tests: [RuleTest]) -> String {
        var parts = [
            "BEGIN", "SET LOCAL session_replication_role = replica",
            "CREATE TEMP TABLE event_calls (n serial, line text)",
        ]
        func fresh() -> String { literal(UUID().uuidString.lowercased()) + "::uuid" }
        for test in tests {
            let (user, stranger, device, other, id) = (fresh(), fresh(), fresh(), fresh(), fresh())
            parts += [
                "SELECT set_config('request.jwt.claims', json_build_object('sub', \(user), 'role', 'authenticated')::text, true)",
                "INSERT INTO public.devices (id, user_id, name, device_type) VALUES (\(device), "
                    + "\(test.mine == true ? user : stranger), 'reporting', 'mac-desktop')",
            ]
            if let (owner, runner) = heldRow(test.runBy, user: user, stranger: stranger, device: device, other: other) {
                parts.append(
                    "INSERT INTO public.agent_coding_sessions (id, user_id, device_id, repository_id) "
                        + "VALUES (\(id), \(owner), \(runner), gen_random_uuid())")
            }
            parts.append(
                "DO $a$ BEGIN PERFORM private.notify_session_event(\(id), \(device), \(literal(test.kind))::text); "
                    + "INSERT INTO event_calls (line) VALUES ('\(test.tcId) allowed'); "
                    + "EXCEPTION WHEN others THEN INSERT INTO event_calls (line) "
                    + "VALUES ('\(test.tcId) ' || SQLSTATE || ' <' || SQLERRM || '>'); END $a$")
        }
        return (parts + ["SELECT line FROM event_calls ORDER BY n", "ROLLBACK"]).joined(separator: ";\n") + ";"
    }
}
