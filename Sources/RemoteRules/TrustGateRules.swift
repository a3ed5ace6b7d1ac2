/// Whom the trust log in force certifies (docs/trust-log.md, "The remote"): the devices approvals
/// reach and take answers from, questions take answers from and alerts and live activities go to.
/// `private.trust_epoch`, `private.tl_mark_device` and `private.is_trusted_device` answer the same
/// (`testvectors/remote-rules-v1.json`, groups EpochInForce and TrustedDevice, run against those
/// functions on rows written in a transaction that is rolled back). How an entry's bytes become
/// marks is DeviceTrust's `TrustLogMarks`, which the `TrustLogMarks` vectors of `trust-log-v1.json`
/// hold to `private.tl_record_devices` (it reads them at fixed offsets).
public enum TrustGateRules {
    /// Seconds a pending reset waits before it takes effect: 72 hours, the client's
    /// `TrustLogEpochs.resetDelay`.
    public static let resetDelay: Int64 = 259_200

    /// A reset the remote holds, not yet current: its epoch, and how many seconds ago it was
    /// written (negative when the clock that wrote it ran ahead).
    public struct PendingReset: Sendable, Hashable {
        /// The epoch the reset opens.
        public var epoch: UInt32
        /// Seconds since it was written.
        public var age: Int64

        /// A pending reset as read.
        public init(epoch: UInt32, age: Int64) { (self.epoch, self.age) = (epoch, age) }

        /// Whether its 72 hours have passed, so that its epoch is the one in force.
        public var tookEffect: Bool { age >= TrustGateRules.resetDelay }
    }

    /// The epoch whose entries say who is trusted: a pending reset's once it took effect, else the
    /// current one (`nil`: no log, so nobody).
    public static func epochInForce(current: UInt32?, pending: PendingReset?) -> UInt32? {
        if let pending, pending.tookEffect { return pending.epoch }
        return current
    }

    /// What one stored entry says of one device: a genesis or a certify certifies it, a revoke or
    /// a succession revokes it. An entry the server cannot read is a mark without a device.
    public struct Mark: Sendable, Hashable {
        /// The epoch of the entry.
        public var epoch: UInt32
        /// The device's id as a canonical lowercase UUID (the SQL compares the text); `nil` for an
        /// entry that does not parse.
        public var device: String?
        /// Whether the entry revokes the device (else it certifies it).
        public var revokes: Bool

        /// A mark as an entry makes it.
        public init(epoch: UInt32, device: String?, revokes: Bool) {
            (self.epoch, self.device, self.revokes) = (epoch, device, revokes)
        }
    }

    /// The devices the epoch in force certifies: each one a mark of that epoch certifies, less
    /// each one a mark of it revokes (a revocation is never undone, whichever comes first). One
    /// entry of it that does not parse leaves nobody trusted, and no epoch trusts nobody: the
    /// gate fails closed. Marks of other epochs count for nothing.
    public static func trustedDevices(marks: [Mark], inForce: UInt32?) -> Set<String> {
        guard let inForce else { return [] }
        var certified: Set<String> = []
        var revoked: Set<String> = []
        for mark in marks where mark.epoch == inForce {
            guard let device = mark.device else { return [] }
            if mark.revokes { revoked.insert(device) } else { certified.insert(device) }
        }
        return certified.subtracting(revoked)
    }
}
