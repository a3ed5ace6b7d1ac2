import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
import Synchronization
import Testing

@Suite("PostgREST client on the wire: reads")
struct PostgRESTReadWireTests {
    @Test("reads rows by keyset pages with Range until Content-Range says done, even when the server caps pages")
    func paging() async throws {
        let user = UUID()
        let all = (0..<2_500).map { i -> [String: Any] in
            [
                "id": String(format: "00000000-0000-4000-8000-%012d", i), "user_id": user.canonical,
                "device_id": UUID().canonical,
                "name": "r\(i)", "local_path": "/p\(i)", "is_worktree": false, "status": "active",
                "created_at": "2026-01-01T00:00:00+00:00", "updated_at": "2026-01-01T00:00:00.000001+00:00",
            ]
        }
        // JSON text per row: Sendable, unlike [String: Any].
        let encoded = try all.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }
        let stamp = "2026-01-01T00:00:00.000001+00:00"
        let server = try LoopbackHTTPServer { request in
            // Every row has the same updated_at: the keyset filter comes down to the id after
            // `and(updated_at.eq.<stamp>,id.gt.<id>)`, applied here as PostgREST would.
            var start = 0
            if let filter = request.queryValue("or"), let range = filter.range(of: "id.gt.") {
                let after = String(filter[range.upperBound...].prefix(36))
                start =
                    encoded.indices.first { String(format: "00000000-0000-4000-8000-%012d", $0) > after }
                    ?? encoded.count
            }
            let bounds = (request.headers["range"] ?? "0-999").split(separator: "-").compactMap { Int($0) }
            let first = start + bounds[0]
            let last = min(start + bounds[1], first + 999, encoded.count - 1) // db-max-rows = 1000
            guard first < encoded.count else {
                return .json(200, [Any](), headers: ["content-range": "*/\(encoded.count - start)"])
            }
            let body = Data(("[" + encoded[first...last].joined(separator: ",") + "]").utf8)
            return TransportResponse(
                status: 206, headers: ["content-range": "\(first - start)-\(last - start)/\(encoded.count - start)"],
                body: body)
        }
        let rows = try await makeClient(server, user: user) { $0.pageSize = 5_000 }.fetchRepositories(after: nil)
        #expect(rows.count == 2_500)
        #expect(Set(rows.map(\.record.id)).count == 2_500)
        // Each page starts after the last row of the one before, never at an offset.
        #expect(server.requests.map { $0.headers["range"] } == ["0-4999", "0-4999", "0-4999"])
        #expect(
            server.requests.map { $0.queryValue("or") } == [nil]
                + [999, 1_999].map { i in
                    "(updated_at.gt.\"\(stamp)\",and(updated_at.eq.\"\(stamp)\",id.gt.\(String(format: "00000000-0000-4000-8000-%012d", i))))"
                })
        // The bound an index scan can start from, implied by the row filter.
        #expect(server.requests.map { $0.queryValue("updated_at") } == [nil, "gte.\(stamp)", "gte.\(stamp)"])
        let request = try #require(server.requests.first)
        #expect(request.queryValue("order") == "updated_at.asc,id.asc")
        #expect(request.queryValue("user_id") == "eq.\(user.canonical)")
        #expect(request.headers["range-unit"] == "items")
        #expect(rows.first?.updatedAt == stamp)
    }

    @Test("the pair listing pages by keyset on the identity column, without asking for counts, until an empty page")
    func keysetPaging() async throws {
        let pairs = (0..<2_300).map { i in (id: 10 + i * 3, session: UUID().canonical, device: UUID().canonical) }
        let server = try LoopbackHTTPServer { request in
            // Apply the keyset filter the way PostgREST would, then cap at 1000 rows.
            let after = request.queryValue("id").map { Int($0.dropFirst(3))! } ?? Int.min
            let page = Array(pairs.filter { $0.id > after }.prefix(1000))
            let total = "*"
            let body =
                "["
                + page.map { #"{"id":\#($0.id),"session_id":"\#($0.session)","device_id":"\#($0.device)"}"# }.joined(
                    separator: ",") + "]"
            let range = page.isEmpty ? "*/\(total)" : "0-\(page.count - 1)/\(total)"
            return TransportResponse(status: 200, headers: ["content-range": range], body: Data(body.utf8))
        }
        let listed = try await makeClient(server).listEnvelopePairs()
        #expect(listed.count == 2_300 && Set(listed).count == 2_300)
        #expect(server.requests.count == 4, "three pages and the empty one that ends the listing")
        #expect(server.requests.allSatisfy { $0.headers["prefer"] == nil })
        #expect(server.requests.allSatisfy { $0.headers["range"] == "0-999" && $0.queryValue("order") == "id.asc" })
        #expect(
            server.requests.map { $0.queryValue("id") } == [
                nil, "gt.\(pairs[999].id)", "gt.\(pairs[1999].id)", "gt.\(pairs[2299].id)",
            ])
    }

    @Test(
        "a listing whose first two pages are full fans out into ranges of its uuid key, each a keyset listing from there; a shorter one does not"
    )
    func fannedListing() async throws {
        let device = UUID()
        // 3,500 envelopes in session order, and a second listing of 600.
        func envelopes(_ count: Int) -> [String] { (0..<count).map { _ in UUID().canonical }.sorted() }
        let long = envelopes(3_500), short = envelopes(600)
        let listings = Mutex<[String]>(long)
        let server = try LoopbackHTTPServer { request in
            // A deployment without the pull function: the table is listed.
            if request.path.hasSuffix("/rpc/sync_pull_envelopes") { return .noPullFunction }
            // The filters as PostgREST applies them: every gt/gte/lt on session_id, ANDed.
            var rows = listings.withLock { $0 }
            for (name, value) in request.query where name == "session_id" {
                let (op, bound) = (value.prefix { $0 != "." }, String(value.drop { $0 != "." }.dropFirst()))
                rows = rows.filter {
                    op == "gt" ? $0 > bound : op == "gte" ? $0 >= bound : op == "lt" ? $0 < bound : false
                }
            }
            let page = Array(rows.prefix(1000))
            let body =
                "["
                + page.map {
                    #"{"session_id":"\#($0)","device_id":"\#(device.canonical)","ephemeral_public_key":"k","encrypted_secret":"s"}"#
                }
                .joined(separator: ",") + "]"
            return TransportResponse(
                status: 206, headers: ["content-range": page.isEmpty ? "*/*" : "0-\(page.count - 1)/*"],
                body: Data(body.utf8))
        }
        let client = makeClient(server) { $0.listingStreams = 4 }
        let fetched = try await client.fetchEnvelopes(addressedTo: device)
        #expect(fetched.map(\.sessionID.canonical) == long, "every row once, in session order")
        #expect(
            server.tableRequests.prefix(2).map { $0.query.filter { $0.0 == "session_id" }.map(\.1) } == [
                [], ["gt.\(long[999])"],
            ])
        let ranged = server.tableRequests.dropFirst(2)
        // Each of four ranges that split the uuid space above the second page's last key starts
        // right after that key, then pages on by its own.
        #expect(ranged.filter { $0.query.contains { $0 == ("session_id", "gt.\(long[1999])") } }.count == 4)
        #expect(
            ranged.allSatisfy {
                $0.query.contains { $0.0 == "session_id" && $0.1.hasPrefix("gt.") && $0.1 >= "gt.\(long[1999])" }
            })
        let ranges = Set(
            ranged.map { request in request.query.filter { $0.0 == "session_id" && !$0.1.hasPrefix("gt.") }.map(\.1) })
        #expect(ranges.count == 4)
        #expect(
            ranges.contains { $0.count == 1 && $0[0].hasPrefix("lt.") }
                && ranges.contains { $0.count == 1 && $0[0].hasPrefix("gte.") })
        #expect(
            ranged.count == 4,
            "one short page per range (~375 rows each): a short page ends a range, no empty page is asked for")

        // 600, 1,000 and 1,500 rows: page after page, as before, until an empty page.
        for (rows, requests) in [(short, 2), (envelopes(1_000), 2), (envelopes(1_500), 3)] {
            listings.withLock { $0 = rows }
            let before = server.tableRequests.count
            #expect(try await client.fetchEnvelopes(addressedTo: device).map(\.sessionID.canonical) == rows)
            #expect(server.tableRequests.count - before == requests, "\(rows.count) rows")
        }
    }

    @Test("a cursor filter sends its timestamp quoted and with %2B, never a bare +")
    func cursorEncoding() async throws {
        let server = try LoopbackHTTPServer { _ in .json(200, [Any](), headers: ["content-range": "*/0"]) }
        let cursor = PullCursor(updatedAt: "2026-03-04T05:06:07.123456+00:00", id: UUID())
        _ = try await makeClient(server).fetchSessions(after: cursor)
        let request = try #require(server.requests.first)
        #expect(!request.rawQuery.contains("+"))
        #expect(request.rawQuery.contains("%2B00"))
        #expect(
            request.queryValue("or")
                == "(updated_at.gt.\"2026-03-04T05:06:07.123456+00:00\",and(updated_at.eq.\"2026-03-04T05:06:07.123456+00:00\",id.gt.\(cursor.id.canonical)))"
        )
        #expect(request.queryValue("updated_at") == "gte.2026-03-04T05:06:07.123456+00:00")
        #expect(request.path == "/rest/v1/agent_coding_sessions")
    }

    @Test("the paged session listing goes by id alone without a cursor, by (updated_at, id) after one")
    func sessionListingOrder() async throws {
        let server = try LoopbackHTTPServer { _ in .json(200, [Any](), headers: ["content-range": "*/0"]) }
        let client = makeClient(server)
        try await client.fetchSessions(after: nil) { _ in }
        let every = try #require(server.requests.last)
        #expect(every.queryValue("order") == "id.asc")
        #expect(every.queryValue("or") == nil && every.queryValue("updated_at") == nil)
        let cursor = PullCursor(updatedAt: "2026-03-04T05:06:07.123456+00:00", id: UUID())
        try await client.fetchSessions(after: cursor) { _ in }
        let since = try #require(server.requests.last)
        #expect(since.queryValue("order") == "updated_at.asc,id.asc")
        #expect(since.queryValue("updated_at") == "gte.2026-03-04T05:06:07.123456+00:00")
    }

    @Test("long in.() filters are chunked")
    func inChunks() async throws {
        let server = try LoopbackHTTPServer { _ in TransportResponse(status: 204, headers: ["content-range": "*/10"]) }
        let ids = Set((0..<450).map { _ in UUID() })
        let deleted = try await makeClient(server).deleteEnvelopes(.recipients(ids))
        #expect(deleted == 30)
        #expect(server.requests.count == 3)
        var seen = Set<String>()
        for request in server.requests {
            #expect(request.method == "DELETE")
            let filter = try #require(request.queryValue("device_id"))
            #expect(filter.hasPrefix("in.(") && filter.hasSuffix(")"))
            let values = filter.dropFirst(4).dropLast().split(separator: ",").map(String.init)
            #expect(values.count <= 200)
            seen.formUnion(values)
        }
        #expect(seen == Set(ids.map(\.canonical)))
    }

    @Test("envelopes arrive in any bytea form and still open")
    func byteaForms() async throws {
        let recipient = X25519PrivateKey()
        let device = UUID()
        let sessions = (0..<3).map { _ in UUID() }
        let secret = SessionSecret()
        let sealed = try sessions.map {
            try SecretEnvelope.seal(secret, for: recipient.publicKey, sessionID: SessionID($0))
        }
        let forms = [
            sealed[0].encryptedSecret,
            "\\x" + ByteEncoding.hex(Array(sealed[1].encryptedSecret.utf8)),
            "\\x" + ByteEncoding.hex(try SecretEnvelope.decodeEncryptedSecret(sealed[2].encryptedSecret)),
        ]
        let server = try LoopbackHTTPServer { request in
            if request.path.hasSuffix("/rpc/sync_pull_envelopes") { return .noPullFunction }
            return .json(
                200,
                (0..<3).map { i in
                    [
                        "session_id": sessions[i].canonical, "device_id": device.canonical,
                        "ephemeral_public_key": sealed[i].ephemeralPublicKey, "encrypted_secret": forms[i],
                    ]
                }, headers: ["content-range": "0-2/3"])
        }
        let envelopes = try await makeClient(server).fetchEnvelopes(addressedTo: device)
        // In session order, each in the form it came.
        #expect(
            envelopes.map(\.encryptedSecret)
                == zip(sessions, forms).sorted { $0.0.canonicallyPrecedes($1.0) }.map(\.1))
        for envelope in envelopes {
            let opened = try SecretEnvelope(
                ephemeralPublicKey: envelope.ephemeralPublicKey, encryptedSecret: envelope.encryptedSecret
            )
            .open(sessionID: SessionID(envelope.sessionID), using: recipient)
            #expect(opened == secret)
        }
        #expect(server.tableRequests.first?.queryValue("device_id") == "eq.\(device.canonical)")
    }

    @Test(
        "a malformed JSON response is a clear error, not a crash",
        arguments: ["{not json", "{\"a\":1}", "[1,2]", "[{\"id\":\"nope\"}]"])
    func malformedResponse(body: String) async throws {
        let server = try LoopbackHTTPServer { _ in
            TransportResponse(status: 200, headers: ["content-range": "0-0/1"], body: Data(body.utf8))
        }
        await #expect {
            _ = try await makeClient(server).fetchRepositories(after: nil)
        } throws: { ($0 as? RemoteStoreError)?.code == .malformedResponse }
    }
}
