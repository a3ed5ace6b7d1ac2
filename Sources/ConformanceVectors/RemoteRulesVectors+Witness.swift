import DeviceTrust
import Foundation
import RemoteRules
import SecretCrypto

/// The WitnessAdmission group of `UNBOUND-REMOTE-RULES-V1`: which witness the remote keeps,
/// answered by DeviceTrust's `TrustLogWitness.parse` (the shape) and ``WitnessRules`` (the rest),
/// as the embedded remote's `publishWitness` runs them.
extension RemoteRulesGroup {
    /// A witness the device holds before the call.
    public struct HeldWitness: Codable, Sendable, Hashable {
        /// The epoch it witnesses (absent: the current one; another counts for nothing).
        public var epoch: UInt32?
        /// The seq it witnesses.
        public var seq: UInt64
        /// Its signature as stored.
        public var signature: String
        /// Seconds since it was stored.
        public var age: Double

        /// The held witness as the rule takes it.
        public var value: WitnessRules.Held { .init(seq: seq, signature: signature, age: age) }

        /// A held witness's fields as the file writes them.
        public init(_ held: WitnessRules.Held, epoch: UInt32? = nil) {
            (self.epoch, seq, signature, age) = (epoch, held.seq, held.signature, held.age)
        }
    }

    /// What a WitnessAdmission test gives: the caller (user and device), the call's body and
    /// signature, the server's clock, the log's current epoch and head seq (each absent: none), and
    /// the device's witnesses (of that epoch, unless one names another).
    public struct WitnessFields: Sendable, Hashable {
        public var caller: String
        public var device: String
        public var body: String
        public var signature: String
        public var now: Int64
        public var currentEpoch: UInt32?
        public var headSeq: UInt64?
        public var held: [HeldWitness]

        /// The fields as a test holds them; `nil` when one it needs is missing.
        public init?(
            caller: String?, device: String?, body: String?, signature: String?, now: Int64?,
            currentEpoch: UInt32?, headSeq: UInt64?, held: [HeldWitness]?
        ) {
            guard let caller, let device, let body, let signature, let now else { return nil }
            (self.caller, self.device, self.body, self.signature, self.now) = (caller, device, body, signature, now)
            (self.currentEpoch, self.headSeq, self.held) = (currentEpoch, headSeq, held ?? [])
        }
    }

    /// What the remote answers (`malformed`, `foreign`, `out_of_range`, `held`, `stored`) and the
    /// device's signatures held after the call, sorted byte by byte; `nil` when the fields are
    /// not a test (ids not canonical lowercase UUIDs).
    public static func witnessAdmission(_ fields: WitnessFields?) -> (admission: String, kept: [String])? {
        guard let fields, [fields.caller, fields.device].allSatisfy({ UUID(uuidString: $0)?.canonical == $0 })
        else { return nil }
        let before = fields.held.map(\.signature)
        guard let witness = try? TrustLogWitness.parse(fields.body),
            (try? ByteEncoding.bytes(base64: fields.signature))?.count == 64
        else { return ("malformed", sortedBytewise(before)) }
        let claim = WitnessRules.Claim(
            user: witness.userID.canonical, device: witness.deviceID.canonical, epoch: witness.epoch,
            seq: witness.seq, seenAt: witness.seenAt)
        let current = fields.held.filter { $0.epoch == nil || $0.epoch == fields.currentEpoch }
        let verdict = WitnessRules.verdict(
            on: claim, signature: fields.signature, caller: fields.caller, device: fields.device,
            currentEpoch: fields.currentEpoch, headSeq: fields.headSeq, held: current.map(\.value),
            now: fields.now)
        guard case .store(let evicting) = verdict else { return (verdict.word, sortedBytewise(before)) }
        // What gives way is of the witness's epoch and seq: the same signature elsewhere stays.
        let after = fields.held.filter { row in
            !(evicting.contains(row.signature) && current.contains(row) && row.seq == claim.seq)
        }
        return (verdict.word, sortedBytewise(after.map(\.signature) + [fields.signature]))
    }

    /// Signatures in the order of their bytes, as the SQL check lists them (`COLLATE "C"`).
    static func sortedBytewise(_ signatures: [String]) -> [String] {
        signatures.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// Whether a WitnessAdmission test gets its answer; `nil` when a field it needs is missing.
    static func witnessMatches(_ test: Test) -> Bool? {
        let fields = WitnessFields(
            caller: test.caller, device: test.device, body: test.body, signature: test.signature, now: test.now,
            currentEpoch: test.currentEpoch, headSeq: test.headSeq, held: test.held)
        guard let answer = witnessAdmission(fields), let admission = test.admission, let kept = test.kept
        else { return nil }
        return answer.admission == admission && answer.kept == kept
    }
}
