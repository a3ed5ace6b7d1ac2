import DeviceTrust
import Foundation
import LocalStore
import RemoteStore
import SecretCrypto
import SyncModel

/// Brings this device's view of the trust log up to date (trust-log.md, "Verification"): from
/// the pin, the rows after it and every genesis are read (the witnesses first), what is new is
/// verified, witnesses and resets are judged, and the pin moves, in one local transaction.
/// Anything that does not verify throws: fail closed.
struct TrustLogSync {
    let local: DeviceStore
    let remote: any CompleteRemote
    let phase: SyncPhase
    let now: Date
    /// Warnings and reports gathered on the way (never a verification failure).
    var problems: [SyncIssue] = []
    /// Entries verified by this load.
    var verified = 0
    /// Rows read from the remote log by this load (entries, geneses, witnesses).
    var read = 0
    /// Pending resets of the verified epoch.
    var pending: [PendingReset] = []

    init(local: DeviceStore, remote: any CompleteRemote, phase: SyncPhase, now: Date) {
        self.local = local
        self.remote = remote
        self.phase = phase
        self.now = now
    }

    var seconds: UInt64 { UInt64(max(0, now.timeIntervalSince1970)) }
    var user: UUID { remote.userID }

    mutating func load(reported: TrustLogHead??) async throws -> TrustSnapshot? {
        do {
            if let pin = try await local.trustLogPin() {
                return try await refresh(pin, reported: reported)
            }
            if let legacy = try await local.pinnedIdentityKey() {
                return try await loadLegacy(pinned: legacy)
            }
        } catch let error as SyncError where error.code == .identityReset {
            if let adopted = try await adoptOwnReset() { return adopted }
            throw error
        }
        return try await adoptOwnReset()
    }

    /// A reset this desktop asked for (its seed kept in `identity.reset.<epoch>.key`): once in
    /// effect, this device is that epoch's root and pins it; once vetoed or superseded, the seed
    /// is deleted.
    mutating func adoptOwnReset() async throws -> TrustSnapshot? {
        let epochs = local.resetIdentitySeedEpochs()
        guard !epochs.isEmpty, let walked = try await walk() else { return nil }
        let state = walked.state
        let identity = try await local.requireIdentity()
        for epoch in epochs {
            let name = DeviceKeyName.resetIdentity(epoch: epoch)
            if epoch == state.epoch, let seed = try local.identitySeed(at: name),
                seed.publicKey == state.identityKey,
                state.isRoot(identity.id)
            {
                try await pin(walked)
                try local.promoteIdentitySeed(from: name)
                for other in epochs where other != epoch {
                    local.removeIdentitySeed(at: DeviceKeyName.resetIdentity(epoch: other))
                }
                return try await snapshot(state)
            }
            if epoch < state.epoch || state.vetoes.contains(where: { $0.epoch == epoch }) {
                local.removeIdentitySeed(at: name)
            }
        }
        return nil
    }

    /// A reset this desktop asked for that a root vetoed: said once, here where it was asked,
    /// and its seed deleted (it can never take effect).
    mutating func reportVetoedOwnResets(_ state: TrustLogState) {
        for epoch in local.resetIdentitySeedEpochs() where state.vetoes.contains(where: { $0.epoch == epoch }) {
            local.removeIdentitySeed(at: DeviceKeyName.resetIdentity(epoch: epoch))
            problems.append(
                note(
                    .resetVetoed,
                    "the identity reset this device asked for (epoch \(epoch)) was vetoed by a trust root: nothing "
                        + "changed, every device keeps the identity in force; if the roots are lost, a recovery key "
                        + "makes this desktop a root (`sync-cli trust recover`)"))
        }
    }

    func note(_ code: SyncIssue.Code, _ message: String, row: String? = nil) -> SyncIssue {
        SyncIssue(phase: phase, code: code, rowID: row, message: message)
    }

    // MARK: - From the pin

    /// Whether a feed's head says nothing changed since the pin.
    static func unchanged(_ pin: TrustLogPin, _ reported: TrustLogHead??) -> Bool {
        guard case .some(.some(let head)) = reported else { return false }
        return head.epoch == pin.epoch && head.seq == pin.headSeq
            && head.hash == ByteEncoding.hex(pin.headHash) && head.highestEpoch <= pin.highestEpoch
            && head.pendingEpoch == nil
    }

    mutating func refresh(_ pin: TrustLogPin, reported: TrustLogHead??) async throws -> TrustSnapshot {
        let state: TrustLogState
        do {
            state = try TrustLogState.decoded(pin.state)
        } catch let error as LocalStoreError {
            // Fail closed, and say what to do: the pin is what every later entry is checked against.
            throw SyncError(
                code: .trustLogInvalid,
                message:
                    "\(error.message). This device trusts nothing until that is resolved: restore this store from a "
                    + "backup, or pair this device again from a new store (`sync-cli init --store NEW`, then "
                    + "`sync-cli trust join` there with a code from `sync-cli trust invite` on a root)")
        }
        // The witnesses are read before the log, and also when the feed says nothing changed
        // (one call): a witness newer than the rows then read means the rows were cut, and the
        // newest root witness is how fresh this view is.
        let witnesses = try await remote.trustLogWitnesses(epoch: pin.epoch)
        read += witnesses.count
        if Self.unchanged(pin, reported) {
            var new: [PinnedLogEntry] = []
            let (current, evaluation) = try await judgeWitnesses(witnesses, state: state, new: &new, log: remote)
            if new.isEmpty {
                try await vouch(current, evaluation, moved: pin.witnessedSeq == nil)
                return try await snapshot(current)
            }
            // A witness beyond the head the feed reported: read the log as if it had changed.
        }
        let geneses = try await remote.trustLogGeneses()
        let rows = try await remote.trustLogRows(epoch: pin.epoch, fromSeq: pin.headSeq)
        read += geneses.count + rows.count
        let infos = readGeneses(geneses)
        guard let own = geneses.first(where: { $0.epoch == pin.epoch }) else {
            throw Self.truncated(0, "the genesis of epoch \(pin.epoch), which this device pinned, is gone")
        }
        guard hash(own.entry) == Array(state.genesisHash) else {
            throw Self.forked(0, "the genesis of epoch \(pin.epoch) is not the one this device pinned")
        }
        guard let first = rows.first, first.seq == pin.headSeq else {
            throw Self.truncated(pin.headSeq, "the log ends before seq \(pin.headSeq), which this device verified")
        }
        guard hash(first.entry) == pin.headHash else {
            throw Self.forked(pin.headSeq, "the entry at seq \(pin.headSeq) is not the one this device verified")
        }
        var (current, new) = try extend(state, with: Array(rows.dropFirst()))
        let evaluation: TrustLogWitnesses.Evaluation
        (current, evaluation) = try await judgeWitnesses(witnesses, state: current, new: &new, log: remote)
        try await checkMemory(current)
        try await save(current, new: new, highestEpoch: max(pin.highestEpoch, infos.map(\.epoch).max() ?? 0))
        try judgeResets(of: current, geneses: infos)
        try await vouch(current, evaluation, moved: current.headSeq != pin.headSeq || pin.witnessedSeq == nil)
        if current.headCreatedAt > seconds + TrustLogEpochs.clockAllowance {
            problems.append(
                note(
                    .trustLogClock,
                    "this device's clock is more than 600 s behind the trust log's last entry: check its clock"))
        }
        return try await snapshot(current)
    }

    /// How often a root witnesses an unchanged head again, and how old the newest root's word on
    /// a desktop's head may be before that desktop stops sealing (trust-log.md, "A frozen view").
    static let witnessInterval: UInt64 = 3_600
    static let freshnessBound: UInt64 = 72 * 3_600

    /// Publishes this device's witness when its head moved, or, on a root, when its last
    /// witness of the head is an hour old. Then a desktop that is not a root checks that a root
    /// vouched for its head within ``freshnessBound``: the head entry itself (written under the
    /// identity key, which only roots hold) or a root's witness of it. Else `trustLogStale`.
    mutating func vouch(_ state: TrustLogState, _ evaluation: TrustLogWitnesses.Evaluation, moved: Bool) async throws {
        let identity = try await local.requireIdentity()
        let isRoot = state.isRoot(identity.id)
        let own = evaluation.counted[identity.id]
        let due =
            isRoot
            && (own.map { $0.seq != state.headSeq || $0.seenAt &+ Self.witnessInterval <= seconds } ?? true)
        if moved || due { try await witness(state) }
        guard identity.role == .desktop, !isRoot else { return }
        // A head entry dated ahead of this clock (beyond the allowance) vouches for nothing, as a
        // witness from the future counts for nothing.
        let entryWord = state.headCreatedAt <= seconds &+ TrustLogEpochs.clockAllowance ? state.headCreatedAt : 0
        let vouched = max(entryWord, evaluation.newestRootWitness(of: state) ?? 0)
        guard vouched &+ Self.freshnessBound <= seconds else { return }
        throw SyncError(
            code: .trustLogStale,
            message: "no trust root has vouched for this device's view of the trust log (seq \(state.headSeq)) since "
                + "\(Self.date(vouched)), over 72 hours: the server may be hiding newer entries. Run a sync on a "
                + "trust root (`sync-cli sync` there); nothing is sealed or accepted here until one has")
    }

    /// Verifies `rows` after `state`; every failure is `trustLogInvalid`.
    mutating func extend(_ state: TrustLogState, with rows: [TrustLogRow]) throws -> (TrustLogState, [PinnedLogEntry]) {
        do {
            let (next, hashes) = try TrustLogVerifier.extend(state, with: rows.map(\.entry))
            verified += hashes.count
            let entries = zip(rows, hashes).map { PinnedLogEntry(seq: $0.seq, text: $0.entry, hash: $1) }
            return (next, entries)
        } catch {
            throw Self.invalid(error)
        }
    }

    /// Counts the witnesses against the verified head, after one re-read when one is beyond it.
    mutating func judgeWitnesses(
        _ rows: [TrustLogWitnessRow], state: TrustLogState, new: inout [PinnedLogEntry], log: any TrustLogRemote
    ) async throws -> (TrustLogState, TrustLogWitnesses.Evaluation) {
        let parsed = rows.map { TrustLogWitnesses.Row(deviceID: $0.deviceID, body: $0.body, signature: $0.signature) }
        var state = state
        var evaluation = try await evaluate(parsed, state: state, new: new)
        if evaluation.beyondHead != nil {
            let more = try await log.trustLogRows(epoch: state.epoch, fromSeq: state.headSeq + 1)
            let (next, entries) = try extend(state, with: more)
            state = next
            new += entries
            evaluation = try await evaluate(parsed, state: state, new: new)
        }
        if let seq = evaluation.forkedAt {
            throw Self.forked(seq, "a device of this user witnessed another entry at seq \(seq) than this log holds")
        }
        if let seq = evaluation.beyondHead {
            throw Self.truncated(seq, "a device of this user witnessed seq \(seq), beyond this log's end")
        }
        if evaluation.ignored > 0 {
            problems.append(
                note(.invalidWitness, "\(evaluation.ignored) witness rows do not count (ignored)"))
        }
        if evaluation.possibleTruncation {
            problems.append(
                note(
                    .invalidWitness,
                    "a device unknown to this log witnessed a seq beyond its end: possible truncation"))
        }
        return (state, evaluation)
    }

    func evaluate(
        _ rows: [TrustLogWitnesses.Row], state: TrustLogState, new: [PinnedLogEntry]
    ) async throws
        -> TrustLogWitnesses.Evaluation
    {
        var hashes: [UInt64: [UInt8]] = Dictionary(uniqueKeysWithValues: new.map { ($0.seq, $0.hash) })
        for row in rows {
            guard let witness = try? TrustLogWitness.parse(row.body), witness.epoch == state.epoch,
                witness.seq <= state.headSeq, hashes[witness.seq] == nil
            else { continue }
            hashes[witness.seq] = try await local.trustLogEntryHash(epoch: state.epoch, seq: witness.seq)
        }
        return TrustLogWitnesses.evaluate(rows, state: state, hashAt: { hashes[$0] }, now: seconds)
    }

    /// A revocation this device verified in this epoch is a floor: a log without it was cut.
    func checkMemory(_ state: TrustLogState) async throws {
        for remembered in try await local.knownRevocations() where remembered.epoch == state.epoch {
            guard state.devices[remembered.deviceID]?.isRevoked == true else {
                throw Self.truncated(
                    state.headSeq + 1,
                    "the log lacks the revocation of device \(remembered.deviceID.canonical), which this device verified"
                )
            }
        }
    }

    /// Reports this epoch's pending resets; throws `identityReset` when one took effect (or an
    /// accept closed the epoch).
    mutating func judgeResets(of state: TrustLogState, geneses: [TrustLogEpochs.GenesisInfo]) throws {
        let (step, pending) = TrustLogEpochs.step(
            from: state.epoch, answers: .init(state: state), geneses: geneses, now: seconds)
        switch step {
        case .stay: break
        case .move(let genesis): throw Self.identityReset(at: genesis.createdAt)
        case .forked: throw Self.forked(0, "two resets of epoch \(state.epoch) are in effect")
        case .truncated(let reference):
            throw Self.truncated(0, "an accepted reset (epoch \(reference.epoch)) has no readable genesis")
        }
        if state.isClosed { throw Self.identityReset(at: state.headCreatedAt) }
        for reset in pending {
            self.pending.append(PendingReset(epoch: reset.epoch, hash: reset.hash, deadline: reset.vetoDeadline))
            problems.append(
                note(
                    .resetPending,
                    "a reset of this account's identity (epoch \(reset.epoch)) is pending: it takes effect at "
                        + "\(Self.date(reset.vetoDeadline)) unless a root vetoes it (a root's sync does)"))
        }
    }

    /// Saves the pin and remembers the revocations verified.
    func save(
        _ state: TrustLogState, new: [PinnedLogEntry], highestEpoch: UInt32, replacing: Bool = false
    )
        async throws
    {
        let pin = try await local.trustLogPin()
        guard replacing || !new.isEmpty || pin?.highestEpoch != highestEpoch else { return }
        try await local.saveTrustLogPin(
            TrustLogPin(
                epoch: state.epoch, headSeq: state.headSeq, headHash: Array(state.headHash), state: try state.encoded(),
                highestEpoch: highestEpoch, witnessedSeq: replacing ? nil : pin?.witnessedSeq),
            entries: new, replacing: replacing)
        try await local.recordRevocations(Array(state.revocations.values))
    }

    /// Publishes this device's witness of the verified head (a refusal is not retried).
    mutating func witness(_ state: TrustLogState) async throws {
        let identity = try await local.requireIdentity()
        let witness = TrustLogWitness(
            userID: user, deviceID: identity.id, epoch: state.epoch, seq: state.headSeq,
            entryHash: Array(state.headHash), seenAt: seconds)
        let (body, signature) = witness.signed(by: try await local.signingKey())
        do {
            try await remote.publishWitness(deviceID: identity.id, body: body, signature: signature)
        } catch let error as RemoteStoreError where error.code != .network {
            // A refusal (an older seq, a device row the server does not know) is not retried.
        }
        try await local.setWitnessedSeq(state.headSeq)
    }

    /// The snapshot of a verified state, with what this device remembers.
    mutating func snapshot(_ state: TrustLogState) async throws -> TrustSnapshot {
        reportVetoedOwnResets(state)
        var certificates = state.trustedCertificates
        var revocations = state.revocations
        var untrusted = Set<UUID>()
        for remembered in try await local.knownRevocations() where remembered.epoch != state.epoch {
            let e = remembered.ed25519PublicKey
            let holders = state.devices.values.filter {
                $0.isTrusted && ($0.x25519 == remembered.x25519PublicKey || (e != nil && $0.ed25519 == e))
            }
            for holder in holders {
                untrusted.insert(holder.id)
                certificates[holder.id] = nil
                problems.append(
                    note(
                        .revocationMissingFromLog,
                        "device \(holder.id.canonical) holds keys this device saw revoked, but the log certifies them: "
                            + "it stays untrusted here; revoke it again from a root", row: holder.id.canonical))
            }
            if state.devices[remembered.deviceID]?.isTrusted != true { revocations[remembered.deviceID] = remembered }
        }
        let identityKey = state.identityKey
        return TrustSnapshot(
            identityKey: identityKey, certificates: certificates, revocations: revocations, problems: problems,
            roots: Set(state.roots), source: .log(state.position), log: state, untrusted: untrusted,
            verifiedEntries: verified, readEntries: read, pendingResets: pending)
    }

    // MARK: - Helpers

    func readGeneses(_ rows: [TrustLogRow]) -> [TrustLogEpochs.GenesisInfo] {
        TrustLogEpochs.readGeneses(rows.map(\.entry), userID: user).geneses
    }

    func hash(_ text: String) -> [UInt8] {
        TrustLogEntry.hash(of: (try? ByteEncoding.bytes(base64: text)) ?? [])
    }

    /// A Unix time as a person reads it in a message: RFC 3339 in UTC (`JSONStyle.date`), the
    /// one form every date the CLI prints has.
    static func date(_ seconds: UInt64) -> String {
        JSONStyle.date(Date(timeIntervalSince1970: TimeInterval(min(seconds, 1 << 40))))
    }

    static func invalid(_ failure: DeviceTrustError) -> SyncError {
        SyncError(
            code: .trustLogInvalid,
            message: "\(failure): nothing is sealed or accepted until the log verifies (compare `trust status` "
                + "across devices; the operator may have altered it)")
    }

    static func forked(_ seq: UInt64, _ why: String) -> SyncError {
        SyncError(
            code: .trustLogForked,
            message: "the trust log forked at seq \(seq): \(why); nothing is sealed or accepted")
    }

    static func truncated(_ seq: UInt64, _ why: String) -> SyncError {
        SyncError(
            code: .trustLogTruncated,
            message: "the trust log was cut at seq \(seq): \(why); nothing is sealed or accepted")
    }

    static func identityReset(at seconds: UInt64) -> SyncError {
        SyncError(
            code: .identityReset,
            message: "this account's identity was reset on \(date(seconds)); re-pair this device with a code from a "
                + "device of the new identity; if you did not do this, change your password and sign out everywhere")
    }
}
