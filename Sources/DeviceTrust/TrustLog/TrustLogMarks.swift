import Foundation

/// What a stored entry says of the devices it names, as the remote's trust gate reads it
/// (docs/trust-log.md, "The remote"; `private.tl_record_devices`): a genesis's and a certify's
/// device certified, a revoke's and each of a succession's revoked, nothing for a root grant or a
/// reset answer. The body is read whole, as a verifier reads it: one that does not parse, or names
/// another user anywhere, says nothing but that the gate must trust nobody in its epoch. The
/// `TrustLogMarks` vectors of `trust-log-v1.json` hold `private.tl_record_devices`, which reads a
/// body's device ids at fixed offsets, to the same marks on entries the two read alike
/// (docs/trust-log.md, "The remote", says where they do not).
public enum TrustLogMarks {
    /// One device an entry names.
    public struct Named: Sendable, Hashable {
        /// The device's id.
        public var deviceID: UUID
        /// Whether the entry revokes it (else it certifies it).
        public var revokes: Bool

        /// A device as an entry names it.
        public init(deviceID: UUID, revokes: Bool) { (self.deviceID, self.revokes) = (deviceID, revokes) }
    }

    /// The devices a stored entry (the base64 text the log holds) names, for the log of `userID`;
    /// `nil` when it does not parse, or names another user: the gate then trusts nobody in its
    /// epoch.
    public static func of(_ stored: String, userID: UUID) -> [Named]? {
        // An unknown type parses (as a certify, so that a reader refuses it at its position): here
        // it is an entry the gate cannot read.
        guard let data = Data(base64Encoded: stored), let parsed = try? TrustLogEntry.parse(Array(data)),
            TrustLogEntryType(rawValue: parsed.knownType) != nil,
            let body = try? TrustLogBody.parse(parsed.entry.body, of: parsed.entry.type, userID: userID)
        else { return nil }
        switch body {
        case .genesis(let genesis): return [Named(deviceID: genesis.certificate.deviceID, revokes: false)]
        case .certify(let certificate): return [Named(deviceID: certificate.deviceID, revokes: false)]
        case .revoke(let revocation): return [Named(deviceID: revocation.deviceID, revokes: true)]
        case .succession(let succession):
            return succession.revocations.map { Named(deviceID: $0.deviceID, revokes: true) }
        case .rootGrant, .resetAnswer: return []
        }
    }
}
