import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
import Synchronization
import Testing

/// Hands out tokens and remembers how it was asked.
final class TokenBox: Sendable {
    let calls = Mutex<[Bool]>([])

    var provider: AccessTokenProvider {
        { [self] force in
            self.calls.withLock { $0.append(force) }
            return force ? "fresh-token" : "stale-token"
        }
    }

    var refreshes: Int { calls.withLock { $0.filter { $0 }.count } }
}

func makeClient(
    _ server: LoopbackHTTPServer, tokens: TokenBox = TokenBox(), user: UUID = UUID(),
    _ configure: (inout PostgRESTConfiguration) -> Void = { _ in }
) -> PostgRESTRemoteStore {
    var configuration = PostgRESTConfiguration(
        projectURL: server.baseURL, apiKey: "anon-key-123", userID: user, accessToken: tokens.provider)
    configuration.baseBackoff = .milliseconds(1)
    configuration.maxBackoff = .milliseconds(5)
    configure(&configuration)
    return PostgRESTRemoteStore(configuration: configuration)
}

let created = TransportResponse(status: 201)

func repositories(_ count: Int, user: UUID = UUID(), device: UUID = UUID()) -> [RepositoryRecord] {
    (0..<count).map { RepositoryRecord(userID: user, deviceID: device, name: "r\($0)", localPath: "/src/r\($0)") }
}

@Suite("PostgREST client on the wire")
struct PostgRESTWireTests {
    @Test("an upsert is one POST with exactly the PostgREST headers, query and a uniform-key body")
    func upsertRequest() async throws {
        let server = try LoopbackHTTPServer { _ in created }
        let user = UUID()
        let rows = repositories(3, user: user)
        let result = try await makeClient(server, user: user).upsertRepositories(rows, onBatchAccepted: nil)
        #expect(result == BulkWriteResult(accepted: 3))
        let request = try #require(server.requests.first)
        #expect(server.requests.count == 1)
        #expect(request.method == "POST")
        #expect(request.path == "/rest/v1/repositories")
        #expect(request.queryValue("on_conflict") == "id")
        #expect(request.headers["apikey"] == "anon-key-123")
        #expect(request.headers["authorization"] == "Bearer stale-token")
        #expect(request.headers["prefer"] == "resolution=merge-duplicates,return=minimal")
        #expect(request.headers["content-type"] == "application/json")
        let body = try #require(request.jsonArray)
        #expect(body.count == 3)
        #expect(Set(body.map { $0.keys.sorted() }).count == 1)
        #expect(body[0]["id"] as? String == rows[0].id.canonical)
        #expect(body[0]["user_id"] as? String == user.canonical)
        #expect(body[0]["remote_url"] is NSNull)
    }

    @Test("text that needs JSON escapes arrives as it was sent; text that needs none is sent unescaped")
    func bodyEscapes() async throws {
        let server = try LoopbackHTTPServer { _ in created }
        let user = UUID()
        let titles = [
            "plain title", "quote \" and backslash \\", "line\nfeed\r\ttab", "bell \u{07} nul \u{00} esc \u{1B}",
            "accents é ü, emoji 🧪, U+2028 \u{2028}", "/slash/ and <tag>", "",
        ]
        let sessions = titles.map { SessionRecord(userID: user, deviceID: UUID(), repositoryID: UUID(), title: $0) }
        _ = try await makeClient(server, user: user).upsertSessions(sessions, onBatchAccepted: nil)
        let request = try #require(server.requests.first)
        let body = try #require(request.jsonArray)
        #expect(body.map { $0["title"] as? String } == titles)
        let text = String(decoding: request.body, as: UTF8.self)
        #expect(text.contains("\"title\":\"plain title\""))
        #expect(text.contains(#""title":"quote \" and backslash \\""#))
        #expect(text.contains(#""title":"bell \u0007 nul \u0000 esc \u001b""#))
    }

    @Test("rows with and without an optional column go in separate uniform requests and never send it as null")
    func mixedOptionalFields() async throws {
        let server = try LoopbackHTTPServer { _ in created }
        let user = UUID()
        let repository = UUID()
        let sessions = (0..<6).map { i in
            SessionRecord(
                userID: user, deviceID: UUID(), repositoryID: repository, title: i.isMultiple(of: 2) ? "t\(i)" : nil)
        }
        let result = try await makeClient(server, user: user).upsertSessions(sessions, onBatchAccepted: nil)
        #expect(result.accepted == 6)
        #expect(server.requests.count == 2)
        for request in server.requests {
            let body = try #require(request.jsonArray)
            #expect(Set(body.map { $0.keys.sorted() }).count == 1, "non-uniform keys in one request")
            for row in body where row.keys.contains("title") {
                #expect(row["title"] is String, "title sent as null would clear another writer's value")
            }
        }
        let withTitle = server.requests.compactMap(\.jsonArray).first { $0.first?.keys.contains("title") == true }
        #expect(withTitle?.count == 3)
    }

    @Test("an old deployment without sessions.title gets the sessions without it, once told")
    func missingOptionalColumn() async throws {
        let server = try LoopbackHTTPServer { request in
            (request.jsonArray?.first?.keys.contains("title") ?? false)
                ? .postgrestError(
                    400, code: "PGRST204",
                    message: "Could not find the 'title' column of 'agent_coding_sessions' in the schema cache")
                : created
        }
        let user = UUID()
        let client = makeClient(server, user: user)
        let sessions = (0..<4).map {
            SessionRecord(userID: user, deviceID: UUID(), repositoryID: UUID(), title: "t\($0)")
        }
        #expect(try await client.upsertSessions(sessions, onBatchAccepted: nil) == BulkWriteResult(accepted: 4))
        #expect(try await client.upsertSessions(sessions, onBatchAccepted: nil) == BulkWriteResult(accepted: 4))
        #expect(server.requests.count == 3, "one refusal, then never sent again")
    }

    @Test("a device upsert sends only device-owned columns, never trust fields")
    func deviceUpsert() async throws {
        let server = try LoopbackHTTPServer { _ in created }
        let user = UUID()
        let key = X25519PrivateKey().publicKey.base64
        try await makeClient(server, user: user).upsertOwnDevice(
            OwnDeviceRow(id: UUID(), userID: user, name: "mac", deviceType: .macDesktop, hostname: "h", publicKey: key))
        let row = try #require(server.requests.first?.jsonArray?.first)
        #expect(
            Set(row.keys) == [
                "id", "user_id", "name", "device_type", "hostname", "public_key", "is_active", "last_seen_at",
            ])
        #expect(server.requests.first?.queryValue("on_conflict") == "id")
    }

    @Test("advertising capabilities reads the row, sends it back merged, and keeps other clients' keys")
    func capabilitiesMerged() async throws {
        let server = try LoopbackHTTPServer { request in
            request.method == "GET"
                ? .json(
                    200, [["capabilities": ["cli.version": "2.3.1", "session_secret_envelopes": [1]]]],
                    headers: ["content-range": "0-0/*"])
                : created
        }
        let user = UUID()
        try await makeClient(server, user: user).upsertOwnDevice(
            OwnDeviceRow(
                id: UUID(), userID: user, name: "p", deviceType: .iosPhone, hostname: nil,
                publicKey: X25519PrivateKey().publicKey.base64, envelopeVersions: [1, 2]))
        #expect(server.requests.first?.queryValue("select") == "capabilities")
        let row = try #require(server.requests.last?.jsonArray?.first)
        let capabilities = try #require(row["capabilities"] as? [String: Any])
        #expect(capabilities["cli.version"] as? String == "2.3.1")
        #expect(capabilities["session_secret_envelopes"] as? [Int] == [1, 2])
    }

    @Test(
        "an old deployment without devices.capabilities is detected once; the device row still goes",
        arguments: [true, false])
    func missingCapabilitiesColumn(refusedOnRead: Bool) async throws {
        let server = try LoopbackHTTPServer { request in
            if request.method == "GET" {
                return refusedOnRead
                    ? .postgrestError(400, code: "42703", message: "column devices.capabilities does not exist")
                    : .json(200, [[String: Any]](), headers: ["content-range": "*/*"])
            }
            return (request.jsonArray?.first?.keys.contains("capabilities") ?? false)
                ? .postgrestError(
                    400, code: "PGRST204",
                    message: "Could not find the 'capabilities' column of 'devices' in the schema cache")
                : created
        }
        let user = UUID()
        let client = makeClient(server, user: user)
        let row = OwnDeviceRow(
            id: UUID(), userID: user, name: "p", deviceType: .iosPhone, hostname: nil,
            publicKey: X25519PrivateKey().publicKey.base64, envelopeVersions: [1, 2])
        try await client.upsertOwnDevice(row)
        let first = server.requests.count
        try await client.upsertOwnDevice(row)
        #expect(server.requests.count == first + 1, "the second upsert neither reads nor sends capabilities")
        #expect(server.requests.last?.jsonArray?.first?.keys.contains("capabilities") == false)
    }

    @Test("a batch is de-duplicated by its conflict key, the last row winning")
    func deduplicated() async throws {
        let server = try LoopbackHTTPServer { _ in created }
        let pair = (session: UUID(), device: UUID())
        let rows =
            ["first", "second"].map {
                EnvelopeRecord(
                    sessionID: pair.session, deviceID: pair.device, ephemeralPublicKey: "e", encryptedSecret: $0)
            } + [
                EnvelopeRecord(sessionID: UUID(), deviceID: pair.device, ephemeralPublicKey: "e", encryptedSecret: "x")
            ]
        let result = try await makeClient(server).upsertEnvelopes(rows, onBatchAccepted: nil)
        #expect(result.accepted == 2)
        let body = try #require(server.requests.first?.jsonArray)
        #expect(body.count == 2)
        #expect(body.contains { $0["encrypted_secret"] as? String == "second" })
        #expect(!body.contains { $0["encrypted_secret"] as? String == "first" })
        #expect(server.requests.first?.queryValue("on_conflict") == "session_id,device_id")
    }

    @Test("batches are bounded by rows and by bytes")
    func batchBounds() async throws {
        let server = try LoopbackHTTPServer { _ in created }
        let accepted = Mutex<[Int]>([])
        _ = try await makeClient(server).upsertRepositories(repositories(1_200)) { batch in
            accepted.withLock { $0.append(batch.count) }
        }
        #expect(server.requests.compactMap(\.jsonArray).map(\.count) == [500, 500, 200])
        #expect(accepted.withLock { $0 } == [500, 500, 200])

        let small = try LoopbackHTTPServer { _ in created }
        _ = try await makeClient(small) { $0.maxBytesPerBatch = 4_096 }.upsertRepositories(
            repositories(100), onBatchAccepted: nil)
        #expect(small.requests.count > 1)
        #expect(small.requests.allSatisfy { $0.body.count <= 4_096 })
        #expect(small.requests.compactMap(\.jsonArray).map(\.count).reduce(0, +) == 100)
    }

    @Test("a 413 halves the batch and retries until it fits")
    func payloadTooLarge() async throws {
        let server = try LoopbackHTTPServer { request in
            (request.jsonArray?.count ?? 0) > 100
                ? .postgrestError(413, code: "PGRST413", message: "Payload Too Large") : created
        }
        let result = try await makeClient(server).upsertRepositories(repositories(400), onBatchAccepted: nil)
        #expect(result == BulkWriteResult(accepted: 400))
        let sizes = server.requests.compactMap(\.jsonArray).map(\.count)
        #expect(sizes == [400, 200, 100, 100, 200, 100, 100])
    }

    @Test("a refused batch is narrowed to the rows at fault; the rest are written; details stay out of descriptions")
    func narrowToBadRow() async throws {
        let rows = repositories(40)
        let bad = rows[17].id.canonical
        let server = try LoopbackHTTPServer { request in
            let ids = request.jsonArray?.compactMap { $0["id"] as? String } ?? []
            return ids.contains(bad)
                ? .postgrestError(
                    409, code: "23505",
                    message: "duplicate key value violates unique constraint \"repositories_device_id_local_path_key\"",
                    details: "Key (device_id, local_path)=(x, /secret/path) already exists.")
                : created
        }
        let result = try await makeClient(server).upsertRepositories(rows, onBatchAccepted: nil)
        #expect(result.accepted == 39)
        let rejected = try #require(result.rejected.first)
        #expect(result.rejected.count == 1 && rejected.key == bad)
        #expect(
            rejected.error.code == .conflict && rejected.error.status == 409
                && rejected.error.postgrestCode == .uniqueViolation)
        #expect(!rejected.error.description.contains("/secret/path"))
        #expect(rejected.error.debugDescription.contains("/secret/path"))
        #expect(server.requests.count <= 1 + 2 * 6)
    }

    @Test("a 400 for one row is not retried")
    func noRetryOn4xx() async throws {
        let server = try LoopbackHTTPServer { _ in
            .postgrestError(400, code: "PGRST102", message: "All object keys must match")
        }
        let result = try await makeClient(server).upsertRepositories(repositories(1), onBatchAccepted: nil)
        #expect(result.accepted == 0 && result.rejected.count == 1)
        #expect(server.requests.count == 1)
    }

    @Test("a 401 JWT expired refreshes the token once and retries; a second 401 fails as unauthorized")
    func tokenRefresh() async throws {
        let server = try LoopbackHTTPServer { request in
            request.headers["authorization"] == "Bearer fresh-token"
                ? created : .postgrestError(401, code: "PGRST303", message: "JWT expired")
        }
        let tokens = TokenBox()
        let result = try await makeClient(server, tokens: tokens).upsertRepositories(
            repositories(2), onBatchAccepted: nil)
        #expect(result.accepted == 2)
        #expect(tokens.refreshes == 1)
        #expect(server.requests.map { $0.headers["authorization"] } == ["Bearer stale-token", "Bearer fresh-token"])

        let never = try LoopbackHTTPServer { _ in
            .postgrestError(401, code: "PGRST301", message: "JWSError JWSInvalidSignature")
        }
        await #expect {
            _ = try await makeClient(never).listDevices()
        } throws: { error in
            let error = error as? RemoteStoreError
            return error?.code == .unauthorized && error?.status == 401 && !(error!.description.contains("token"))
        }
        #expect(never.requests.count == 2)
    }

    @Test("503 then success is retried with backoff and counted")
    func retryOn503() async throws {
        let count = Mutex(0)
        let server = try LoopbackHTTPServer { _ in
            count.withLock {
                $0 += 1
                return $0
            } <= 2 ? .postgrestError(503, code: "PGRST000", message: "Could not connect") : created
        }
        let client = makeClient(server)
        let result = try await client.upsertRepositories(repositories(5), onBatchAccepted: nil)
        #expect(result.accepted == 5)
        let metrics = client.metrics()
        #expect(metrics.requests == 3 && metrics.retries == 2)
        #expect(metrics.bytesSent > 0)
    }

    @Test("retries give up after the configured attempts on a server that stays down")
    func retriesExhausted() async throws {
        let server = try LoopbackHTTPServer { _ in .postgrestError(503, code: "PGRST000", message: "down") }
        await #expect {
            _ = try await makeClient(server) { $0.maxAttempts = 3 }.listDevices()
        } throws: { ($0 as? RemoteStoreError)?.status == 503 }
        #expect(server.requests.count == 3)
    }

    @Test("an unreachable server is a network error after retries")
    func unreachable() async throws {
        // Port 1 on loopback: nothing listens there. (A stopped test server's port was free for
        // the next test's server to take, which then answered this request.)
        let url = URL(string: "http://127.0.0.1:1")!
        var configuration = PostgRESTConfiguration(
            projectURL: url, apiKey: "k", userID: UUID(), accessToken: { _ in "t" })
        configuration.maxAttempts = 2
        configuration.baseBackoff = .milliseconds(1)
        await #expect {
            _ = try await PostgRESTRemoteStore(configuration: configuration).listDevices()
        } throws: { ($0 as? RemoteStoreError)?.code == .network }
    }

    @Test("a loopback server stopped before its accept loop ran never answers the next server's requests")
    func stoppedServerStaysOut() async throws {
        // The harness's own fault: a server stopped at once closed its listener before its
        // thread first called `accept`; the next server's listener took the same number, and
        // the stopped server answered its requests (a token-refresh test lost its second one).
        for round in 0..<40 {
            let stopped = try LoopbackHTTPServer { _ in TransportResponse(status: 201, headers: ["x-server": "stopped"])
            }
            stopped.stop()
            let live = try LoopbackHTTPServer { _ in TransportResponse(status: 200, headers: ["x-server": "live"]) }
            let response = try await CurlTransport().send(TransportRequest(method: "GET", url: live.baseURL))
            #expect(response.headers["x-server"] == "live", "round \(round)")
            #expect(live.requests.count == 1 && stopped.requests.isEmpty, "round \(round)")
            live.stop()
        }
    }

    @Test("cancellation stops the retry loop")
    func cancellation() async throws {
        let server = try LoopbackHTTPServer { _ in .postgrestError(503, code: "PGRST000", message: "down") }
        let client = makeClient(server) {
            $0.maxAttempts = 1_000
            $0.baseBackoff = .milliseconds(50)
            $0.maxBackoff = .milliseconds(50)
        }
        let task = Task { try await client.listDevices() }
        try await Task.sleep(for: .milliseconds(150))
        task.cancel()
        let started = ContinuousClock.now
        await #expect(throws: CancellationError.self) { _ = try await task.value }
        // Without cancellation the loop would run for 1,000 attempts (at least 50 s); the bound
        // allows for a machine loaded by the rest of the suite (5.6 s was seen once).
        #expect(ContinuousClock.now - started < .seconds(20))
    }

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

    @Test("a batch-accepted handler sees exactly the rows the remote accepted")
    func acceptedHandler() async throws {
        let rows = repositories(10)
        let bad = rows[3].id.canonical
        let server = try LoopbackHTTPServer { request in
            (request.jsonArray?.contains { $0["id"] as? String == bad } ?? false)
                ? .postgrestError(409, code: "23503", message: "fk") : created
        }
        let seen = Mutex<[UUID]>([])
        let result = try await makeClient(server).upsertRepositories(rows) { batch in
            seen.withLock { $0 += batch.map(\.id) }
        }
        #expect(Set(seen.withLock { $0 }) == Set(rows.map(\.id)).subtracting([rows[3].id]))
        #expect(result.rejected.map(\.error.code) == [.foreignKeyViolation])
    }

    @Test("the configuration never prints the apikey")
    func configurationDescription() {
        let configuration = PostgRESTConfiguration(
            projectURL: URL(string: "https://x.supabase.co")!, apiKey: "sb_secret_key", userID: UUID()
        ) { _ in "t" }
        #expect(!"\(configuration)".contains("sb_secret_key"))
    }
}

@Suite("Timestamps")
struct TimestampTests {
    @Test(
        "PostgREST forms parse",
        arguments: [
            ("2026-01-01T00:00:00+00:00", 1_767_225_600.0), ("2026-01-01T00:00:00.5Z", 1_767_225_600.5),
            ("2026-01-01 01:00:00.25+01:00", 1_767_225_600.25),
            ("2026-01-01T00:00:00.123456-00:30", 1_767_227_400.123456),
        ])
    func parse(text: String, expected: Double) throws {
        let date = try #require(Timestamp.parse(text))
        #expect(abs(date.timeIntervalSince1970 - expected) < 1e-6)
    }

    @Test(
        "garbage does not parse",
        arguments: [
            "", "2026-01-01", "2026-13-01T00:00:00Z", "2026-01-01T00:00:00", "2026-01-01T00:00:00+0x:00", "yesterday",
        ])
    func rejects(text: String) {
        #expect(Timestamp.parse(text) == nil)
    }

    @Test("formatting round-trips to the microsecond")
    func roundTrip() throws {
        let date = Date(timeIntervalSince1970: 1_767_225_600.123456)
        let text = Timestamp.format(date)
        #expect(text == "2026-01-01T00:00:00.123456+00:00")
        #expect(abs(try #require(Timestamp.parse(text)).timeIntervalSince1970 - date.timeIntervalSince1970) < 1e-6)
    }

    @Test("formatting writes what printf writes, digit for digit, across the range")
    func formatMatchesPrintf() {
        var generator = SystemRandomNumberGenerator()
        var instants: [Double] = [0, 0.000001, 59.999999, 951_782_400, 4_102_444_799.999999, 253_402_300_799.999999]
        for _ in 0..<2_000 { instants.append(Double.random(in: 0..<253_402_300_800, using: &generator)) }
        for instant in instants {
            let date = Date(timeIntervalSince1970: instant)
            var micros = (date.timeIntervalSince1970 * 1_000_000).rounded()
            if micros < 0 { micros = 0 }
            var seconds = time_t(Int64(micros) / 1_000_000)
            var parts = tm()
            gmtime_r(&seconds, &parts)
            let reference = String(
                format: "%04d-%02d-%02dT%02d:%02d:%02d.%06d+00:00", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec),
                Int(Int64(micros) % 1_000_000))
            #expect(Timestamp.format(date) == reference, "at \(instant)")
        }
    }
}

@Suite("Device-trust tables missing on the remote")
struct MissingTrustTablesTests {
    @Test("404 PGRST205 (and 42P01) from PostgREST arrive as .missingTable for every trust read")
    func missingTables() async throws {
        // PostgREST 12+ answers PGRST205; older versions let PostgreSQL's 42P01 through.
        let newer = try LoopbackHTTPServer { _ in
            .postgrestError(404, code: "PGRST205", message: "Could not find the table 'public.x' in the schema cache")
        }
        let older = try LoopbackHTTPServer { _ in
            .postgrestError(404, code: "42P01", message: "relation \"public.x\" does not exist")
        }
        await #expect(throws: RemoteStoreError.self) { _ = try await makeClient(older).listCertificates() }
        do {
            _ = try await makeClient(older).fetchIdentityKey()
        } catch let error as RemoteStoreError {
            #expect(error.code == .missingTable)
        }
        let server = newer
        let client = makeClient(server)
        let calls: [(String, () async throws -> Void)] = [
            ("fetchIdentityKey", { _ = try await client.fetchIdentityKey() }),
            ("listCertificates", { _ = try await client.listCertificates() }),
            ("listRevocations", { _ = try await client.listRevocations() }),
            ("trustLogRows", { _ = try await client.trustLogRows(epoch: 1, fromSeq: 0) }),
            ("trustLogGeneses", { _ = try await client.trustLogGeneses() }),
            ("trustLogWitnesses", { _ = try await client.trustLogWitnesses(epoch: 1) }),
            ("listPairingRequests", { _ = try await client.listPairingRequests() }),
            ("deletePairingRequest", { try await client.deletePairingRequest(id: UUID()) }),
        ]
        for (name, call) in calls {
            do {
                try await call()
                Issue.record("\(name) did not throw")
            } catch {
                #expect((error as? RemoteStoreError)?.code == .missingTable, "\(name): \(error)")
            }
        }
    }
}
