import Foundation
import HTTPTypes
import SyncModel

// Reading from PostgREST: rows a page at a time (keyset pagination, a bounded number of
// pages), the versioned reads a pull makes, and the envelopes addressed to a device.
extension PostgRESTRemoteStore {
    // MARK: - Reads

    public func fetchRepositories(after cursor: PullCursor?) async throws -> [Versioned<RepositoryRecord>] {
        try await fetchVersioned(RemoteTable.repositories, after: cursor, decode: RepositoryRecord.init(json:))
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

    public func listIDs(_ table: ContentTable, deviceID: UUID?) async throws -> Set<UUID> {
        try await listIDs(Self.tableName(table), deviceID: deviceID)
    }

    /// The remote's name of a content table.
    static func tableName(_ table: ContentTable) -> String {
        switch table {
        case .repositories: RemoteTable.repositories
        case .sessions: RemoteTable.sessions
        }
    }

    func listIDs(_ table: String, deviceID: UUID?) async throws -> Set<UUID> {
        var query: [(String, String)] = [("select", "id"), ("user_id", "eq.\(userID.canonical)")]
        if let deviceID { query.append(("device_id", "eq.\(deviceID.canonical)")) }
        return Set(
            try await fetchFanned(table, query: query, order: "id.asc", keyset: ["id"], rangesOf: "id") {
                try RowReader($0, table: table).uuid("id")
            })
    }

    /// Every envelope: where the deployment has `sync_pull_envelopes` (the pull feed's
    /// migration), pages through it; otherwise through the table, in ranges read side by side,
    /// where row-level security costs PostgreSQL a hash of every session of the user per page.
    /// Of some sessions: `in.()` filters a chunk at a time, one page each.
    public func fetchEnvelopes(
        addressedTo deviceID: UUID, sessions: Set<UUID>?, pages page: @escaping PageHandler<EnvelopeRecord>
    ) async throws {
        if let sessions { return try await page(try await fetchEnvelopes(addressedTo: deviceID, of: sessions)) }
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

    func fetchEnvelopes(addressedTo deviceID: UUID, of sessions: Set<UUID>) async throws -> [EnvelopeRecord] {
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
            try checkBounds(table, fetched: fetched, deadline: deadline)
            var pageQuery = query
            var first = offset
            if let keyset, let after {
                pageQuery.append(PostgREST.afterKey(columns: keyset, values: after))
                if keyset.count > 1 { pageQuery.append((keyset[0], "gte.\(after[0])")) }
                first = 0
            }
            let range = "\(first)-\(first + configuration.pageSize - 1)"
            let response: TransportResponse
            do {
                response = try await send(
                    .get, table, query: pageQuery + [("order", order)], prefer: exactCount ? "count=exact" : nil,
                    body: nil, extraHeaders: [.rangeUnit: "items", .range: range])
            } catch let error as RemoteStoreError where error.status == 416 && first > 0 {
                // PostgREST answers 416 for an offset past the last row: rows went away since the
                // previous page (another device answered or cancelled). The listing has ended.
                return (rows, fetched, nil)
            }
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
                after = try Self.key(after: lastRow, columns: keyset, previous: after, table: table)
            }
            pages += 1
            if pages >= maxPages { return (rows, fetched, after) }
        }
    }

    /// A server whose Content-Range never says done must not keep the client paging forever.
    func checkBounds(_ table: String, fetched: Int, deadline: ContinuousClock.Instant) throws {
        guard fetched <= configuration.maxListedRows else {
            throw RemoteStoreError(
                .listingDidNotEnd, "\(table): the listing passed \(configuration.maxListedRows) rows without ending")
        }
        guard ContinuousClock.now < deadline else {
            throw RemoteStoreError(
                .listingDidNotEnd, "\(table): the listing did not end within \(configuration.listingDeadline)")
        }
    }

    /// The key the next page starts after: `columns` of the page's last row. The same key as
    /// `previous` means a page did not advance: refused.
    static func key(
        after lastRow: ResponseRow, columns: [String], previous: [String]?, table: String
    ) throws -> [String] {
        let next = try columns.map { column in
            switch lastRow[column] {
            case let .string(value)?: return value
            case let .int(value)?: return String(value)
            default: throw RemoteStoreError(.malformedResponse, "\(table).\(column) is missing")
            }
        }
        guard next != previous else {
            throw RemoteStoreError(.listingDidNotEnd, "\(table): a page did not advance past the previous one")
        }
        return next
    }
}
