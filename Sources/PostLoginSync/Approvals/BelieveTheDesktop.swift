import Foundation
import LocalStore
import SyncModel

// The phone believes only the session's desktop (docs/trust.md, "Device credentials"): the
// session secret opens a request or a question, but any device that ever held that generation
// could have sealed one, and the server says who asked. So before anything of it is shown, the
// phone checks what it knows itself: the body is sealed under the newest generation of the
// session's secret it holds (a device revoked before the rotation holds only older ones), and
// the asker is the device that sealed that generation to it (the envelope's authenticated
// sender; the session row's device for an unauthenticated one), certified and not revoked at
// this device's pin.
extension ApprovalCenter {
    /// Refuses (``SyncError`` `.untrustedAsker`) a request or question of `session` that
    /// `requester` sealed under `generation`, unless the device of `local` believes it. Without
    /// `trust` (a notification extension, which reads no remote) the asker's certification is
    /// not checked; the rest is.
    static func checkAsker(
        local: DeviceStore, session: UUID, requester: UUID, generation: UInt32, trust: TrustSnapshot?
    ) async throws {
        let held = try await local.receivedEnvelope(sessionID: session)
        guard generation == held.generation else {
            throw SyncError(
                code: .untrustedAsker,
                message: "this was sealed under generation \(generation) of session \(session.canonical)'s secret, "
                    + "and the newest this device holds is \(held.generation): it is not shown (a device that had an "
                    + "older secret may have written it); pull, then open it again")
        }
        let desktop =
            held.authenticated ? held.senderDeviceID : try await local.session(id: session)?.deviceID
        guard let desktop, requester == desktop else {
            throw SyncError(
                code: .untrustedAsker,
                message: "this names device \(requester.canonical) as its asker, which is not the desktop that sealed "
                    + "session \(session.canonical)'s secret to this device: it is not shown")
        }
        if let trust, !trust.isTrusted(requester) {
            throw SyncError(
                code: .untrustedAsker,
                message: "device \(requester.canonical) asked this, and this device's trust log does not certify it "
                    + "(or revoked it): it is not shown")
        }
    }
}
