import Foundation
import SyncModel

/// Where an approval request stands (approvals.md).
public enum ApprovalStatus: String, Sendable, Codable, Hashable, CaseIterable {
    case pending, approved, denied, expired, cancelled
}

/// What a device answered, as the remote stores it.
public enum ApprovalVerdict: String, Sendable, Codable, Hashable, CaseIterable {
    case approve, deny
}

/// An `approval_requests` row, as the remote returns it: every field is the server's word until
/// the engine checks it (the body opens only under the session secret; the decision verifies
/// only under a certified device's key).
public struct ApprovalRequestRow: Sendable, Hashable {
    public var id: UUID
    public var userID: UUID
    public var sessionID: UUID
    public var requesterDeviceID: UUID
    /// The sealed request, standard base64.
    public var body: String
    public var generation: UInt32
    public var createdAt: Date?
    /// Unix seconds.
    public var expiresAt: UInt64
    public var status: ApprovalStatus
    public var decidedByDeviceID: UUID?
    public var decidedAt: Date?
    /// The signed decision (standard base64 of its bytes) and its signature.
    public var decisionBody: String?
    public var decisionSignature: String?

    /// Creates a row.
    public init(
        id: UUID, userID: UUID, sessionID: UUID, requesterDeviceID: UUID, body: String, generation: UInt32,
        createdAt: Date? = nil,
        expiresAt: UInt64, status: ApprovalStatus = .pending, decidedByDeviceID: UUID? = nil, decidedAt: Date? = nil,
        decisionBody: String? = nil, decisionSignature: String? = nil
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
        self.decidedByDeviceID = decidedByDeviceID
        self.decidedAt = decidedAt
        self.decisionBody = decisionBody
        self.decisionSignature = decisionSignature
    }

    /// The status as of `now`: a pending request past its time reads as expired, as
    /// approvals.md says a read of one must.
    public func status(at now: Date) -> ApprovalStatus {
        status == .pending && UInt64(max(0, now.timeIntervalSince1970)) >= expiresAt ? .expired : status
    }

    /// Decodes a row as PostgREST (or the change feed) returns it.
    package init(json row: ResponseRow) throws {
        let r = RowReader(row, table: "approval_requests")
        guard let status = ApprovalStatus(rawValue: try r.string("status")),
            let generation = UInt32(exactly: try r.int("generation")),
            let expires = UInt64(exactly: try r.int("expires_at"))
        else {
            throw RemoteStoreError(
                .malformedResponse, "approval_requests: a row's status, generation or expiry is out of range")
        }
        self.init(
            id: try r.uuid("id"), userID: try r.uuid("user_id"), sessionID: try r.uuid("session_id"),
            requesterDeviceID: try r.uuid("requester_device_id"), body: try r.string("body"), generation: generation,
            createdAt: try r.optionalDate("created_at"), expiresAt: expires, status: status,
            decidedByDeviceID: try r.optionalUUID("decided_by_device_id"), decidedAt: try r.optionalDate("decided_at"),
            decisionBody: try r.optionalString("decision_body"),
            decisionSignature: try r.optionalString("decision_signature"))
    }
}

/// What `request_approval` answered.
public struct ApprovalRequested: Sendable, Hashable, Codable {
    public var requestId: UUID
    public var expiresAt: UInt64
    /// Device tokens the alert push was queued for.
    public var devicesNotified: Int
    /// Where the alert went, device by device, as ``AlertDeliveries/devices`` (`nil` from a
    /// server older than notifications round 2).
    public var devices: [AlertDelivery]?

    /// Creates an answer.
    public init(requestId: UUID, expiresAt: UInt64, devicesNotified: Int, devices: [AlertDelivery]? = nil) {
        self.requestId = requestId
        self.expiresAt = expiresAt
        self.devicesNotified = devicesNotified
        self.devices = devices
    }
}

/// What `answer_approval` answered: whether this answer decided, and else who had.
public struct ApprovalAnswered: Sendable, Hashable, Codable {
    public var accepted: Bool
    public var status: ApprovalStatus
    /// The device whose answer stands (this one when accepted); `nil` for a request that
    /// expired or was cancelled.
    public var decidedBy: UUID?
    /// Clearing pushes queued (when accepted).
    public var devicesNotified: Int?

    /// Creates an answer.
    public init(accepted: Bool, status: ApprovalStatus, decidedBy: UUID?, devicesNotified: Int? = nil) {
        self.accepted = accepted
        self.status = status
        self.decidedBy = decidedBy
        self.devicesNotified = devicesNotified
    }
}

/// What `cancel_approval` answered.
public struct ApprovalCancelled: Sendable, Hashable, Codable {
    public var cancelled: Bool
    public var status: ApprovalStatus
    public var devicesNotified: Int

    /// Creates an answer.
    public init(cancelled: Bool, status: ApprovalStatus, devicesNotified: Int) {
        self.cancelled = cancelled
        self.status = status
        self.devicesNotified = devicesNotified
    }
}

/// What `reopen_approval` answered.
public struct ApprovalReopened: Sendable, Hashable, Codable {
    /// Whether the refused decision was dropped and the request is pending again.
    public var reopened: Bool
    public var status: ApprovalStatus
    /// Alert pushes queued afresh (when reopened).
    public var devicesNotified: Int

    /// Creates an answer.
    public init(reopened: Bool, status: ApprovalStatus, devicesNotified: Int) {
        self.reopened = reopened
        self.status = status
        self.devicesNotified = devicesNotified
    }
}

/// Approval requests (approvals.md): the server stores the sealed question and the signed
/// answer, queues the alert and clearing pushes, and lets the first answer win under a row lock.
/// It checks shapes and ownership only; whether an answer counts is the asking desktop's to
/// check. A deployment without the migration answers `.missingFunction` or `.missingTable`.
public protocol ApprovalRemote: SyncRemote {
    /// Stores a request and queues its alert push for the user's other trusted devices.
    /// Idempotent for the same request; another body (or control hash) under the same id is
    /// `.conflict`. `controlHash`, standard base64 of SHA-256 of 32 random bytes only the
    /// requester keeps, makes cancelling and reopening the request need those bytes.
    func requestApproval(
        sessionID: UUID, requestID: UUID, requesterDeviceID: UUID, body: String, generation: UInt32, expiresAt: UInt64,
        controlHash: String?
    ) async throws -> ApprovalRequested

    /// Records an answer if the request is still pending and unexpired (first answer wins), and
    /// queues the clearing push for the user's other devices.
    func answerApproval(
        requestID: UUID, deviceID: UUID, verdict: ApprovalVerdict, decisionBody: String, decisionSignature: String
    ) async throws -> ApprovalAnswered

    /// The requester gives up: a pending request becomes cancelled, with clearing pushes. A
    /// request stored with a control hash needs `control` (standard base64 of the 32 bytes):
    /// anything else is `.permissionDenied`.
    func cancelApproval(requestID: UUID, control: String?) async throws -> ApprovalCancelled

    /// The requester refused the recorded decision whose signature is `decisionSignature`: it is
    /// dropped, the request is pending again and its alerts are queued afresh, so the genuine
    /// answer can still be recorded. Needs the request's control; at most 20 times a request
    /// (`.limitExceeded`). A decision that is no longer the recorded one is left alone.
    func reopenApproval(requestID: UUID, decisionSignature: String, control: String) async throws -> ApprovalReopened

    /// One request of the user, or `nil`.
    func approvalRequest(id: UUID) async throws -> ApprovalRequestRow?

    /// The user's requests, newest first; only those of `status` when given.
    func approvalRequests(status: ApprovalStatus?) async throws -> [ApprovalRequestRow]
}

extension ApprovalRemote {
    /// A request without a control hash: any caller of the user may cancel it (older clients).
    public func requestApproval(
        sessionID: UUID, requestID: UUID, requesterDeviceID: UUID, body: String, generation: UInt32, expiresAt: UInt64
    ) async throws -> ApprovalRequested {
        try await requestApproval(
            sessionID: sessionID, requestID: requestID, requesterDeviceID: requesterDeviceID, body: body,
            generation: generation, expiresAt: expiresAt, controlHash: nil)
    }

    /// Cancels without a control: only a request stored without a control hash.
    public func cancelApproval(requestID: UUID) async throws -> ApprovalCancelled {
        try await cancelApproval(requestID: requestID, control: nil)
    }
}
