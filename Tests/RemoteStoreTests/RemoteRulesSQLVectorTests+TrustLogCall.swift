import Foundation
import TestStack
import Testing

extension RemoteRulesSQLVectorTests {
    /// What `private.start_trust_log`, `private.append_trust_entries` and
    /// `private.request_identity_reset` raise once they read an entry that is not base64: the
    /// answer `allowed` (the call got past every check the rule makes).
    static let entryReached = "22023 <the entry is not canonical base64 of a trust-log entry>"

    /// The TrustLogCall tests through the three SQL functions themselves (both schema variants
    /// have them; the own one is used): each test signs in a fresh user whose `amr` says a
    /// password sign-in now (fresh) or an hour ago (stale), writes the user's log state (a
    /// pending reset asked now, so that the lock does not settle it; the last reset request its
    /// age ago), the current epoch's head and a legacy identity key as the test says, then makes
    /// the call with entries and backups that are not base64 (`x`) (``callsStatement(_:_:)``).
    static func trustLogCallStatement(_ tests: [RuleTest]) -> String {
        func array(_ count: Int?) -> String {
            count.map { "array_fill('x'::text, ARRAY[\($0)])" } ?? "NULL::text[]"
        }
        func value(_ number: Int?) -> String { number.map(String.init) ?? "NULL" }
        return callsStatement(tests) { test in
            let user = freshID()
            let signedIn = "floor(extract(epoch FROM now()))::bigint - \(test.freshSignIn == true ? 0 : 3_600)"
            var setup = [
                "SELECT set_config('request.jwt.claims', json_build_object('sub', \(user), 'role', 'authenticated', "
                    + "'amr', json_build_array(json_build_object('method', 'password', 'timestamp', \(signedIn))))::text, true)"
            ]
            let pending = test.pending == true
            setup.append(
                "INSERT INTO private.trust_log_state (user_id, current_epoch, highest_epoch, pending_epoch, pending_hash, "
                    + "pending_created_at, last_reset_request) VALUES (\(user), \(value(test.currentEpoch)), "
                    + "\(test.highestEpoch ?? 0), \(pending ? value(test.highestEpoch) : "NULL"), "
                    + "\(pending ? "'\\x00'::bytea" : "NULL"), "
                    + "\(pending ? "floor(extract(epoch FROM now()))::bigint" : "NULL"), "
                    + "\(test.lastResetAge.map { "now() - interval '\($0) seconds'" } ?? "NULL"))")
            if let current = test.currentEpoch, let head = test.headSeq {
                setup.append(
                    "INSERT INTO private.trust_log_heads (user_id, epoch, seq, hash, created_at, last_proof) "
                        + "VALUES (\(user), \(current), \(head), '\\x00'::bytea, 0, '\\x00'::bytea)")
            }
            if test.legacyIdentity == true {
                setup.append("INSERT INTO public.user_identity_keys (user_id, public_key) VALUES (\(user), 'legacy')")
            }
            let call: String =
                switch test.call {
                case "start": "private.start_trust_log(\(array(test.entryCount)), \(array(test.backupCount)))"
                case "append":
                    "private.append_trust_entries(\(value(test.epoch)), \(test.firstSeq.map(String.init) ?? "NULL"), "
                        + "\(array(test.entryCount)), \(array(test.backupCount)))"
                case "reset": "private.request_identity_reset('x', NULL, NULL, NULL)"
                default: "private.request_identity_reset('x', NULL, 'x', NULL)"
                }
            return RowCall(setup: setup, call: call)
        }
    }

    /// A TrustLogCall test's answer as the SQL prints it.
    static func trustLogCallAnswer(_ test: RuleTest) -> String {
        test.answer == "allowed" ? entryReached : "\(test.sqlState ?? "?") <\(test.message ?? "?")>"
    }
}
