import Foundation
import Testing

extension RemoteRulesSQLVectorTests {
    /// The RequestRefusal tests through `private.rule_request_refusal` (the field) and through
    /// `private.require_new_request` (the words the calls raise): its expiry `expiresIn` seconds
    /// after the transaction's clock, and a body of the test's length whose header is `0x01` and
    /// the test's generation (version 2 when the header must not match), or text that is not
    /// base64. A generation past `integer` cannot reach `require_new_request`, whose parameter is
    /// one (PostgREST refuses the call before it): its test asks the rule only. One transaction,
    /// rolled back; each call in its own block, so that a refusal is caught.
    static func requestRefusalStatement(_ tests: [RuleTest]) -> String {
        var parts = ["BEGIN", "CREATE TEMP TABLE refusal_calls (n serial, line text)"]
        for test in tests {
            let generation = test.generation.map(String.init) ?? "NULL"
            let field =
                "coalesce(private.rule_request_refusal(\(literal(test.kind)), \(generation)::bigint, "
                + "\(test.expiresIn.map(String.init) ?? "NULL")::bigint, "
                + "\(test.bodyBytes.map(String.init) ?? "NULL")::integer, \(flag(test.bodyHeaderMatches))), 'none')"
            var words = ""
            if let value = test.generation, let generation = Int32(exactly: value) {
                let header =
                    (test.bodyHeaderMatches == true ? "01" : "02")
                    + String(format: "%08x", UInt32(bitPattern: generation))
                let body =
                    test.bodyBytes.map { bytes in
                        "translate(encode(decode('\(header)' || repeat('00', \(bytes - 5)), 'hex'), 'base64'), E'\\n', '')"
                    } ?? "'not base64!'"
                words =
                    "PERFORM private.require_new_request(\(literal(test.kind)), \(generation), "
                    + "floor(extract(epoch FROM now()))::bigint + \(test.expiresIn.map(String.init) ?? "NULL"), \(body)); "
            }
            parts.append(
                "DO $a$ DECLARE f text; BEGIN f := \(field); \(words)"
                    + "INSERT INTO refusal_calls (line) VALUES ('\(test.tcId) ' || f); EXCEPTION WHEN others THEN "
                    + "INSERT INTO refusal_calls (line) VALUES ('\(test.tcId) ' || f || ' ' || SQLSTATE || ' <' || SQLERRM || '>'); "
                    + "END $a$")
        }
        return (parts + ["SELECT line FROM refusal_calls ORDER BY n", "ROLLBACK"]).joined(separator: ";\n") + ";"
    }

    /// What a RequestRefusal test expects: the field refused (or `none`), and the refusal's
    /// SQLSTATE and words when the call can reach `require_new_request`.
    static func requestRefusalAnswer(_ test: RuleTest) -> String {
        let field = test.refused ?? "?"
        guard let generation = test.generation, Int32(exactly: generation) != nil, field != "none" else { return field }
        return field + " " + (test.sqlState ?? "?") + " <" + (test.message ?? "?") + ">"
    }
}
