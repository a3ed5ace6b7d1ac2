import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Synchronization
import Testing

/// Integration tests that need the real PostgreSQL stack: they fail with how to start it when
/// it is missing, unless SYNC_SKIP_STACK_TESTS=1.
@Suite("PostgREST client and server over PostgreSQL", .enabled(if: !StackEnvironment.skipped))
struct StackIntegrationTests {
    @Test("a JWT that expires in the middle of a sync is refreshed once and the sync completes")
    func expiredTokenMidSync() async throws {
        let stack = try StackEnvironment.require()
        let user = UUID()
        let calls = Mutex((requests: 0, refreshes: 0))
        var configuration = PostgRESTConfiguration(projectURL: stack.url, apiKey: stack.anonKey, userID: user) {
            force in
            let (requests, refreshes) = calls.withLock { state -> (Int, Int) in
                state.requests += 1
                if force { state.refreshes += 1 }
                return (state.requests, state.refreshes)
            }
            // Valid for the first two requests, then expired, until a forced refresh.
            if refreshes > 0 { return stack.token(for: user) }
            return requests <= 2 ? stack.token(for: user) : stack.token(for: user, expiresIn: -60)
        }
        configuration.maxRowsPerBatch = 100
        let desktop = UUID()
        configuration.deviceCredential = .random(for: desktop)
        let store = PostgRESTRemoteStore(configuration: configuration)
        try await store.upsertOwnDevice(
            OwnDeviceRow(
                id: desktop, userID: user, name: "d", deviceType: .linuxDesktop, hostname: nil,
                publicKey: X25519PrivateKey().publicKey.base64))
        let rows = (0..<450).map {
            RepositoryRecord(userID: user, deviceID: desktop, name: "r\($0)", localPath: "/r/\($0)")
        }
        let result = try await store.upsertRepositories(rows, onBatchAccepted: nil)
        #expect(result == BulkWriteResult(accepted: 450))
        #expect(calls.withLock { $0.refreshes } == 1)
        #expect(try await store.listIDs(.repositories, deviceID: desktop).count == 450)
    }

    @Test("on the deployed schema, envelopes come back through the bytea trap and still open")
    func byteaTrapEndToEnd() async throws {
        let harness = try PostgRESTHarness(deployedVariant: true)
        let me = try await Actor(harness)
        let repository = me.repository()
        let session = me.session(repository)
        _ = try await me.store.upsertRepositories([repository], onBatchAccepted: nil)
        _ = try await me.store.upsertSessions([session], onBatchAccepted: nil)
        let phone = X25519PrivateKey()
        let phoneID = UUID()
        let secret = SessionSecret()
        let sealed = try SecretEnvelope.seal(secret, for: phone.publicKey, sessionID: SessionID(session.id))
        _ = try await me.store.upsertEnvelopes(
            [
                EnvelopeRecord(
                    sessionID: session.id, deviceID: phoneID,
                    ephemeralPublicKey: sealed.ephemeralPublicKey, encryptedSecret: sealed.encryptedSecret)
            ],
            onBatchAccepted: nil)
        let received = try #require(try await me.store.fetchEnvelopes(addressedTo: phoneID).first)
        #expect(received.encryptedSecret.hasPrefix("\\x"), "the deployed column is bytea")
        let opened = try SecretEnvelope(
            ephemeralPublicKey: received.ephemeralPublicKey, encryptedSecret: received.encryptedSecret
        )
        .open(sessionID: SessionID(session.id), using: phone)
        #expect(opened == secret)
    }

    @Test("on the project's schema a user cannot write trust fields, and envelopes need a real recipient")
    func projectSchemaIsStricter() async throws {
        let harness = try PostgRESTHarness(deployedVariant: false)
        let me = try await Actor(harness)
        let token = harness.stack.token(for: me.user)
        let patch = try await harness.stack.acting(for: me.credential).request(
            "PATCH", "/rest/v1/devices?id=eq.\(me.desktop.canonical)", token: token,
            body: #"{"is_trusted":true}"#)
        #expect(patch.status == 403)
        #expect(patch.body.contains("42501"))

        let repository = me.repository()
        let session = me.session(repository)
        _ = try await me.store.upsertRepositories([repository], onBatchAccepted: nil)
        _ = try await me.store.upsertSessions([session], onBatchAccepted: nil)
        let result = try await me.store.upsertEnvelopes([me.envelope(session, to: UUID())], onBatchAccepted: nil)
        #expect(result.rejected.first?.error.code == .foreignKeyViolation)
    }

    @Test("the server answers the PostgREST behaviours postgrest.md lists")
    func postgrestBehaviours() async throws {
        let me = try await Actor(try PostgRESTHarness(deployedVariant: false))
        let stack = try StackEnvironment.require().acting(for: me.credential)
        let token = stack.token(for: me.user)
        let device = me.desktop.canonical

        // Non-uniform keys: 400 PGRST102.
        var r = try await stack.request(
            "POST", "/rest/v1/repositories", token: token,
            body: #"[{"id":"\#(UUID().canonical)"},{"name":"x"}]"#)
        #expect(r.status == 400 && r.body.contains("PGRST102"))
        // Invalid JSON: 400 PGRST102.
        r = try await stack.request("POST", "/rest/v1/repositories", token: token, body: "{oops")
        #expect(r.status == 400 && r.body.contains("PGRST102"))
        // Unknown column: 400 PGRST204. Unknown table: 404 PGRST205.
        r = try await stack.request("POST", "/rest/v1/repositories", token: token, body: #"[{"nope":1}]"#)
        #expect(r.status == 400 && r.body.contains("PGRST204"))
        r = try await stack.request("GET", "/rest/v1/nope", token: token)
        #expect(r.status == 404 && r.body.contains("PGRST205"))

        // Duplicate conflict key in one merge batch: 500 21000.
        let id = UUID().canonical
        let row =
            #"{"id":"\#(id)","user_id":"\#(me.user.canonical)","device_id":"\#(device)","name":"a","local_path":"/dup"}"#
        r = try await stack.request(
            "POST", "/rest/v1/repositories?on_conflict=id", token: token,
            headers: ["Prefer": "resolution=merge-duplicates"], body: "[\(row),\(row)]")
        #expect(r.status == 500 && r.body.contains("21000"))
        // Insert then merge-update: 201 then 200; on_conflict without resolution: 409 23505.
        r = try await stack.request(
            "POST", "/rest/v1/repositories?on_conflict=id", token: token,
            headers: ["Prefer": "resolution=merge-duplicates,return=minimal"], body: "[\(row)]")
        #expect(r.status == 201 && r.body.isEmpty)
        #expect(r.headers["preference-applied"]?.contains("resolution=merge-duplicates") == true)
        r = try await stack.request(
            "POST", "/rest/v1/repositories?on_conflict=id", token: token,
            headers: ["Prefer": "resolution=merge-duplicates"], body: "[\(row)]")
        #expect(r.status == 200)
        r = try await stack.request("POST", "/rest/v1/repositories?on_conflict=id", token: token, body: "[\(row)]")
        #expect(r.status == 409 && r.body.contains("23505"))

        // A session before its repository: 409 23503.
        let orphan =
            #"{"id":"\#(UUID().canonical)","user_id":"\#(me.user.canonical)","device_id":"\#(device)","repository_id":"\#(UUID().canonical)","session_started_at":"2026-01-01T00:00:00+00:00"}"#
        r = try await stack.request("POST", "/rest/v1/agent_coding_sessions", token: token, body: "[\(orphan)]")
        #expect(r.status == 409 && r.body.contains("23503"))

        // Paging: Range, Content-Range, 206 with an exact count, 416 past the end.
        r = try await stack.request(
            "GET", "/rest/v1/repositories?select=id&order=id.asc", token: token,
            headers: ["Range-Unit": "items", "Range": "0-0", "Prefer": "count=exact"])
        #expect(r.status == 200 && r.headers["content-range"] == "0-0/1")
        r = try await stack.request("GET", "/rest/v1/repositories?select=id&offset=5", token: token)
        #expect(r.status == 416 && r.body.contains("PGRST103"))
        r = try await stack.request("GET", "/rest/v1/devices?select=id&id=eq.\(UUID().canonical)", token: token)
        #expect(r.status == 200 && r.body == "[]" && r.headers["content-range"] == "*/*")

        // `+` in a query string is a space: a bare + in a timestamp fails, %2B works.
        r = try await stack.request(
            "GET", "/rest/v1/repositories?updated_at=gt.2020-01-01T00:00:00+00:00", token: token)
        #expect(r.status == 400)
        r = try await stack.request(
            "GET", "/rest/v1/repositories?updated_at=gt.2020-01-01T00:00:00%2B00:00", token: token)
        #expect(r.status == 200 && r.body.contains(id))

        // Quoted values in in.(), not., is.
        r = try await stack.request(
            "GET", "/rest/v1/repositories?select=name&local_path=in.(%22/dup%22,%22a,b%22)", token: token)
        #expect(r.status == 200 && r.body.contains(#""name":"a""#))
        r = try await stack.request("GET", "/rest/v1/repositories?select=id&remote_url=not.is.null", token: token)
        #expect(r.status == 200 && r.body == "[]")

        // Singular object: 406 PGRST116 unless exactly one row.
        r = try await stack.request(
            "GET", "/rest/v1/repositories?select=id&id=eq.\(UUID().canonical)", token: token,
            headers: ["Accept": "application/vnd.pgrst.object+json"])
        #expect(r.status == 406 && r.body.contains("PGRST116"))

        // JWT failures: 401 with WWW-Authenticate; expired is PGRST303.
        r = try await stack.request("GET", "/rest/v1/repositories", token: "not-a-jwt")
        #expect(
            r.status == 401 && r.body.contains("PGRST301") && r.headers["www-authenticate"]?.hasPrefix("Bearer") == true
        )
        r = try await stack.request("GET", "/rest/v1/repositories", token: stack.token(for: me.user, expiresIn: -10))
        #expect(r.status == 401 && r.body.contains("PGRST303") && r.body.contains("JWT expired"))
        // No JWT (anon): 401 42501.
        r = try await stack.request("GET", "/rest/v1/repositories")
        #expect(r.status == 401 && r.body.contains("42501"))

        // DELETE with count=exact reports how many went.
        r = try await stack.request(
            "DELETE", "/rest/v1/repositories?id=eq.\(id)", token: token, headers: ["Prefer": "count=exact"])
        #expect(r.status == 204 && r.headers["content-range"] == "*/1")
        // A single object (not an array) is one row; return=representation answers the rows written,
        // as an array, and return=minimal an empty body.
        func single(_ path: String) -> String {
            #"{"id":"\#(UUID().canonical)","user_id":"\#(me.user.canonical)","device_id":"\#(device)","name":"one","local_path":"\#(path)"}"#
        }
        r = try await stack.request(
            "POST", "/rest/v1/repositories", token: token, headers: ["Prefer": "return=representation"],
            body: single(#"/one \"quoted\""#))
        #expect(r.status == 201 && r.body.hasPrefix("[{") && r.body.contains(#""local_path":"/one \"quoted\"""#))
        r = try await stack.request(
            "POST", "/rest/v1/repositories", token: token, headers: ["Prefer": "return=minimal"], body: single("/two"))
        #expect(r.status == 201 && r.body.isEmpty)
    }

    @Test("GoTrue-style sign-up, password and refresh grants issue tokens the REST API accepts")
    func authFlow() async throws {
        let stack = try StackEnvironment.require()
        let email = "user-\(UUID().canonical)@example.test"
        var r = try await stack.request(
            "POST", "/auth/v1/signup", body: #"{"email":"\#(email)","password":"correct horse"}"#)
        #expect(r.status == 200)
        r = try await stack.request(
            "POST", "/auth/v1/token?grant_type=password", body: #"{"email":"\#(email)","password":"wrong"}"#)
        #expect(r.status == 400 && r.body.contains("invalid_grant"))
        r = try await stack.request(
            "POST", "/auth/v1/token?grant_type=password", body: #"{"email":"\#(email)","password":"correct horse"}"#)
        let session = try #require(try JSONSerialization.jsonObject(with: Data(r.body.utf8)) as? [String: Any])
        let access = try #require(session["access_token"] as? String)
        let refresh = try #require(session["refresh_token"] as? String)
        #expect((session["user"] as? [String: Any])?["id"] is String)
        r = try await stack.request("GET", "/rest/v1/devices?select=id", token: access)
        #expect(r.status == 200 && r.body == "[]")
        r = try await stack.request(
            "POST", "/auth/v1/token?grant_type=refresh_token", body: #"{"refresh_token":"\#(refresh)"}"#)
        #expect(r.status == 200 && r.body.contains("access_token"))
        r = try await stack.request(
            "POST", "/auth/v1/token?grant_type=refresh_token", body: #"{"refresh_token":"\#(refresh)"}"#)
        #expect(r.status == 400, "a refresh token is used once")
    }
}
