import Foundation
import SyncModel

/// The signed-in session's access token, refreshed when it is about to expire or the remote
/// refused it, and saved back (0600) after every refresh so the next run starts signed in.
///
/// Refresh is single-flight: a refresh token is single use, so callers that arrive while a
/// refresh is running (two uploads in flight near expiry) await that refresh instead of
/// spending the same refresh token again. Over a store's `AuthSessionFile`, an
/// `AuthSessionStorage` (``init(file:session:auth:)``), it is single-flight across processes too
/// (an app and its notification extension): the refresh runs under an exclusive lock on
/// `auth.lock`, and first re-reads `auth.json`: a session another process saved, newer than
/// ours and not within 60 s of expiry, is used instead of refreshing.
public actor AccessTokens {
    private var session: AuthSession
    private let auth: SupabaseAuth
    private let save: @Sendable (AuthSession) async throws -> Void
    private let file: (any AuthSessionStorage)?
    private var refreshing: Task<(AuthSession, Bool), Error>?
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
        file = nil
    }

    /// Creates the provider over a store's saved session, shared by every process that opens
    /// the store: refreshes are saved there and single-flight across those processes.
    ///
    /// - Parameters:
    ///   - file: The store's `auth.json` (`DeviceStore.authSessionFile`).
    ///   - session: The session as this process read it.
    ///   - auth: Where to refresh it.
    public init(file: any AuthSessionStorage, session: AuthSession, auth: SupabaseAuth) {
        self.session = session
        self.auth = auth
        save = { try file.save($0) }
        self.file = file
    }

    /// The token to send; refreshed first when forced or within a minute of expiry.
    ///
    /// A forced refresh (after a 401) within a few seconds of the last refresh returns the
    /// fresh token instead: the caller was refused a token that has already been replaced.
    ///
    /// - Throws: `RemoteStoreError` when the refresh is refused or the auth server is unreachable.
    public func token(forceRefresh: Bool) async throws -> String {
        if let refreshing {
            return try await refreshing.value.0.accessToken
        }
        let recentlyRefreshed = lastRefresh.map { ContinuousClock.now - $0 < .seconds(5) } ?? false
        let stale = forceRefresh && !recentlyRefreshed
        guard stale || session.expiresAt.timeIntervalSinceNow < 60 else { return session.accessToken }
        let current = session
        let auth = self.auth
        let save = self.save
        let file = self.file
        let task = Task { () async throws -> (AuthSession, Bool) in
            guard let file else {
                let fresh = try await auth.refresh(current.refreshToken)
                try await save(fresh)
                return (fresh, true)
            }
            return try await file.exclusively(timeout: .seconds(30)) {
                // Only a session of the same user: a login of another user is never adopted.
                let saved = (try? file.load()).flatMap { $0.userID == current.userID ? $0 : nil }
                if let saved, saved.expiresAt > current.expiresAt, saved.expiresAt.timeIntervalSinceNow > 60 {
                    return (saved, false) // another process refreshed meanwhile
                }
                // Our refresh token may be spent by another process's refresh: use the newest.
                let newest = saved.map { $0.expiresAt > current.expiresAt ? $0 : current } ?? current
                let fresh = try await auth.refresh(newest.refreshToken)
                try file.save(fresh)
                return (fresh, true)
            }
        }
        refreshing = task
        defer { refreshing = nil }
        let (fresh, refreshedHere) = try await task.value
        session = fresh
        if refreshedHere { refreshCount += 1 }
        lastRefresh = ContinuousClock.now
        return fresh.accessToken
    }

    /// The provider closure for `SyncRemote/PostgRESTConfiguration`.
    public nonisolated var provider: AccessTokenProvider {
        { force in try await self.token(forceRefresh: force) }
    }
}
