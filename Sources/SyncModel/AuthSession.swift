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
