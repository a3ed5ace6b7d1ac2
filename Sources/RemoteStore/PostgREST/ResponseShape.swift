import Foundation
import SyncModel

extension PostgRESTRemoteStore {
    /// Every shape of response body the client decodes. ``decode(_:body:)`` runs exactly the
    /// code the client runs on each, without a request: it is what the fuzz targets call.
    package enum ResponseShape: String, CaseIterable, Sendable {
        case devices, repositories, sessions, secrets, secretRequests, outbox, statements, identityKeys
        case changes, digest, sessionClaim, pushTokenRegistered, pushTokenStatus, approvalClearing
        /// An error body (any status), as ``PostgRESTRemoteStore`` turns it into a `RemoteStoreError`.
        case error
        /// A `Content-Range` header: the body's bytes read as its text.
        case contentRange
    }

    /// Decodes `body` as the client decodes a response of `shape`.
    ///
    /// - Returns: How many rows (or values) it held.
    /// - Throws: `RemoteStoreError`, the only error a response may cause.
    package static func decode(_ shape: ResponseShape, body: Data) throws -> Int {
        func rows<T>(_ table: String, _ decode: (ResponseRow) throws -> T) throws -> Int {
            try ResponseJSON.rows(body, table: table).map(decode).count
        }
        switch shape {
        case .devices: return try rows(RemoteTable.devices, RemoteDevice.init(json:))
        case .repositories: return try rows(RemoteTable.repositories, RepositoryRecord.init(json:))
        case .sessions: return try rows(RemoteTable.sessions, SessionRecord.init(json:))
        case .secrets: return try rows(RemoteTable.secrets, EnvelopeRecord.init(json:))
        case .secretRequests: return try rows("session_secret_requests", SecretRequestRow.init(json:))
        case .outbox: return try rows("push_outbox", OutboxEntry.init(json:))
        case .statements:
            return try rows("device_certificates") { try SignedStatementRow(json: $0, table: "device_certificates") }
        case .identityKeys:
            return try rows("user_identity_keys") {
                try RowReader($0, table: "user_identity_keys").string("public_key")
            }
        case .changes:
            let changes = try decodeChanges(body, complete: true, maxRows: PostgRESTConfiguration.defaultMaxDeviceRows)
            return changes.devices.count + changes.secretRequests.count
        case .digest: return try decodeDigest(body).count
        case .sessionClaim:
            _ = try decode(SessionClaim.self, from: body, function: "claim_session_activity")
            return 1
        case .pushTokenRegistered:
            _ = try decode(PushTokenRegistered.self, from: body, function: "register_push_token")
            return 1
        case .pushTokenStatus:
            _ = try decode(PushTokenStatus.self, from: body, function: "push_token_status")
            return 1
        case .approvalClearing:
            _ = try decode(ApprovalClearing.self, from: body, function: "clear_approval")
            return 1
        case .error:
            _ = decodeError(
                TransportResponse(status: .badRequest, body: body), method: .get, table: RemoteTable.sessions)
            return 0
        case .contentRange:
            return ContentRange(String(decoding: body, as: UTF8.self))?.total ?? 0
        }
    }
}
