import DeviceTrust
import Foundation
import LocalStore
import RemoteStore
import SecretCrypto
import SyncModel

/// A device without a pin (a first join, a recovery, a lost cache) walks the epochs from epoch 1
/// and verifies each on its path from seq 0 (trust-log.md, "Epochs and resets").
extension TrustLogSync {
    /// The epoch a walk ended in, verified whole.
    struct Walked: Sendable {
        var state: TrustLogState
        var entries: [PinnedLogEntry]
        /// Pending resets of that epoch.
        var pending: [TrustLogEpochs.GenesisInfo]
        var highestEpoch: UInt32
        /// Each counted witness's seq (the recovery's lower bound).
        var witnessed: [UInt64]
    }

    /// Walks to the current epoch; `nil` when the user has no log (no epoch 1, no reset in effect).
    ///
    /// - Throws: ``SyncError`` `.trustLogInvalid` (the epoch reached does not verify),
    ///   `.trustLogForked` (two resets in effect, a witness of another entry), `.trustLogTruncated`
    ///   (an accept naming a genesis that cannot be read, a witness beyond the end).
    mutating func walk() async throws -> Walked? {
        let genesisRows = try await remote.trustLogGeneses()
        read += genesisRows.count
        let geneses = readGeneses(genesisRows)
        var epoch: UInt32 = 1
        while true {
            let witnesses = try await remote.trustLogWitnesses(epoch: epoch)
            let rows =
                geneses.contains(where: { $0.epoch == epoch })
                ? try await remote.trustLogRows(epoch: epoch, fromSeq: 0) : []
            read += witnesses.count + rows.count
            var verifiedEpoch: (state: TrustLogState, hashes: [[UInt8]])?
            var failure: DeviceTrustError?
            if !rows.isEmpty {
                do {
                    verifiedEpoch = try TrustLogVerifier.verify(rows.map(\.entry), userID: user, epoch: epoch)
                    verified += rows.count
                } catch {
                    failure = error
                }
            }
            let answers =
                verifiedEpoch.map { TrustLogEpochs.Answers(state: $0.state) }
                ?? TrustLogEpochs.Answers(rows: rows.map { ($0.entry, $0.backup) }, userID: user, epoch: epoch)
            let (step, pending) = TrustLogEpochs.step(from: epoch, answers: answers, geneses: geneses, now: seconds)
            switch step {
            case .move(let next):
                epoch = next.epoch
                continue
            case .forked: throw Self.forked(0, "two resets of epoch \(epoch) are in effect")
            case .truncated(let reference):
                throw Self.truncated(0, "an accepted reset (epoch \(reference.epoch)) has no readable genesis")
            case .stay: break
            }
            if rows.isEmpty { return nil }
            guard let (state, hashes) = verifiedEpoch else { throw Self.invalid(failure!) }
            var entries = zip(rows, hashes).map { PinnedLogEntry(seq: $0.seq, text: $0.entry, hash: $1) }
            let (final, _) = try await judgeWitnesses(witnesses, state: state, new: &entries, log: remote)
            try await checkFloor(final, entries: entries)
            let counted = TrustLogWitnesses.evaluate(
                witnesses.map { .init(deviceID: $0.deviceID, body: $0.body, signature: $0.signature) }, state: final,
                hashAt: { seq in entries.first { $0.seq == seq }?.hash }, now: seconds)
            return Walked(
                state: final, entries: entries, pending: pending, highestEpoch: geneses.map(\.epoch).max() ?? epoch,
                witnessed: counted.counted.values.map(\.seq))
        }
    }

    /// Pins a walked epoch (replacing any earlier pin) and publishes this device's witness.
    /// What this device already knows of the epoch it walked to bounds it from below: the head
    /// it pinned (the same entry at that seq) and every revocation it verified there.
    func checkFloor(_ state: TrustLogState, entries: [PinnedLogEntry]) async throws {
        if let pin = try await local.trustLogPin(), pin.epoch == state.epoch {
            guard state.headSeq >= pin.headSeq else {
                throw Self.truncated(pin.headSeq, "the log ends before seq \(pin.headSeq), which this device verified")
            }
            guard entries.first(where: { $0.seq == pin.headSeq })?.hash == pin.headHash else {
                throw Self.forked(pin.headSeq, "the entry at seq \(pin.headSeq) is not the one this device verified")
            }
        }
        try await checkMemory(state)
    }

    mutating func pin(_ walked: Walked) async throws {
        try await save(walked.state, new: walked.entries, highestEpoch: walked.highestEpoch, replacing: true)
        try await witness(walked.state)
    }
}
