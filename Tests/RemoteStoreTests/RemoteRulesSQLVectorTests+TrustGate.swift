import Foundation
import TestStack
import Testing

extension RemoteRulesSQLVectorTests {
    /// The trust gate's tests (EpochInForce, TrustedDevice) through the functions the gate runs on,
    /// not on rules of their own: each test writes a fresh user's `trust_log_state` row and marks
    /// (`private.tl_mark_device`, with its triggers), and asks `private.trust_epoch` or
    /// `private.is_trusted_device`. An EpochInForce test also asks the two other places that
    /// judge a reset's 72 hours: the head the feeds carry (`private.trust_log_head_of`, which shows
    /// a reset still pending) and the writers' lock (`private.tl_lock`, which makes one that took
    /// effect current). One transaction, rolled back: its `now()` is fixed, so a reset's age is
    /// exact, and nothing it wrote stays. The answers go to a temporary table read last.
    static func trustGateStatement(_ type: String, _ tests: [RuleTest]) -> String {
        func integer(_ value: Int?) -> String { value.map(String.init) ?? "NULL" }
        var parts = ["BEGIN", "CREATE TEMP TABLE gate_answers (n serial, line text)"]
        for test in tests {
            let user = literal(UUID().uuidString.lowercased()) + "::uuid"
            if type == "EpochInForce" {
                let created = test.pendingAge.map { "floor(extract(epoch FROM now()))::bigint - \($0)" } ?? "NULL"
                parts.append(
                    "INSERT INTO private.trust_log_state (user_id, current_epoch, highest_epoch, pending_epoch, "
                        + "pending_hash, pending_created_at) VALUES (\(user), \(integer(test.currentEpoch)), 9, "
                        + "\(integer(test.pendingEpoch)), \(test.pendingEpoch == nil ? "NULL" : "'\\x00'::bytea"), \(created))"
                )
                parts.append(
                    "INSERT INTO gate_answers (line) SELECT '\(test.tcId) ' || coalesce(private.trust_epoch(\(user))::text, 'none') "
                        + "|| ' ' || coalesce(private.trust_log_head_of(\(user)) ->> 'pendingEpoch', 'none')")
                parts.append(
                    "UPDATE gate_answers SET line = line || ' ' || coalesce((SELECT (private.tl_lock(\(user))).current_epoch)::text, "
                        + "'none') WHERE line LIKE '\(test.tcId) %'")
                continue
            }
            if let epoch = test.inForce {
                parts.append(
                    "INSERT INTO private.trust_log_state (user_id, current_epoch, highest_epoch) VALUES (\(user), \(epoch), \(epoch))"
                )
            }
            for (seq, mark) in (test.marks ?? []).enumerated() {
                parts.append(
                    "SELECT private.tl_mark_device(\(user), \(mark.epoch), \(literal(mark.device))::text, \(seq), \(mark.revokes))"
                )
            }
            parts.append(
                "INSERT INTO gate_answers (line) SELECT '\(test.tcId) ' || private.is_trusted_device(\(user), "
                    + "\(literal(test.device))::uuid)::text")
        }
        return (parts + ["SELECT line FROM gate_answers ORDER BY n", "ROLLBACK"]).joined(separator: ";\n") + ";"
    }

    /// What an EpochInForce test expects: the epoch in force, the pending epoch the head shows (a
    /// reset that has not taken effect), and the current epoch once a writer's lock has settled the
    /// state, which is the epoch in force again.
    static func epochAnswer(_ test: RuleTest) -> String {
        let inForce = test.inForce.map(String.init) ?? "none"
        let shown = test.pendingEpoch.flatMap { $0 == test.inForce ? nil : String($0) } ?? "none"
        return [inForce, shown, inForce].joined(separator: " ")
    }
}

extension RemoteRulesSQLVectorTests {
    @Test(
        "the trust gate's, the append's epoch and the entries' placement vectors get their answers from the deployed variant's functions too"
    )
    func trustGateDeployed() async throws {
        let stack = try StackEnvironment.require()
        let groups = try Self.groups()
        for type in ["EpochInForce", "TrustedDevice", "TrustEpochStatus", "TrustPlacement"] {
            let tests = groups[type] ?? []
            #expect(tests.count > 30, "\(type): \(tests.count) tests")
            var output = ""
            for start in stride(from: 0, to: tests.count, by: 100) {
                let chunk = Array(tests[start..<min(start + 100, tests.count)])
                output += try await stack.sql(Self.groupStatement(type, chunk), database: "sync_deployed") + "\n"
            }
            let lines = output.split(separator: "\n").map(String.init).filter { !$0.isEmpty }
            #expect(lines.sorted() == tests.map { Self.expected(type, $0) }.sorted(), "\(type)")
        }
    }
}
