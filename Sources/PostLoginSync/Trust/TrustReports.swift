import DeviceTrust
import Foundation
import SyncModel

/// How ``DeviceTrustManager/joinAndWait(code:timeout:pollInterval:)`` ended; each names the
/// identity pinned.
public enum JoinOutcome: Sendable, Hashable {
    /// The trust root certified this device.
    case certified(IdentityFingerprint)
    /// This device already held a valid certificate of this identity: no request was made.
    case alreadyCertified(IdentityFingerprint)
    /// The trust root removed the request without certifying: the code was mistyped (a wrong
    /// invite id or pairing secret), the invite expired or was used, or the device row does not
    /// match; the root's `trust approve` printed which.
    case refused(IdentityFingerprint)
    /// No answer before the timeout: nobody ran `trust approve` (or `trust invite --wait`).
    case timedOut(IdentityFingerprint)
}

/// What `approve` did.
public struct ApprovalReport: Sendable, Codable, Hashable {
    public var approved: [ApprovedDevice] = []
    public var refused: [RefusedPairing] = []
    /// Genuine requests for invites opened without a device type, left for an approval that
    /// can ask the person (nothing was certified or deleted).
    public var pending: [PendingPairing] = []
    public init() {}
}

/// Asks the person whether to certify a device that joined with an invite opened without a
/// device type; `true` certifies it as ``PairingCandidate/deviceType``.
public typealias PairingConfirmation = @Sendable (PairingCandidate) async -> Bool

/// A device whose pairing request verified, shown to the person before it is certified.
public struct PairingCandidate: Sendable, Hashable {
    public var deviceID: UUID
    public var name: String
    /// The type its row names (the server's word): what the certificate will say if confirmed.
    public var deviceType: DeviceType
    /// The role the certificate will grant.
    public var role: DeviceTrustRole
}

/// A genuine pairing request that waits for the person to confirm the device's type.
public struct PendingPairing: Sendable, Codable, Hashable {
    public var requestID: UUID
    public var deviceID: UUID
    public var name: String
    public var deviceType: DeviceType
    public var role: DeviceTrustRole
    public var inviteID: String
}

/// A device certified by `approve`.
public struct ApprovedDevice: Sendable, Codable, Hashable {
    public var deviceID: UUID
    public var name: String
    public var inviteID: String
}

/// A pairing request `approve` refused (and deleted).
public struct RefusedPairing: Sendable, Codable, Hashable {
    public var requestID: UUID
    public var deviceID: UUID
    public var inviteID: String
    public var reason: String
}

/// What a revocation did.
public struct RevocationReport: Sendable, Codable {
    public var revoked: [UUID] = []
    /// This desktop's sessions whose secret was rotated at once (the revoked devices had it).
    public var sessionsRotated = 0
    /// Why that rotation did not happen (the next push, or the next request, makes it).
    public var rotationProblem: String? = nil
    /// Whether a root was revoked, so the identity key was replaced (a succession).
    public var identityKeyReplaced = false
    /// The new recovery key, when the succession made one (show it to the person once).
    public var recoveryKey: RecoveryKey? = nil
    /// The head after the revocation.
    public var head: TrustLogPosition? = nil

    public init() {}

    enum CodingKeys: String, CodingKey { case revoked, sessionsRotated, rotationProblem, identityKeyReplaced, head }
}

/// `trust status`: the verified log's head, its roots and devices, what is pending.
public struct TrustStatus: Sendable, Codable, Hashable {
    /// One of the user's devices.
    public struct Device: Sendable, Codable, Hashable {
        public var deviceID: UUID
        public var name: String
        public var deviceType: String?
        public var isActive: Bool
        /// `nil` when this device has verified no trust.
        public var status: DeviceTrustStatus?
        public var isThisDevice: Bool
        /// A root of the log (it holds the identity key in force).
        public var isRoot = false
    }

    public var deviceID: UUID
    /// This device is a root holding the identity key in force.
    public var isTrustRoot: Bool
    /// The identity key in force: its fingerprint (8 groups of 4 hex digits), or `nil` before pairing.
    public var identityFingerprint: String?
    /// This device's own standing (`nil` before pairing).
    public var thisDevice: DeviceTrustStatus?
    /// `log` (verified and pinned), `legacy` (before the user's log exists) or `none`.
    public var mode: String
    /// Whether the user has a trust log (or an identity from before it), paired here or not.
    public var userHasIdentity = false
    /// The verified head: epoch, seq and the first 8 bytes of its hash (compare it across devices).
    public var head: TrustLogPosition?
    /// When the head was written (the writer's clock).
    public var headCreatedAt: Date?
    /// Whether a recovery key is bound to the log (`nil`: unknown, legacy mode).
    public var recoveryKeyBound: Bool?
    /// The recovery key bound is one this device made and never showed (a lost answer, a
    /// command that ended before printing): `trust recovery-key show` prints it.
    public var recoveryKeyUnshown = false
    public var devices: [Device] = []
    /// Reports and warnings (pending resets, ignored witnesses, a nearly full log).
    public var problems: [String] = []
    /// Pending resets of the identity.
    public var pendingResets: [PendingReset] = []
}
