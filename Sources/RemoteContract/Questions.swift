import Foundation
import SyncModel

/// Where an agent's question stands (notifications-2.md, "Questions, sealed").
public enum QuestionStatus: String, Sendable, Codable, Hashable, CaseIterable {
    case pending, answered, cancelled, expired
}

/// An `agent_questions` row, as the remote returns it: the body opens only under the session
/// secret; everything else is the server's word.
public struct AgentQuestionRow: Sendable, Hashable {
    public var id: UUID
    public var userID: UUID
    public var sessionID: UUID
    public var requesterDeviceID: UUID
    /// The sealed question, standard base64.
    public var body: String
    public var generation: UInt32
    public var createdAt: Date?
    /// Unix seconds.
    public var expiresAt: UInt64
    public var status: QuestionStatus
    public var closedAt: Date?

    /// Creates a row.
    public init(
        id: UUID, userID: UUID, sessionID: UUID, requesterDeviceID: UUID, body: String, generation: UInt32,
        createdAt: Date? = nil, expiresAt: UInt64, status: QuestionStatus = .pending, closedAt: Date? = nil
    ) {
        self.id = id
        self.userID = userID
        self.sessionID = sessionID
        self.requesterDeviceID = requesterDeviceID
        self.body = body
        self.generation = generation
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.status = status
        self.closedAt = closedAt
    }

    /// The status as of `now`: a pending question past its time reads as expired.
    public func status(at now: Date) -> QuestionStatus {
        status == .pending && UInt64(max(0, now.timeIntervalSince1970)) >= expiresAt ? .expired : status
    }

    /// Decodes a row as PostgREST (or the change feed) returns it.
    package init(json row: ResponseRow) throws {
        let r = RowReader(row, table: "agent_questions")
        guard let status = QuestionStatus(rawValue: try r.string("status")),
            let generation = UInt32(exactly: try r.int("generation")),
            let expires = UInt64(exactly: try r.int("expires_at"))
        else {
            throw RemoteStoreError(
                .malformedResponse, "agent_questions: a row's status, generation or expiry is out of range")
        }
        self.init(
            id: try r.uuid("id"), userID: try r.uuid("user_id"), sessionID: try r.uuid("session_id"),
            requesterDeviceID: try r.uuid("requester_device_id"), body: try r.string("body"), generation: generation,
            createdAt: try r.optionalDate("created_at"), expiresAt: expires, status: status,
            closedAt: try r.optionalDate("closed_at"))
    }
}

/// What `ask_question` answered.
public struct QuestionAsked: Sendable, Hashable, Codable {
    public var questionId: UUID
    public var expiresAt: UInt64
    /// Device tokens the alert was queued for.
    public var devicesNotified: Int
    /// Where the alert went, device by device (as ``AlertDeliveries/devices``).
    public var devices: [AlertDelivery]?

    /// ``devices`` as ``AlertDeliveries`` (its `summary` says it in a line), `nil` without them.
    public var deliveries: AlertDeliveries? {
        devices.map {
            AlertDeliveries(
                alertID: questionId, kind: "question", isFinal: !$0.contains { !$0.outcome.isFinal }, devices: $0)
        }
    }

    /// Creates an answer.
    public init(questionId: UUID, expiresAt: UInt64, devicesNotified: Int, devices: [AlertDelivery]? = nil) {
        self.questionId = questionId
        self.expiresAt = expiresAt
        self.devicesNotified = devicesNotified
        self.devices = devices
    }
}

/// What `close_question` answered: whether this call closed it, and the status it has.
public struct QuestionClosed: Sendable, Hashable, Codable {
    public var closed: Bool
    public var status: QuestionStatus
    /// Device tokens the clearing push was queued for.
    public var devicesNotified: Int

    /// Creates an answer.
    public init(closed: Bool, status: QuestionStatus, devicesNotified: Int) {
        self.closed = closed
        self.status = status
        self.devicesNotified = devicesNotified
    }
}

/// An answer a device recorded for a question (`agent_question_answers`): the sealed, signed
/// choice. Only the asking desktop can open and verify it; the row's device is the server's word
/// until then.
public struct QuestionAnswerRow: Sendable, Hashable {
    public var questionID: UUID
    public var userID: UUID
    /// The device the row names (the sealed answer opens only under this id).
    public var deviceID: UUID
    /// The sealed answer, standard base64.
    public var answer: String
    public var createdAt: Date?

    /// Creates a row.
    public init(questionID: UUID, userID: UUID, deviceID: UUID, answer: String, createdAt: Date? = nil) {
        self.questionID = questionID
        self.userID = userID
        self.deviceID = deviceID
        self.answer = answer
        self.createdAt = createdAt
    }

    /// Decodes a row as PostgREST returns it.
    package init(json row: ResponseRow) throws {
        let r = RowReader(row, table: "agent_question_answers")
        self.init(
            questionID: try r.uuid("question_id"), userID: try r.uuid("user_id"), deviceID: try r.uuid("device_id"),
            answer: try r.string("answer"), createdAt: try r.optionalDate("created_at"))
    }
}

/// What `answer_question` answered: whether this device's answer was recorded, and the
/// question's status.
public struct QuestionAnswered: Sendable, Hashable, Codable {
    /// `false` when the question is no longer pending or this device answered it before with
    /// another answer.
    public var accepted: Bool
    public var status: QuestionStatus

    /// Creates an answer.
    public init(accepted: Bool, status: QuestionStatus) {
        self.accepted = accepted
        self.status = status
    }
}

/// Agents' questions (notifications-2.md, "Questions, sealed"): the server stores the sealed
/// question, queues its alerts (never suppressed) and, when it closes or expires, the clearing
/// push. A deployment without the migration answers `.missingFunction` or `.missingTable`.
public protocol QuestionRemote: NotificationRemote {
    /// Stores a question and queues its alert for the user's other trusted devices. Idempotent
    /// for the same question; another under the same id is `.conflict`. `expiresAt`: 60 to
    /// 86,400 seconds from now.
    func askQuestion(
        sessionID: UUID, questionID: UUID, requesterDeviceID: UUID, body: String, generation: UInt32,
        expiresAt: UInt64
    ) async throws -> QuestionAsked

    /// Closes a pending question, `.answered` or `.cancelled` (anything else is
    /// `.invalidValue`), with its clearing push; a closed one changes nothing.
    func closeQuestion(questionID: UUID, status: QuestionStatus) async throws -> QuestionClosed

    /// One question of the user, or `nil`.
    func agentQuestion(id: UUID) async throws -> AgentQuestionRow?

    /// The user's newest questions, at most `atMost`, newest first (what an id prefix is
    /// resolved among).
    func agentQuestions(atMost: Int) async throws -> [AgentQuestionRow]

    /// Records `deviceID`'s sealed answer to a pending question (docs/agent-hooks.md, "Questions
    /// with choices"): one answer per device, the first kept; only a device the user's trust log
    /// certifies and has not revoked, never the asker. The server cannot open or check the answer:
    /// the asking desktop does. `.permissionDenied` for a question or device that is not the
    /// user's, or one that may not answer; `.invalidValue` for an answer that is not a sealed answer
    /// of the question's generation.
    func answerQuestion(questionID: UUID, deviceID: UUID, answer: String) async throws -> QuestionAnswered

    /// The answers recorded for one of the user's questions, oldest first.
    func questionAnswers(questionID: UUID) async throws -> [QuestionAnswerRow]
}

extension QuestionRemote {
    /// A remote written before the listing: it cannot list questions (an id is then given whole).
    public func agentQuestions(atMost: Int) async throws -> [AgentQuestionRow] {
        throw RemoteStoreError(.missingFunction, "this remote cannot list questions: give the question's whole id")
    }
}
