import Foundation
import LocalStore
import SyncModel

/// This device as signed in: its identity and its user, checked against the user the remote is
/// signed in as (and the role, when one is asked for). The one check a sync, the trust manager,
/// approvals and alerts make before they act for the user.
struct SignedInDevice: Sendable {
    let identity: DeviceIdentity
    let userID: UUID

    /// Reads this device's identity from `local` and checks it.
    ///
    /// - Throws: `SyncError` with `.wrongRole` (the store is of another role than `role`),
    ///   `.notLoggedIn` (no user: `sync-cli login` first), `.userMismatch` (another user than
    ///   `remoteUser`); the store's errors (`.noIdentity` before `init`).
    static func check(_ local: DeviceStore, remoteUser: UUID, role: SyncRole? = nil) async throws -> SignedInDevice {
        let identity = try await local.requireIdentity()
        if let role, identity.role != role {
            throw SyncError(
                code: .wrongRole,
                message:
                    "this store is a \(identity.role == .desktop ? "desktop's" : "phone's"); it \(identity.role == .desktop ? "pushes" : "pulls")"
            )
        }
        guard let user = identity.userID else {
            throw SyncError(code: .notLoggedIn, message: "this store is not logged in; run `sync-cli login` first")
        }
        guard user == remoteUser else {
            throw SyncError(
                code: .userMismatch,
                message:
                    "this store belongs to user \(user.canonical), but the remote is signed in as \(remoteUser.canonical)"
            )
        }
        return SignedInDevice(identity: identity, userID: user)
    }
}
