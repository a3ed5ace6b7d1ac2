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

    @Test(
        "the server's message, which may quote a value, is only in debugDescription; the description is this client's")
    func serverMessageOnlyInDebugDescription() async throws {
        let server = try LoopbackHTTPServer { _ in
            .postgrestError(400, code: "22P02", message: "invalid input syntax for type uuid: \"secret-value\"")
        }
        let result = try await makeClient(server).upsertRepositories(repositories(1), onBatchAccepted: nil)
        let error = try #require(result.rejected.first?.error)
        #expect(error.code == .invalidValue && error.postgrestCode == .invalidTextRepresentation)
        #expect(error.serverMessage == "invalid input syntax for type uuid: \"secret-value\"")
        #expect(!error.description.contains("secret-value") && !"\(error)".contains("secret-value"))
        #expect(
            error.description.hasPrefix("HTTP 400 22P02: POST repositories: a value is outside what the remote allows"))
        #expect(
            error.debugDescription.contains("the remote said: invalid input syntax for type uuid: \"secret-value\""))
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
        // Cancelled once the loop is retrying: its second request has arrived. Bounded by turns
        // of this loop, not by the clock: at the suite's start every task may wait half a minute
        // for a thread, this one and the client's alike.
        for _ in 0..<6_000 where server.requests.count < 2 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(server.requests.count >= 2, "the retry loop never retried")
        task.cancel()
        // Without cancellation the loop would run for 1,000 attempts (about 25 s of jittered
        // backoff), then end with a network error rather than CancellationError.
        await #expect(throws: CancellationError.self) { _ = try await task.value }
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
