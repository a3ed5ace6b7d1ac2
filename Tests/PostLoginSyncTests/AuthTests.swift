import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SyncModel
import SyncTestSupport
import Synchronization
import Testing

/// Supabase Auth as the engine speaks it, against the stack's GoTrue-compatible endpoints.
@Suite("Auth against the stack", .enabled(if: !StackEnvironment.skipped))
struct AuthTests {
    static func newUser(_ stack: StackEnvironment) async throws -> (email: String, password: String) {
        let email = "auth-\(UUID().canonical)@example.test"
        let password = "correct horse battery"
        let r = try await stack.request(
            "POST", "/auth/v1/signup", body: #"{"email":"\#(email)","password":"\#(password)"}"#)
        try #require(r.status == 200)
        return (email, password)
    }

    @Test("password grant, a wrong password, a refresh, and a refresh token used twice")
    func grants() async throws {
        let stack = try StackEnvironment.require()
        let (email, password) = try await Self.newUser(stack)
        let auth = SupabaseAuth(projectURL: stack.url, apiKey: stack.anonKey)
        await #expect { _ = try await auth.signIn(email: email, password: "wrong password") } throws: {
            ($0 as? RemoteStoreError)?.code == .unauthorized && !"\($0)".contains("wrong password")
        }
        let session = try await auth.signIn(email: email, password: password)
        #expect(!session.accessToken.isEmpty && session.expiresAt > Date())
        #expect(!"\(session)".contains(session.accessToken) && !"\(session)".contains(session.refreshToken))
        let refreshed = try await auth.refresh(session.refreshToken)
        #expect(refreshed.userID == session.userID && refreshed.refreshToken != session.refreshToken)
        await #expect { _ = try await auth.refresh(session.refreshToken) } throws: {
            ($0 as? RemoteStoreError)?.code == .unauthorized
        }
    }

    @Test("logout with scope others ends every other session's refresh token, and keeps the caller's across refreshes")
    func logoutOthers() async throws {
        let stack = try StackEnvironment.require()
        let (email, password) = try await Self.newUser(stack)
        let auth = SupabaseAuth(projectURL: stack.url, apiKey: stack.anonKey)
        let mine = try await auth.refresh(try await auth.signIn(email: email, password: password).refreshToken)
        let other = try await auth.signIn(email: email, password: password)
        try await auth.logout(accessToken: mine.accessToken, scope: .others)
        await #expect { _ = try await auth.refresh(other.refreshToken) } throws: {
            ($0 as? RemoteStoreError)?.code == .unauthorized
        }
        // The caller's session (refreshed once before) goes on; a bad token is refused.
        #expect(try await auth.refresh(mine.refreshToken).userID == mine.userID)
        await #expect { try await auth.logout(accessToken: "not-a-token", scope: .others) } throws: {
            ($0 as? RemoteStoreError)?.code == .unauthorized
        }
    }

    @Test("two concurrent token requests near expiry cause exactly one refresh, and both get its token")
    func singleFlightRefresh() async throws {
        let stack = try StackEnvironment.require()
        let (email, password) = try await Self.newUser(stack)
        let auth = SupabaseAuth(projectURL: stack.url, apiKey: stack.anonKey)
        var session = try await auth.signIn(email: email, password: password)
        session.expiresAt = Date().addingTimeInterval(10)
        let saved = SavedSessions()
        let tokens = AccessTokens(session: session, auth: auth) { saved.append($0) }
        // The refresh ends after this instant: time measured from it bounds the time since the
        // refresh from above, however late a loaded machine resumes this task.
        let refreshed = ContinuousClock.now
        async let first = tokens.token(forceRefresh: false)
        async let second = tokens.token(forceRefresh: false)
        let (a, b) = try await (first, second)
        #expect(a == b && a != session.accessToken)
        #expect(await tokens.refreshCount == 1)
        #expect(saved.count == 1)
        // A 401 for the old token within 5 s of the refresh: the fresh token is handed out, no
        // second refresh. Past the window a forced refresh refreshes again, as documented; a
        // machine busy enough to take that long (it happened once under load) checks that branch.
        let forced = try await tokens.token(forceRefresh: true)
        if ContinuousClock.now - refreshed < .seconds(3) {
            #expect(forced == a)
            #expect(await tokens.refreshCount == 1)
        } else {
            // Near the window's edge either outcome is right, but only one of them.
            let count = await tokens.refreshCount
            #expect((count == 1 && forced == a) || (count == 2 && forced != a))
        }
    }

    @Test(
        "two processes sharing a store's auth.json (an app and its extension) near expiry: one refresh, the refresh token spent once, both get its token"
    )
    func singleFlightAcrossProcesses() async throws {
        let stack = try StackEnvironment.require()
        let (email, password) = try await Self.newUser(stack)
        let auth = SupabaseAuth(projectURL: stack.url, apiKey: stack.anonKey)
        var session = try await auth.signIn(email: email, password: password)
        session.expiresAt = Date().addingTimeInterval(10)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("auth-\(UUID().canonical)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = AuthSessionFile(directory: directory)
        try file.save(session)
        // Each provider read the file on its own, as each process does; each has its own lock
        // descriptor, so they contend as two processes would.
        let app = AccessTokens(file: file, session: try #require(try file.load()), auth: auth)
        let appExtension = AccessTokens(file: AuthSessionFile(directory: directory), session: session, auth: auth)
        async let first = app.token(forceRefresh: false)
        async let second = appExtension.token(forceRefresh: false)
        let (a, b) = try await (first, second)
        #expect(a == b && a != session.accessToken)
        let refreshes = await app.refreshCount + appExtension.refreshCount
        #expect(refreshes == 1, "the single-use refresh token was spent once")
        #expect(try file.load()?.accessToken == a)
        // A forced refresh (a 401) later in the other process adopts nothing stale: it refreshes
        // with the newest saved token, which works.
        try await Task.sleep(for: .seconds(6))
        #expect(try await appExtension.token(forceRefresh: true) != a)
    }

    @Test("the auth endpoints answer in GoTrue's shape, and GET /auth/v1/user returns the token's user")
    func goTrueShape() async throws {
        let stack = try StackEnvironment.require()
        let (email, password) = try await Self.newUser(stack)
        let r = try await stack.request(
            "POST", "/auth/v1/token?grant_type=password", body: #"{"email":"\#(email)","password":"\#(password)"}"#)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(r.body.utf8)) as? [String: Any])
        for key in ["access_token", "token_type", "expires_in", "expires_at", "refresh_token", "user"] {
            #expect(object[key] != nil, "\(key)")
        }
        let user = try #require(object["user"] as? [String: Any])
        for key in [
            "id", "aud", "role", "email", "email_confirmed_at", "phone", "confirmed_at", "last_sign_in_at",
            "app_metadata",
            "user_metadata", "identities", "created_at", "updated_at", "is_anonymous",
        ] {
            #expect(user[key] != nil, "user.\(key)")
        }
        let access = try #require(object["access_token"] as? String)
        let me = try await stack.request("GET", "/auth/v1/user", token: access)
        #expect(me.status == 200 && me.body.contains(email))
        let anonymous = try await stack.request("GET", "/rest/v1/devices", token: nil)
        #expect(anonymous.status == 401 && anonymous.headers["www-authenticate"]?.hasPrefix("Bearer") == true)
    }

    @Test("a session row without the columns the deployed schema defaults gets those defaults")
    func deployedDefaults() async throws {
        let user = UUID(), device = UUID(), repository = UUID()
        let unscoped = try StackEnvironment.require()
        let stack = unscoped.acting(for: try await unscoped.registeredCredential(for: device, user: user))
        let token = stack.token(for: user)
        var r = try await stack.request(
            "POST", "/rest/v1/devices", token: token,
            body:
                #"[{"id":"\#(device.canonical)","user_id":"\#(user.canonical)","name":"d","device_type":"linux-desktop"}]"#
        )
        #expect(r.status == 201)
        r = try await stack.request(
            "POST", "/rest/v1/repositories", token: token,
            body:
                #"[{"id":"\#(repository.canonical)","user_id":"\#(user.canonical)","device_id":"\#(device.canonical)","name":"r","local_path":"/r"}]"#
        )
        #expect(r.status == 201)
        r = try await stack.request(
            "POST", "/rest/v1/agent_coding_sessions", token: token, headers: ["Prefer": "return=representation"],
            body:
                #"[{"user_id":"\#(user.canonical)","device_id":"\#(device.canonical)","repository_id":"\#(repository.canonical)"}]"#
        )
        #expect(r.status == 201)
        let row = try #require((try JSONSerialization.jsonObject(with: Data(r.body.utf8)) as? [[String: Any]])?.first)
        #expect(
            row["id"] is String && row["session_started_at"] is String && row["last_heartbeat_at"] is String
                && row["status"] as? String == "active")
    }
}

/// Sessions handed to the save callback.
final class SavedSessions: Sendable {
    private let sessions = Mutex<[AuthSession]>([])
    func append(_ session: AuthSession) { sessions.withLock { $0.append(session) } }
    var count: Int { sessions.withLock { $0.count } }
}
