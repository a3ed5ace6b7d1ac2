import Foundation
import SyncModel

/// Coordination on Supabase: the project's database functions over RPC, `runtime_status` by
/// PATCH, and the outbox by GET (row-level security shows the user only their own rows).
extension PostgRESTRemoteStore: CoordinationRemote {
    public func claimSessionActivity(
        sessionID: UUID, deviceID: UUID, clientType: ClientType
    ) async throws -> SessionClaim {
        try Self.decode(
            SessionClaim.self,
            from: try await rpc(
                "claim_session_activity",
                arguments: [
                    "session_id": .string(sessionID.canonical), "device_id": .string(deviceID.canonical),
                    "client_type": .string(clientType.rawValue),
                ]), function: "claim_session_activity")
    }

    public func registerPushToken(_ registration: PushTokenRegistration) async throws -> PushTokenRegistered {
        try Self.decode(
            PushTokenRegistered.self,
            from: try await rpc(
                "register_push_token",
                arguments: [
                    "device_id": .string(registration.deviceID.canonical), "token": .string(registration.token),
                    "token_type": .string(registration.type.rawValue), "platform": .string(registration.platform),
                    "environment": .string(registration.environment.rawValue),
                    "activity_id": .string(registration.activityID),
                    "session_id": .string(registration.sessionID?.canonical),
                    "previous_token": .string(registration.previousToken),
                ]), function: "register_push_token")
    }

    public func invalidatePushToken(_ token: String) async throws -> Bool {
        try Self.decode(
            Bool.self, from: try await rpc("invalidate_push_token", arguments: ["token": .string(token)]),
            function: "invalidate_push_token")
    }

    public func pushTokenStatus(deviceID: UUID) async throws -> PushTokenStatus {
        try Self.decode(
            PushTokenStatus.self,
            from: try await rpc("push_token_status", arguments: ["device_id": .string(deviceID.canonical)]),
            function: "push_token_status")
    }

    public func clearApproval(requestID: String, excludingToken: String?) async throws -> ApprovalClearing {
        try Self.decode(
            ApprovalClearing.self,
            from: try await rpc(
                "clear_approval",
                arguments: [
                    "request_id": .string(requestID), "exclude_device_token": .string(excludingToken),
                ]), function: "clear_approval")
    }

    public func setRuntimeStatus(_ status: RuntimeStatus) async throws -> RuntimeStatus {
        let now = Date()
        // updated_at moves too, so phones pulling by (updated_at, id) receive the status even on
        // a deployment without the updated_at trigger.
        let body = JSONRow(fields: [
            ("runtime_status", .json(status.jsonText)), ("runtime_status_updated_at", .timestamp(now)),
            ("updated_at", .timestamp(now)),
        ])
        let response = try await send(
            .patch, RemoteTable.sessions,
            query: [
                ("id", "eq.\(status.sessionID.canonical)"), ("user_id", "eq.\(userID.canonical)"),
            ], prefer: "return=representation", body: Data(body.json.utf8))
        let rows = try ResponseJSON.rows(response.body, table: RemoteTable.sessions)
        guard let row = rows.first else {
            throw RemoteStoreError(
                .permissionDenied,
                "session \(status.sessionID.canonical) is not one of yours on the remote (push it first)")
        }
        let stored = try SessionRecord(json: row).runtimeStatus
        guard let stored else {
            throw RemoteStoreError(.malformedResponse, "the remote did not keep the runtime status")
        }
        return stored
    }

    public func listOutbox(limit: Int) async throws -> [OutboxEntry] {
        func list(_ columns: String) async throws -> [OutboxEntry] {
            let response = try await send(
                .get, "push_outbox",
                query: [
                    ("select", columns), ("user_id", "eq.\(userID.canonical)"), ("order", "id.desc"),
                    ("limit", String(max(0, min(limit, 10_000)))),
                ], prefer: nil, body: nil)
            return try ResponseJSON.rows(response.body, table: "push_outbox").map(OutboxEntry.init(json:))
        }
        // The columns a device may read (never `token`); `*` where a deployment lacks one of them
        // (`not_before` came with the notifications, `token_hint` with the hidden token).
        do {
            return try await list(OutboxEntry.listedColumns)
        } catch let error as RemoteStoreError where error.postgrestCode == .undefinedColumn {
            return try await list("*")
        }
    }

    package static func decode<T: Decodable>(_ type: T.Type, from data: Data, function: String) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: data)
        } catch {
            throw RemoteStoreError(
                .malformedResponse, "\(function) answered something other than its documented result")
        }
    }
}

extension OutboxEntry {
    /// The columns a listing reads: what ``init(json:)`` decodes, and nothing a device may not read.
    static let listedColumns =
        "id,device_id,token_hint,push_type,priority,collapse_id,payload,created_at,delivered_at,attempts,last_error,not_before"
}
