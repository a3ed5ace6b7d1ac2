import Foundation
import LocalStore
import SecretCrypto
import SyncModel

/// The rules that decide whether an envelope that opened is stored (docs/trust.md), as a value:
/// no store, no remote, no clock. A pull makes one from its trust and options, then asks it
/// about each envelope with what the store knows of the session.
///
/// - Revoked sender: an envelope a revoked (and not re-certified) device sealed is settled,
///   once, and counted; not a failure.
/// - The high-water rule: never below the highest generation stored for the session (the
///   mark survives the session's deletion), nor more than `window` above it.
/// - The owner rule: a version-2 envelope only from the device that owns the session, and
///   from the first authenticated sender the session had.
/// - No downgrade: version 1 never after an authenticated envelope, nor from a certified
///   owner; in verified mode it never replaces a secret (it names no sender).
struct EnvelopeAcceptance: Sendable {
    /// What becomes of an envelope that opened.
    enum Verdict: Equatable, Sendable {
        /// Stored.
        case accept
        /// Sealed by a revoked device: not stored, recorded as settled, counted.
        case revokedSender
        /// Not stored, reported with this code and message.
        case refused(SyncIssue.Code, String)
    }

    /// Verified trust is in force (a pinned trust log or legacy identity).
    var verified: Bool
    /// Devices that hold or held a certificate: they seal version 2.
    var certified: Set<UUID>
    /// Devices revoked and not certified again.
    var revoked: Set<UUID>
    var requireAuthenticated: Bool
    var window: UInt32

    /// The rules as given.
    init(verified: Bool, certified: Set<UUID>, revoked: Set<UUID>, requireAuthenticated: Bool, window: UInt32) {
        self.verified = verified
        self.certified = certified
        self.revoked = revoked
        self.requireAuthenticated = requireAuthenticated
        self.window = window
    }

    /// The rules under `trust` (`nil`: trust mode `any`).
    init(trust: TrustSnapshot?, requireAuthenticated: Bool, window: UInt32) {
        self.init(
            verified: trust != nil,
            certified: trust.map { Set($0.certificates.keys).union($0.revocations.keys) } ?? [],
            revoked: trust.map { trust in Set(trust.revocations.keys.filter { !trust.isTrusted($0) }) } ?? [],
            requireAuthenticated: requireAuthenticated, window: window)
    }

    /// The verdict on `envelope`, for a session whose high-water mark is `mark` (`nil`: no
    /// envelope was ever stored for it) and whose row names `owner`.
    func verdict(on envelope: SyncEngine.OpenedEnvelope, mark: GenerationMark?, owner: UUID?) -> Verdict {
        let item = envelope.received
        if let sender = item.senderDeviceID, revoked.contains(sender) { return .revokedSender }
        let highest = mark?.generation ?? 0
        if item.generation < highest {
            return .refused(
                .staleGeneration,
                "the envelope for this session is of generation \(item.generation), older than the \(highest) this device "
                    + "has seen; it was not stored")
        }
        if UInt64(item.generation) > UInt64(max(highest, 1)) + UInt64(window) {
            return .refused(
                .generationJump,
                "the envelope for this session claims generation \(item.generation), more than \(window) above "
                    + "the \(max(highest, 1)) this device has seen; it was not stored")
        }
        if item.authenticated { return senderVerdict(item.senderDeviceID, mark: mark, owner: owner) }
        return version1Verdict(changesSecret: envelope.changesSecret, mark: mark, owner: owner)
    }

    /// The owner rule for an authenticated envelope from `sender`.
    private func senderVerdict(_ sender: UUID?, mark: GenerationMark?, owner: UUID?) -> Verdict {
        if let owner, sender != owner {
            return .refused(
                .wrongSender,
                "the envelope for this session was sealed by device \(sender?.canonical ?? "?"), "
                    + "not by the device that owns the session; it was not stored")
        }
        if let first = mark?.senderDeviceID, sender != first {
            return .refused(
                .wrongSender,
                "the envelope for this session was sealed by another device than its earlier secrets; it was not stored"
            )
        }
        return .accept
    }

    /// The downgrade rules for a version-1 envelope, which names no sender.
    private func version1Verdict(changesSecret: Bool, mark: GenerationMark?, owner: UUID?) -> Verdict {
        if requireAuthenticated {
            return .refused(
                .unauthenticatedEnvelope,
                "the envelope for this session is version 1 (no sender) and authenticated envelopes are required; "
                    + "it was not stored")
        }
        if mark?.authenticated == true {
            return .refused(
                .downgradeRefused,
                "the envelope for this session is version 1, but this device holds an authenticated secret for it: "
                    + "a downgrade, refused; it was not stored")
        }
        if verified, let owner, certified.contains(owner) {
            return .refused(
                .downgradeRefused,
                "the envelope for this session is version 1, but the session's device is certified and seals version 2: "
                    + "a downgrade, refused; it was not stored")
        }
        if verified && changesSecret {
            return .refused(
                .unauthenticatedReplacement,
                "the envelope for this session is version 1 (no sender) and carries another secret than the "
                    + "one stored: it cannot replace it; it was not stored")
        }
        return .accept
    }

    /// The report's issue for an envelope that did not open.
    func issue(session: UUID, failure: CryptoError) -> SyncIssue {
        switch failure {
        case .unknownSender where verified:
            SyncIssue(
                phase: .envelopes, code: .uncertifiedSender, rowID: session.canonical,
                message:
                    "the envelope for this session was sealed by a device the trust log does not certify (a desktop "
                    + "never paired, or a row somebody else wrote); it was not stored. If it is your desktop, pair it "
                    + "(`sync-cli trust join` there, with a code from `sync-cli trust invite` on a trust root), then "
                    + "sync it; this pull reports it once")
        case .unknownSender:
            SyncIssue(
                phase: .envelopes, code: .unknownSender, rowID: session.canonical,
                message:
                    "the envelope for this session names a sender that is not one of the user's devices; it was not stored"
            )
        default:
            SyncIssue(
                phase: .envelopes, code: .envelopeUnreadable, rowID: session.canonical,
                message: "the envelope for this session cannot be opened with this device's key; it was not stored")
        }
    }
}
