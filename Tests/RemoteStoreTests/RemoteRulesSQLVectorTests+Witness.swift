import Foundation
import TestStack
import Testing

extension RemoteRulesSQLVectorTests {
    /// A held witness of a WitnessAdmission test.
    struct HeldWitness: Decodable {
        let epoch: Int?
        let seq: Int64
        let signature: String
        let age: Double
    }

    /// The WitnessAdmission tests through `private.publish_witness` itself (the device's proof is
    /// `public.publish_witness`'s, before it): each test signs in a fresh user, writes the log's
    /// state and head and the device's held witnesses, makes the call and lists the device's
    /// signatures after it (`-`: none). The vectors' user becomes the fresh one in every body that decodes, and
    /// a witness's time moves by the distance between the vectors' clock and the transaction's
    /// `now()` (fixed for the transaction, so the 600 s edges are exact). The table's signatures
    /// take a language's collation first, so that an order that is not the bytes' shows. One transaction, rolled
    /// back; a refusal is caught in its own block, and its words name the answer.
    static func witnessStatement(_ tests: [RuleTest]) -> String {
        // The signatures under a language's collation, where `a` sorts before `B`: a seq's
        // witnesses must still give way in byte order (ICU ships with the stack's PostgreSQL).
        let collated =
            "ALTER TABLE public.trust_log_witnesses ALTER COLUMN signature TYPE text COLLATE \"und-x-icu\""
        var parts = ["BEGIN", collated, "CREATE TEMP TABLE witness_answers (n serial, line text)"]
        for test in tests {
            let fresh = UUID().uuidString.lowercased()
            let user = literal(fresh) + "::uuid"
            let device = literal(test.device) + "::uuid"
            parts.append(
                "SET LOCAL request.jwt.claims = '{\"sub\": \"\(fresh)\", \"role\": \"authenticated\"}'")
            if let epoch = test.currentEpoch {
                parts.append(
                    "INSERT INTO private.trust_log_state (user_id, current_epoch, highest_epoch) VALUES (\(user), \(epoch), \(epoch))"
                )
            }
            if let epoch = test.currentEpoch, let head = test.headSeq {
                parts.append(
                    "INSERT INTO private.trust_log_heads (user_id, epoch, seq, hash, created_at, last_proof) "
                        + "VALUES (\(user), \(epoch), \(head), '\\x00', 0, '\\x00')")
            }
            for held in test.held ?? [] {
                parts.append(
                    "INSERT INTO public.trust_log_witnesses (user_id, device_id, epoch, seq, body, signature, created_at) "
                        + "VALUES (\(user), \(device), \(held.epoch ?? test.currentEpoch ?? 1), \(held.seq), 'held', "
                        + "\(literal(held.signature)), now() - make_interval(secs => \(held.age)))")
            }
            let said =
                "CASE WHEN SQLERRM LIKE 'the witness is not%' THEN 'malformed' "
                + "WHEN SQLERRM LIKE 'the witness names another%' THEN 'foreign' "
                + "WHEN SQLERRM LIKE 'a witness names%' THEN 'out_of_range' ELSE SQLERRM END || '/' || SQLSTATE"
            parts.append(
                "DO $w$ BEGIN PERFORM private.publish_witness(\(device), \(witnessBody(test, user: fresh)), "
                    + "\(literal(test.signature))); INSERT INTO witness_answers (line) VALUES ('\(test.tcId) ok'); "
                    + "EXCEPTION WHEN others THEN INSERT INTO witness_answers (line) VALUES ('\(test.tcId) ' || \(said)); END $w$"
            )
            parts.append(
                "UPDATE witness_answers SET line = line || ' ' || coalesce((SELECT string_agg(w.signature, ',' "
                    + "ORDER BY w.signature COLLATE \"C\") FROM public.trust_log_witnesses w WHERE w.user_id = \(user) "
                    + "AND w.device_id = \(device)), '-') WHERE line LIKE '\(test.tcId) %'")
        }
        return (parts + ["SELECT line FROM witness_answers ORDER BY n", "ROLLBACK"]).joined(separator: ";\n") + ";"
    }

    /// The call's body as SQL: as the vector has it when it is not canonical base64; else its
    /// bytes with the vectors' caller as `user` and, for 155 bytes with a time the move cannot
    /// overflow, that time moved onto the transaction's clock.
    static func witnessBody(_ test: RuleTest, user: String) -> String {
        guard let text = test.body, var bytes = Data(base64Encoded: text).map(Array.init),
            Data(bytes).base64EncodedString() == text
        else { return literal(test.body) }
        if bytes.count >= 65, let caller = test.caller, Array(bytes[29..<65]) == Array(caller.utf8) {
            bytes.replaceSubrange(29..<65, with: Array(user.utf8))
        }
        let seen = bytes.count == 155 ? bytes[147...].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } : .max
        let encoded = literal(Data(bytes).base64EncodedString())
        guard seen < 1 << 62, let now = test.now else { return encoded }
        let shift = "floor(extract(epoch FROM now()))::bigint + (\(Int64(seen) - now))"
        return "translate(encode(overlay(decode(\(encoded), 'base64') PLACING int8send(\(shift)) FROM 148 FOR 8), "
            + "'base64'), E'\\n', '')"
    }

    /// What a WitnessAdmission test expects: `ok` (kept or held already) or the refusal's word
    /// and SQLSTATE, then the device's signatures after the call.
    static func witnessAnswer(_ test: RuleTest) -> String {
        let states = ["malformed": "22023", "foreign": "42501", "out_of_range": "22023"]
        let said = test.admission.map { word in states[word].map { "\(word)/\($0)" } ?? "ok" } ?? "?"
        let kept = test.kept ?? []
        return said + " " + (kept.isEmpty ? "-" : kept.joined(separator: ","))
    }
}

extension RemoteRulesSQLVectorTests {
    @Test("the witness vectors get their answers from the deployed variant's publish_witness too")
    func witnessDeployed() async throws {
        let stack = try StackEnvironment.require()
        let tests = try Self.groups()["WitnessAdmission"] ?? []
        #expect(tests.count > 50, "WitnessAdmission: \(tests.count) tests")
        let output = try await stack.sql(Self.witnessStatement(tests), database: "sync_deployed")
        let lines = output.split(separator: "\n").map(String.init).filter { !$0.isEmpty }
        #expect(lines == tests.map { Self.expected("WitnessAdmission", $0) })
    }
}
