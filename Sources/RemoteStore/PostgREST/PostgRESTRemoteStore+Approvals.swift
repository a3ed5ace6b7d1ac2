import Foundation
import SyncModel

/// Approvals on Supabase: the project's database functions over RPC and the table by GET (row-level
/// security shows the user only their own rows).
extension PostgRESTRemoteStore: ApprovalRemote {
    static let approvalsTable = "approval_requests"

    public func requestApproval(
        sessionID: UUID, requestID: UUID, requesterDeviceID: UUID, body: String, generation: UInt32, expiresAt: UInt64,
        controlHash: String?
    ) async throws -> ApprovalRequested {
        var arguments: [String: RPCArgument] = [
            "session_id": .string(sessionID.canonical), "request_id": .string(requestID.canonical),
            "requester_device_id": .string(requesterDeviceID.canonical), "body": .string(body),
            "generation": .int(Int(generation)), "expires_at": .int(Int(clamping: expiresAt)),
        ]
        if let controlHash { arguments["control_hash"] = .string(controlHash) }
        return try Self.decode(
            ApprovalRequested.self, from: try await rpc("request_approval", arguments: arguments),
            function: "request_approval")
    }

    public func answerApproval(
        requestID: UUID, deviceID: UUID, verdict: ApprovalVerdict, decisionBody: String, decisionSignature: String
    ) async throws -> ApprovalAnswered {
        try Self.decode(
            ApprovalAnswered.self,
            from: try await rpc(
                "answer_approval",
                arguments: [
                    "request_id": .string(requestID.canonical), "device_id": .string(deviceID.canonical),
                    "verdict": .string(verdict.rawValue), "decision_body": .string(decisionBody),
                    "decision_signature": .string(decisionSignature),
                ]), function: "answer_approval")
    }

    public func cancelApproval(requestID: UUID, control: String?) async throws -> ApprovalCancelled {
        var arguments: [String: RPCArgument] = ["request_id": .string(requestID.canonical)]
        if let control { arguments["control"] = .string(control) }
        return try Self.decode(
            ApprovalCancelled.self, from: try await rpc("cancel_approval", arguments: arguments),
            function: "cancel_approval")
    }

    public func reopenApproval(
        requestID: UUID, decisionSignature: String, control: String
    ) async throws -> ApprovalReopened {
        try Self.decode(
            ApprovalReopened.self,
            from: try await rpc(
                "reopen_approval",
                arguments: [
                    "request_id": .string(requestID.canonical), "decision_signature": .string(decisionSignature),
                    "control": .string(control),
                ]), function: "reopen_approval")
    }

    public func approvalRequest(id: UUID) async throws -> ApprovalRequestRow? {
        try await fetchAll(
            Self.approvalsTable,
            query: [("select", "*"), ("id", "eq.\(id.canonical)"), ("user_id", "eq.\(userID.canonical)")],
            order: "id.asc", atMost: 1, decode: ApprovalRequestRow.init(json:)
        ).first
    }

    public func approvalRequests(status: ApprovalStatus?) async throws -> [ApprovalRequestRow] {
        var query: [(String, String)] = [("select", "*"), ("user_id", "eq.\(userID.canonical)")]
        if let status { query.append(("status", "eq.\(status.rawValue)")) }
        return try await fetchAll(
            Self.approvalsTable, query: query, order: "created_at.desc,id.asc", decode: ApprovalRequestRow.init(json:))
    }
}
