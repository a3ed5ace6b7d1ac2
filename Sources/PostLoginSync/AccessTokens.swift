import Foundation
import RemoteStore
import SyncModel

/// The signed-in session's access token, refreshed when it is about to expire or the remote
/// refused it, and saved back (0600) after every refresh so the next run starts signed in.
///
/// Refresh is single-flight: a refresh token is single use, so callers that arrive while a
/// refresh is running (two uploads in flight near expiry) await that refresh instead of
/// spending the same refresh token again.
public actor AccessTokens {
    private var session: AuthSession
    private let auth: SupabaseAuth
    private let save: @Sendable (AuthSession) async throws -> Void
    private var refreshing: Task<AuthSession, Error>?
    /// Refreshes done so far (for tests and diagnostics).
    public private(set) var refreshCount = 0
    private var lastRefresh: ContinuousClock.Instant?

    /// Creates the provider.
    ///
    /// - Parameters:
    ///   - session: The current session.
    ///   - auth: Where to refresh it.
    ///   - save: Persists a refreshed session.
    public init(session: AuthSession, auth: SupabaseAuth, save: @escaping @Sendable (AuthSession) async throws -> Void)
    {
        self.session = session
        self.auth = auth
        self.save = save
    }

    /// The token to send; refreshed first when forced or within a minute of expiry.
    ///
    /// A forced refresh (after a 401) within a few seconds of the last refresh returns the
    /// fresh token instead: the caller was refused a token that has already been replaced.
    ///
    /// - Throws: `RemoteStoreError` when the refresh is refused or the auth server is unreachable.
    public func token(forceRefresh: Bool) async throws -> String {
        if let refreshing {
            return try await refreshing.value.accessToken
        }
        let recentlyRefreshed = lastRefresh.map { ContinuousClock.now - $0 < .seconds(5) } ?? false
        let stale = forceRefresh && !recentlyRefreshed
        guard stale || session.expiresAt.timeIntervalSinceNow < 60 else { return session.accessToken }
        let current = session
        let auth = self.auth
        let save = self.save
        let task = Task {
            let fresh = try await auth.refresh(current.refreshToken)
            try await save(fresh)
            return fresh
        }
        refreshing = task
        defer { refreshing = nil }
        let fresh = try await task.value
        session = fresh
        refreshCount += 1
        lastRefresh = ContinuousClock.now
        return fresh.accessToken
    }

    /// The provider closure for `SyncRemote/PostgRESTConfiguration`.
    public nonisolated var provider: AccessTokenProvider {
        { force in try await self.token(forceRefresh: force) }
    }
}
