import Foundation
import LocalStore
import RemoteStore

/// The signed-in session's access token, refreshed when it is about to expire or the remote
/// refused it, and saved back (0600) after every refresh so the next run starts signed in.
public actor AccessTokens {
    private var session: AuthSession
    private let auth: SupabaseAuth
    private let save: @Sendable (AuthSession) async throws -> Void

    /// Creates the provider.
    ///
    /// - Parameters:
    ///   - session: The current session.
    ///   - auth: Where to refresh it.
    ///   - save: Persists a refreshed session.
    public init(session: AuthSession, auth: SupabaseAuth, save: @escaping @Sendable (AuthSession) async throws -> Void) {
        self.session = session
        self.auth = auth
        self.save = save
    }

    /// The token to send; refreshed first when forced or within a minute of expiry.
    public func token(forceRefresh: Bool) async throws -> String {
        if forceRefresh || session.expiresAt.timeIntervalSinceNow < 60 {
            session = try await auth.refresh(session.refreshToken)
            try await save(session)
        }
        return session.accessToken
    }

    /// The provider closure for ``RemoteStore/PostgRESTConfiguration``.
    public nonisolated var provider: AccessTokenProvider {
        { force in try await self.token(forceRefresh: force) }
    }
}

extension LocalStore {
    /// `auth.json` in the store directory.
    public var authPath: String { directory.appendingPathComponent("auth.json").path }

    /// Saves the signed-in session, mode 0600.
    public func saveAuthSession(_ session: AuthSession) throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        try SecretFile.write(try encoder.encode(session), to: authPath)
    }

    /// The saved session, if any.
    public func loadAuthSession() throws -> AuthSession? {
        guard let data = try SecretFile.read(authPath) else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try? decoder.decode(AuthSession.self, from: data)
    }
}
