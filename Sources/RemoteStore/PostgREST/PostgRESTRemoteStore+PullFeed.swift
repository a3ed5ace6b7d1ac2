import Foundation
import SyncModel

/// The pull feed over PostgREST: one call to `rpc/sync_pull_changes`, and
/// `rpc/session_secret_recipient_digest` where the totals differ. A deployment without them
/// answers `.missingFunction`, and this client does not ask it again.
extension PostgRESTRemoteStore: PullFeedRemote {
    /// The pull feed's function, remembered in ``missingFunctions`` when the deployment has none.
    static let pullFeedFunction = "sync_pull_changes"

    public func pullChanges(
        for deviceID: UUID, since cursor: ChangeCursor?, rowLimit: Int
    ) async throws
        -> PullChanges
    {
        if missingFunctions.withLock({ $0.contains(Self.pullFeedFunction) }) {
            throw RemoteStoreError(.missingFunction, "this deployment has no \(Self.pullFeedFunction) function")
        }
        var arguments: [String: RPCArgument] = [
            "device_id": .string(deviceID.canonical), "row_limit": .int(rowLimit),
        ]
        if let cursor { arguments["since"] = .string(cursor.since) }
        let data: Data
        do {
            data = try await rpc(Self.pullFeedFunction, arguments: arguments)
        } catch let error as RemoteStoreError where error.code == .missingFunction {
            missingFunctions.withLock { _ = $0.insert(Self.pullFeedFunction) }
            throw error
        }
        return try Self.decodePullChanges(
            data, maxRows: max(rowLimit, configuration.maxDeviceRows), table: Self.pullFeedFunction)
    }

    public func recipientDigest(deviceID: UUID, buckets: Int) async throws -> [DigestBucket] {
        let data = try await rpc(
            "session_secret_recipient_digest",
            arguments: ["device_id": .string(deviceID.canonical), "buckets": .int(buckets)],
            maxResponseBytes: max(configuration.maxRPCResponseBytes, buckets * 128))
        return try Self.decodeDigest(data)
    }

    /// Reads the feed's answer: its lists straight into rows, each of at most `maxRows` (the
    /// answer is capped in bytes too, ``PostgRESTConfiguration/maxRPCResponseBytes``).
    static func decodePullChanges(_ data: Data, maxRows: Int, table: String) throws -> PullChanges {
        let (object, lists) = try ResponseJSON.object(
            data, lists: ["repositories", "sessions", "envelopes", "devices", "secret_requests", "approvals"],
            maxRows: maxRows, table: table)
        func malformed(_ what: String) -> RemoteStoreError {
            RemoteStoreError(.malformedResponse, "\(table) answered something other than a change set (\(what))")
        }
        func digest(_ name: String) throws -> RowSetDigest {
            guard case let .json(text)? = object[name],
                let digest = try? JSONDecoder().decode(RowSetDigest.self, from: Data(text.utf8)), digest.count >= 0
            else { throw malformed(name) }
            return digest
        }
        /// A list that is absent or `null` means "too many: page through the table".
        func present(_ name: String) throws -> [ResponseRow]? {
            if let rows = lists[name] { return rows }
            switch object[name] {
            case .null?, nil: return nil
            default: throw malformed(name)
            }
        }
        guard case let .string(serverTime)? = object["server_time"], Timestamp.parse(serverTime) != nil else {
            throw malformed("server_time")
        }
        let sessions = try present("sessions").map { rows in
            try rows.map { row in
                Versioned(
                    record: try SessionRecord(json: row),
                    updatedAt: try RowReader(row, table: RemoteTable.sessions).string("updated_at"))
            }
        }
        let envelopes = try present("envelopes").map { try $0.map(EnvelopeRecord.init(json:)) }
        // Envelopes come only with the sessions they belong to.
        if envelopes != nil && sessions == nil { throw malformed("envelopes without sessions") }
        var statements: String?
        if case let .string(text)? = object["statements"] { statements = text }
        return PullChanges(
            cursor: ChangeCursor(since: serverTime),
            repositories: try present("repositories").map { rows in
                try rows.map { row in
                    Versioned(
                        record: try RepositoryRecord(json: row),
                        updatedAt: try RowReader(row, table: RemoteTable.repositories).string("updated_at"))
                }
            },
            sessions: sessions, envelopes: envelopes, repositoryIDs: try digest("repository_ids"),
            sessionIDs: try digest("session_ids"), envelopeRows: try digest("envelope_rows"),
            devices: try (lists["devices"] ?? []).map(RemoteDevice.init(json:)), statements: statements,
            secretRequests: try (lists["secret_requests"] ?? []).map(SecretRequestRow.init(json:)),
            approvals: try (lists["approvals"] ?? []).map(ApprovalRequestRow.init(json:)))
    }
}
