import Foundation
import LocalStore
import RemoteStore

/// Why a phone (or any viewer) holds no envelope for a session, so that it can say what to do:
/// each case has its own fix.
public enum MissingEnvelopeReason: Sendable, Hashable {
    /// The user has an identity and this device has no valid certificate: desktops in verified
    /// trust seal to certified devices only. Fix: pair this device (`trust join`, which asks for a code
    /// from `trust invite` on the trust root).
    case notPaired(DeviceTrustStatus)
    /// A pull received an envelope for the session and refused it (trust, generation or sender
    /// checks), and it has not changed since; the code and message say which rule.
    case refused(SyncIssue.Code, String)
    /// Nothing refused and this device qualifies: the desktop that owns the session has not sealed
    /// the secret to this device yet (or this device has not pulled since it did). Fix: sync the
    /// owning desktop, then pull here.
    case notPushedYet(lastPull: Date?)
}

extension DeviceTrustManager {
    /// Why this device holds no envelope for `sessionID` (call it after
    /// `DeviceStore.receivedEnvelope(sessionID:generation:)` threw `.notFound`).
    ///
    /// Looks at the last pull's report first (a refusal is recorded there with the session's
    /// id), then at this device's standing on the remote: one listing of devices and the trust
    /// records.
    ///
    /// - Throws: remote errors (the remote could not be asked), ``SyncError`` `.notLoggedIn`,
    ///   `.userMismatch`, `.identityChanged`.
    public func missingEnvelopeReason(sessionID: UUID) async throws -> MissingEnvelopeReason {
        if let refusal = try await local.envelopeRefusals(sessions: [sessionID])[sessionID] {
            return .refused(SyncIssue.Code(rawValue: refusal.code), refusal.message)
        }
        let last = try await local.lastReport()
        let report = last.flatMap { SyncReport.decode($0.json) }
        if let report, report.direction == .pull,
            let issue = report.errors.last(where: { $0.phase == .envelopes && $0.rowID == sessionID.canonical })
        {
            return .refused(issue.code, issue.message)
        }
        let status = try await status()
        // A device that pinned nothing has no standing yet: unverified.
        let standing = status.thisDevice ?? .unverified
        if status.userHasIdentity, standing != .verified {
            return .notPaired(standing)
        }
        return .notPushedYet(lastPull: report?.direction == .pull ? report?.finishedAt : nil)
    }
}

extension MissingEnvelopeReason {
    /// One line for a person: what happened and what to do next (never secret material).
    public func explanation(sessionID: UUID) -> String {
        let session = sessionID.canonical
        switch self {
        case .notPaired(.revoked):
            return "This device has no secret for session \(session): it was revoked, and a revoked device is never "
                + "certified again. Pair a new store instead (`sync-cli init` in another directory, then `sync-cli "
                + "trust join` there, which asks for a code from `sync-cli trust invite` on a trust root)."
        case .notPaired(let standing):
            return "This device has no secret for session \(session) because it is not paired (\(standing.rawValue)): "
                + "desktops seal secrets only to certified devices. Run `sync-cli trust invite` on the trust root, "
                + "then `sync-cli trust join` here (it asks for the code), and `sync-cli sync` once the desktop has pushed."
        case .refused(let code, let message):
            return "This device has no secret for session \(session): a pull refused its envelope (\(code)): "
                + "\(message). Check the sending device with `sync-cli trust status`; "
                + "`sync-cli sync --json` shows every refusal."
        case .notPushedYet(let lastPull):
            let when = lastPull.map { " (last pull \(ISO8601DateFormatter().string(from: $0)))" } ?? ""
            return "This device has no secret for session \(session) yet: it qualifies, but the desktop that owns "
                + "the session has not sealed the secret to it since this device last pulled\(when). Run `sync-cli sync` "
                + "on that desktop (or wait for its watch), then `sync-cli sync` here."
        }
    }
}
