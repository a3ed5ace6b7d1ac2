import Foundation
import TestStack
import Testing

extension RemoteRulesSQLVectorTests {
    /// The CallerGate tests through the functions every device-scoped call starts with: each test
    /// signs in a fresh user (or no one), sends a fresh credential in the request's headers (or
    /// none), writes its credential row and its trust log's state and marks as the test says,
    /// calls `private.acting_device` and `private.caller_device`, and asks `private.calling_device`. Triggers are off in the
    /// transaction (`session_replication_role`), so the state is what the test says even where no
    /// writer leaves it (a revoked device whose credential has not ended). One transaction, rolled
    /// back; a refusal is caught in its own block and answers with its SQLSTATE, hint and words.
    /// Tests a statement holds: some 1.5 KB of SQL each, well under the 128 KiB a psql argument
    /// may hold.
    static let callerChunk = 40

    static func callerGateStatement(_ tests: [RuleTest]) -> String {
        var parts = [
            "BEGIN", "SET LOCAL session_replication_role = replica",
            "CREATE TEMP TABLE gate_calls (n serial, line text)",
        ]
        for test in tests {
            let fresh = UUID().uuidString.lowercased()
            let (user, device) = (literal(fresh) + "::uuid", literal(test.device) + "::uuid")
            let claims =
                test.signedIn == true ? "{\"sub\": \"\(fresh)\", \"role\": \"authenticated\"}" : "{\"role\": \"anon\"}"
            let credential = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            // A malformed credential is the registered one in capitals, which the server reads as none.
            let sent = test.credential == "malformed" ? credential.uppercased() : credential
            let header = test.credential == "none" ? "{}" : "{\"x-device-credential\": \"\(sent)\"}"
            parts += [
                "SET LOCAL request.jwt.claims = \(literal(claims))", "SET LOCAL request.headers = \(literal(header))",
            ]
            let owner = test.credential == "another_user" ? literal(UUID().uuidString.lowercased()) + "::uuid" : user
            if ["registered", "malformed", "ended", "another_user"].contains(test.credential) {
                parts.append(
                    "INSERT INTO private.device_credentials (device_id, user_id, hash, ended_at) VALUES (\(device), "
                        + "\(owner), sha256(decode('\(credential)', 'hex')), \(test.credential == "ended" ? "now()" : "NULL"))"
                )
            }
            if test.trustLog != "none" {
                let epoch = test.trustLog == "no_epoch" ? "NULL, 0" : "1, 1"
                parts.append(
                    "INSERT INTO private.trust_log_state (user_id, current_epoch, highest_epoch) VALUES (\(user), \(epoch))"
                )
            }
            let marks: [(String?, Bool)] =
                switch test.trustLog {
                case "certifies": [(test.device, false)]
                // A state without an epoch holds marks that would refuse the device, were they read.
                case "revokes", "no_epoch": [(test.device, false), (test.device, true)]
                case "silent": [("bbbbbbbb-0000-4000-8000-00000000000b", false)]
                default: []
                }
            for (seq, (marked, revokes)) in marks.enumerated() {
                parts.append("SELECT private.tl_mark_device(\(user), 1, \(literal(marked)), \(seq), \(revokes))")
            }
            let call = "private.acting_device(\(literal(test.named)), \(test.trusted == true))"
            parts.append(
                "DO $g$ DECLARE h text; BEGIN INSERT INTO gate_calls (line) SELECT '\(test.tcId) acts ' || \(call); "
                    + "EXCEPTION WHEN others THEN GET STACKED DIAGNOSTICS h = PG_EXCEPTION_HINT; INSERT INTO gate_calls (line) "
                    + "VALUES ('\(test.tcId) ' || SQLSTATE || ' ' || coalesce(nullif(h, ''), '-') || ' <' || SQLERRM || '>'); END $g$"
            )
            let mine = "WHERE line LIKE '\(test.tcId) %'"
            let word =
                "CASE WHEN SQLERRM LIKE 'device_id must be%' THEN 'malformed_name' "
                + "WHEN SQLERRM LIKE 'this call needs a signed-in%' THEN 'signed_out' "
                + "WHEN SQLERRM LIKE 'this call needs the credential%' THEN 'no_credential' "
                + "WHEN SQLERRM LIKE 'a device acts only%' THEN 'not_its_name' "
                + "WHEN SQLERRM LIKE 'only a device your trust log%' THEN 'not_certified' ELSE SQLERRM END"
            parts.append(
                "DO $c$ BEGIN PERFORM private.caller_device(\(test.trusted == true)); "
                    + "UPDATE gate_calls SET line = line || ' acts' \(mine); EXCEPTION WHEN others THEN "
                    + "UPDATE gate_calls SET line = line || ' ' || \(word) \(mine); END $c$")
            parts.append(
                "UPDATE gate_calls SET line = line || ' ' || coalesce(private.calling_device()::text, 'none') \(mine)")
            parts.append("DELETE FROM private.device_credentials WHERE device_id = \(device)")
        }
        return (parts + ["SELECT line FROM gate_calls ORDER BY n", "ROLLBACK"]).joined(separator: ";\n") + ";"
    }

    /// What a CallerGate test expects: `acts` and the device, or the refusal's SQLSTATE, hint
    /// (`-`: none) and words; then the answer to the call naming no device (`caller_device`), and
    /// the calling device (`none`: none).
    static func callerGateAnswer(_ test: RuleTest) -> String {
        let verdict =
            test.answer == "acts"
            ? "acts \(test.device ?? "?")" : "\(test.sqlState ?? "?") \(test.hint ?? "-") <\(test.message ?? "?")>"
        return verdict + " " + (test.itself ?? "?") + " " + (test.calling == true ? test.device ?? "?" : "none")
    }
}

extension RemoteRulesSQLVectorTests {
    @Test("the caller gate's vectors get their answers from the deployed variant's functions too")
    func callerGateDeployed() async throws {
        let stack = try StackEnvironment.require()
        let tests = try Self.groups()["CallerGate"] ?? []
        #expect(tests.count > 200, "CallerGate: \(tests.count) tests")
        var output = ""
        for start in stride(from: 0, to: tests.count, by: Self.callerChunk) {
            let chunk = Array(tests[start..<min(start + Self.callerChunk, tests.count)])
            output += try await stack.sql(Self.callerGateStatement(chunk), database: "sync_deployed") + "\n"
        }
        let lines = output.split(separator: "\n").map(String.init).filter { !$0.isEmpty }
        #expect(lines == tests.map { Self.expected("CallerGate", $0) })
    }
}
