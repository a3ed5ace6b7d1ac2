import Foundation
import HTTPTypes
import SyncModel

/// Supabase Auth (GoTrue): the password and refresh_token grants, and logout.
public struct SupabaseAuth: Sendable {
    let projectURL: URL
    let apiKey: String
    let transport: any HTTPTransport

    /// Creates a client for `<projectURL>/auth/v1`.
    public init(projectURL: URL, apiKey: String, transport: any HTTPTransport = defaultTransport()) {
        self.projectURL = projectURL
        self.apiKey = apiKey
        self.transport = transport
    }

    /// Signs in with email and password.
    ///
    /// - Throws: `RemoteStoreError` `.unauthorized` for wrong credentials, `.network`, `.malformedResponse`.
    public func signIn(email: String, password: String) async throws -> AuthSession {
        try await grant("password", body: ["email": email, "password": password])
    }

    /// Exchanges a refresh token for a new session (refresh tokens are single-use).
    public func refresh(_ refreshToken: String) async throws -> AuthSession {
        try await grant("refresh_token", body: ["refresh_token": refreshToken])
    }

    /// Which sessions ``logout(accessToken:scope:)`` ends (GoTrue's `scope` parameter).
    public enum LogoutScope: String, Sendable {
        /// Every session of the user, this one included.
        case global
        /// This session only.
        case local
        /// Every session of the user but this one: the other devices must sign in again once
        /// their access token expires (GoTrue ends refresh tokens; an access token already
        /// issued stays valid until its `exp`).
        case others
    }

    /// Ends sessions on the auth server (`POST /auth/v1/logout?scope=...`).
    ///
    /// - Throws: `RemoteStoreError` `.unauthorized` when the token is refused, `.network`, `.http`.
    public func logout(accessToken: String, scope: LogoutScope) async throws {
        var base = projectURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        guard let url = URL(string: "\(base)/auth/v1/logout?scope=\(scope.rawValue)") else {
            throw RemoteStoreError(.configuration, "invalid project URL")
        }
        let request = TransportRequest(
            method: .post, url: url,
            headerFields: [.apikey: apiKey, .authorization: "Bearer \(accessToken)", .accept: "application/json"],
            body: Data())
        let response: TransportResponse
        do {
            response = try await transport.send(request)
        } catch {
            throw RemoteStoreError(.network, "cannot reach \(projectURL.host ?? "the auth server")")
        }
        guard response.status.kind == .successful else {
            let object = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any] ?? [:]
            throw RemoteStoreError(
                response.status == .unauthorized || response.status == .forbidden ? .unauthorized : .http,
                "the auth server refused the logout", status: response.status.code,
                serverMessage: (object["msg"] as? String)?.escapingControlCharacters)
        }
    }

    func grant(_ type: String, body: [String: String]) async throws -> AuthSession {
        var base = projectURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        guard let url = URL(string: "\(base)/auth/v1/token?grant_type=\(type)") else {
            throw RemoteStoreError(.configuration, "invalid project URL")
        }
        let request = TransportRequest(
            method: .post, url: url,
            headerFields: [
                .apikey: apiKey, .contentType: "application/json", .accept: "application/json",
            ], body: try JSONSerialization.data(withJSONObject: body))
        let response: TransportResponse
        do {
            response = try await transport.send(request)
        } catch {
            throw RemoteStoreError(.network, "cannot reach \(projectURL.host ?? "the auth server")")
        }
        let object = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any] ?? [:]
        guard response.status.kind == .successful else {
            let said = (object["error_description"] as? String) ?? (object["msg"] as? String)
            throw RemoteStoreError(
                response.status == .badRequest || response.status == .unauthorized ? .unauthorized : .http,
                type == "password" ? "the auth server refused the sign-in" : "the auth server refused the refresh",
                status: response.status.code,
                postgrestCode: (object["error_code"] as? String).flatMap(PostgRESTErrorCode.init(received:)),
                serverMessage: said?.escapingControlCharacters)
        }
        guard let access = object["access_token"] as? String, let refresh = object["refresh_token"] as? String,
            let user = (object["user"] as? [String: Any])?["id"] as? String, let userID = UUID.parse(user)
        else {
            throw RemoteStoreError(.malformedResponse, "the auth server's answer lacks tokens or a user id")
        }
        let expiresIn = (object["expires_in"] as? Int) ?? 3600
        return AuthSession(
            accessToken: access, refreshToken: refresh, expiresAt: Date().addingTimeInterval(TimeInterval(expiresIn)),
            userID: userID, email: (object["user"] as? [String: Any])?["email"] as? String)
    }
}
