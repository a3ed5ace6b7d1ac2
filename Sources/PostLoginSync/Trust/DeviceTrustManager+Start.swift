import DeviceTrust
import Foundation
import LocalStore
import RemoteStore
import SecretCrypto
import SyncModel

// Starting the user's trust log: `trust init` for a new user, the migration of a legacy
// identity by its root (trust.md, "Pairing", and trust-log.md, "Migration from the legacy tables").
extension DeviceTrustManager {
    /// What starting a log (or migrating to one) made.
    public struct Started: Sendable {
        /// The identity key in force: its fingerprint.
        public var fingerprint: IdentityFingerprint
        /// The recovery key bound to the log, to show the person once; `nil` when none was made.
        public var recoveryKey: RecoveryKey?
        /// The head after the start.
        public var head: TrustLogPosition
    }

    /// Whether a recovery key is made with the log.
    public enum RecoveryChoice: Sendable {
        /// A fresh recovery key, returned to show the person once (the default).
        case new
        /// None: the identity cannot be recovered if every root is lost.
        case none
    }

    /// Starts the user's trust log with this desktop as its first root (`trust init`): a genesis
    /// with a fresh identity key and, by default, a fresh recovery key, after a fresh sign-in.
    ///
    /// An earlier call on this device whose answer was lost while the log could not be read (its
    /// seed kept, nothing pinned) is finished instead: when the log is the one it started, this
    /// returns what it made, with the recovery key it kept.
    ///
    /// - Returns: What was made; show ``Started/recoveryKey`` to the person once.
    /// - Throws: ``SyncError`` `.identityExists` whenever the user has a log or a legacy identity
    ///   (on a root too: it never replaces anything), `.freshSignInRequired`, `.wrongRole` on a
    ///   phone; remote and local errors.
    @discardableResult
    public func initialize(recovery: RecoveryChoice = .new) async throws -> Started {
        let (identity, user) = try await signedIn()
        let pinned = try await local.trustLogPin() != nil
        let geneses: [TrustLogRow]
        do {
            geneses = try await remote.trustLogGeneses()
        } catch let error as RemoteStoreError where error.code == .missingTable || error.code == .missingFunction {
            throw SyncError(
                code: .trustUnavailable,
                message:
                    "verified trust needs the trust-log migration (supabase/migrations/20261122002500_trust_log.sql);"
                    + " this remote has no trust log")
        }
        if !pinned, !geneses.isEmpty, let resumed = try await resumeStart(identity, user: user) {
            return resumed
        }
        if pinned {
            let root = (try? await verifiedLog())?.isRoot(identity.id) == true
            throw SyncError(
                code: .identityExists,
                message: root
                    ? "this device is already a trust root of the user's trust log: nothing to do"
                    : "this device is already paired into the user's trust log: nothing to do (`sync-cli trust "
                        + "status` shows it)")
        }
        if !geneses.isEmpty {
            throw SyncError(
                code: .identityExists,
                message: "this user already has a trust log: pair this device with `sync-cli trust join` instead "
                    + "(a code from a trust root); nothing was changed")
        }
        let legacy = try? await remote.fetchIdentityKey()
        if legacy != nil {
            throw SyncError(
                code: .identityExists,
                message: "this user has an identity from before the trust log: its trust root migrates it at its "
                    + "next sync; pair this device with `sync-cli trust join`; nothing was changed")
        }
        guard identity.role == .desktop else {
            throw SyncError(code: .wrongRole, message: "only a desktop can start the trust log (and be its first root)")
        }
        try await engine.upsertOwnDevice(identity, user: user)
        let recoveryKey = recovery == .new ? RecoveryKey() : nil
        let seed = Ed25519PrivateKey()
        let writer = try TrustLogWriter.genesis(
            userID: user, epoch: 1, priorEpoch: 0, identity: seed,
            recoveryKey: recoveryKey?.agreementKey(userID: user).publicKey,
            certificate: try await ownCertificate(identity, user: user, role: .trustRoot),
            signingKey: try await local.signingKey(),
            createdAt: seconds)
        let state = try await binding(recoveryKey) { try await start(writer, seed: seed, count: writer.written.count) }
        logger?.notice("this device started the user's trust log (identity \(IdentityFingerprint(seed.publicKey)))")
        return Started(fingerprint: IdentityFingerprint(seed.publicKey), recoveryKey: recoveryKey, head: state.position)
    }

    /// Migrates a legacy identity to the trust log (trust-log.md, "Migration from the legacy tables" 2), on its root:
    /// one `start_trust_log` call (a fresh sign-in) with the genesis under the legacy key, a
    /// succession to a fresh key (and, with `recoveryKey`, a recovery key bound to the log) and a
    /// veto of any pending reset; then every legacy revocation, certificate and root it verifies.
    ///
    /// - Throws: ``SyncError`` `.notTrustRoot` (no legacy seed), `.identityExists` (a log
    ///   exists), `.freshSignInRequired`; remote and local errors.
    @discardableResult
    public func migrate(recoveryKey: RecoveryKey?) async throws -> Started {
        let (identity, user) = try await signedIn()
        guard let legacy = try await local.identityKey(), try await local.pinnedIdentityKey() == legacy.publicKey else {
            throw SyncError(
                code: .notTrustRoot, message: "this device holds no legacy identity key: it cannot migrate the identity"
            )
        }
        guard try await local.trustLogPin() == nil else {
            throw SyncError(code: .identityExists, message: "this device already verified the user's trust log")
        }
        var sync = TrustLogSync(local: local, remote: remote, phase: .secrets, now: options.now())
        let snapshot = try await sync.legacySnapshot(pinned: legacy.publicKey)
        guard let own = snapshot.certificates[identity.id] else {
            throw SyncError(
                code: .notTrustRoot,
                message: "this root has no legacy certificate that verifies: it cannot start the log with the legacy "
                    + "identity (a root that has one can, or `trust reset`)")
        }
        let geneses = sync.readGeneses(try await remote.trustLogGeneses())
        var certificate = own
        certificate.deviceRole = DeviceTrustRole.trustRoot.rawValue
        var writer = try TrustLogWriter.genesis(
            userID: user, epoch: 1, priorEpoch: 0, identity: legacy, recoveryKey: nil, certificate: certificate,
            signingKey: try await local.signingKey(), createdAt: seconds)
        let seed = Ed25519PrivateKey()
        try writer.succeed(
            to: seed, reason: .seedSuspected, newRecoveryKey: recoveryKey?.agreementKey(userID: user).publicKey,
            revocations: [], createdAt: seconds)
        let (_, pending) = TrustLogEpochs.step(from: 1, answers: .init(), geneses: geneses, now: seconds)
        for reset in pending {
            try writer.append(
                .resetAnswer(
                    ResetAnswer(userID: user, resetEpoch: reset.epoch, resetGenesisHash: reset.hash, verdict: .veto)),
                createdAt: seconds)
        }
        let state = try await binding(recoveryKey) { try await start(writer, seed: seed, count: writer.written.count) }
        logger?.notice("this root migrated the user's identity to the trust log")
        try await finishMigration(state)
        return Started(fingerprint: IdentityFingerprint(seed.publicKey), recoveryKey: recoveryKey, head: state.position)
    }

    /// Appends what the migration still lacks (an interrupted one is finished at the next run):
    /// one revoke per legacy revocation it verifies, one certify per other device's legacy
    /// certificate (role `trust_root` as `trusted_executor`), one root grant per former root that
    /// is a desktop; each group in device-id order. Only its genesis author does this.
    @discardableResult
    func finishMigration(_ state: TrustLogState) async throws -> Bool {
        let identity = try await local.requireIdentity()
        guard let legacy = try await local.pinnedIdentityKey(), try await local.setting(.migrationDone) != true,
            try await local.trustLogEntries(epoch: 1, fromSeq: 0).first.flatMap({
                try? ParsedLogEntry(text: $0.text).entry.author
            }) == identity.id, state.epoch == 1
        else { return false }
        var sync = TrustLogSync(local: local, remote: remote, phase: .secrets, now: options.now())
        let snapshot = try await sync.legacySnapshot(pinned: legacy)
        let former = snapshot.certificates.values.filter { $0.deviceID != identity.id }.sorted {
            $0.deviceID.canonical < $1.deviceID.canonical
        }
        let revoked = snapshot.revocations.values.filter { $0.deviceID != identity.id }.sorted {
            $0.deviceID.canonical < $1.deviceID.canonical
        }
        let user = state.userID
        let missing =
            revoked.contains { state.devices[$0.deviceID]?.isRevoked != true }
            || former.contains { state.devices[$0.deviceID] == nil }
        if missing {
            try await append { writer, now in
                for item in revoked where writer.state.devices[item.deviceID]?.isRevoked != true {
                    let revocation = DeviceRevocation(
                        userID: user, deviceID: item.deviceID, x25519PublicKey: item.x25519PublicKey,
                        revokedAt: UInt64(max(0, item.revokedAt.timeIntervalSince1970)))
                    try? writer.append(.revoke(revocation), createdAt: now)
                }
                for certificate in former where writer.state.devices[certificate.deviceID] == nil {
                    var carried = certificate
                    if carried.deviceRole == DeviceTrustRole.trustRoot.rawValue {
                        carried.deviceRole = DeviceTrustRole.trustedExecutor.rawValue
                    }
                    try? writer.append(.certify(carried), createdAt: now)
                }
                for certificate in former
                where certificate.deviceRole == DeviceTrustRole.trustRoot.rawValue
                    && TrustLogState.isDesktop(certificate.deviceType) && !writer.state.isRoot(certificate.deviceID)
                {
                    try? writer.grantRoot(to: certificate.deviceID, createdAt: now)
                }
            }
        }
        try await local.setSetting(.migrationDone, true)
        return missing
    }

    /// Sends the first `count` entries of `writer` with `start_trust_log`, the new seed kept in
    /// `identity.next.key` until they are accepted; pins the log.
    func start(_ writer: TrustLogWriter, seed: Ed25519PrivateKey, count: Int) async throws -> TrustLogState {
        let next = DeviceKeyName.nextIdentity
        local.removeIdentitySeed(at: next)
        try local.writeIdentitySeed(seed, to: next)
        let first = Array(writer.written.prefix(count))
        do {
            try await remote.startTrustLog(first.map { TrustLogAppend(entry: $0.text, backup: $0.backup) })
        } catch {
            // The call may have landed with its answer lost (a retry then sees 23505): the log
            // decides. Epoch 1 beginning with these very entries means it took; the seed is
            // deleted only when the log, read again, shows it did not.
            switch await started(first) {
            case true?: logger?.notice("trust log: the log was started (its answer was lost)")
            case false?:
                local.removeIdentitySeed(at: next)
                throw (error as? RemoteStoreError).map(Self.refusal) ?? error
            case nil: throw error
            }
        }
        try local.promoteIdentitySeed(from: next)
        let (state, hashes) = try TrustLogVerifier.verify(first.map(\.text), userID: writer.state.userID, epoch: 1)
        var sync = TrustLogSync(local: local, remote: remote, phase: .secrets, now: options.now())
        try await sync.save(
            state, new: zip(first, hashes).map { PinnedLogEntry(seq: $0.seq, text: $0.text, hash: $1) },
            highestEpoch: 1, replacing: true)
        try await sync.witness(state)
        return state
    }

    /// An earlier `trust init` of this device whose answer was lost while the log could not be
    /// read: it kept its seed (`identity.next.key`) and pinned nothing. When epoch 1 verifies,
    /// this device is its root and the seed is its key in force, the start took: the seed is
    /// promoted, the log pinned and witnessed, and the kept recovery key it binds returned to be
    /// shown. `nil` when there is no such seed or the log is not that one (another device's log:
    /// the caller refuses as before).
    func resumeStart(_ identity: DeviceIdentity, user: UUID) async throws -> Started? {
        let next = DeviceKeyName.nextIdentity
        guard let seed = try local.identitySeed(at: next) else { return nil }
        let rows = try await remote.trustLogRows(epoch: 1, fromSeq: 0).sorted { $0.seq < $1.seq }
        guard let (state, hashes) = try? TrustLogVerifier.verify(rows.map(\.entry), userID: user, epoch: 1),
            state.identityKey == seed.publicKey, state.isRoot(identity.id),
            rows.first.flatMap({ try? ParsedLogEntry(text: $0.entry).entry.author }) == identity.id
        else { return nil }
        try local.promoteIdentitySeed(from: next)
        var sync = TrustLogSync(local: local, remote: remote, phase: .secrets, now: options.now())
        try await sync.save(
            state, new: zip(rows, hashes).map { PinnedLogEntry(seq: $0.seq, text: $0.entry, hash: $1) },
            highestEpoch: 1, replacing: true)
        try await sync.witness(state)
        let kept = try local.unshownRecoveryKey().flatMap { try? RecoveryKey(bytes: $0) }
        logger?.notice("trust log: this device's earlier trust init had started the log (its answer was lost)")
        return Started(
            fingerprint: IdentityFingerprint(seed.publicKey),
            recoveryKey: kept.flatMap { Self.binds(state, $0) ? $0 : nil },
            head: state.position)
    }

    /// Whether epoch 1 on the remote begins with `entries` (`nil`: it cannot be read now).
    func started(_ entries: [TrustLogWriter.Written]) async -> Bool? {
        guard let rows = try? await remote.trustLogRows(epoch: 1, fromSeq: 0) else { return nil }
        let stored = Dictionary(rows.map { ($0.seq, $0.entry) }, uniquingKeysWith: { first, _ in first })
        return entries.allSatisfy { stored[$0.seq] == $0.text }
    }

    /// This device's own certificate, from what it knows of itself (never its row).
    func ownCertificate(
        _ identity: DeviceIdentity, user: UUID, role: DeviceTrustRole
    ) async throws
        -> DeviceCertificate
    {
        DeviceCertificate(
            userID: user, deviceID: identity.id, x25519PublicKey: identity.publicKey,
            ed25519PublicKey: try await local.signingKey().publicKey, deviceType: identity.deviceType.rawValue,
            deviceRole: role.rawValue, issuedAt: seconds)
    }
}

extension StoreSetting where Value == Bool {
    /// The migration's genesis author appended everything the legacy rows held.
    static var migrationDone: Self { StoreSetting("trust.migration.done") }
}
