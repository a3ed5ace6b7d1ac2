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
    /// This device's credential: sent with every request (`x-device-credential`) and registered
    /// before the first (`register_device`), so that the remote acts for this device and no
    /// other. `nil` only for what needs no device (a deployment's checks, the rig's tools).
    public var deviceCredential: DeviceCredential?
    /// Whether an earlier run registered ``deviceCredential`` with this project: then no
    /// registration request is made (a refusal still makes one, to say why it was refused).
    public var deviceCredentialRegistered = false
    /// Told once this client registered ``deviceCredential`` (to remember it for later runs).
    public var onDeviceCredentialRegistered: (@Sendable () async -> Void)?
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

/// `SyncRemote` over Supabase's PostgREST, speaking exactly what postgrest.md describes.
///
/// - Writes: uniform-key batches bounded by rows and bytes, de-duplicated by conflict key,
///   `Prefer: resolution=merge-duplicates,return=minimal` with `on_conflict=`; a 413 halves the
///   batch; a batch refused for its rows is narrowed down to the rows at fault.
/// - Reads: every list pages with `Range` in a stable order until `Content-Range` says done;
///   long `in.()` filters are chunked; timestamps go as `%2B`, list values are quoted.
/// - Retries network errors and 502/503/504/520 with capped exponential backoff and jitter;
///   refreshes the token once on a 401 `PGRST301`/`PGRST303`; never retries other 4xx.
public final class PostgRESTRemoteStore: EnvelopeDigestRemote {
    public let configuration: PostgRESTConfiguration
    let transport: any HTTPTransport
    let counters = Mutex(RemoteMetrics())
    /// Optional columns (``OptionalColumns``) this deployment turned out not to have.
    let missingColumns = Mutex<Set<String>>([])
    /// Optional functions (the change feed) this deployment turned out not to have.
    let missingFunctions = Mutex<Set<String>>([])
    let restBase: String
    /// The registration of ``PostgRESTConfiguration/deviceCredential``: made once, before the
    /// first request; a failed one is made again by the next request.
    let registration = Mutex<Task<Void, Error>?>(nil)

    public var userID: UUID { configuration.userID }

    /// Creates a client.
    ///
    /// - Parameters:
    ///   - configuration: Where and how to connect.
    ///   - transport: The HTTP transport; ``defaultTransport(connectTimeout:)`` by default (libcurl on Linux).
    public init(configuration: PostgRESTConfiguration, transport: any HTTPTransport = defaultTransport()) {
        self.configuration = configuration
        self.transport = transport
        var base = configuration.projectURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        restBase = base + "/rest/v1/"
    }

    public func metrics() -> RemoteMetrics { counters.withLock { $0 } }

    // MARK: - Devices

    /// Upserts the device row. With `OwnDeviceRow.envelopeVersions` it first reads the row's
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
        // after one page instead of asking for an empty second one. The columns a device may read
        // of the others (never `apns_token`); `*` where a deployment lacks one of them (it
        // predates the column grants too).
        func list(_ columns: String) async throws -> [RemoteDevice] {
            try await fetchAll(
                RemoteTable.devices, query: [("select", columns), ("user_id", "eq.\(userID.canonical)")],
                order: "id.asc", exactCount: true, atMost: configuration.maxDeviceRows, decode: RemoteDevice.init(json:)
            )
        }
        do {
            return try await list(RemoteDevice.listedColumns)
        } catch let error as RemoteStoreError where error.postgrestCode == .undefinedColumn {
            return try await list("*")
        }
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
    /// - Throws: `RemoteStoreError` `.missingFunction` (404 `PGRST202`: no such function, or
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
                ], order: "id.asc", keyset: ["id"], atMost: atMost.map { max(0, $0 - keys.count) },
                decode: EnvelopeKey.init(json:))
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
            RemoteTable.secrets, query: [("select", "id,session_id,device_id")], order: "id.asc", keyset: ["id"],
            decode: EnvelopePair.init(json:))
    }

    public func deleteEnvelopes(_ scope: EnvelopeScope) async throws -> Int? {
        switch scope {
        case .recipients(let recipients):
            try await deleteWhere(RemoteTable.secrets, column: "device_id", in: recipients)
        case .sessions(let sessions): try await deleteWhere(RemoteTable.secrets, column: "session_id", in: sessions)
        case .pairs(let pairs): try await deletePairs(pairs)
        }
    }

    func deletePairs(_ pairs: [EnvelopePair]) async throws -> Int? {
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

    public func deleteRows(_ table: ContentTable, ids: Set<UUID>) async throws -> Int? {
        try await deleteWhere(Self.tableName(table), column: "id", in: ids)
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
}
