import Foundation
import LocalStore
import Logging
import SyncModel

// Rotate before sealing (docs/trust.md, "Revocation"): a request or a question sealed under a
// generation a revoked device received is one that device can read. Before sealing one, the
// desktop pushes when its ledger says a device the verified log revokes received this session's
// secret: the push rotates the secret (a generation the revoked device never receives) and seals
// the new one to every recipient, so the request goes under that.
extension ApprovalCenter {
    /// Pushes first when `trust` revokes a device that received `session`'s secret. Without a
    /// pinned log (`trust` is `nil`), there is no revocation to honour.
    func rotateIfRevoked(session: UUID, trust: TrustSnapshot?) async throws {
        guard let trust, !trust.revocations.isEmpty else { return }
        let hit = try await local.ledger(recipients: Set(trust.revocations.keys), sessions: [session])
        guard !hit.isEmpty else { return }
        logger?.notice(
            "session \(session.canonical): a revoked device received its secret; rotating it before sealing")
        _ = try await SyncEngine(local: local, remote: remote, logger: logger).push()
    }
}
