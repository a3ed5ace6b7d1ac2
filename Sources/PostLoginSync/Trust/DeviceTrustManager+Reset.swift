import DeviceTrust
import Foundation
import LocalStore
import RemoteStore
import SecretCrypto
import SyncModel

// The reset (recovery.md, "Reset: the last resort"): a new epoch with a new identity. On a root whose log
// verifies, in effect at once (the root accepts it); anywhere else, pending for 72 hours, during
// which any root's sync vetoes it.
extension DeviceTrustManager {
    /// What a reset did.
    public struct ResetOutcome: Sendable {
        /// The new epoch.
        public var epoch: UInt32
        /// Whether it is in effect now (a root accepted it) or pending.
        public var inEffect: Bool
        /// When a pending reset takes effect unless vetoed (Unix seconds).
        public var effectiveAt: UInt64?
        /// The new identity's fingerprint.
        public var fingerprint: IdentityFingerprint
        /// The recovery key bound to the new epoch (show it once), when one was made.
        public var recoveryKey: RecoveryKey?
    }

    /// What a reset starts from: the verified trust, `nil` when the log does not verify (a reset
    /// is the way out of that); a legacy root migrates first.
    func resetStartingPoint() async throws -> TrustSnapshot? {
        var snapshot: TrustSnapshot?
        do {
            snapshot = try await verified()
        } catch let error as SyncError
            where [.trustLogInvalid, .trustLogForked, .trustLogTruncated, .trustLogStale, .identityReset]
            .contains(error.code)
        {
            snapshot = nil
        }
        if snapshot?.log == nil, snapshot != nil, try await local.identityKey() != nil {
            try await migrate(recoveryKey: nil)
            snapshot = try await verified()
        }
        return snapshot
    }

    /// Starts a new epoch of the user's log with this desktop as its root (`trust reset`, after
    /// the person typed their email): in effect at once on a root whose log verifies (a legacy
    /// root migrates first); otherwise pending for 72 hours unless a root vetoes it. Every other
    /// device then reports `identityReset` until it is paired again with a code from this one.
    ///
    /// - Throws: ``SyncError`` `.freshSignInRequired`, `.trustLogRefused` (a reset pending or asked
    ///   for in the last 24 hours), `.wrongRole`; remote and local errors.
    public func reset(recovery: RecoveryChoice = .new) async throws -> ResetOutcome {
        let (identity, user) = try await signedIn()
        guard identity.role == .desktop else {
            throw SyncError(code: .wrongRole, message: "only a desktop can become the root of a new identity")
        }
        let snapshot = try await resetStartingPoint()
        let rows = try await remote.trustLogGeneses()
        let highest = rows.map(\.epoch).max() ?? 0
        let epoch = max(2, highest + 1)
        let recoveryKey = recovery == .new ? RecoveryKey() : nil
        let seed = Ed25519PrivateKey()
        var rootState: TrustLogState?
        var rootKey: Ed25519PrivateKey?
        if let state = snapshot?.log, let key = try? await self.rootKey(state) {
            rootState = state
            rootKey = key
        }
        let prior: UInt32
        if let rootState { prior = rootState.epoch } else { prior = try await currentEpoch(rows) }
        let genesis = try TrustLogWriter.genesis(
            userID: user, epoch: epoch, priorEpoch: prior, identity: seed,
            recoveryKey: recoveryKey?.agreementKey(userID: user).publicKey,
            certificate: try await ownCertificate(identity, user: user, role: .trustRoot),
            signingKey: try await local.signingKey(), createdAt: seconds)
        var accept: TrustLogWriter?
        if let rootState, let rootKey {
            var writer = try TrustLogWriter(state: rootState, identity: rootKey, author: identity.id)
            try writer.append(
                .resetAnswer(
                    ResetAnswer(
                        userID: user, resetEpoch: epoch, resetGenesisHash: genesis.written[0].hash, verdict: .accept)),
                createdAt: seconds)
            accept = writer
        }
        let keyName = DeviceKeyName.resetIdentity(epoch: epoch)
        local.removeIdentitySeed(at: keyName)
        try local.writeIdentitySeed(seed, to: keyName)
        do {
            try await remote.requestIdentityReset(
                TrustLogAppend(entry: genesis.written[0].text, backup: genesis.written[0].backup),
                accept: accept.map { TrustLogAppend(entry: $0.written[0].text, backup: $0.written[0].backup) })
        } catch let error as RemoteStoreError {
            // The call may have landed with its answer lost: the log decides, as for a
            // succession. The seed goes only when the log, read again, lacks this genesis.
            let stored = try? await remote.trustLogGeneses()
            switch stored.map({ $0.contains { $0.epoch == epoch && $0.entry == genesis.written[0].text } }) {
            case true?: logger?.notice("trust log: the reset is in the log (its answer was lost)")
            case false?:
                local.removeIdentitySeed(at: keyName)
                throw Self.refusal(error)
            case nil: throw error
            }
        }
        var outcome = ResetOutcome(
            epoch: epoch, inEffect: accept != nil, effectiveAt: nil, fingerprint: IdentityFingerprint(seed.publicKey),
            recoveryKey: recoveryKey)
        if accept != nil {
            try local.promoteIdentitySeed(from: keyName)
            var sync = TrustLogSync(local: local, remote: remote, phase: .secrets, now: options.now())
            try await sync.save(
                genesis.state,
                new: genesis.written.map { PinnedLogEntry(seq: $0.seq, text: $0.text, hash: $0.hash) },
                highestEpoch: epoch, replacing: true)
            try await sync.witness(genesis.state)
        } else {
            outcome.effectiveAt = genesis.state.genesisCreatedAt + TrustLogEpochs.resetDelay
        }
        return outcome
    }

    /// The epoch the server holds current, judged as it does (answers counted by the chain,
    /// signatures not checked): where a desktop that cannot verify the log starts a reset from.
    func currentEpoch(_ geneses: [TrustLogRow]) async throws -> UInt32 {
        let infos = TrustLogEpochs.readGeneses(geneses.map(\.entry), userID: remote.userID).geneses
        var epoch: UInt32 = 1
        while true {
            let rows =
                infos.contains { $0.epoch == epoch }
                ? try await remote.trustLogRows(epoch: epoch, fromSeq: 0) : []
            let answers = TrustLogEpochs.Answers(
                rows: rows.map { ($0.entry, $0.backup) }, userID: remote.userID, epoch: epoch)
            guard
                case .move(let next) = TrustLogEpochs.step(from: epoch, answers: answers, geneses: infos, now: seconds)
                    .step
            else { return epoch }
            epoch = next.epoch
        }
    }
}
