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

    /// The listing of the envelope rows addressed to a device, by RPC.
    static let pullEnvelopesFunction = "sync_pull_envelopes"

    /// Pages through `sync_pull_envelopes`: a first page; when it is full, the rest in
    /// ``PostgRESTConfiguration/listingStreams`` ranges of session ids above its last at once,
    /// each a keyset listing (`after` the last row seen, `before` the range's end).
    func pullEnvelopes(_ deviceID: UUID, pages page: @escaping PageHandler<EnvelopeRecord>) async throws {
        let size = configuration.pageSize
        let first = try await envelopePage(deviceID, after: nil, before: nil)
        if !first.isEmpty { try await page(first) }
        guard first.count == size, let last = first.last?.sessionID.canonical else { return }
        let streams = max(1, configuration.listingStreams)
        let starts = Self.rangeStarts(above: last, streams: streams)
        func bound(_ index: Int) -> UInt32 { starts[index] }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<streams {
                // Exclusive bounds: a range starts after the id just below its first (or after the
                // first page's last row), and ends before the next range's first id.
                var after = last
                if index > 0, bound(index) > 0 {
                    after = max(last, String(format: "%08x-ffff-ffff-ffff-ffffffffffff", bound(index) - 1))
                }
                let before =
                    index < streams - 1 ? String(format: "%08x-0000-0000-0000-000000000000", bound(index + 1)) : nil
                if let before, before <= after { continue }
                group.addTask {
                    var key = after
                    while true {
                        let rows = try await self.envelopePage(
                            deviceID, after: UUID(uuidString: key), before: before.flatMap(UUID.init(uuidString:)))
                        if !rows.isEmpty { try await page(rows) }
                        guard rows.count == size, let next = rows.last?.sessionID.canonical else { return }
                        guard next > key else {
                            throw RemoteStoreError(
                                .listingDidNotEnd,
                                "\(Self.pullEnvelopesFunction): a page did not advance past the previous one")
                        }
                        key = next
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// One page of `sync_pull_envelopes`, rows in session order, at most ``PostgRESTConfiguration/pageSize``.
    func envelopePage(_ deviceID: UUID, after: UUID?, before: UUID?) async throws -> [EnvelopeRecord] {
        var arguments: [String: RPCArgument] = [
            "device_id": .string(deviceID.canonical), "row_limit": .int(configuration.pageSize),
        ]
        if let after { arguments["after"] = .string(after.canonical) }
        if let before { arguments["before"] = .string(before.canonical) }
        let data = try await rpc(Self.pullEnvelopesFunction, arguments: arguments)
        let rows = try ResponseJSON.rows(data, table: Self.pullEnvelopesFunction, maxRows: configuration.pageSize)
            .map(EnvelopeRecord.init(json:))
        // A page is in session order, inside its bounds, and names only this device.
        var previous = after?.canonical ?? ""
        for row in rows {
            let session = row.sessionID.canonical
            guard session > previous, before.map({ session < $0.canonical }) ?? true, row.deviceID == deviceID else {
                throw RemoteStoreError(
                    .malformedResponse, "\(Self.pullEnvelopesFunction) answered rows out of order or out of bounds")
            }
            previous = session
        }
        return rows
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
            trustLog: try TrustLogHead(feed: object["trustLog"], table: "sync_pull_changes"),
            secretRequests: try (lists["secret_requests"] ?? []).map(SecretRequestRow.init(json:)),
            approvals: try (lists["approvals"] ?? []).map(ApprovalRequestRow.init(json:)))
    }
}
