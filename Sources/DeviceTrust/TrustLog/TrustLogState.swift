import Foundation
import SecretCrypto

/// A reset named by its epoch and its genesis's hash.
public struct ResetReference: Sendable, Hashable, Codable {
    public var epoch: UInt32
    public var genesisHash: Data

    public init(epoch: UInt32, genesisHash: [UInt8]) {
        self.epoch = epoch
        self.genesisHash = Data(genesisHash)
    }
}

/// A key that was in force and was replaced, with when.
public struct RetiredKey: Sendable, Hashable, Codable {
    public var key: Data
    /// The seq of the entry that retired it.
    public var seq: UInt64
    /// That entry's `created_at`.
    public var retiredAt: UInt64
}

/// What a verified epoch of the trust log says (trust-log.md, "Verification"): the keys in force and
/// used, every device with its certificate and revocation, what is burned, the roots, the reset
/// answers, and the head.
///
/// The keys in force are key types: a stored state whose key is not a key (one byte of a pin
/// changed, a length cut) does not decode, which the store reports as a corrupt row.
public struct TrustLogState: Sendable, Hashable, Codable {
    /// One device the epoch names.
    public struct Device: Sendable, Hashable, Codable {
        public var id: UUID
        /// The certified X25519 key, or (never certified) the revoked one.
        public var x25519: X25519PublicKey
        /// The certified Ed25519 key.
        public var ed25519: Ed25519PublicKey?
        public var deviceType: String?
        public var role: String?
        public var issuedAt: UInt64?
        public var certifiedSeq: UInt64?
        public var revokedSeq: UInt64?
        public var revokedAt: UInt64?

        public var isCertified: Bool { certifiedSeq != nil }
        public var isRevoked: Bool { revokedSeq != nil }
        /// Certified and not revoked.
        public var isTrusted: Bool { isCertified && !isRevoked }

        /// Its certificate, rebuilt from the verified fields.
        public func certificate(userID: UUID) -> DeviceCertificate? {
            guard let ed25519, let deviceType, let role, let issuedAt else { return nil }
            return DeviceCertificate(
                userID: userID, deviceID: id, x25519PublicKey: x25519, ed25519PublicKey: ed25519,
                deviceType: deviceType,
                deviceRole: role, issuedAt: issuedAt)
        }
    }

    public let userID: UUID
    public let epoch: UInt32
    public var priorEpoch: UInt32
    public var genesisHash: Data
    public var genesisCreatedAt: UInt64
    public var headSeq: UInt64
    public var headHash: Data
    public var headCreatedAt: UInt64
    /// The proof the next entry's `append_proof` must hash to.
    public var lastProof: Data
    /// The identity key in force.
    public var identityKey: Ed25519PublicKey
    /// The seq of the entry that installed it (the genesis or a succession).
    public var identityKeySince: UInt64
    public var retiredIdentityKeys: [RetiredKey] = []
    /// The recovery key in force, or `nil`.
    public var recoveryKey: X25519PublicKey?
    public var retiredRecoveryKeys: [RetiredKey] = []
    public var devices: [UUID: Device] = [:]
    public var burnedIDs: Set<UUID> = []
    public var burnedX25519: Set<Data> = []
    public var burnedEd25519: Set<Data> = []
    /// The keys certified devices hold (a key is never certified twice).
    public var heldX25519: Set<Data> = []
    public var heldEd25519: Set<Data> = []
    /// Roots, in the order they became roots.
    public var roots: [UUID] = []
    public var vetoes: [ResetReference] = []
    /// The accept that closed this epoch.
    public var accepted: ResetReference?

    /// The device roles a certificate names (trust.md).
    public enum Role {
        public static let trustRoot = "trust_root"
        public static let trustedExecutor = "trusted_executor"
        public static let temporaryViewer = "temporary_viewer"
    }

    /// The largest number of roots.
    public static let maxRoots = 9

    /// Whether an accept closed the epoch: nothing may follow.
    public var isClosed: Bool { accepted != nil }

    /// Every identity key used in the epoch, the one in force included.
    public var usedIdentityKeys: [Data] { retiredIdentityKeys.map(\.key) + [Data(identityKey.rawRepresentation)] }

    /// Whether `device` is a root (a root is never revoked: a revocation ends it).
    public func isRoot(_ device: UUID) -> Bool { roots.contains(device) }

    /// Whether `type` is a desktop's (`mac-desktop`, `win-desktop`, `linux-desktop`).
    public static func isDesktop(_ type: String?) -> Bool {
        ["mac-desktop", "win-desktop", "linux-desktop"].contains(type ?? "")
    }
}
