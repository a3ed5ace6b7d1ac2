import Foundation
import LocalStore
import RemoteStore
import SyncModel

/// This device's side of multi-device coordination (coordination.md): claiming sessions, its push
/// tokens, clearing approvals on the user's other devices, reporting a session's live status,
/// and reading what is queued for delivery.
///
/// Every operation names this store's device; the remote checks that the device, and any
/// session named, belong to the signed-in user. The device row must be on the remote first (any
/// `sync` puts it there): until then the remote refuses with `permissionDenied`.
public struct Coordinator: Sendable {
    public let store: DeviceStore
    public let remote: any NotificationRemote

    /// Creates a coordinator for this store's device on `remote`.
    public init(store: DeviceStore, remote: any NotificationRemote) {
        self.store = store
        self.remote = remote
    }

    /// This device's identity, signed in as the remote's user.
    func identity() async throws -> DeviceIdentity {
        let identity = try await store.requireIdentity()
        guard let user = identity.userID else {
            throw SyncError(code: .notLoggedIn, message: "this store is not logged in; run `sync-cli login` first")
        }
        guard user == remote.userID else {
            throw SyncError(
                code: .userMismatch,
                message:
                    "this store belongs to user \(user.canonical), but the remote is signed in as \(remote.userID.canonical)"
            )
        }
        return identity
    }

    /// Claims a session for this device (as `clientType`, by default what its device type is).
    /// When another device held it, its valid device tokens get the silent handoff payload.
    public func claim(sessionID: UUID, clientType: ClientType? = nil) async throws -> SessionClaim {
        let identity = try await identity()
        return try await remote.claimSessionActivity(
            sessionID: sessionID, deviceID: identity.id,
            clientType: clientType ?? ClientType(identity.deviceType))
    }

    /// Registers a push token for this device; with `previousToken`, that token stops being valid.
    @discardableResult
    public func registerPushToken(
        _ token: String, type: PushTokenType = .device, environment: PushEnvironment = .production,
        platform: String = "ios", activityID: String? = nil, sessionID: UUID? = nil,
        previousToken: String? = nil
    ) async throws -> PushTokenRegistered {
        let identity = try await identity()
        return try await remote.registerPushToken(
            PushTokenRegistration(
                deviceID: identity.id, token: token, type: type, platform: platform, environment: environment,
                activityID: activityID, sessionID: sessionID, previousToken: previousToken))
    }

    /// Marks one of the user's tokens invalid; false when the user has no such token.
    public func invalidatePushToken(_ token: String) async throws -> Bool {
        _ = try await identity()
        return try await remote.invalidatePushToken(token)
    }

    /// The design's push status for this device.
    public func pushTokenStatus() async throws -> PushTokenStatus {
        try await remote.pushTokenStatus(deviceID: try await identity().id)
    }

    /// Queues "approval answered elsewhere" for the user's other devices' tokens (all valid
    /// device tokens but `excludingToken`, usually the answering device's own).
    public func clearApproval(requestID: String, excludingToken: String? = nil) async throws -> ApprovalClearing {
        _ = try await identity()
        return try await remote.clearApproval(requestID: requestID, excludingToken: excludingToken)
    }

    /// Reports the live status of one of this desktop's sessions to the remote (phones receive it
    /// at their next pull, and its live activities an update) and records it locally.
    /// `errorMessage`, `currentOperation` and the todo's task pass through
    /// `LockScreenText/sanitised(_:)` first: they may reach a lock screen, and the server stores
    /// them in clear (status text is metadata, not a session secret).
    @discardableResult
    public func reportRuntimeStatus(
        sessionID: UUID, state: RuntimeStatus.State, errorMessage: String? = nil, currentOperation: String? = nil,
        todoProgress: RuntimeStatus.TodoProgress? = nil, at date: Date = Date()
    ) async throws -> RuntimeStatus {
        let identity = try await identity()
        guard identity.role == .desktop else {
            throw SyncError(code: .wrongRole, message: "only the desktop that runs a session reports its status")
        }
        guard let session = try await store.session(id: sessionID), session.deviceID == identity.id else {
            throw SyncError(
                code: .unknownSession, message: "session \(sessionID.canonical) is not one of this desktop's sessions")
        }
        let todo = todoProgress.map {
            RuntimeStatus.TodoProgress(
                completed: $0.completed, total: $0.total, currentTask: $0.currentTask.map(LockScreenText.sanitised))
        }
        let status = RuntimeStatus(
            state: state, deviceID: identity.id.canonical, sessionID: session.id,
            updatedAtMilliseconds: Int64((date.timeIntervalSince1970 * 1000).rounded()),
            errorMessage: errorMessage.map(LockScreenText.sanitised),
            currentOperation: currentOperation.map(LockScreenText.sanitised), todoProgress: todo)
        let stored = try await remote.setRuntimeStatus(status)
        try await store.recordRuntimeStatus(stored)
        return stored
    }

    /// This device's notification settings (the defaults until it sets any).
    public func notificationSettings() async throws -> NotificationSettings {
        let identity = try await identity()
        return try await remote.notificationSettings(deviceID: identity.id)
    }

    /// Changes this device's notification settings named in `change`; turning live activities
    /// off ends its open activities.
    @discardableResult
    public func setNotificationSettings(
        _ change: NotificationSettings.Change
    ) async throws
        -> NotificationSettingsUpdated
    {
        let identity = try await identity()
        return try await remote.setNotificationSettings(deviceID: identity.id, change)
    }

    /// Keeps this device's claim on a session fresh while the session is on screen: call it every
    /// 30 seconds while the app shows the session in the foreground (besides a claim on every
    /// interaction), so that the user's other devices stay quiet about it (notifications.md,
    /// "Round 2"). Never takes the session over and queues nothing.
    ///
    /// - Returns: Whether this device holds the session (`false`: claim it first).
    @discardableResult
    public func touch(sessionID: UUID) async throws -> Bool {
        let identity = try await identity()
        return try await remote.touchSessionActivity(sessionID: sessionID, deviceID: identity.id)
    }

    /// What is queued for delivery to the user's devices, newest first.
    public func outbox(limit: Int = 50) async throws -> [OutboxEntry] {
        _ = try await identity()
        return try await remote.listOutbox(limit: limit)
    }
}
