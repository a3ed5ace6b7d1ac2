import Foundation
import LocalStore
import Logging
import RemoteStore
import SyncModel

/// What the desktop running a session raises for the person on their other devices
/// (notifications-2.md): a task's end, failure or pause.
///
/// A session's own transitions raise these on the remote by themselves (its runtime status from
/// running or waiting to idle, to error; its status from active to paused); ``notify(session:kind:)``
/// raises one on request, coalesced the same way: at most one task alert per session and device
/// token a minute, never the same one twice within it, and the latest state always arrives.
public struct SessionAlerts: Sendable {
    public let local: DeviceStore
    public let remote: any SyncRemote
    let logger: Logger?

    /// Creates the alerts of this device's store over the signed-in remote.
    public init(local: DeviceStore, remote: any SyncRemote, logger: Logger? = nil) {
        self.local = local
        self.remote = remote
        self.logger = logger
    }

    /// Raises `kind` (`.taskComplete`, `.taskFailed` or `.taskPaused`) about a session this
    /// device runs, for the user's other devices.
    ///
    /// - Returns: Device tokens queued, coalesced (the same kind within the minute), suppressed
    ///   (another device is active on the session) and off (the device's setting).
    /// - Throws: `SyncError` `.notLoggedIn`, `.userMismatch`; `RemoteStoreError`
    ///   `.invalidValue` for a kind that is not a task kind (nothing is sent), `.permissionDenied`
    ///   for a session this device does not run, `.missingFunction` on a remote without
    ///   notifications round 2.
    public func notify(session: UUID, kind: AlertKind) async throws -> SessionEventQueued {
        guard kind.isTaskKind else {
            throw RemoteStoreError(.invalidValue, "kind must be task_complete, task_failed or task_paused")
        }
        let identity = try await signedIn()
        let queued = try await notifications().notifySessionEvent(
            sessionID: session, deviceID: identity.id, kind: kind)
        logger?.info("\(kind.rawValue) raised for session \(session.canonical): \(queued.queued) queued")
        return queued
    }

    func signedIn() async throws -> DeviceIdentity {
        let identity = try await local.requireIdentity()
        guard let user = identity.userID else {
            throw SyncError(code: .notLoggedIn, message: "this store is not logged in; run `sync-cli login` first")
        }
        guard user == remote.userID else {
            throw SyncError(code: .userMismatch, message: "this store is not logged in as the remote's user")
        }
        return identity
    }

    func notifications() throws -> any NotificationRemote {
        guard let remote = remote as? any NotificationRemote else {
            throw RemoteStoreError(
                .missingFunction, "this remote has no session alerts (it needs notifications round 2)")
        }
        return remote
    }
}
