import Foundation

/// A signed-in Supabase Auth session. Never printed: `description` hides the tokens.
public struct AuthSession: Sendable, Codable, CustomStringConvertible {
    public var accessToken: String
    public var refreshToken: String
    public var expiresAt: Date
    public var userID: UUID
    public var email: String?

    /// Creates a session.
    public init(accessToken: String, refreshToken: String, expiresAt: Date, userID: UUID, email: String?) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
        self.userID = userID
        self.email = email
    }

    public var description: String { "AuthSession(user \(userID.canonical), expires \(expiresAt), tokens <redacted>)" }
}

/// Where a signed-in session is kept, shared by every process that opens one store (an app and
/// its notification extension): `LocalStore`'s `AuthSessionFile`.
///
/// `AccessTokens` refreshes through it, so that a refresh token, which is single use, is spent by
/// one process at a time.
public protocol AuthSessionStorage: Sendable {
    /// The saved session, or `nil` when there is none.
    func load() throws -> AuthSession?
    /// Saves `session` (readable by its owner only).
    func save(_ session: AuthSession) throws
    /// Runs `body` while no other process holding the same storage runs its own, waiting up to
    /// `timeout` for them.
    func exclusively<T>(timeout: Duration, _ body: () async throws -> T) async throws -> T
}
