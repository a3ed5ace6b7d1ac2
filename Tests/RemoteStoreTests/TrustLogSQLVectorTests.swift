import Foundation
import TestStack
import Testing

/// The `TrustLogAppend` vectors of `testvectors/trust-log-v1.json` run against the SQL itself
/// (`private.tl_check_at`, rules E with the server's clock as an argument), on both schema
/// variants: the Swift rules (`TrustLogServerRules`) pass the same vectors in
/// `ConformanceVectorsTests`, so a rule changed in one language only fails here or there.
@Suite("The trust-log append vectors against the SQL rules", .enabled(if: !StackEnvironment.skipped))
struct TrustLogSQLVectorTests {
    /// The fields of a `TrustLogAppend` test this check reads.
    struct AppendTest: Decodable {
        struct Head: Decodable {
            let seq: UInt64
            let hash: String
            let createdAt: UInt64
            let lastProof: String
        }
        let tcId: Int
        let comment: String
        let result: String
        // Optional: the file's other groups decode with the same type and are then left out.
        let userId: String?
        let epoch: UInt32?
        let entry: String?
        let backup: String?
        let head: Head?
        let newHead: Head?
        let now: UInt64?
        let sqlState: String?
    }

    struct File: Decodable {
        struct Group: Decodable {
            let type: String
            let tests: [AppendTest]
        }
        let testGroups: [Group]
    }

    static func appendTests() throws -> [AppendTest] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("testvectors/trust-log-v1.json")
        let file = try JSONDecoder().decode(File.self, from: Data(contentsOf: url))
        return file.testGroups.filter { $0.type == "TrustLogAppend" }.flatMap(\.tests)
    }

    /// A SQL literal: text between single quotes (doubled inside), or NULL.
    static func literal(_ text: String?) -> String {
        guard let text else { return "NULL" }
        return "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }

    static func bytes(_ hex: String?) -> String {
        hex.map { "decode(\(literal($0)), 'hex')" } ?? "NULL"
    }

    /// One statement for every test: each call's outcome as a line, `tcId ok seq hash createdAt
    /// lastProof` or `tcId refused SQLSTATE`.
    static func statement(_ tests: [AppendTest]) -> String {
        let calls = tests.map { test in
            let head = test.head
            return
                "SELECT pg_temp.outcome(\(test.tcId), \(literal(test.userId))::uuid, \(test.epoch.map(String.init) ?? "NULL"), "
                + "\(literal(test.entry)), \(literal(test.backup)), \(head.map { String($0.seq) } ?? "NULL"), "
                + "\(bytes(head?.hash)), \(head.map { String($0.createdAt) } ?? "NULL"), \(bytes(head?.lastProof)), "
                + "\(test.now.map(String.init) ?? "NULL"))"
        }
        return """
            CREATE FUNCTION pg_temp.outcome(
                tc integer, caller uuid, epoch integer, entry text, backup text, head_seq bigint, head_hash bytea,
                head_created_at bigint, head_proof bytea, now_s numeric
            ) RETURNS text LANGUAGE plpgsql AS $$
            DECLARE r private.tl_checked;
            BEGIN
                r := private.tl_check_at(caller, epoch, 0, entry, backup, head_seq, head_hash, head_created_at,
                    head_proof, now_s);
                RETURN tc || ' ok ' || r.seq || ' ' || encode(r.hash, 'hex') || ' ' || r.created_at || ' '
                    || encode(r.last_proof, 'hex');
            EXCEPTION WHEN OTHERS THEN
                RETURN tc || ' refused ' || SQLSTATE;
            END $$;
            \(calls.joined(separator: " UNION ALL "));
            """
    }

    /// What a test expects, in the outcome's words.
    static func expected(_ test: AppendTest) -> String {
        if test.result == "valid", let head = test.newHead {
            return "\(test.tcId) ok \(head.seq) \(head.hash) \(head.createdAt) \(head.lastProof)"
        }
        return "\(test.tcId) refused \(test.sqlState ?? "?")"
    }

    @Test("every append vector gets the verdict, code and head it names from the SQL", arguments: [false, true])
    func appendVectors(deployed: Bool) async throws {
        let stack = try StackEnvironment.require()
        let tests = try Self.appendTests()
        // The file's append groups, every one (a decoding slip would make this pass on nothing).
        #expect(tests.count >= 28, "\(tests.count) append tests")
        #expect(tests.contains { $0.result == "valid" } && tests.contains { $0.result == "invalid" })
        let output = try await stack.sql(
            Self.statement(tests), database: deployed ? "sync_deployed" : "sync_own")
        let lines = Dictionary(
            output.split(separator: "\n").map { line in (Int(line.split(separator: " ")[0]) ?? -1, String(line)) },
            uniquingKeysWith: { first, _ in first })
        for test in tests {
            #expect(lines[test.tcId] == Self.expected(test), "tcId \(test.tcId) (\(test.comment))")
        }
    }
}
