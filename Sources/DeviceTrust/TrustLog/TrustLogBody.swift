import Foundation
import SecretCrypto

/// The body of a trust-log entry, by type (trust-log.md, "Bytes").
public enum TrustLogBody: Sendable, Hashable {
    case genesis(Genesis)
    case certify(DeviceCertificate)
    case revoke(DeviceRevocation)
    case succession(Succession)
    case rootGrant(RootGrant)
    case resetAnswer(ResetAnswer)

    /// The body's bytes.
    public func bytes() throws(DeviceTrustError) -> [UInt8] {
        switch self {
        case .genesis(let body): try body.bytes()
        case .certify(let certificate): try certificate.body()
        case .revoke(let revocation): revocation.body()
        case .succession(let body): body.bytes()
        case .rootGrant(let body): body.bytes()
        case .resetAnswer(let body): body.bytes()
        }
    }

    /// The entry type this body belongs to.
    public var type: TrustLogEntryType {
        switch self {
        case .genesis: .genesis
        case .certify: .certify
        case .revoke: .revoke
        case .succession: .succession
        case .rootGrant: .rootGrant
        case .resetAnswer: .resetAnswer
        }
    }

    /// Parses a body of `type` strictly, for `userID` (every body names the header's user).
    public static func parse(
        _ bytes: [UInt8], of type: TrustLogEntryType, userID: UUID
    ) throws(DeviceTrustError)
        -> TrustLogBody
    {
        let body: TrustLogBody
        switch type {
        case .genesis: body = .genesis(try Genesis.parse(bytes))
        case .certify: body = .certify(try parseCertificate(bytes))
        case .revoke: body = .revoke(try parseRevocation(bytes))
        case .succession: body = .succession(try Succession.parse(bytes))
        case .rootGrant: body = .rootGrant(try RootGrant.parse(bytes))
        case .resetAnswer: body = .resetAnswer(try ResetAnswer.parse(bytes))
        }
        guard body.userID == userID else {
            throw DeviceTrustError(.malformedLogBytes, "the body names another user than the entry")
        }
        return body
    }

    /// The user the body names (a succession's revocations are checked when parsed).
    public var userID: UUID {
        switch self {
        case .genesis(let body): body.userID
        case .certify(let certificate): certificate.userID
        case .revoke(let revocation): revocation.userID
        case .succession(let body): body.userID
        case .rootGrant(let body): body.userID
        case .resetAnswer(let body): body.userID
        }
    }

    /// trust.md's certificate, with the trust log's key rules.
    static func parseCertificate(_ bytes: [UInt8]) throws(DeviceTrustError) -> DeviceCertificate {
        let certificate: DeviceCertificate
        do {
            certificate = try DeviceCertificate.parse(bytes)
        } catch {
            throw DeviceTrustError(.malformedLogBytes, "the certificate does not parse: \(error)")
        }
        guard certificate.x25519PublicKey.isCanonicalAndNotLowOrder else {
            throw DeviceTrustError(
                .malformedLogBytes, "the certificate's X25519 key is not canonical or is of small order")
        }
        guard certificate.ed25519PublicKey.isCanonicalAndNotSmallOrder else {
            throw DeviceTrustError(
                .malformedLogBytes, "the certificate's Ed25519 key is not canonical or is of small order")
        }
        guard certificate.issuedAt < 1 << 63 else {
            throw DeviceTrustError(.malformedLogBytes, "the certificate's time is out of range")
        }
        return certificate
    }

    /// trust.md's revocation, with the trust log's key rules.
    static func parseRevocation(_ bytes: [UInt8]) throws(DeviceTrustError) -> DeviceRevocation {
        let revocation: DeviceRevocation
        do {
            revocation = try DeviceRevocation.parse(bytes)
        } catch {
            throw DeviceTrustError(.malformedLogBytes, "the revocation does not parse: \(error)")
        }
        guard revocation.x25519PublicKey.isCanonicalAndNotLowOrder else {
            throw DeviceTrustError(
                .malformedLogBytes, "the revocation's X25519 key is not canonical or is of small order")
        }
        guard revocation.revokedAt < 1 << 63 else {
            throw DeviceTrustError(.malformedLogBytes, "the revocation's time is out of range")
        }
        return revocation
    }
}

/// The genesis body: the epoch's identity key and append anchor, the epoch it resets (0 for
/// epoch 1), the recovery key (none when zero) and the author's certificate (role `trust_root`).
///
/// ```
/// "unbound-trust-log-genesis-v1" || 0x00 || user_id || 0x00 || identity_pk (32) || anchor (32)
///   || prior_epoch (4) || recovery_pk (32, zero = none) || len16(certificate body)
/// ```
public struct Genesis: Sendable, Hashable {
    public static let prefix = "unbound-trust-log-genesis-v1"
    public var userID: UUID
    public var identityKey: Ed25519PublicKey
    public var anchor: [UInt8]
    public var priorEpoch: UInt32
    public var recoveryKey: X25519PublicKey?
    public var certificate: DeviceCertificate

    /// Creates a body.
    public init(
        userID: UUID, identityKey: Ed25519PublicKey, anchor: [UInt8], priorEpoch: UInt32,
        recoveryKey: X25519PublicKey?, certificate: DeviceCertificate
    ) {
        self.userID = userID
        self.identityKey = identityKey
        self.anchor = anchor
        self.priorEpoch = priorEpoch
        self.recoveryKey = recoveryKey
        self.certificate = certificate
    }

    public func bytes() throws(DeviceTrustError) -> [UInt8] {
        var out = LogWriter(prefix: Self.prefix)
        out.identifier(userID)
        out.zero()
        out.raw(identityKey.rawRepresentation)
        out.raw(anchor)
        out.u32(priorEpoch)
        out.raw(recoveryKey?.rawRepresentation ?? zero32)
        out.len16(try certificate.body())
        return out.bytes
    }

    /// The fixed part every reader (and the server) checks: prefix, user, separators, keys,
    /// anchor, prior epoch, and a certificate length equal to the rest of the body.
    static func parse(_ bytes: [UInt8]) throws(DeviceTrustError) -> Genesis {
        var reader = LogReader(bytes, "the genesis")
        try reader.prefix(prefix)
        let user = try reader.identifier()
        try reader.zero()
        let identity = try reader.ed25519()
        let anchor = try reader.take(32)
        let prior = try reader.u32()
        let recovery = try reader.optionalX25519()
        let certificate = try TrustLogBody.parseCertificate(try reader.len16())
        try reader.end()
        // Every body names one user: the certificate of the genesis's author too.
        guard certificate.userID == user else {
            throw DeviceTrustError(.malformedLogBytes, "the genesis's certificate names another user")
        }
        return Genesis(
            userID: user, identityKey: identity, anchor: anchor, priorEpoch: prior, recoveryKey: recovery,
            certificate: certificate)
    }
}

/// Why an identity key is replaced.
public enum SuccessionReason: UInt8, Sendable, Hashable, Codable, CaseIterable {
    /// A root was revoked: its copy of the seed must stop working.
    case rootRevoked = 0x01
    /// A new recovery key: the old one must stop opening anything new.
    case recoveryKeyReplaced = 0x02
    /// The seed may be known to someone else (and every migration's first step).
    case seedSuspected = 0x03
}

/// A succession: the identity key in force (`oldKey`) hands over to `newKey`, with its own append
/// anchor, revoking up to 8 devices (roots allowed, never the author) and granting the new seed
/// to every root that remains but the author.
///
/// ```
/// "unbound-identity-succession-v1" || 0x00 || user_id || 0x00 || old_pk (32) || new_pk (32)
///   || new_anchor (32) || reason (1) || new_recovery_pk (32, zero = unchanged)
///   || n_rev (1, <= 8) || n_rev × len16(revocation body)
///   || n_grant (1, <= 8) || n_grant × (device_id (36) || len16(sealed seed))
/// ```
/// Each list is in ascending device id, without repeats.
public struct Succession: Sendable, Hashable {
    public static let prefix = "unbound-identity-succession-v1"

    /// The new seed sealed to one remaining root.
    public struct Grant: Sendable, Hashable {
        public var deviceID: UUID
        public var sealedSeed: [UInt8]

        public init(deviceID: UUID, sealedSeed: [UInt8]) {
            self.deviceID = deviceID
            self.sealedSeed = sealedSeed
        }
    }

    public var userID: UUID
    public var oldKey: Ed25519PublicKey
    public var newKey: Ed25519PublicKey
    public var newAnchor: [UInt8]
    public var reason: SuccessionReason
    public var newRecoveryKey: X25519PublicKey?
    public var revocations: [DeviceRevocation]
    public var grants: [Grant]

    public init(
        userID: UUID, oldKey: Ed25519PublicKey, newKey: Ed25519PublicKey, newAnchor: [UInt8],
        reason: SuccessionReason, newRecoveryKey: X25519PublicKey?, revocations: [DeviceRevocation], grants: [Grant]
    ) {
        self.userID = userID
        self.oldKey = oldKey
        self.newKey = newKey
        self.newAnchor = newAnchor
        self.reason = reason
        self.newRecoveryKey = newRecoveryKey
        self.revocations = revocations.sorted { $0.deviceID.canonical < $1.deviceID.canonical }
        self.grants = grants.sorted { $0.deviceID.canonical < $1.deviceID.canonical }
    }

    /// At most this many revocations, and this many grants.
    public static let maxItems = 8

    public func bytes() -> [UInt8] {
        var out = LogWriter(prefix: Self.prefix)
        out.identifier(userID)
        out.zero()
        out.raw(oldKey.rawRepresentation)
        out.raw(newKey.rawRepresentation)
        out.raw(newAnchor)
        out.u8(reason.rawValue)
        out.raw(newRecoveryKey?.rawRepresentation ?? zero32)
        out.u8(UInt8(revocations.count))
        for revocation in revocations { out.len16(revocation.body()) }
        out.u8(UInt8(grants.count))
        for grant in grants {
            out.identifier(grant.deviceID)
            out.len16(grant.sealedSeed)
        }
        return out.bytes
    }

    static func parse(_ bytes: [UInt8]) throws(DeviceTrustError) -> Succession {
        var reader = LogReader(bytes, "the succession")
        try reader.prefix(prefix)
        let user = try reader.identifier()
        try reader.zero()
        let old = try reader.ed25519()
        let new = try reader.ed25519()
        let anchor = try reader.take(32)
        guard let reason = SuccessionReason(rawValue: try reader.u8()) else {
            throw DeviceTrustError(.malformedLogBytes, "the succession's reason is not 1, 2 or 3")
        }
        let recovery = try reader.optionalX25519()
        let revocationCount = Int(try reader.u8())
        guard revocationCount <= maxItems else {
            throw DeviceTrustError(.malformedLogBytes, "the succession revokes more than 8 devices")
        }
        var revocations: [DeviceRevocation] = []
        for _ in 0..<revocationCount {
            let revocation = try TrustLogBody.parseRevocation(try reader.len16())
            guard revocation.userID == user else {
                throw DeviceTrustError(.malformedLogBytes, "a revocation names another user")
            }
            if let last = revocations.last, !(last.deviceID.canonical < revocation.deviceID.canonical) {
                throw DeviceTrustError(
                    .malformedLogBytes, "the succession's revocations are not in ascending device id")
            }
            revocations.append(revocation)
        }
        let grantCount = Int(try reader.u8())
        guard grantCount <= maxItems else {
            throw DeviceTrustError(.malformedLogBytes, "the succession grants more than 8 roots")
        }
        var grants: [Grant] = []
        for _ in 0..<grantCount {
            let device = try reader.identifier()
            let sealed = try SealedSeed.checkShape(try reader.len16())
            if let last = grants.last, !(last.deviceID.canonical < device.canonical) {
                throw DeviceTrustError(.malformedLogBytes, "the succession's grants are not in ascending device id")
            }
            grants.append(Grant(deviceID: device, sealedSeed: sealed))
        }
        try reader.end()
        return Succession(
            userID: user, oldKey: old, newKey: new, newAnchor: anchor, reason: reason, newRecoveryKey: recovery,
            revocations: revocations, grants: grants)
    }
}

/// A root grant: the identity seed sealed to a certified desktop that becomes a root.
///
/// ```
/// "unbound-root-grant-v1" || 0x00 || user_id || 0x00 || device_id || 0x00 || len16(sealed seed)
/// ```
public struct RootGrant: Sendable, Hashable {
    public static let prefix = "unbound-root-grant-v1"
    public var userID: UUID
    public var deviceID: UUID
    public var sealedSeed: [UInt8]

    public init(userID: UUID, deviceID: UUID, sealedSeed: [UInt8]) {
        self.userID = userID
        self.deviceID = deviceID
        self.sealedSeed = sealedSeed
    }

    public func bytes() -> [UInt8] {
        var out = LogWriter(prefix: Self.prefix)
        out.identifier(userID)
        out.zero()
        out.identifier(deviceID)
        out.zero()
        out.len16(sealedSeed)
        return out.bytes
    }

    static func parse(_ bytes: [UInt8]) throws(DeviceTrustError) -> RootGrant {
        var reader = LogReader(bytes, "the root grant")
        try reader.prefix(prefix)
        let user = try reader.identifier()
        try reader.zero()
        let device = try reader.identifier()
        try reader.zero()
        let sealed = try SealedSeed.checkShape(try reader.len16())
        try reader.end()
        return RootGrant(userID: user, deviceID: device, sealedSeed: sealed)
    }
}

/// A root's answer to a reset (a genesis of a later epoch that names this one as its prior).
///
/// ```
/// "unbound-reset-answer-v1" || 0x00 || user_id || 0x00 || reset_epoch (4)
///   || reset_genesis_hash (32) || verdict (1: 0x01 veto, 0x02 accept)
/// ```
public struct ResetAnswer: Sendable, Hashable {
    public static let prefix = "unbound-reset-answer-v1"

    public enum Verdict: UInt8, Sendable, Hashable, Codable {
        /// The reset never takes effect.
        case veto = 0x01
        /// The reset takes effect at once; this epoch is closed.
        case accept = 0x02
    }

    public var userID: UUID
    public var resetEpoch: UInt32
    public var resetGenesisHash: [UInt8]
    public var verdict: Verdict

    public init(userID: UUID, resetEpoch: UInt32, resetGenesisHash: [UInt8], verdict: Verdict) {
        self.userID = userID
        self.resetEpoch = resetEpoch
        self.resetGenesisHash = resetGenesisHash
        self.verdict = verdict
    }

    public func bytes() -> [UInt8] {
        var out = LogWriter(prefix: Self.prefix)
        out.identifier(userID)
        out.zero()
        out.u32(resetEpoch)
        out.raw(resetGenesisHash)
        out.u8(verdict.rawValue)
        return out.bytes
    }

    static func parse(_ bytes: [UInt8]) throws(DeviceTrustError) -> ResetAnswer {
        var reader = LogReader(bytes, "the reset answer")
        try reader.prefix(prefix)
        let user = try reader.identifier()
        try reader.zero()
        let epoch = try reader.u32()
        let hash = try reader.take(32)
        guard let verdict = Verdict(rawValue: try reader.u8()) else {
            throw DeviceTrustError(.malformedLogBytes, "the reset answer's verdict is neither veto nor accept")
        }
        try reader.end()
        return ResetAnswer(userID: user, resetEpoch: epoch, resetGenesisHash: hash, verdict: verdict)
    }
}
