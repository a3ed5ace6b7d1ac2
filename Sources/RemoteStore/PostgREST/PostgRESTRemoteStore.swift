import Foundation
import HTTPTypes
import SyncModel
import Synchronization

/// Supplies the user's access token (a JWT) for each request.
///
/// Called with `forceRefresh: false` before every request; after a 401 with `PGRST301` or
/// `PGRST303` it is called once with `true` and the request is retried. Whatever it returns is
/// sent in `Authorization: Bearer` and never stored or printed by the client.
public typealias AccessTokenProvider = @Sendable (_ forceRefresh: Bool) async throws -> String

/// How the PostgREST client connects and batches.
public struct PostgRESTConfiguration: Sendable, CustomStringConvertible {
    /// The project URL (`https://xyz.supabase.co`); the client adds `/rest/v1`.
    public var projectURL: URL
    /// The anon or publishable key, sent as `apikey`.
    public var apiKey: String
    /// The signed-in user (the JWT's `sub`).
    public var userID: UUID
    /// The access-token provider.
    public var accessToken: AccessTokenProvider
    /// Seconds before one request is abandoned.
    public var requestTimeout: TimeInterval = 30
    /// The `User-Agent` header.
    public var userAgent = "session-sync/1"
    /// Rows per write request (≤ 500, sync.md).
    public var maxRowsPerBatch = 500
    /// Body bytes per write request (≤ 512 KiB, well under common 1 MB proxy limits).
    public var maxBytesPerBatch = 512 * 1024
    /// Rows asked for per page (Supabase caps responses at 1000).
    public var pageSize = 1000
    /// Streams a long listing fans out into: once the first two pages of a listing by a uuid
    /// key come back full, the rest is read in this many ranges of that key at once, so the
    /// server's and the database's work on one page overlaps the decoding of another. A listing
    /// of up to two pages costs the requests it did. 1 reads page after page.
    public var listingStreams = 4
    /// Values per `in.(...)` filter, to stay clear of URL length limits.
    public var inFilterChunk = 200
    /// Attempts for a retryable failure (network, 502, 503, 504, 520), the first included.
    public var maxAttempts = 5
    /// First backoff delay; it doubles per attempt, capped at ``maxBackoff``, with full jitter.
    public var baseBackoff: Duration = .milliseconds(200)
    /// Longest backoff delay.
    public var maxBackoff: Duration = .seconds(5)
    /// The most rows one listing (each range of a fanned-out one) may return before it is
    /// abandoned as endless.
    public var maxListedRows = 2_000_000
    /// The longest one listing may take, all its pages included.
    public var listingDeadline: Duration = .seconds(900)
    /// The largest answer a database function may give (the change feed, coordination calls):
    /// they answer a few KiB, and an answer the size of a page of rows is an attack on memory.
    /// The digest is allowed what its bucket count needs.
    public var maxRPCResponseBytes = 4 * 1024 * 1024
    /// The most rows a listing of the user's devices, certificates or revocations, or one list
    /// of the change feed, may hold: a person has a handful of devices.
    public var maxDeviceRows = Self.defaultMaxDeviceRows
    /// ``maxDeviceRows``'s default.
    public static let defaultMaxDeviceRows = 10_000

    /// Creates a configuration.
    public init(projectURL: URL, apiKey: String, userID: UUID, accessToken: @escaping AccessTokenProvider) {
        self.projectURL = projectURL
        self.apiKey = apiKey
        self.userID = userID
        self.accessToken = accessToken
    }

    /// Never shows the key.
    public var description: String { "PostgRESTConfiguration(\(projectURL.absoluteString), user \(userID.canonical))" }
}

/// ``SyncRemote`` over Supabase's PostgREST, speaking exactly what postgrest.md describes.
///
/// - Writes: uniform-key batches bounded by rows and bytes, de-duplicated by conflict key,
///   `Prefer: resolution=merge-duplicates,return=minimal` with `on_conflict=`; a 413 halves the
///   batch; a batch refused for its rows is narrowed down to the rows at fault.
/// - Reads: every list pages with `Range` in a stable order until `Content-Range` says done;
///   long `in.()` filters are chunked; timestamps go as `%2B`, list values are quoted.
/// - Retries network errors and 502/503/504/520 with capped exponential backoff and jitter;
///   refreshes the token once on a 401 `PGRST301`/`PGRST303`; never retries other 4xx.
public final class PostgRESTRemoteStore: SyncRemote {
    public let configuration: PostgRESTConfiguration
    let transport: any HTTPTransport
    let counters = Mutex(RemoteMetrics())
    /// Optional columns (``OptionalColumns``) this deployment turned out not to have.
    let missingColumns = Mutex<Set<String>>([])
    /// Optional functions (the change feed) this deployment turned out not to have.
    let missingFunctions = Mutex<Set<String>>([])
    let restBase: String

    public var userID: UUID { configuration.userID }

    /// Creates a client.
    ///
    /// - Parameters:
    ///   - configuration: Where and how to connect.
    ///   - transport: The HTTP transport; ``defaultTransport()`` by default (libcurl on Linux).
    public init(configuration: PostgRESTConfiguration, transport: any HTTPTransport = defaultTransport()) {
        self.configuration = configuration
        self.transport = transport
        var base = configuration.projectURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        restBase = base + "/rest/v1/"
    }

    public func metrics() -> RemoteMetrics { counters.withLock { $0 } }

    // MARK: - Devices

    /// Upserts the device row. With ``OwnDeviceRow/envelopeVersions`` it first reads the row's
    /// `capabilities` and sends them back with this device's key set, so a deployment without
    /// a server-side merge keeps the keys other clients store there; an old deployment without
    /// the column is detected once (`PGRST204`/`42703`) and the column is not sent again.
    public func upsertOwnDevice(_ device: OwnDeviceRow) async throws {
        var row = device.jsonRow
        if let versions = device.envelopeVersions, !missingColumns.withLock({ $0.contains("capabilities") }) {
            do {
                let existing = try await currentCapabilities(of: device.id)
                row.fields.append(("capabilities", .json(EnvelopeCapability.merged(existing, versions: versions))))
            } catch let error as RemoteStoreError where Self.isMissingColumn(error) {
                missingColumns.withLock { _ = $0.insert("capabilities") }
            }
        }
        do {
            _ = try await send(
                .post, RemoteTable.devices, query: [("on_conflict", "id")],
                prefer: "resolution=merge-duplicates,return=minimal", body: Data(("[" + row.json + "]").utf8))
        } catch let error as RemoteStoreError
            where Self.isMissingColumn(error) && row.fields.contains(where: { $0.0 == "capabilities" })
        {
            missingColumns.withLock { _ = $0.insert("capabilities") }
            row.fields.removeAll { $0.0 == "capabilities" }
            _ = try await send(
                .post, RemoteTable.devices, query: [("on_conflict", "id")],
                prefer: "resolution=merge-duplicates,return=minimal", body: Data(("[" + row.json + "]").utf8))
        }
    }

    /// The `capabilities` object of one device row, as JSON text; `nil` when there is no row yet.
    func currentCapabilities(of id: UUID) async throws -> String? {
        let response = try await send(
            .get, RemoteTable.devices, query: [("select", "capabilities"), ("id", "eq.\(id.canonical)")],
            prefer: nil, body: nil)
        guard
            case let .json(text)? = try ResponseJSON.rows(response.body, table: RemoteTable.devices).first?[
                "capabilities"],
            let value = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
        else { return nil }
        return String(
            decoding: try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys]), as: UTF8.self)
    }

    /// Whether `error` says the deployment lacks a column the request named (PostgREST's
    /// PGRST204 on writes, PostgreSQL's 42703 on reads). Callers ask it of a request whose only
    /// column an old deployment can lack is the one they mean: the code decides, never the
    /// message's text.
    static func isMissingColumn(_ error: RemoteStoreError) -> Bool {
        error.postgrestCode == .columnNotFound || error.postgrestCode == .undefinedColumn
    }

    public func listDevices() async throws -> [RemoteDevice] {
        // A user has a handful of devices: counting them is free, and the count ends the listing
        // after one page instead of asking for an empty second one.
        try await fetchAll(
            RemoteTable.devices, query: [("select", "*"), ("user_id", "eq.\(userID.canonical)")], order: "id.asc",
            exactCount: true, atMost: configuration.maxDeviceRows, decode: RemoteDevice.init(json:))
    }

    // MARK: - RPC

    /// Calls a database function through PostgREST: `POST /rest/v1/rpc/<name>` with the
    /// arguments as a JSON object of named values (`null` for an argument that does not apply).
    ///
    /// - Parameters:
    ///   - name: The function's name (letters, digits and `_`).
    ///   - arguments: The named arguments, as JSON values already encoded (strings, numbers,
    ///     booleans, objects or `null`).
    /// - Returns: The response body: the function's result as JSON (a scalar, an object, or an
    ///   array for a set-returning function); empty for `void`.
    /// - Throws: ``RemoteStoreError`` `.missingFunction` (404 `PGRST202`: no such function, or
    ///   none with these argument names), or any other error of the request loop.
    public func rpc(_ name: String, arguments: [String: RPCArgument]) async throws -> Data {
        try await rpc(name, arguments: arguments, maxResponseBytes: configuration.maxRPCResponseBytes)
    }

    /// ``rpc(_:arguments:)`` with its own cap on the answer's size.
    func rpc(_ name: String, arguments: [String: RPCArgument], maxResponseBytes: Int) async throws -> Data {
        guard !name.isEmpty,
            name.utf8.allSatisfy({
                $0 == 0x5F || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
            })
        else {
            throw RemoteStoreError(.configuration, "not a function name")
        }
        let row = JSONRow(fields: arguments.keys.sorted().map { ($0, arguments[$0]!.value) })
        do {
            return try await send(
                .post, "rpc/" + name, query: [], prefer: nil, body: Data(row.json.utf8),
                maxResponseBytes: maxResponseBytes
            ).body
        } catch var error as RemoteStoreError where error.postgrestCode == .functionNotFound {
            error.code = .missingFunction
            throw error
        }
    }

    // MARK: - Envelope digest

    public func secretDigest(ownerDeviceID: UUID, buckets: Int) async throws -> [DigestBucket] {
        // A bucket's JSON object is under 100 bytes: 65,536 of them need 6.4 MB.
        let data = try await rpc(
            "session_secret_digest",
            arguments: ["owner_device_id": .string(ownerDeviceID.canonical), "buckets": .int(buckets)],
            maxResponseBytes: max(configuration.maxRPCResponseBytes, buckets * 128))
        return try Self.decodeDigest(data)
    }

    static func decodeDigest(_ data: Data) throws -> [DigestBucket] {
        guard let digest = try? JSONDecoder().decode([DigestBucket].self, from: data) else {
            throw RemoteStoreError(
                .malformedResponse, "session_secret_digest answered something other than bucket digests")
        }
        return digest
    }

    public func listEnvelopeKeys(sessions: Set<UUID>, atMost: Int?) async throws -> [EnvelopeKey] {
        let ids = sessions.map(\.canonical).sorted()
        var keys: [EnvelopeKey] = []
        for start in stride(from: 0, to: ids.count, by: configuration.inFilterChunk) {
            let chunk = ids[start..<min(start + configuration.inFilterChunk, ids.count)]
            keys += try await fetchAll(
                RemoteTable.secrets,
                query: [
                    ("select", "id,session_id,device_id,ephemeral_public_key"), ("session_id", PostgREST.inList(chunk)),
                ], order: "id.asc", keyset: ["id"], atMost: atMost.map { max(0, $0 - keys.count) }
            ) { row in
                let r = RowReader(row, table: RemoteTable.secrets)
                return EnvelopeKey(
                    pair: EnvelopePair(sessionID: try r.uuid("session_id"), deviceID: try r.uuid("device_id")),
                    ephemeralPublicKey: try r.optionalString("ephemeral_public_key") ?? "")
            }
        }
        return keys
    }

    // MARK: - Bulk writes

    public func upsertRepositories(
        _ rows: [RepositoryRecord], onBatchAccepted: BatchHandler<RepositoryRecord>?
    ) async throws -> BulkWriteResult {
        try await upsert(
            RemoteTable.repositories, rows, conflict: "id", key: { $0.id.canonical }, encode: { $0.jsonRow },
            onBatchAccepted: onBatchAccepted)
    }

    public func upsertSessions(
        _ rows: [SessionRecord], onBatchAccepted: BatchHandler<SessionRecord>?
    ) async throws -> BulkWriteResult {
        try await upsert(
            RemoteTable.sessions, rows, conflict: "id", key: { $0.id.canonical }, encode: { $0.jsonRow },
            optionalColumns: OptionalColumns.sessions, onBatchAccepted: onBatchAccepted)
    }

    public func upsertEnvelopes(
        _ rows: [EnvelopeRecord], onBatchAccepted: BatchHandler<EnvelopeRecord>?
    ) async throws -> BulkWriteResult {
        try await upsert(
            RemoteTable.secrets, rows, conflict: "session_id,device_id", key: { $0.pair.key }, encode: { $0.jsonRow },
            onBatchAccepted: onBatchAccepted)
    }

    /// A prepared row: its key, its fields and JSON text, and the record to hand back when accepted.
    struct Prepared<Row: Sendable>: Sendable {
        let key: String
        let fields: JSONRow
        let json: String
        let row: Row

        init(key: String, fields: JSONRow, row: Row) {
            self.key = key
            self.fields = fields
            self.json = fields.json
            self.row = row
        }

        /// The row without `columns`; itself when it names none of them (its JSON is not
        /// written again: the common case, where every column is known).
        func dropping(_ columns: Set<String>) -> Prepared {
            guard fields.fields.contains(where: { columns.contains($0.0) }) else { return self }
            let kept = fields.fields.filter { !columns.contains($0.0) }
            return Prepared(key: key, fields: JSONRow(fields: kept), row: row)
        }
    }

    func upsert<Row: Sendable>(
        _ table: String, _ rows: [Row], conflict: String?, key: (Row) -> String, encode: (Row) -> JSONRow,
        optionalColumns: Set<String> = [], onBatchAccepted: BatchHandler<Row>?
    ) async throws -> BulkWriteResult {
        let missing = missingColumns.withLock { $0 }
        // De-duplicate by conflict key (the last row wins, as it would had they been sent in
        // order), then group by key set: PostgREST rejects a batch whose objects differ in keys.
        let keys = rows.map(key)
        var latest: [String: Int] = [:]
        latest.reserveCapacity(keys.count)
        for (index, rowKey) in keys.enumerated() { latest[rowKey] = index }
        var groups: [String: [Prepared<Row>]] = [:]
        var groupOrder: [String] = []
        for (index, row) in rows.enumerated() where latest[keys[index]] == index {
            let prepared = Prepared(key: keys[index], fields: encode(row), row: row).dropping(missing)
            let signature = prepared.fields.signature
            if groups[signature] == nil { groupOrder.append(signature) }
            groups[signature, default: []].append(prepared)
        }
        var result = BulkWriteResult()
        for signature in groupOrder {
            var pending = chunk(groups[signature]!)
            while !pending.isEmpty {
                let batch = pending.removeFirst()
                let body = Data(("[" + batch.map(\.json).joined(separator: ",") + "]").utf8)
                do {
                    // Without a conflict key, a plain insert (a table a user may not update).
                    _ = try await send(
                        .post, table, query: conflict.map { [("on_conflict", $0)] } ?? [],
                        prefer: conflict == nil ? "return=minimal" : "resolution=merge-duplicates,return=minimal",
                        body: body)
                } catch let error as RemoteStoreError
                    where error.postgrestCode == .columnNotFound
                    && batch[0].fields.fields.contains(where: { optionalColumns.contains($0.0) })
                {
                    // An old deployment without a later-added column: stop sending the optional
                    // columns this batch named (one per table), keep the rest. The code decides,
                    // not the message's text.
                    let absent = optionalColumns.filter { column in batch[0].fields.fields.contains { $0.0 == column } }
                    missingColumns.withLock { $0.formUnion(absent) }
                    pending = pending.map { $0.map { $0.dropping(absent) } }
                    pending.insert(batch.map { $0.dropping(absent) }, at: 0)
                    continue
                } catch let error as RemoteStoreError where error.status == 413 || error.isCausedByRows {
                    if batch.count > 1 {
                        // Halve: a 413 to fit, a refused batch to narrow down the rows at fault.
                        let middle = batch.count / 2
                        pending.insert(contentsOf: [Array(batch[..<middle]), Array(batch[middle...])], at: 0)
                    } else if error.status == 413 {
                        result.rejected.append(
                            RejectedRow(
                                key: batch[0].key,
                                error: RemoteStoreError(
                                    .rowTooLarge, "one row is larger than the remote accepts in a request", status: 413)
                            ))
                    } else {
                        result.rejected.append(RejectedRow(key: batch[0].key, error: error))
                    }
                    continue
                }
                result.accepted += batch.count
                try await onBatchAccepted?(batch.map(\.row))
            }
        }
        return result
    }

    /// Splits rows into batches bounded by row count and body bytes.
    func chunk<Row>(_ rows: [Prepared<Row>]) -> [[Prepared<Row>]] {
        var batches: [[Prepared<Row>]] = []
        var current: [Prepared<Row>] = []
        var bytes = 2
        for row in rows {
            let size = row.json.utf8.count + 1
            if !current.isEmpty
                && (current.count >= configuration.maxRowsPerBatch || bytes + size > configuration.maxBytesPerBatch)
            {
                batches.append(current)
                current = []
                bytes = 2
            }
            current.append(row)
            bytes += size
        }
        if !current.isEmpty { batches.append(current) }
        return batches
    }

    // MARK: - Envelope pairs and deletes

    public func listEnvelopePairs() async throws -> [EnvelopePair] {
        // Keyset on the table's bigint identity: one index range per page, however deep.
        try await fetchAll(
            RemoteTable.secrets, query: [("select", "id,session_id,device_id")], order: "id.asc", keyset: ["id"]
        ) { row in
            let r = RowReader(row, table: RemoteTable.secrets)
            return EnvelopePair(sessionID: try r.uuid("session_id"), deviceID: try r.uuid("device_id"))
        }
    }

    public func deleteEnvelopes(recipients: Set<UUID>) async throws -> Int? {
        try await deleteWhere(RemoteTable.secrets, column: "device_id", in: recipients)
    }

    public func deleteEnvelopes(sessions: Set<UUID>) async throws -> Int? {
        try await deleteWhere(RemoteTable.secrets, column: "session_id", in: sessions)
    }

    public func deleteEnvelopes(pairs: [EnvelopePair]) async throws -> Int? {
        var total: Int? = 0
        let chunkSize = max(1, configuration.inFilterChunk / 2)
        for start in stride(from: 0, to: pairs.count, by: chunkSize) {
            let chunk = pairs[start..<min(start + chunkSize, pairs.count)]
            let filter =
                "("
                + chunk.map { "and(session_id.eq.\($0.sessionID.canonical),device_id.eq.\($0.deviceID.canonical))" }
                .joined(separator: ",") + ")"
            let count = try await deleteRequest(RemoteTable.secrets, query: [("or", filter)])
            total = total.flatMap { sum in count.map { sum + $0 } }
        }
        return total
    }

    public func deleteRepositories(ids: Set<UUID>) async throws -> Int? {
        try await deleteWhere(RemoteTable.repositories, column: "id", in: ids)
    }

    public func deleteSessions(ids: Set<UUID>) async throws -> Int? {
        try await deleteWhere(RemoteTable.sessions, column: "id", in: ids)
    }

    func deleteWhere(_ table: String, column: String, in ids: Set<UUID>) async throws -> Int? {
        let values = ids.map(\.canonical).sorted()
        var total: Int? = 0
        for start in stride(from: 0, to: values.count, by: configuration.inFilterChunk) {
            let chunk = values[start..<min(start + configuration.inFilterChunk, values.count)]
            let count = try await deleteRequest(table, query: [(column, PostgREST.inList(chunk))])
            total = total.flatMap { sum in count.map { sum + $0 } }
        }
        return total
    }

    func deleteRequest(_ table: String, query: [(String, String)]) async throws -> Int? {
        let response = try await send(.delete, table, query: query, prefer: "return=minimal,count=exact", body: nil)
        return response.headerFields[.contentRange].flatMap(ContentRange.init).flatMap(\.total)
    }

    // MARK: - Reads

    public func fetchRepositories(after cursor: PullCursor?) async throws -> [Versioned<RepositoryRecord>] {
        try await fetchVersioned(RemoteTable.repositories, after: cursor, decode: RepositoryRecord.init(json:))
    }

    public func fetchSessions(after cursor: PullCursor?) async throws -> [Versioned<SessionRecord>] {
        try await fetchVersioned(RemoteTable.sessions, after: cursor, decode: SessionRecord.init(json:))
    }

    /// Every session since `cursor` (every one without), a page at a time. Without a cursor the
    /// order does not matter to the caller, and the listing goes by `id` alone: each range's page is
    /// then one scan of the `(user_id, id)` index. Ordered by `(updated_at, id)` instead, a page
    /// of a range read and sorted every row of the range left (30-90 ms a page at 100,000 sessions).
    public func fetchSessions(
        after cursor: PullCursor?, pages page: @escaping PageHandler<Versioned<SessionRecord>>
    ) async throws {
        _ = try await fetchFanned(
            RemoteTable.sessions, query: [("select", "*"), ("user_id", "eq.\(userID.canonical)")],
            order: cursor == nil ? "id.asc" : "updated_at.asc,id.asc",
            keyset: cursor == nil ? ["id"] : ["updated_at", "id"],
            after: cursor.map { [$0.updatedAt, $0.id.canonical] }, rangesOf: "id",
            decode: { row in
                Versioned(
                    record: try SessionRecord(json: row),
                    updatedAt: try RowReader(row, table: RemoteTable.sessions).string("updated_at"))
            }, onPage: page)
    }

    func fetchVersioned<Record>(
        _ table: String, after cursor: PullCursor?, decode: @escaping @Sendable (ResponseRow) throws -> Record
    ) async throws
        -> [Versioned<Record>]
    {
        // Keyset pages from the cursor on: an offset page re-reads every row before it, which made
        // the 100th page of 1,000 sessions cost PostgreSQL 25 ms and the whole listing quadratic.
        let query: [(String, String)] = [("select", "*"), ("user_id", "eq.\(userID.canonical)")]
        let rows = try await fetchFanned(
            table, query: query, order: "updated_at.asc,id.asc", keyset: ["updated_at", "id"],
            after: cursor.map { [$0.updatedAt, $0.id.canonical] }, rangesOf: "id"
        ) { row in
            let r = RowReader(row, table: table)
            let updatedAt = try r.string("updated_at")
            let id = try r.uuid("id").canonical
            return OrderedRow(
                date: Timestamp.parse(updatedAt) ?? .distantPast, id: id,
                row: Versioned(record: try decode(row), updatedAt: updatedAt))
        }
        // Ranges of ids come back each in (updated_at, id) order: the whole listing is put in it.
        let sorted = rows.sorted { $0.date != $1.date ? $0.date < $1.date : $0.id < $1.id }
        return sorted.map(\.row)
    }

    /// A row with the (updated_at, id) it is ordered by.
    struct OrderedRow<Row: Sendable>: Sendable {
        let date: Date
        let id: String
        let row: Row
    }

    public func listRepositoryIDs(deviceID: UUID?) async throws -> Set<UUID> {
        try await listIDs(RemoteTable.repositories, deviceID: deviceID)
    }

    public func listSessionIDs(deviceID: UUID?) async throws -> Set<UUID> {
        try await listIDs(RemoteTable.sessions, deviceID: deviceID)
    }

    func listIDs(_ table: String, deviceID: UUID?) async throws -> Set<UUID> {
        var query: [(String, String)] = [("select", "id"), ("user_id", "eq.\(userID.canonical)")]
        if let deviceID { query.append(("device_id", "eq.\(deviceID.canonical)")) }
        return Set(
            try await fetchFanned(table, query: query, order: "id.asc", keyset: ["id"], rangesOf: "id") {
                try RowReader($0, table: table).uuid("id")
            })
    }

    public func fetchEnvelopes(addressedTo deviceID: UUID) async throws -> [EnvelopeRecord] {
        try await fetchFanned(
            RemoteTable.secrets, query: Self.envelopeQuery(deviceID), order: "session_id.asc", keyset: ["session_id"],
            rangesOf: "session_id", decode: EnvelopeRecord.init(json:))
    }

    /// Where the deployment has `sync_pull_envelopes` (the pull feed's migration), pages through
    /// it; otherwise through the table, in ranges read side by side, where row-level security
    /// costs PostgreSQL a hash of every session of the user per page.
    public func fetchEnvelopes(
        addressedTo deviceID: UUID, pages page: @escaping PageHandler<EnvelopeRecord>
    ) async throws {
        if !missingFunctions.withLock({ $0.contains(Self.pullEnvelopesFunction) }) {
            do {
                return try await pullEnvelopes(deviceID, pages: page)
            } catch let error as RemoteStoreError where error.code == .missingFunction {
                missingFunctions.withLock { _ = $0.insert(Self.pullEnvelopesFunction) }
            }
        }
        _ = try await fetchFanned(
            RemoteTable.secrets, query: Self.envelopeQuery(deviceID), order: "session_id.asc", keyset: ["session_id"],
            rangesOf: "session_id", decode: EnvelopeRecord.init(json:), onPage: page)
    }

    public func fetchEnvelopes(addressedTo deviceID: UUID, sessions: Set<UUID>) async throws -> [EnvelopeRecord] {
        let ids = sessions.map(\.canonical).sorted()
        var rows: [EnvelopeRecord] = []
        for start in stride(from: 0, to: ids.count, by: configuration.inFilterChunk) {
            let chunk = ids[start..<min(start + configuration.inFilterChunk, ids.count)]
            // One envelope per session at most (the pair is unique): the chunk bounds the listing.
            rows += try await fetchAll(
                RemoteTable.secrets, query: Self.envelopeQuery(deviceID) + [("session_id", PostgREST.inList(chunk))],
                order: "session_id.asc", keyset: ["session_id"], atMost: chunk.count, decode: EnvelopeRecord.init(json:)
            )
        }
        return rows
    }

    /// The columns and filter of a listing of the envelopes addressed to one device.
    static func envelopeQuery(_ deviceID: UUID) -> [(String, String)] {
        [
            ("select", "session_id,device_id,ephemeral_public_key,encrypted_secret"),
            ("device_id", "eq.\(deviceID.canonical)"),
        ]
    }

    /// The first 32 bits of the start of each of `streams` ranges that split the uuids above
    /// `low` (all of them without it) evenly: range `i` runs from `starts[i]` up to
    /// `starts[i + 1]`, the last to the end. The first start is `low`'s own first 32 bits.
    static func rangeStarts(above low: String?, streams: Int) -> [UInt32] {
        let base = UInt64(low.flatMap { UInt32($0.prefix(8), radix: 16) } ?? 0)
        return (0..<streams).map { UInt32(base + (0x1_0000_0000 - base) * UInt64($0) / UInt64(streams)) }
    }

    /// A keyset listing that fans out (``PostgRESTConfiguration/listingStreams``): the first
    /// two pages one after the other; when both come back full, the rest in that many ranges of
    /// the uuid column `column` at once (`column=gte.<low>&column=lt.<high>`), each a keyset
    /// listing from the second page's last key. The ranges cover the uuid space above that key
    /// when the key starts with `column`, the whole space otherwise; their rows come back in
    /// range order. The server gave full pages when asked, so in a range a short page is its
    /// last: no empty page is asked for to end it.
    ///
    /// With `onPage`, each page goes to it as it arrives (the ranges' pages at the same time) and
    /// the listing returns no rows: the caller never holds more than a page per range.
    func fetchFanned<Row: Sendable>(
        _ table: String, query: [(String, String)], order: String, keyset: [String], after start: [String]? = nil,
        rangesOf column: String, decode: @escaping @Sendable (ResponseRow) throws -> Row,
        onPage: PageHandler<Row>? = nil
    ) async throws -> [Row] {
        // Two pages first: a listing of exactly one full page (1,000 sessions) ends with the
        // second, as it always did, instead of asking every range for nothing.
        let first = try await fetchPages(
            table, query: query, order: order, keyset: keyset, after: start, maxPages: 2, decode: decode,
            onPage: onPage)
        guard let resume = first.resume else { return first.rows }
        let streams = configuration.listingStreams
        guard streams > 1, first.fetched >= 2 * configuration.pageSize else {
            return first.rows
                + (try await fetchPages(
                    table, query: query, order: order, keyset: keyset, after: resume, decode: decode, onPage: onPage
                ).rows)
        }
        // The ranges [bound(i), bound(i + 1)) of the ids above the resume point.
        let starts = Self.rangeStarts(above: keyset[0] == column ? resume[0] : nil, streams: streams)
        func bound(_ index: Int) -> String { String(format: "%08x-0000-0000-0000-000000000000", starts[index]) }
        let parts = try await withThrowingTaskGroup(of: (Int, [Row]).self) { group in
            for index in 0..<streams {
                var range = query
                if index > 0 { range.append((column, "gte.\(bound(index))")) }
                if index < streams - 1 { range.append((column, "lt.\(bound(index + 1))")) }
                group.addTask {
                    (
                        index,
                        try await self.fetchPages(
                            table, query: range, order: order, keyset: keyset, after: resume,
                            shortPageEnds: true, decode: decode, onPage: onPage
                        ).rows
                    )
                }
            }
            var parts = [[Row]](repeating: [], count: streams)
            for try await (index, rows) in group { parts[index] = rows }
            return parts
        }
        var rows = first.rows
        rows.reserveCapacity(rows.count + parts.reduce(0) { $0 + $1.count })
        for part in parts { rows += part }
        return rows
    }

    /// Pages through every row: `Range` requests of ``PostgRESTConfiguration/pageSize`` until a
    /// page comes back empty (or a `Content-Range` total, if the server volunteers one, is
    /// reached). A short page does not mean the end: a server may cap pages below what was asked.
    /// It never asks for `Prefer: count=exact`: under row-level security an exact count
    /// re-checks every row of the table and cost 20 times a page on the test stack.
    ///
    /// With `keyset` (columns that are unique together, in `order`'s order) each page after the
    /// first filters on the last row's key instead of skipping an offset, so every page costs the
    /// same however deep it is: the pair listing reads 100,000 rows at the L size. `after` starts
    /// the listing after that key. A key of several columns also bounds the first column from
    /// below (`gte`), which the row filter implies, so that the index scan starts at the key
    /// instead of filtering every row before it.
    ///
    /// With `atMost` (rows the caller knows there can be at most), a listing that passes it is
    /// abandoned at once as `.listingDidNotEnd`, instead of at the general limits.
    func fetchAll<Row>(
        _ table: String, query: [(String, String)], order: String, keyset: [String]? = nil,
        after start: [String]? = nil,
        exactCount: Bool = false, atMost: Int? = nil, decode: (ResponseRow) throws -> Row
    ) async throws -> [Row] {
        try await fetchPages(
            table, query: query, order: order, keyset: keyset, after: start, exactCount: exactCount, atMost: atMost,
            decode: decode
        ).rows
    }

    /// ``fetchAll(_:query:order:keyset:after:exactCount:decode:)`` stopping after `maxPages`
    /// pages: the rows, how many were fetched, and when the listing has not ended, the key to go
    /// on after (keyset listings; an offset listing just stops). With `shortPageEnds`, a page
    /// shorter than ``PostgRESTConfiguration/pageSize`` ends the listing (for a server known not to
    /// cap below it). With `onPage`, each page's rows go to it and none are returned.
    func fetchPages<Row>(
        _ table: String, query: [(String, String)], order: String, keyset: [String]? = nil,
        after start: [String]? = nil,
        exactCount: Bool = false, atMost: Int? = nil, maxPages: Int = .max, shortPageEnds: Bool = false,
        decode: (ResponseRow) throws -> Row, onPage: PageHandler<Row>? = nil
    ) async throws -> (rows: [Row], fetched: Int, resume: [String]?) {
        var pages = 0
        // Each page becomes typed rows at once: 100,000 JSON objects held to the end cost ~170 MB.
        var rows: [Row] = []
        var fetched = 0
        var offset = 0
        var total: Int?
        var after = keyset == nil ? nil : start
        let deadline = ContinuousClock.now + configuration.listingDeadline
        while true {
            // A server whose Content-Range never says done must not keep the client paging forever.
            guard fetched <= configuration.maxListedRows else {
                throw RemoteStoreError(
                    .listingDidNotEnd, "\(table): the listing passed \(configuration.maxListedRows) rows without ending"
                )
            }
            guard ContinuousClock.now < deadline else {
                throw RemoteStoreError(
                    .listingDidNotEnd, "\(table): the listing did not end within \(configuration.listingDeadline)")
            }
            var pageQuery = query
            var first = offset
            if let keyset, let after {
                pageQuery.append(PostgREST.afterKey(columns: keyset, values: after))
                if keyset.count > 1 { pageQuery.append((keyset[0], "gte.\(after[0])")) }
                first = 0
            }
            let range = "\(first)-\(first + configuration.pageSize - 1)"
            let response = try await send(
                .get, table, query: pageQuery + [("order", order)], prefer: exactCount ? "count=exact" : nil, body: nil,
                extraHeaders: [.rangeUnit: "items", .range: range])
            let page = try ResponseJSON.rows(response.body, table: table, maxRows: configuration.pageSize)
            if let atMost, fetched + page.count > atMost {
                throw RemoteStoreError(
                    .listingDidNotEnd, "\(table): the listing passed the \(atMost) rows there can be")
            }
            if let onPage {
                var decoded: [Row] = []
                decoded.reserveCapacity(page.count)
                for object in page { decoded.append(try decode(object)) }
                if !decoded.isEmpty { try await onPage(decoded) }
            } else {
                rows.reserveCapacity(rows.count + page.count)
                for object in page { rows.append(try decode(object)) }
            }
            fetched += page.count
            guard let header = response.headerFields[.contentRange] else {
                // A server that ignores Range sent everything at once.
                return (rows, fetched, nil)
            }
            guard let contentRange = ContentRange(header) else {
                throw RemoteStoreError(
                    .malformedResponse, "\(table): unreadable Content-Range", status: response.status.code)
            }
            if total == nil { total = contentRange.total }
            if page.isEmpty { return (rows, fetched, nil) }
            guard contentRange.first == first, let last = contentRange.last, last - first + 1 == page.count else {
                throw RemoteStoreError(
                    .malformedResponse, "\(table): Content-Range does not match the rows returned",
                    status: response.status.code)
            }
            offset += page.count
            if let total, fetched >= total { return (rows, fetched, nil) }
            // The caller knows there can be no more: no empty page is asked for to end it.
            if let atMost, fetched >= atMost { return (rows, fetched, nil) }
            if shortPageEnds && page.count < configuration.pageSize { return (rows, fetched, nil) }
            if let keyset, let lastRow = page.last {
                let next = try keyset.map { column in
                    switch lastRow[column] {
                    case let .string(value)?: return value
                    case let .int(value)?: return String(value)
                    default: throw RemoteStoreError(.malformedResponse, "\(table).\(column) is missing")
                    }
                }
                // The next page starts after this key; the same key again means no progress.
                guard next != after else {
                    throw RemoteStoreError(.listingDidNotEnd, "\(table): a page did not advance past the previous one")
                }
                after = next
            }
            pages += 1
            if pages >= maxPages { return (rows, fetched, after) }
        }
    }

    // MARK: - The request loop

    /// Sends one request, with token refresh and retries; returns only a 2xx response.
    func send(
        _ method: HTTPRequest.Method, _ table: String, query: [(String, String)], prefer: String?, body: Data?,
        extraHeaders: HTTPFields = [:], maxResponseBytes: Int? = nil
    ) async throws -> TransportResponse {
        let queryString = PostgREST.queryString(query)
        guard let url = URL(string: restBase + table + (queryString.isEmpty ? "" : "?" + queryString)) else {
            throw RemoteStoreError(.configuration, "cannot build a URL for \(table)")
        }
        var refreshed = false
        var attempt = 1
        while true {
            try Task.checkCancellation()
            let token = try await configuration.accessToken(refreshed)
            // HTTPFields would turn a line break in a credential into a space: such a token or key
            // is refused here rather than sent mangled (its text never goes into the message).
            guard Self.isFieldValue(token), Self.isFieldValue(configuration.apiKey) else {
                throw RemoteStoreError(
                    .configuration, "the access token or the apikey holds a character a header cannot carry")
            }
            var headers: HTTPFields = [
                .apikey: configuration.apiKey, .authorization: "Bearer \(token)",
                .accept: "application/json", .userAgent: configuration.userAgent,
            ]
            if body != nil { headers[.contentType] = "application/json" }
            if let prefer { headers[.prefer] = prefer }
            headers.append(contentsOf: extraHeaders)
            let request = TransportRequest(
                method: method, url: url, headerFields: headers, body: body, timeout: configuration.requestTimeout,
                maxResponseBytes: maxResponseBytes)
            MetricsTally.record({ $0.requests += 1 }, in: counters)

            let response: TransportResponse
            do {
                response = try await transport.send(request)
            } catch is CancellationError {
                throw CancellationError()
            } catch let error as RemoteStoreError where error.code == .responseTooLarge || error.code == .configuration
            {
                // Neither changes on a second attempt.
                throw error
            } catch {
                if Task.isCancelled { throw CancellationError() }
                guard attempt < configuration.maxAttempts else {
                    throw RemoteStoreError(
                        .network, "\(method) \(table): no response after \(attempt) attempts (\(Self.describe(error)))")
                }
                try await backoff(attempt)
                attempt += 1
                continue
            }
            // A body counts as sent once an answer shows the server read it: a dead server
            // has been sent nothing, however many attempts were made.
            MetricsTally.record(
                {
                    $0.bytesSent += (body?.count ?? 0)
                    $0.bytesReceived += response.body.count
                }, in: counters)
            if response.status.kind == .successful { return response }

            if response.status.kind == .redirection {
                throw RemoteStoreError(
                    .redirected, "\(method) \(table): the remote answered with a redirect, which is never followed",
                    status: response.status.code)
            }
            let error = Self.decodeError(response, method: method, table: table)
            if response.status == .unauthorized {
                if !refreshed,
                    error.postgrestCode == .jwtInvalid || error.postgrestCode == .jwtClaimsInvalid
                        || error.postgrestCode == nil
                {
                    refreshed = true
                    continue
                }
                var unauthorized = error
                unauthorized.code = .unauthorized
                throw unauthorized
            }
            if [502, 503, 504, 520].contains(response.status.code), attempt < configuration.maxAttempts {
                try await backoff(attempt)
                attempt += 1
                continue
            }
            throw error
        }
    }

    /// Sleeps a full-jitter exponential delay, counting the retry; throws on cancellation.
    func backoff(_ attempt: Int) async throws {
        MetricsTally.record({ $0.retries += 1 }, in: counters)
        let ceiling = min(configuration.maxBackoff, configuration.baseBackoff * (1 << min(attempt - 1, 20)))
        let nanos = ceiling.components.seconds * 1_000_000_000 + ceiling.components.attoseconds / 1_000_000_000
        try await Task.sleep(for: .nanoseconds(Int64.random(in: 0...max(nanos, 1))))
    }

    /// PostgREST's error body, or a generic one; row values stay in `details` only.
    static func decodeError(
        _ response: TransportResponse, method: HTTPRequest.Method, table: String
    ) -> RemoteStoreError {
        let object = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any]
        // Everything here came from the server: control characters are escaped so that an
        // error message cannot drive the terminal it is printed on.
        let postgrestCode = (object?["code"] as? String).map {
            PostgRESTErrorCode(rawValue: $0.escapingControlCharacters)
        }
        let message = (object?["message"] as? String)?.escapingControlCharacters ?? "\(method) \(table) failed"
        let code: RemoteStoreError.Code
        switch (response.status.code, postgrestCode) {
        case (_, .uniqueViolation?): code = .conflict
        case (_, .foreignKeyViolation?): code = .foreignKeyViolation
        case (_, .insufficientPrivilege?), (403, _): code = .permissionDenied
        case (_, .checkViolation?), (_, .invalidParameterValue?), (_, .invalidTextRepresentation?),
            (_, .stringDataRightTruncation?):
            code = .invalidValue
        case (_, .tableNotFound?), (_, .undefinedTable?): code = .missingTable
        case (_, .programLimitExceeded?): code = .limitExceeded
        default: code = .http
        }
        return RemoteStoreError(
            code, message, status: response.status.code, postgrestCode: postgrestCode,
            details: (object?["details"] as? String)?.escapingControlCharacters,
            hint: (object?["hint"] as? String)?.escapingControlCharacters)
    }

    static func describe(_ error: Error) -> String {
        if let error = error as? URLError { return "URL error \(error.code.rawValue)" }
        // The transports' own errors carry secret-free messages (never a URL or a header).
        if let error = error as? RemoteStoreError { return error.message }
        return String(describing: type(of: error))
    }
}

/// `Content-Range: 0-999/5000`, `*/0`, `0-9/*`.
struct ContentRange {
    var first: Int?
    var last: Int?
    var total: Int?

    init?(_ header: String) {
        let parts = header.split(separator: "/", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { return nil }
        if parts[0] != "*" {
            let bounds = parts[0].split(separator: "-").map { Int($0) }
            guard bounds.count == 2, let a = bounds[0], let b = bounds[1] else { return nil }
            first = a
            last = b
        }
        if parts[1] != "*" {
            guard let count = Int(parts[1]) else { return nil }
            total = count
        }
    }
}

extension PostgRESTRemoteStore {
    /// Whether `text` can travel as a header value as it is (no control character but tab).
    static func isFieldValue(_ text: String) -> Bool {
        !text.utf8.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }
    }
}

extension HTTPField.Name {
    /// Supabase's API key header.
    static let apikey = HTTPField.Name("apikey")!
    /// PostgREST's preferences (`return=minimal`, `resolution=merge-duplicates`, `count=exact`).
    static let prefer = HTTPField.Name("Prefer")!
    /// The unit of a `Range` request (`items`).
    static let rangeUnit = HTTPField.Name("Range-Unit")!
}
