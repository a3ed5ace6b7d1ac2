import Foundation
import RemoteRules
import SyncModel

/// The trust gate's groups of `UNBOUND-REMOTE-RULES-V1`: EpochInForce (which epoch's entries say
/// who is trusted) and TrustedDevice (whether the marks of the stored entries leave a device
/// trusted), answered by ``TrustGateRules``.
extension RemoteRulesGroup {
    /// A TrustedDevice test's mark: what one stored entry says of one device.
    public struct TrustMark: Codable, Sendable, Hashable {
        /// The entry's epoch.
        public var epoch: UInt32
        /// The device's id (absent: an entry the server cannot read).
        public var device: String?
        /// Whether the entry revokes the device (else it certifies it).
        public var revokes: Bool

        /// The mark as the rule takes it.
        public var value: TrustGateRules.Mark { .init(epoch: epoch, device: device, revokes: revokes) }

        /// A mark's fields as the file writes them.
        public init(_ mark: TrustGateRules.Mark) { (epoch, device, revokes) = (mark.epoch, mark.device, mark.revokes) }
    }

    /// Whether a trust-gate test gets its answer from ``TrustGateRules``; `nil` when a field it
    /// needs is missing.
    static func trustGateMatches(_ kind: Kind, _ test: Test) -> Bool? {
        switch kind {
        case .epochInForce:
            // A pending reset has an age, and only a pending reset has one.
            guard (test.pendingEpoch == nil) == (test.pendingAge == nil) else { return nil }
            let pending = test.pendingEpoch.flatMap { epoch in
                test.pendingAge.map { TrustGateRules.PendingReset(epoch: epoch, age: $0) }
            }
            return TrustGateRules.epochInForce(current: test.currentEpoch, pending: pending) == test.inForce
        case .trustedDevice:
            // Ids as the gate compares them (the SQL as text): anything else is malformed, not an answer.
            guard let marks = test.marks, let device = test.device, let trusted = test.trusted else { return nil }
            let ids = [device] + marks.compactMap(\.device)
            guard ids.allSatisfy({ UUID(uuidString: $0)?.canonical == $0 }) else { return nil }
            return TrustGateRules.trustedDevices(marks: marks.map(\.value), inForce: test.inForce).contains(device)
                == trusted
        default: return nil
        }
    }
}
