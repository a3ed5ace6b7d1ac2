import Foundation
import SecretCrypto

/// Epochs and resets as a client decides them (trust-log.md, "Epochs and resets"): every genesis after
/// epoch 1 is a reset of its prior epoch, pending for 72 hours unless a root of that epoch vetoes
/// it, in effect at once if a root accepts it.
public enum TrustLogEpochs {
    /// How long a reset waits for a veto: 72 hours.
    public static let resetDelay: UInt64 = 259_200
    /// The clock allowance: the server keeps `created_at` within 600 s of its clock.
    public static let clockAllowance: UInt64 = 600

    /// A genesis as every reader reads it, verified or not: its position and hash.
    public struct GenesisInfo: Sendable, Hashable {
        public var epoch: UInt32
        public var priorEpoch: UInt32
        public var createdAt: UInt64
        public var hash: [UInt8]
        /// The stored text.
        public var text: String

        public init(epoch: UInt32, priorEpoch: UInt32, createdAt: UInt64, hash: [UInt8], text: String) {
            self.epoch = epoch
            self.priorEpoch = priorEpoch
            self.createdAt = createdAt
            self.hash = hash
            self.text = text
        }

        public var reference: ResetReference { ResetReference(epoch: epoch, genesisHash: hash) }
        /// When it takes effect unless vetoed: `T + 600`, `T = created_at + 72 h`.
        public var deadline: UInt64 { createdAt &+ resetDelay &+ clockAllowance }
        /// `T = created_at + 72 h`: the server takes a veto (an append to the prior epoch) only
        /// before it, so it is the deadline a person is shown. ``deadline`` allows for clocks.
        public var vetoDeadline: UInt64 { createdAt &+ resetDelay }
    }

    /// Reads every genesis row as **E** (a) does (shape, user, seq 0); unreadable ones are
    /// skipped and counted.
    public static func readGeneses(_ rows: [String], userID: UUID) -> (geneses: [GenesisInfo], unreadable: Int) {
        var geneses: [GenesisInfo] = []
        var unreadable = 0
        for text in rows {
            let epoch = (try? ByteEncoding.bytes(base64: text)).flatMap { bytes in
                bytes.count >= 62 ? TrustLogServerRules.read32(bytes, 58) : nil
            }
            guard let epoch,
                let checked = try? TrustLogServerRules.check(
                    text, backup: nil, userID: userID, epoch: epoch, head: nil, now: nil),
                let prior = checked.priorEpoch
            else {
                unreadable += 1
                continue
            }
            geneses.append(
                GenesisInfo(
                    epoch: epoch, priorEpoch: prior, createdAt: checked.createdAt, hash: checked.hash, text: text))
        }
        return (geneses.sorted { $0.epoch < $1.epoch }, unreadable)
    }

    /// What a reset's prior epoch says of it.
    public enum Effect: Sendable, Hashable {
        /// An accept names it, or its 72 hours passed with no veto while the prior epoch stood still.
        case inEffect
        /// A veto names it, or its prior epoch went on after its deadline: it never takes effect.
        case vetoed
        /// Neither yet: reported until `deadline` (device clock).
        case pending(deadline: UInt64)
    }

    /// The answers an epoch holds, counted by the chain.
    public struct Answers: Sendable, Hashable {
        public var vetoes: [ResetReference]
        public var accepts: [ResetReference]
        /// The `created_at` of the head of the prefix that passes **E** (`nil`: empty).
        public var headCreatedAt: UInt64?

        public init(vetoes: [ResetReference] = [], accepts: [ResetReference] = [], headCreatedAt: UInt64? = nil) {
            self.vetoes = vetoes
            self.accepts = accepts
            self.headCreatedAt = headCreatedAt
        }

        /// Counts the answers of an epoch's rows by the chain.
        public init(rows: [(entry: String, backup: String?)], userID: UUID, epoch: UInt32) {
            let counted = TrustLogServerRules.answers(rows, userID: userID, epoch: epoch)
            self.init(vetoes: counted.vetoes, accepts: counted.accepts, headCreatedAt: counted.headCreatedAt)
        }

        /// The answers of an epoch that verified.
        public init(state: TrustLogState) {
            self.init(
                vetoes: state.vetoes, accepts: state.accepted.map { [$0] } ?? [], headCreatedAt: state.headCreatedAt)
        }
    }

    /// Whether `genesis` is in effect, vetoed or pending, by its prior epoch's answers and `now`.
    public static func effect(of genesis: GenesisInfo, answers: Answers, now: UInt64) -> Effect {
        let reference = genesis.reference
        if answers.accepts.contains(reference) { return .inEffect }
        if answers.vetoes.contains(reference) { return .vetoed }
        let deadline = genesis.deadline
        guard deadline <= now else { return .pending(deadline: deadline) }
        // Past its deadline, it took effect unless its prior epoch went on after it (the server
        // takes no append to the prior epoch from T on): then it never will (a backdated insert).
        return (answers.headCreatedAt ?? 0) <= deadline ? .inEffect : .vetoed
    }

    /// Where a walk goes from an epoch.
    public enum Step: Sendable, Hashable {
        /// No reset of it is in effect: it is current.
        case stay
        /// Exactly one reset is in effect: go on in its epoch.
        case move(GenesisInfo)
        /// Two resets of the epoch are in effect.
        case forked
        /// An accept names a genesis that cannot be read.
        case truncated(ResetReference)
    }

    /// The resets of `epoch` and what each is, then the step a walk takes from it.
    public static func step(
        from epoch: UInt32, answers: Answers, geneses: [GenesisInfo], now: UInt64
    ) -> (step: Step, pending: [GenesisInfo]) {
        let resets = geneses.filter { $0.priorEpoch == epoch && $0.epoch > epoch }
        for accept in answers.accepts where !resets.contains(where: { $0.reference == accept }) {
            return (.truncated(accept), [])
        }
        var inEffect: [GenesisInfo] = []
        var pending: [GenesisInfo] = []
        for reset in resets {
            switch effect(of: reset, answers: answers, now: now) {
            case .inEffect: inEffect.append(reset)
            case .pending: pending.append(reset)
            case .vetoed: break
            }
        }
        switch inEffect.count {
        case 0: return (.stay, pending)
        case 1: return (.move(inEffect[0]), pending)
        default: return (.forked, pending)
        }
    }
}

/// The witnesses of an epoch as a client counts them (trust-log.md, "Verification").
public enum TrustLogWitnesses {
    /// A stored witness row.
    public struct Row: Sendable, Hashable {
        public var deviceID: UUID
        public var body: String
        public var signature: String

        public init(deviceID: UUID, body: String, signature: String) {
            self.deviceID = deviceID
            self.body = body
            self.signature = signature
        }
    }

    /// What the rows say against a verified state.
    public struct Evaluation: Sendable, Hashable {
        /// Each device's highest-seq witness that counts.
        public var counted: [UUID: TrustLogWitness] = [:]
        /// Rows ignored (garbage, foreign, other epochs, revoked or unknown devices, bad signatures).
        public var ignored = 0
        /// A device unknown at the head witnessed a seq beyond it.
        public var possibleTruncation = false
        /// The first seq at which a counted witness names another hash than the log's.
        public var forkedAt: UInt64?
        /// The highest counted seq beyond the head.
        public var beyondHead: UInt64?

        /// When a root last vouched for `state`'s head: the newest `seen_at` of a counted
        /// witness of that very entry by a device the state makes a root, or `nil` (trust-log.md,
        /// "A frozen view").
        public func newestRootWitness(of state: TrustLogState) -> UInt64? {
            counted.values.filter {
                state.isRoot($0.deviceID) && $0.seq == state.headSeq && $0.entryHash == Array(state.headHash)
            }.map(\.seenAt).max()
        }
    }

    /// Counts `rows` against `state` (whose hashes `hashAt` gives by seq) at `now`.
    public static func evaluate(
        _ rows: [Row], state: TrustLogState, hashAt: (UInt64) -> [UInt8]?, now: UInt64
    ) -> Evaluation {
        var result = Evaluation()
        for row in rows {
            guard let witness = try? TrustLogWitness.parse(row.body), witness.userID == state.userID,
                witness.deviceID == row.deviceID, witness.epoch == state.epoch
            else {
                result.ignored += 1
                continue
            }
            guard let device = state.devices[row.deviceID], device.isTrusted, let key = device.ed25519 else {
                if state.devices[row.deviceID] == nil && witness.seq > state.headSeq {
                    result.possibleTruncation = true
                }
                result.ignored += 1
                continue
            }
            guard TrustLogWitness.verifies(body: row.body, signature: row.signature, key: key),
                witness.seenAt <= now &+ TrustLogEpochs.clockAllowance
            else {
                result.ignored += 1
                continue
            }
            // Its highest seq, and of those the newest (a root witnesses an unchanged head again).
            if let existing = result.counted[row.deviceID],
                (existing.seq, existing.seenAt) >= (witness.seq, witness.seenAt)
            {
                continue
            }
            result.counted[row.deviceID] = witness
        }
        for witness in result.counted.values.sorted(by: { $0.seq < $1.seq }) {
            if witness.seq > state.headSeq {
                result.beyondHead = max(result.beyondHead ?? 0, witness.seq)
            } else if hashAt(witness.seq) != witness.entryHash, result.forkedAt == nil {
                result.forkedAt = witness.seq
            }
        }
        return result
    }
}
