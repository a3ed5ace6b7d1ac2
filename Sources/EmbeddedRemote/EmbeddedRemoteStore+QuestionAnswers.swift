import Foundation
import GRDB
import RemoteContract
import RemoteRules
import SyncModel

/// Answers to multiple-choice questions on the embedded remote: `answer_question` in the
/// project's `*_request_rules.sql`, its checks asked of ``AnswerRules`` and its transition of
/// ``RequestRules``.
extension EmbeddedRemoteStore {
    public func answerQuestion(questionID: UUID, deviceID: UUID, answer: String) async throws -> QuestionAnswered {
        return try await write("answering a question") { db in
            _ = try self.acting(db, deviceID, trusted: true)
            let row = try Row.fetchOne(
                db, sql: "SELECT * FROM agent_questions WHERE id = ? AND user_id = ?",
                arguments: [questionID.canonical, self.me])
            let sealed = Self.sealedShape(answer, generation: row?["generation"])
            let refusal = AnswerRules.questionAnswer(
                askedBy: row?["requester_device_id"], device: deviceID.canonical,
                mine: try Self.owner(db, table: "devices", id: deviceID.canonical) == self.me,
                certified: try TrustedDevices.of(db, user: self.me).contains(deviceID.canonical),
                answerBytes: sealed.bytes, headerMatches: sealed.headerMatches)
            // The rule refuses when the caller has no question of that id: past here there is a row.
            guard let row, refusal == nil else {
                throw Self.refusal(refusal ?? .notYourQuestion)
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
