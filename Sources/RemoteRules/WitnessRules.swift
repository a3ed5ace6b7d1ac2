/// Which witness the remote keeps (docs/trust-log.md, "Witnesses"): a device's signed statement
/// that it saw the log's head at a seq, published through `publish_witness`. The server cannot
/// check the signature (the device's key is in the log, not in its tables); it keeps what a device
/// of the caller's says of itself, at a seq the head has reached and no lower than the device
/// said before, at a time within ten minutes of its own clock, and at most four of them a seq.
/// `private.publish_witness` answers the same (`testvectors/remote-rules-v1.json`, group
/// WitnessAdmission, run against that function on rows written in a transaction that is rolled
/// back). Reading the 155 bytes is DeviceTrust's `TrustLogWitness.parse`, which the same group
/// holds to the SQL's own reading of them.
public enum WitnessRules {
    /// How far, in seconds, a witness's time may be from the server's clock either way.
    public static let clockSlack: Int64 = 600

    /// How many witnesses of one device for one seq the remote keeps: the newest.
    public static let keptPerSeq = 4

    /// A witness as its bytes say it: whose, by which device, of which entry, and when.
    public struct Claim: Sendable, Hashable {
        /// The user's id as the bytes spell it (a canonical lowercase UUID once parsed).
        public var user: String
        /// The witnessing device's id, spelled the same way.
        public var device: String
        /// The epoch and seq of the head it saw.
        public var epoch: UInt32
        public var seq: UInt64
        /// When it saw it, in Unix seconds.
        public var seenAt: UInt64

        /// A claim as read.
        public init(user: String, device: String, epoch: UInt32, seq: UInt64, seenAt: UInt64) {
            (self.user, self.device, self.epoch, self.seq, self.seenAt) = (user, device, epoch, seq, seenAt)
        }
    }

    /// A witness the remote holds of the same device in the current epoch.
    public struct Held: Sendable, Hashable {
        /// The seq it witnesses.
        public var seq: UInt64
        /// Its signature as stored (the text is the row's key, beside the seq).
        public var signature: String
        /// Seconds since it was stored: the newest has the least.
        public var age: Double

        /// A held witness as read.
        public init(seq: UInt64, signature: String, age: Double) {
            (self.seq, self.signature, self.age) = (seq, signature, age)
        }
    }

    /// What the remote does with a witness.
    public enum Verdict: Sendable, Hashable {
        /// It names another user, or another device than the one the caller proved (42501).
        case foreign
        /// No current epoch (or no head of it), another epoch, a seq past the head or below the
        /// device's last, or a time more than ``clockSlack`` from the server's (22023).
        case outOfRange
        /// The same witness is held already (the same seq and signature): nothing changes.
        case held
        /// It is stored, after the held witnesses of its seq named here make room.
        case store(evicting: [String])

        /// The verdict's word in the vectors.
        public var word: String {
            switch self {
            case .foreign: "foreign"
            case .outOfRange: "out_of_range"
            case .held: "held"
            case .store: "stored"
            }
        }
    }

    /// The verdict on a well-formed witness, published by `device` of `caller` (both canonical
    /// lowercase UUIDs, as the SQL compares the text), when the log's current epoch is
    /// `currentEpoch` with its head at `headSeq` (`nil`: no log) and the device's witnesses in
    /// that epoch are `held`. `now` is the server's clock in Unix seconds.
    public static func verdict(
        on claim: Claim, signature: String, caller: String, device: String,
        currentEpoch: UInt32?, headSeq: UInt64?, held: [Held], now: Int64
    ) -> Verdict {
        guard claim.user == caller, claim.device == device else { return .foreign }
        let last = held.map(\.seq).max()
        // The distance from the server's clock, without overflow at either end of the range.
        let (drift, overflow) = Int64(clamping: claim.seenAt).subtractingReportingOverflow(now)
        guard let currentEpoch, let headSeq, claim.epoch == currentEpoch, claim.seq <= headSeq,
            claim.seq >= last ?? 0, !overflow, drift.magnitude <= clockSlack.magnitude
        else { return .outOfRange }
        let sameSeq = held.filter { $0.seq == claim.seq }
        // Signatures compare as their bytes, as the SQL's `COLLATE "C"` does (Swift's `==` and `<`
        // on strings go by Unicode equivalence).
        if sameSeq.contains(where: { $0.signature.utf8.elementsEqual(signature.utf8) }) { return .held }
        // The newest stay (ties: the lower signature), so a root can witness an unchanged head
        // again every hour and a witness that got there first shuts nothing out.
        let newestFirst = sameSeq.sorted {
            $0.age != $1.age ? $0.age < $1.age : $0.signature.utf8.lexicographicallyPrecedes($1.signature.utf8)
        }
        return .store(evicting: newestFirst.dropFirst(keptPerSeq - 1).map(\.signature))
    }
}
