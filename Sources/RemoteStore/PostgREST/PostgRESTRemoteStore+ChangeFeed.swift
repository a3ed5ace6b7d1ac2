import Foundation
import SyncModel

/// Secret requests and the change feed over PostgREST. The feed is one call to
/// `rpc/sync_changes`; a deployment without the function (404 `PGRST202`) is polled table by
/// table instead, and is not asked for the function again by this client.
extension PostgRESTRemoteStore: SecretRequestRemote, ChangeFeedRemote {
    static let requestsTable = "session_secret_requests"

    public func listOpenSecretRequests() async throws -> [SecretRequestRow] {
        try await fetchAll(
            Self.requestsTable,
            query: [("select", "*"), ("user_id", "eq.\(userID.canonical)"), ("fulfilled_at", "is.null")],
            order: "created_at.asc,id.asc", decode: SecretRequestRow.init(json:))
    }

    public func insertSecretRequests(_ rows: [SecretRequestRow]) async throws -> BulkWriteResult {
        try await upsert(
            Self.requestsTable, rows, conflict: nil, key: { $0.id.canonical }, encode: { $0.jsonRow },
            onBatchAccepted: nil)
    }

    public func fulfilSecretRequests(ids: Set<UUID>) async throws {
        let sorted = ids.map(\.canonical).sorted()
        let body = Data(JSONRow(fields: [("fulfilled_at", .timestamp(Date()))]).json.utf8)
        for start in stride(from: 0, to: sorted.count, by: configuration.inFilterChunk) {
            let chunk = sorted[start..<min(start + configuration.inFilterChunk, sorted.count)]
            _ = try await send(
                .patch, Self.requestsTable,
                query: [("id", PostgREST.inList(chunk)), ("user_id", "eq.\(userID.canonical)")],
                prefer: "return=minimal", body: body)
        }
    }

    public func heartbeat(deviceID: UUID) async throws {
        let body = JSONRow(fields: [("last_seen_at", .timestamp(Date()))])
        _ = try await send(
            .patch, RemoteTable.devices,
            query: [("id", "eq.\(deviceID.canonical)"), ("user_id", "eq.\(userID.canonical)")],
            prefer: "return=minimal", body: Data(body.json.utf8))
    }

    public func changes(since cursor: ChangeCursor?, statements: Bool) async throws -> RemoteChanges {
        if missingFunctions.withLock({ $0.contains(Self.feedFunction) }) {
            return try await pollChanges(statements: statements)
        }
        let data: Data
        do {
            data = try await rpc(Self.feedFunction, arguments: cursor.map { ["since": .string($0.since)] } ?? [:])
        } catch let error as RemoteStoreError where error.code == .missingFunction {
            missingFunctions.withLock { _ = $0.insert(Self.feedFunction) }
            return try await pollChanges(statements: statements)
        }
        return try Self.decodeChanges(data, complete: cursor == nil, maxRows: configuration.maxDeviceRows)
    }

    /// The change feed's function, remembered in ``missingFunctions`` when the deployment has none.
    static let feedFunction = "sync_changes"

    /// Reads a change set: its two lists straight into rows, each of at most `maxRows` (the
    /// feed's answer is capped in bytes too, ``PostgRESTConfiguration/maxRPCResponseBytes``).
    static func decodeChanges(_ data: Data, complete: Bool, maxRows: Int) throws -> RemoteChanges {
        let (object, lists) = try ResponseJSON.object(
            data, lists: ["devices", "secret_requests", "approvals", "questions"], maxRows: maxRows,
            table: "sync_changes")
        guard case let .string(serverTime)? = object["server_time"], Timestamp.parse(serverTime) != nil,
            let devices = lists["devices"], let requests = lists["secret_requests"]
        else {
            throw RemoteStoreError(.malformedResponse, "sync_changes answered something other than a change set")
        }
        var statements: String?
        if case let .string(text)? = object["statements"] { statements = text }
        var changes = RemoteChanges(
            devices: try devices.map(RemoteDevice.init(json:)), complete: complete,
            secretRequests: try requests.map(SecretRequestRow.init(json:)),
            statements: statements, cursor: ChangeCursor(since: serverTime), method: .feed)
        changes.trustLog = try TrustLogHead(feed: object["trustLog"], table: "sync_changes")
        // A feed without approvals (before their migration) simply has none.
        changes.approvals = try (lists["approvals"] ?? []).map(ApprovalRequestRow.init(json:))
        changes.questions = try (lists["questions"] ?? []).map(AgentQuestionRow.init(json:))
        return changes
    }
}
