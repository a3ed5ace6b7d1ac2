import Foundation
import TestStack
import Testing

/// The `TrustLogAppend` vectors of `testvectors/trust-log-v1.json` run against the SQL itself
/// (`private.tl_check_at`, rules E with the server's clock as an argument), on both schema
/// variants: the Swift rules (`TrustLogServerRules`) pass the same vectors in
/// `ConformanceVectorsTests`, so a rule changed in one language only fails here or there. The
/// `TrustLogMarks` vectors likewise run against `private.tl_record_devices`, which reads an entry's
/// devices at fixed offsets where the embedded remote runs the trust log's parser.
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
        let certified: [String]?
        let revoked: [String]?
    }

    struct File: Decodable {
        struct Group: Decodable {
            let type: String
            let tests: [AppendTest]
        }
        let testGroups: [Group]
    }

    static func appendTests() throws -> [AppendTest] { try tests(of: "TrustLogAppend") }

    /// The tests of one group of the file.
    static func tests(of type: String) throws -> [AppendTest] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("testvectors/trust-log-v1.json")
        let file = try JSONDecoder().decode(File.self, from: Data(contentsOf: url))
        return file.testGroups.filter { $0.type == type }.flatMap(\.tests)
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

    /// What a `TrustLogMarks` test expects `private.trust_log_devices` to hold for its epoch: each
    /// device with what the entry did to it, in byte order, or for an entry the gate cannot read
    /// the mark that leaves nobody trusted (`*`, whether the entry would have certified or revoked).
    /// The file's unreadable entries name no device the SQL could read either: a succession whose
    /// second revocation named another user would leave `*` beside the first, and is not in it.
    static func expectedMarks(_ test: AppendTest) -> String {
        guard test.result == "valid" else { return "\(test.tcId) * unreadable" }
        let rows = (test.certified ?? []).map { "\($0) certified" } + (test.revoked ?? []).map { "\($0) revoked" }
        return "\(test.tcId) " + (rows.isEmpty ? "none" : rows.sorted().joined(separator: ", "))
    }

    @Test(
        "every stored entry leaves in private.trust_log_devices the marks its vector names", arguments: [false, true])
    func markVectors(deployed: Bool) async throws {
        let stack = try StackEnvironment.require()
        let tests = try Self.tests(of: "TrustLogMarks")
        // Every kind of entry, a succession revoking two, and entries the gate cannot read.
        #expect(tests.count == 16, "\(tests.count) mark tests")
        #expect(tests.contains { $0.result == "invalid" } && tests.contains { ($0.revoked ?? []).count == 2 })
        // Each entry in an epoch of its own (its test's id), in one transaction rolled back.
        var parts = ["BEGIN", "CREATE TEMP TABLE mark_answers (n serial, line text)"]
        for test in tests {
            let user = Self.literal(test.userId) + "::uuid"
            parts.append("SELECT private.tl_record_devices(\(user), \(test.tcId), 0, \(Self.literal(test.entry)))")
            parts.append(
                "INSERT INTO mark_answers (line) SELECT '\(test.tcId) ' || coalesce(string_agg(d.device_id || "
                    + "CASE WHEN d.device_id = '*' THEN ' unreadable' WHEN d.revoked_seq IS NULL THEN ' certified' "
                    + "ELSE ' revoked' END, ', ' "
                    + "ORDER BY d.device_id COLLATE \"C\"), 'none') FROM private.trust_log_devices d "
                    + "WHERE d.user_id = \(user) AND d.epoch = \(test.tcId)")
        }
        parts += ["SELECT line FROM mark_answers ORDER BY n", "ROLLBACK"]
        let output = try await stack.sql(
            parts.joined(separator: ";\n") + ";", database: deployed ? "sync_deployed" : "sync_own")
        let lines = output.split(separator: "\n").map(String.init).filter { !$0.isEmpty }
        #expect(lines == tests.map(Self.expectedMarks))
    }
}
