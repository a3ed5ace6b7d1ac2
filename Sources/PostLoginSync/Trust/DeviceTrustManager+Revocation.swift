import DeviceTrust
import Foundation
import LocalStore
import RemoteStore
import SecretCrypto
import SyncModel

// Revoking devices, granting roots, and replacing the identity or recovery key (trust-log.md,
// "Flows"): every one an append by a root; a root is revoked only by a succession.
extension DeviceTrustManager {
    /// Revokes devices: a revoke entry for each device that is not a root; when a root is among
    /// them, one succession that revokes them all, hands a new identity key to every other root,
    /// and (unless `keepRecoveryKey`) binds a new recovery key. The remote ends each device as it
    /// stores the revocation: its credential maps to no device, its logins end, its row becomes
    /// inactive and the envelopes addressed to it go. A desktop then pushes at once, which rotates
    /// the secrets of its sessions the devices had received; every other desktop rotates at its
    /// next push, or before it next asks anything.
    ///
    /// - Parameters:
    ///   - deviceIDs: Devices of the user; never this device ("revoke it from another root").
    ///   - keepRecoveryKey: On a root's revocation, keep the recovery key (the recovery floor
    ///     stays where it was; see the docs' limits).
    ///   - now: The revocations' time.
    /// - Throws: ``SyncError`` `.notTrustRoot`, `.unknownDevice`, trust-log errors.
    @discardableResult
    public func revoke(
        _ deviceIDs: Set<UUID>, keepRecoveryKey: Bool = false, now: Date = Date()
    ) async throws
        -> RevocationReport
    {
        let (identity, user) = try await signedIn()
        guard !deviceIDs.contains(identity.id) else {
            throw SyncError(
                code: .unknownDevice,
                message: "a device cannot revoke itself: revoke it from another root (a sole root is replaced with "
                    + "`trust grant-root` on another desktop first, or `trust reset`)")
        }
        let state = try await verifiedLog()
        let devices = Dictionary(
            try await remote.listDevices().filter { $0.userID == user }.map { ($0.id, $0) },
            uniquingKeysWith: { a, _ in a })
        var revocations: [DeviceRevocation] = []
        for id in deviceIDs.sorted(by: { $0.canonical < $1.canonical }) {
            if state.devices[id]?.isRevoked == true { continue }
            let key: X25519PublicKey
            if let certified = state.devices[id], certified.isCertified {
                key = certified.x25519
            } else if let text = devices[id]?.publicKey, let rowKey = try? X25519PublicKey(base64: text),
                rowKey.isCanonicalAndNotLowOrder
            {
                key = rowKey
            } else {
                throw SyncError(
                    code: .unknownDevice,
                    message: "device \(id.canonical) is not one of the user's devices (or has no key to revoke)")
            }
            revocations.append(
                DeviceRevocation(
                    userID: user, deviceID: id, x25519PublicKey: key,
                    revokedAt: UInt64(max(0, now.timeIntervalSince1970))))
        }
        var report = RevocationReport()
        guard !revocations.isEmpty else { return report }
        let roots = revocations.filter { state.isRoot($0.deviceID) }
        if roots.isEmpty {
            report.head = try await append { writer, now in
                for revocation in revocations { try writer.append(.revoke(revocation), createdAt: now) }
            }.position
        } else {
            guard revocations.count <= Succession.maxItems else {
                throw SyncError(
                    code: .unknownDevice, message: "a succession revokes at most 8 devices: revoke the others first")
            }
            let recovery = keepRecoveryKey ? nil : RecoveryKey()
            report.head = try await binding(recovery) {
                try await succeed(reason: .rootRevoked, recovery: recovery, revoking: revocations)
            }.position
            report.identityKeyReplaced = true
            report.recoveryKey = recovery
        }
        // The remote ended the devices in the append's transaction: their credentials, their
        // logins, their rows' activity, the envelopes addressed to them.
        report.revoked = revocations.map(\.deviceID)
        // Rotate at once: this desktop's sessions the devices had get a secret they never receive.
        if identity.role == .desktop {
            do {
                report.sessionsRotated = try await engine.push().trust?.sessionsRotated ?? 0
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                // The revocation stands; the rotation is this desktop's next push's (or ask's).
                report.rotationProblem = String(describing: error)
                logger?.warning("revocation: the push that rotates at once failed: \(error)")
            }
        }
        return report
    }

    /// Revokes every device of the user but this one that is not revoked yet. Not a sign-out:
    /// the devices keep the user's login (end it with `SupabaseAuth.logout(accessToken:scope:)`
    /// and scope `others`, where the auth server offers it).
    public func revokeAllOthers(keepRecoveryKey: Bool = false, now: Date = Date()) async throws -> RevocationReport {
        let others = Set(try await otherDevices().map(\.id))
        guard !others.isEmpty else { return RevocationReport() }
        return try await revoke(others, keepRecoveryKey: keepRecoveryKey, now: now)
    }

    /// The devices ``revokeAllOthers(keepRecoveryKey:now:)`` would revoke now: every device row
    /// of the user but this one that the verified log does not show revoked. An app shows them
    /// (names, types) for the person to confirm, then revokes exactly those with
    /// ``revoke(_:keepRecoveryKey:now:)``.
    public func otherDevices() async throws -> [RemoteDevice] {
        let (identity, user) = try await signedIn()
        let state = try await verifiedLog()
        return try await remote.listDevices().filter {
            $0.userID == user && $0.id != identity.id && state.devices[$0.id]?.isRevoked != true
        }
    }

    /// Makes a certified desktop a root (`trust grant-root`): a root grant sealing the identity
    /// key in force to its certified X25519 key. At most 9 roots.
    ///
    /// - Returns: The head after the grant.
    /// - Throws: ``SyncError`` `.notTrustRoot`, `.unknownDevice` (not a certified desktop, already
    ///   a root, or a tenth root), trust-log errors.
    @discardableResult
    public func grantRoot(_ deviceID: UUID) async throws -> TrustLogPosition {
        let state = try await verifiedLog()
        guard let device = state.devices[deviceID], device.isTrusted, TrustLogState.isDesktop(device.deviceType) else {
            throw SyncError(code: .unknownDevice, message: "device \(deviceID.canonical) is not a certified desktop")
        }
        guard !state.isRoot(deviceID) else {
            throw SyncError(code: .unknownDevice, message: "device \(deviceID.canonical) is already a root")
        }
        guard state.roots.count < TrustLogState.maxRoots else {
            throw SyncError(code: .unknownDevice, message: "the log already has 9 roots, the most it may have")
        }
        return try await append { writer, now in try writer.grantRoot(to: deviceID, createdAt: now) }.position
    }

    /// Binds a new recovery key (`trust recovery-key new`): a succession (reason 2) to a new
    /// identity key, so the old recovery key opens only backups of retired keys.
    ///
    /// - Returns: The new key, to show the person once.
    public func newRecoveryKey() async throws -> RecoveryKey {
        let recovery = RecoveryKey()
        try await binding(recovery) {
            try await succeed(reason: .recoveryKeyReplaced, recovery: recovery, revoking: [])
        }
        return recovery
    }

    /// Replaces the identity key (`trust rotate-identity`, when its seed may be known to someone
    /// else): a succession (reason 3) with a new recovery key.
    ///
    /// - Returns: The new recovery key, to show the person once.
    public func rotateIdentity() async throws -> RecoveryKey {
        let recovery = RecoveryKey()
        try await binding(recovery) { try await succeed(reason: .seedSuspected, recovery: recovery, revoking: []) }
        return recovery
    }

    /// A succession to a fresh key: its seed goes to `identity.next.key` before the append and
    /// over `identity.key` once the log holds it.
    ///
    /// An append can land with its answer lost (a dropped connection, a proxy's 502, retries that
    /// then see 40001): the error alone does not say whether the key in force is now the seed's.
    /// So on any error the log decides (trust-log.md, "A lost answer"): read again, the seed is
    /// promoted when the key in force is its (the call succeeds), deleted when it is not (the
    /// error stands), and kept when the log cannot be read, for the next sync to settle the same way.
    @discardableResult
    func succeed(
        reason: SuccessionReason, recovery: RecoveryKey?, revoking: [DeviceRevocation]
    ) async throws
        -> TrustLogState
    {
        let seed = Ed25519PrivateKey()
        let next = DeviceKeyName.nextIdentity
        let local = self.local
        let user = remote.userID
        do {
            let state = try await append { writer, now in
                // Read again after a 40001: the seed in force is this very succession, landed.
                guard writer.state.identityKey != seed.publicKey else { throw SeedInForce() }
                local.removeIdentitySeed(at: next)
                try local.writeIdentitySeed(seed, to: next)
                try writer.succeed(
                    to: seed, reason: reason, newRecoveryKey: recovery?.agreementKey(userID: user).publicKey,
                    revocations: revoking, createdAt: now)
            }
            try local.promoteIdentitySeed(from: next)
            return state
        } catch {
            // `rootKey` settles the key files by the log just read: the seed promoted when it is
            // the key in force, deleted when not. A log that cannot be read leaves it in place.
            guard let state = try? await verifiedLog() else { throw error is SeedInForce ? Self.lost : error }
            if (try? await rootKey(state))?.publicKey == seed.publicKey {
                logger?.notice("trust log: the succession is in the log (its answer was lost)")
                return state
            }
            local.removeIdentitySeed(at: next)
            throw error is SeedInForce ? Self.lost : error
        }
    }

    /// Thrown by a rebuild that finds the succession's own seed in force.
    struct SeedInForce: Error {}

    /// What a succession whose fate cannot be read yet says (its seed is kept).
    static let lost = SyncError(
        code: .trustLogRefused,
        message: "the server's answer to the new identity key was lost and the log cannot be read now: "
            + "this device keeps the new key; run `sync-cli trust status` once the server answers")
}
