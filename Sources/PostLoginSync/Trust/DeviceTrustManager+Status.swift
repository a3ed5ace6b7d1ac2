import DeviceTrust
import Foundation
import LocalStore
import RemoteStore
import SecretCrypto
import SyncModel

extension DeviceTrustManager {
    /// The verified trust (brought up to date first): the head, the roots, every device's
    /// standing, pending resets and warnings.
    ///
    /// - Throws: ``SyncError`` trust-log errors (fail closed: nothing is shown as verified);
    ///   remote errors.
    public func status() async throws -> TrustStatus {
        let (identity, user) = try await signedIn()
        let devices = try await remote.listDevices().filter { $0.userID == user }
        let root = try await local.identityKey()
        var status = TrustStatus(deviceID: identity.id, isTrustRoot: false, mode: "none")
        guard let snapshot = try await verified() else {
            let geneses = (try? await remote.trustLogGeneses()) ?? []
            let legacy = (try? await remote.fetchIdentityKey()) ?? nil
            status.userHasIdentity = !geneses.isEmpty || legacy != nil
            status.devices = devices.map {
                TrustStatus.Device(
                    deviceID: $0.id, name: $0.name, deviceType: $0.deviceType?.rawValue, isActive: $0.isActive,
                    status: nil, isThisDevice: $0.id == identity.id)
            }
            return status
        }
        status.userHasIdentity = true
        status.identityFingerprint = snapshot.fingerprint.description
        status.problems = snapshot.problems.map(\.description)
        status.pendingResets = snapshot.pendingResets
        status.isTrustRoot = snapshot.roots.contains(identity.id) && root?.publicKey == snapshot.identityKey
        if let log = snapshot.log {
            status.mode = "log"
            status.head = log.position
            status.headCreatedAt = Date(timeIntervalSince1970: TimeInterval(min(log.headCreatedAt, 1 << 40)))
            status.recoveryKeyBound = log.recoveryKey != nil
            if log.headSeq >= TrustLogEntry.reserveStart {
                status.problems.append(
                    "the trust log is nearly full (seq \(log.headSeq) of 9,999): revocations and successions still "
                        + "fit; `trust reset` on a root starts a new one")
            }
            if let unshown = unshownRecoveryKeyIssue(log) {
                status.recoveryKeyUnshown = true
                status.problems.append(unshown.message)
            }
            if log.recoveryKey == nil {
                status.problems.append(
                    "no recovery key is bound to the log: if every root is lost, only a reset (72 hours) remains; "
                        + "make one with `sync-cli trust recovery-key new` on a root")
            }
        } else {
            status.mode = "legacy"
        }
        var listed = Set<UUID>()
        status.devices = devices.map { device in
            listed.insert(device.id)
            var state = snapshot.status(of: device)
            if device.id == identity.id, state == .verified, device.publicKey != identity.publicKey.base64 {
                state = .keyMismatch
            }
            var entry = TrustStatus.Device(
                deviceID: device.id, name: device.name, deviceType: device.deviceType?.rawValue,
                isActive: device.isActive, status: state, isThisDevice: device.id == identity.id)
            entry.isRoot = snapshot.roots.contains(device.id)
            return entry
        }
        // Devices the log names whose row is gone are still shown.
        for (id, _) in snapshot.revocations where !listed.contains(id) {
            status.devices.append(
                TrustStatus.Device(
                    deviceID: id, name: "(no device row)", deviceType: nil, isActive: false, status: .revoked,
                    isThisDevice: id == identity.id))
        }
        status.thisDevice = status.devices.first { $0.isThisDevice }?.status ?? .unverified
        return status
    }

    /// The user's other devices that receive secrets today (mode `any`) and will stop receiving
    /// them once this device pins the log, until each is paired: what ``initialize(recovery:)``
    /// cuts off, to tell the person before it runs.
    public func devicesThatWillNeedPairing() async throws -> [DeviceDecision] {
        let identity = try await local.requireIdentity()
        // A device that pinned the log, or whose user has one, changes nothing by starting one
        // (it is refused).
        guard try await local.trustLogPin() == nil,
            (try? await remote.trustLogGeneses())?.isEmpty ?? true
        else { return [] }
        let decisions = RecipientPolicy.evaluate(
            try await remote.listDevices(), userID: remote.userID, selfID: identity.id,
            options: RecipientOptions(trust: .any, includeSelf: false), trust: nil, selfKey: identity.publicKey)
        return decisions.filter(\.receives)
    }
}
