import Foundation
import SyncModel

/// Agents' questions on Supabase: the project's database functions over RPC and the table by GET
/// (row-level security shows the user only their own rows).
extension PostgRESTRemoteStore: QuestionRemote {
    public func askQuestion(
        sessionID: UUID, questionID: UUID, requesterDeviceID: UUID, body: String, generation: UInt32,
        expiresAt: UInt64
    ) async throws -> QuestionAsked {
        try Self.decode(
            QuestionAsked.self,
            from: try await rpc(
                "ask_question",
                arguments: [
                    "session_id": .string(sessionID.canonical), "question_id": .string(questionID.canonical),
                    "requester_device_id": .string(requesterDeviceID.canonical), "body": .string(body),
                    "generation": .int(Int(generation)), "expires_at": .int(Int(clamping: expiresAt)),
                ]), function: "ask_question")
    }

    public func closeQuestion(questionID: UUID, status: QuestionStatus) async throws -> QuestionClosed {
        guard status == .answered || status == .cancelled else {
            throw RemoteStoreError(.invalidValue, "status must be answered or cancelled")
        }
        return try Self.decode(
            QuestionClosed.self,
            from: try await rpc(
                "close_question",
                arguments: ["question_id": .string(questionID.canonical), "status": .string(status.rawValue)]),
            function: "close_question")
    }

    public func agentQuestion(id: UUID) async throws -> AgentQuestionRow? {
        try await fetchAll(
            "agent_questions",
            query: [("select", "*"), ("id", "eq.\(id.canonical)"), ("user_id", "eq.\(userID.canonical)")],
            order: "id.asc", atMost: 1, decode: AgentQuestionRow.init(json:)
        ).first
    }

    public func agentQuestions(atMost: Int) async throws -> [AgentQuestionRow] {
        try await fetchAll(
            "agent_questions", query: [("select", "*"), ("user_id", "eq.\(userID.canonical)")],
            order: "created_at.desc,id.asc", atMost: atMost, decode: AgentQuestionRow.init(json:))
    }

    public func answerQuestion(questionID: UUID, deviceID: UUID, answer: String) async throws -> QuestionAnswered {
        try Self.decode(
            QuestionAnswered.self,
            from: try await rpc(
                "answer_question",
                arguments: [
                    "question_id": .string(questionID.canonical), "device_id": .string(deviceID.canonical),
                    "answer": .string(answer),
                ]), function: "answer_question")
    }

    public func questionAnswers(questionID: UUID) async throws -> [QuestionAnswerRow] {
        try await fetchAll(
            "agent_question_answers",
            query: [
                ("select", "*"), ("question_id", "eq.\(questionID.canonical)"), ("user_id", "eq.\(userID.canonical)"),
            ],
            order: "created_at.asc,device_id.asc", atMost: 64, decode: QuestionAnswerRow.init(json:))
    }
}
