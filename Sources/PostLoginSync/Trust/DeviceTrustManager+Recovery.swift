import DeviceTrust
import Foundation
import LocalStore
import RemoteStore
import SecretCrypto
import SyncModel

// Recovery with the recovery key, and the reset (trust.md and recovery.md).
extension DeviceTrustManager {
    /// What a recovery is about to do, shown to the person before anything is written.
    public struct RecoveryPreview: Sendable {
        /// The head the log will be pinned at.
        public var head: TrustLogPosition
        /// When the head was written (Unix seconds).
        public var headCreatedAt: UInt64
        /// The last entries (at most five): seq, type and time.
        public var lastEntries: [(seq: UInt64, type: String, createdAt: UInt64)]
        /// Every device the log names: id, type, whether certified, revoked, a root.
        public var devices: [TrustStatus.Device]
        /// Backup rows skipped because they did not open or did not match their row.
        public var skippedBackups: Int
    }

    /// Recovers on this desktop with the person's recovery key: walks the log and verifies the
    /// current epoch whole; opens the newest backup the key opens that names its row's hash and
    /// holds the key in force; requires the head to reach that row and every counted witness;
    /// shows `confirm` what it found; then pins the log and, unless this desktop already is a
    /// root, appends a certify of itself (when not certified) and a root grant to itself.
    ///
    /// - Parameters:
    ///   - recoveryKey: The key the person typed.
    ///   - confirm: Asked with what was found; `false` stops without writing anything.
    /// - Returns: The identity's fingerprint, or `nil` when the person did not confirm.
    /// - Throws: `RecoveryError/doesNotOpen`; ``SyncError`` `.recoveryKeyRetired` (a key replaced
    ///   since), `.wrongRole`, `.unknownDevice` (this device is revoked, or 9 roots), trust-log
    ///   errors; nothing is written by any of them.
    @discardableResult
    public func recover(
        with recoveryKey: RecoveryKey, confirm: @Sendable (RecoveryPreview) async -> Bool
    ) async throws -> IdentityFingerprint? {
        let (identity, user) = try await signedIn()
        guard identity.role == .desktop else {
            throw SyncError(code: .wrongRole, message: "only a desktop can become a trust root")
        }
        var sync = TrustLogSync(local: local, remote: remote, phase: .secrets, now: options.now())
        guard let walked = try await sync.walk() else {
            return try await recoverLegacy(with: recoveryKey, identity: identity, user: user)
        }
        let state = walked.state
        if state.devices[identity.id]?.isRevoked == true {
            throw SyncError(code: .unknownDevice, message: "the log revokes this device: recover on another desktop")
        }
        if !state.isRoot(identity.id) && state.roots.count >= TrustLogState.maxRoots {
            throw SyncError(code: .unknownDevice, message: "the log already has 9 roots: revoke one from a root first")
        }
        let agreement = recoveryKey.agreementKey(userID: user)
        let rpk = Data(agreement.publicKey.rawRepresentation)
        if let retired = state.retiredRecoveryKeys.first(where: { $0.key == rpk }) {
            throw Self.retired(at: retired.retiredAt)
        }
        guard state.recoveryKey == agreement.publicKey else {
            throw try await legacyRetired(recoveryKey, state: state, user: user)
        }
        let rows = try await remote.trustLogRows(epoch: state.epoch, fromSeq: 0)
        var skipped = 0
        var found: (key: Ed25519PrivateKey, seq: UInt64)?
        for row in rows.reversed() where row.seq <= state.headSeq {
            guard let backup = row.backup else { continue }
            guard
                let opened = LogBackup.open(backup, with: agreement, userID: user, epoch: state.epoch, seq: row.seq),
                opened.entryHash == walked.entries.first(where: { $0.seq == row.seq })?.hash,
                opened.identity.publicKey == state.identityKey
            else {
                skipped += 1
                continue
            }
            found = (opened.identity, row.seq)
            break
        }
        guard let found else { throw RecoveryError.doesNotOpen }
        let bound = max(found.seq, walked.witnessed.max() ?? 0)
        guard state.headSeq >= bound else {
            throw TrustLogSync.truncated(bound, "the log ends before the backup's row or a device's witness")
        }
        guard await confirm(preview(walked, skipped: skipped, selfID: identity.id)) else { return nil }
        if state.isRoot(identity.id) {
            try await sync.pin(walked)
            try await engine.upsertOwnDevice(identity, user: user)
            local.removeIdentitySeed(at: DeviceKeyName.nextIdentity)
            try local.writeIdentitySeed(found.key, to: DeviceKeyName.nextIdentity)
            try local.promoteIdentitySeed(from: DeviceKeyName.nextIdentity)
            return IdentityFingerprint(found.key.publicKey)
        }
        // The appends extend the pin, so it is written first, without a witness; a refusal takes
        // it back when this device had none, so a refused recovery leaves nothing behind.
        let hadPin = try await local.trustLogPin() != nil
        try await sync.save(walked.state, new: walked.entries, highestEpoch: walked.highestEpoch, replacing: true)
        do {
            try await engine.upsertOwnDevice(identity, user: user)
            try await certifyAndGrantSelf(found.key, state: state, identity: identity, user: user)
        } catch {
            if !hadPin { try? await local.removeTrustLogPin() }
            throw error
        }
        logger?.notice("recovered the identity; this device is a trust root")
        return IdentityFingerprint(found.key.publicKey)
    }

    /// A recovering desktop's own appends (allowed to a non-root: their subject is their author).
    func certifyAndGrantSelf(
        _ key: Ed25519PrivateKey, state: TrustLogState, identity: DeviceIdentity, user: UUID
    ) async throws {
        let next = DeviceKeyName.nextIdentity
        local.removeIdentitySeed(at: next)
        try local.writeIdentitySeed(key, to: next)
        do {
            var writer = try TrustLogWriter(state: state, identity: key, author: identity.id)
            if state.devices[identity.id]?.isCertified != true {
                try writer.append(
                    .certify(try await ownCertificate(identity, user: user, role: .trustedExecutor)), createdAt: seconds
                )
            }
            try writer.grantRoot(to: identity.id, createdAt: seconds)
            _ = try await send(writer, from: state)
            try local.promoteIdentitySeed(from: next)
        } catch {
            local.removeIdentitySeed(at: next)
            throw SyncError(
                code: .trustLogRefused,
                message: "the log refused this device's recovery (\(error)); the recovered key was not kept")
        }
    }

    func preview(_ walked: TrustLogSync.Walked, skipped: Int, selfID: UUID) -> RecoveryPreview {
        let state = walked.state
        let last = walked.entries.suffix(5).compactMap { entry -> (UInt64, String, UInt64)? in
            guard let parsed = try? ParsedLogEntry(text: entry.text) else { return nil }
            return (entry.seq, parsed.entry.type.description, parsed.entry.createdAt)
        }
        let devices = state.devices.values.sorted { $0.id.canonical < $1.id.canonical }.map { device in
            var listed = TrustStatus.Device(
                deviceID: device.id, name: "", deviceType: device.deviceType, isActive: !device.isRevoked,
                status: device.isRevoked ? .revoked : (device.isCertified ? .verified : .unverified),
                isThisDevice: device.id == selfID)
            listed.isRoot = state.isRoot(device.id)
            return listed
        }
        return RecoveryPreview(
            head: state.position, headCreatedAt: state.headCreatedAt, lastEntries: last, devices: devices,
            skippedBackups: skipped)
    }

    /// A recovery key that is not the one bound: retired when the legacy backup opens with it to
    /// a key the log retired; otherwise one that does not open.
    func legacyRetired(_ recoveryKey: RecoveryKey, state: TrustLogState, user: UUID) async throws -> Error {
        guard let stored = try? await remote.fetchIdentityBackup() else {
            return RecoveryError.doesNotOpen
        }
        for retired in state.retiredIdentityKeys {
            guard let key = try? Ed25519PublicKey(rawRepresentation: Array(retired.key)),
                (try? IdentityBackup.open(stored, userID: user, identityPublicKey: key, recoveryKey: recoveryKey))
                    != nil
            else { continue }
            return Self.retired(at: retired.retiredAt)
        }
        return RecoveryError.doesNotOpen
    }

    static func retired(at seconds: UInt64) -> SyncError {
        SyncError(
            code: .recoveryKeyRetired,
            message: "this recovery key was replaced on \(TrustLogSync.date(seconds)): use the newer one (nothing was "
                + "written)")
    }

    /// Before the user's log exists, recovery.md's: the legacy backup opens to the published
    /// legacy key, which this desktop then holds (and, as a legacy root with a certificate,
    /// migrates at its next sync).
    func recoverLegacy(
        with recoveryKey: RecoveryKey, identity: DeviceIdentity, user: UUID
    ) async throws
        -> IdentityFingerprint
    {
        guard let published = try await remote.fetchIdentityKey(),
            let key = try? Ed25519PublicKey(base64: published)
        else {
            throw SyncError(
                code: .noIdentity, message: "the user has no identity to recover; run `sync-cli trust init`")
        }
        if let pinned = try await local.pinnedIdentityKey(), pinned != key {
            throw SyncError(
                code: .identityChanged,
                message: "the user's identity key is not the one this device pinned: nothing was written")
        }
        guard let stored = try await remote.fetchIdentityBackup() else {
            throw SyncError(code: .noRecoveryBackup, message: "this account has no identity backup")
        }
        let seed = try IdentityBackup.open(stored, userID: user, identityPublicKey: key, recoveryKey: recoveryKey)
        try await local.storeIdentityKey(seed)
        try await local.pinIdentityKey(key)
        return IdentityFingerprint(key)
    }
}
