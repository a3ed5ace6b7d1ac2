import Foundation
import TestStack
import Testing

extension RemoteRulesSQLVectorTests {
    /// What one test writes and calls.
    struct RowCall {
        /// The statements that write the rows the call needs.
        var setup: [String]
        /// The SQL call.
        var call: String
        /// What a call that returns records, an expression over its `jsonb` answer `r`; `nil`:
        /// `allowed`, whatever it returns.
        var returned: String? = nil
    }

    /// A fresh id, as a SQL `uuid`.
    static func freshID() -> String { literal(UUID().uuidString.lowercased()) + "::uuid" }

    /// One transaction that runs, for each test, `make`'s setup and then its call in a block of
    /// its own, recording `tcId allowed` (or the `returned` words) when the call returns and
    /// `tcId SQLSTATE <message>` when it raises. Triggers are off (a setup may turn them on for
    /// its call), so a row needs no parents; the transaction is rolled back.
    static func callsStatement(_ tests: [RuleTest], _ make: (RuleTest) -> RowCall) -> String {
        var parts = [
            "BEGIN", "SET LOCAL session_replication_role = replica",
            "CREATE TEMP TABLE rule_calls (n serial, line text)",
        ]
        for test in tests {
            let row = make(test)
            parts += row.setup
            let recorded =
                row.returned.map {
                    "r := \(row.call); INSERT INTO rule_calls (line) VALUES ('\(test.tcId) ' || \($0));"
                }
                ?? "PERFORM \(row.call); INSERT INTO rule_calls (line) VALUES ('\(test.tcId) allowed');"
            parts.append(
                "DO $c$ DECLARE r jsonb; BEGIN \(recorded) EXCEPTION WHEN others THEN INSERT INTO rule_calls (line) "
                    + "VALUES ('\(test.tcId) ' || SQLSTATE || ' <' || SQLERRM || '>'); END $c$")
        }
        return (parts + ["SELECT line FROM rule_calls ORDER BY n", "ROLLBACK"]).joined(separator: ";\n") + ";"
    }
}
