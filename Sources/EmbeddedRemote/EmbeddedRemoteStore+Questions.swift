import Foundation
import GRDB
import RemoteContract
import RemoteRules
import SyncModel

/// Agents' questions on the embedded remote: the rules of `ask_question`, `close_question` and
/// the question half of `expire_approvals()` in the project's `*_notifications_2.sql`.
extension EmbeddedRemoteStore: QuestionRemote {
    public func askQuestion(
        sessionID: UUID, questionID: UUID, requesterDeviceID: UUID, body: String, generation: UInt32,
        expiresAt: UInt64
    ) async throws -> QuestionAsked {
        return try await write("asking a question") { db in
            let opened = try self.raiseRequest(
                db, .question, id: questionID, session: sessionID, requester: requesterDeviceID, body: body,
                generation: generation, expiresAt: expiresAt)
            return QuestionAsked(
                questionId: questionID, expiresAt: expiresAt, devicesNotified: opened.queued, devices: opened.devices)
        }
    }

    public func closeQuestion(questionID: UUID, status: QuestionStatus) async throws -> QuestionClosed {
        return try await write("closing a question") { db in
            try self.requireAsker(db, questionID)
            let held = try Row.fetchOne(
                db, sql: "SELECT * FROM agent_questions WHERE id = ? AND user_id = ?",
                arguments: [questionID.canonical, self.me])
            try Self.refuse(RequestRules.closeRefusal(as: status.rawValue, held: held != nil))
            guard let row = held else { throw Self.refusal(RequestRules.CloseRefusal.notYourQuestion) }
            let transition = RequestRules.transition(
                question: QuestionStatus(rawValue: row["status"]) ?? .pending,
                expired: Self.pastDue(row), on: .close(status))
            guard case .takes(let closed, .clearing(let reason)) = transition else {
                return QuestionClosed(closed: false, status: transition.words.status, devicesNotified: 0)
            }
            let now = Self.now
            try db.execute(
                sql: "UPDATE agent_questions SET status = ?, closed_at = ?, updated_at = ? WHERE id = ?",
                arguments: [closed.rawValue, now, now, questionID.canonical])
            let queued = try Self.queueClearing(
                db, user: self.me, request: questionID.canonical, kind: .question, reason: reason)
            return QuestionClosed(closed: true, status: closed, devicesNotified: queued)
        }
    }

    public func agentQuestions(atMost: Int) async throws -> [AgentQuestionRow] {
        return try await read("reading questions", gate: .certified, else: []) { db in
            return try Row.fetchAll(
                db, sql: "SELECT * FROM agent_questions WHERE user_id = ? ORDER BY created_at DESC, id LIMIT ?",
                arguments: [self.me, max(0, atMost)]
            ).map { try AgentQuestionRow(json: Self.json($0)) }
        }
    }

    public func agentQuestion(id: UUID) async throws -> AgentQuestionRow? {
        return try await read("reading a question", gate: .certified, else: nil) { db in
            return try Row.fetchOne(
                db, sql: "SELECT * FROM agent_questions WHERE id = ? AND user_id = ?",
                arguments: [id.canonical, self.me]
            ).map { try AgentQuestionRow(json: Self.json($0)) }
        }
    }

    /// Every pending question past its time (of every user in this file) takes the expiry pass's
    /// transition (``RequestRules``: expired, clearing pushes with reason `timeout`); in
    /// `expireApprovals()`'s transaction.
    static func expireQuestions(_ db: Database) throws {
        let now = Self.now
        for row in try Row.fetchAll(
            db, sql: "SELECT id, user_id FROM agent_questions WHERE status = 'pending' AND expires_at <= ?",
            arguments: [Int64(Self.epochSeconds)])
        {
            guard
                case .takes(let status, .clearing(let reason)) = RequestRules.transition(
                    question: .pending, expired: true, on: .expire)
            else { continue }
            let id: String = row["id"]
            try db.execute(
                sql: "UPDATE agent_questions SET status = ?, closed_at = ?, updated_at = ? WHERE id = ?",
                arguments: [status.rawValue, now, now, id])
            _ = try queueClearing(db, user: row["user_id"], request: id, kind: .question, reason: reason)
        }
    }
}
