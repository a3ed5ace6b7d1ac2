import DeviceTrust
import Foundation
import LocalStore
import Logging
import RemoteStore
import SecretCrypto
import SyncModel

/// A root's identity key files (trust-log.md, "Keys"): only roots hold the key in force.
/// `identity.next.key` (a succession's seed, or one a recovery opened) is renamed over
/// `identity.key` once its append is accepted; a leftover one is kept only when it is the key in
/// force and this device a root. A granted root opens its newest grant at its next run.
struct TrustLogRoot {
    let local: DeviceStore
    let logger: Logger?

    /// What settling the key files found.
    struct Settled {
        /// The key in force, when this device is a root holding it.
        var key: Ed25519PrivateKey?
        /// A grant to this device that does not open to the key in force.
        var grantInvalid = false
    }

    /// The key in force when this device is a root holding it.
    func settleKeys(_ state: TrustLogState, selfID: UUID) async throws -> Ed25519PrivateKey? {
        try await settle(state, selfID: selfID).key
    }

    func settle(_ state: TrustLogState, selfID: UUID) async throws -> Settled {
        let inForce = state.identityKey
        let nextPath = DeviceKeyName.nextIdentity
        if let next = try local.identitySeed(at: nextPath) {
            if next.publicKey == inForce && state.isRoot(selfID) {
                try local.promoteIdentitySeed(from: nextPath)
            } else {
                local.removeIdentitySeed(at: nextPath)
            }
        }
        guard state.isRoot(selfID) else { return Settled() }
        if let key = try await local.identityKey(), key.publicKey == inForce { return Settled(key: key) }
        guard let (sealed, seq) = try await newestGrant(state, to: selfID) else { return Settled(grantInvalid: true) }
        do {
            let key = try SealedSeed.open(
                sealed, with: try await local.deviceKey(), userID: state.userID, deviceID: selfID, epoch: state.epoch,
                seq: seq, identityKey: inForce)
            local.removeIdentitySeed(at: nextPath)
            try local.writeIdentitySeed(key, to: nextPath)
            try local.promoteIdentitySeed(from: nextPath)
            logger?.notice("trust log: this device opened its root grant (seq \(seq)) and is a trust root")
            return Settled(key: key)
        } catch is DeviceTrustError {
            return Settled(grantInvalid: true)
        }
    }

    /// The newest grant of the epoch to `device`: a root grant, or its part of a succession.
    func newestGrant(_ state: TrustLogState, to device: UUID) async throws -> (sealed: [UInt8], seq: UInt64)? {
        for entry in try await local.trustLogEntries(epoch: state.epoch).reversed() {
            guard let parsed = try? ParsedLogEntry(text: entry.text), let body = try? parsed.body.get() else {
                continue
            }
            switch body {
            case .rootGrant(let grant) where grant.deviceID == device: return (grant.sealedSeed, entry.seq)
            case .succession(let succession):
                if let grant = succession.grants.first(where: { $0.deviceID == device }) {
                    return (grant.sealedSeed, entry.seq)
                }
            default: continue
            }
        }
        return nil
    }
}

extension DeviceTrustManager {
    /// What a root's sync does besides syncing (trust.md, "Pairing", and trust-log.md, "Migration from the legacy tables"): a legacy
    /// root migrates to the log (after a fresh sign-in); a root vetoes every pending reset of its
    /// epoch; a granted root opens its grant; the genesis author of a migration appends what the
    /// log still lacks of it. Each problem is reported; none stops the sync.
    ///
    /// - Parameter known: The trust this sync already verified (read again when `nil`).
    /// - Returns: What was reported, and whether anything was appended to the log.
    public func rootDuties(given known: TrustSnapshot? = nil) async -> (issues: [SyncIssue], appended: Bool) {
        var issues: [SyncIssue] = []
        var appended = false
        func report(_ message: String) {
            issues.append(SyncIssue(phase: .secrets, code: .rootDuty, message: message))
        }
        do {
            let identity = try await local.requireIdentity()
            guard identity.role == .desktop else { return ([], false) }
            var loaded = known
            if loaded == nil { loaded = try await verified() }
            guard let snapshot = loaded else { return ([], false) }
            guard let state = snapshot.log else {
                if try await local.identityKey() != nil {
                    try await migrate(recoveryKey: nil)
                    appended = true
                }
                return ([], appended)
            }
            if let unshown = unshownRecoveryKeyIssue(state) { issues.append(unshown) }
            let settled = try await TrustLogRoot(local: local, logger: logger).settle(state, selfID: identity.id)
            if settled.grantInvalid {
                issues.append(
                    SyncIssue(
                        phase: .secrets, code: .rootGrantInvalid,
                        message: "the log makes this device a root, but its grant does not open to the identity key "
                            + "in force: it does not act as a root"))
            }
            guard settled.key != nil else { return (issues, appended) }
            for reset in snapshot.pendingResets {
                appended = true
                try await append { writer, now in
                    try writer.append(
                        .resetAnswer(
                            ResetAnswer(
                                userID: state.userID, resetEpoch: reset.epoch, resetGenesisHash: reset.hash,
                                verdict: .veto)), createdAt: now)
                }
                logger?.notice("trust log: vetoed the pending reset of epoch \(reset.epoch)")
                issues.append(
                    SyncIssue(
                        phase: .secrets, code: .resetVetoed,
                        message: "this trust root vetoed a pending reset of the account's identity (epoch "
                            + "\(reset.epoch)): the identity stays as it is. A reset is asked for by a desktop signed "
                            + "in as this user: if you did not ask for it, change the password"))
            }
            appended = try await finishMigration(state) || appended
        } catch let error as SyncError where error.code == .freshSignInRequired {
            report(
                "this trust root has not started the user's trust log yet: sign in again (`sync-cli login`) and sync "
                    + "within 10 minutes; until then every device stays in legacy mode")
        } catch {
            report("a trust root's duty could not be done: \(error)")
        }
        return (issues, appended)
    }
}
