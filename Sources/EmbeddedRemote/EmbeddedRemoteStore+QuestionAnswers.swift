import Foundation
import GRDB
import RemoteContract
import RemoteRules
import SyncModel

/// Answers to multiple-choice questions on the embedded remote: the rules of `answer_question` in
/// the project's `*_agent_hooks.sql`.
extension EmbeddedRemoteStore {
    /// The bytes a sealed answer may have: version, generation, nonce, at least one
    /// byte of plaintext, the tag; at most 1,024 bytes of plaintext.
    static let sealedAnswerBytes = (1 + 4 + 12 + 1 + 16)...(1 + 4 + 12 + 1_024 + 16)

    public func answerQuestion(questionID: UUID, deviceID: UUID, answer: String) async throws -> QuestionAnswered {
        return try await write("answering a question") { db in
            _ = try self.acting(db, deviceID, trusted: true)
            let row = try self.requireOwned(db, table: "agent_questions", id: questionID, what: "question")
            try self.requireOwn(db, table: "devices", id: deviceID, what: "device")
            guard try TrustedDevices.of(db, user: self.me).contains(deviceID.canonical) else {
                throw Self.refused("only a device the user's trust log certifies may answer")
            }
            guard (row["requester_device_id"] as String) != deviceID.canonical else {
                throw Self.refused("the asking device cannot answer its own question")
            }
            let generation = row["generation"] as Int64
            guard Self.isCanonicalBase64(answer, bytes: Self.sealedAnswerBytes),
                let raw = Data(base64Encoded: answer), raw[0] == 1,
                Int64(raw[1..<5].reduce(UInt32(0), { $0 << 8 | UInt32($1) })) == generation
            else {
                throw Self.invalid("answer must be canonical base64 of a sealed answer of the question's generation")
            }
            let transition = RequestRules.transition(
                question: QuestionStatus(rawValue: row["status"]) ?? .pending,
                expired: UInt64(row["expires_at"] as Int64) <= Self.epochSeconds, on: .answer)
            guard case .takes(let status, _) = transition else {
                return QuestionAnswered(accepted: false, status: transition.words.status)
            }
            try db.execute(
                sql: """
                    INSERT INTO agent_question_answers (question_id, user_id, device_id, answer, created_at)
                    VALUES (?, ?, ?, ?, ?) ON CONFLICT (question_id, device_id) DO NOTHING
                    """, arguments: [questionID.canonical, self.me, deviceID.canonical, answer, Self.now])
            if db.changesCount > 0 { return QuestionAnswered(accepted: true, status: status) }
            let kept = try String.fetchOne(
                db, sql: "SELECT answer FROM agent_question_answers WHERE question_id = ? AND device_id = ?",
                arguments: [questionID.canonical, deviceID.canonical])
            return QuestionAnswered(accepted: kept == answer, status: status)
        }
    }

    public func questionAnswers(questionID: UUID) async throws -> [QuestionAnswerRow] {
        return try await read("reading a question's answers", gate: .certified, else: []) { db in
            return try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM agent_question_answers WHERE question_id = ? AND user_id = ?
                    ORDER BY created_at, device_id LIMIT 64
                    """, arguments: [questionID.canonical, self.me]
            ).map { try QuestionAnswerRow(json: Self.json($0)) }
        }
    }
}
