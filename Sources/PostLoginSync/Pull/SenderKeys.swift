import EnvelopeDigest
import Foundation
import LocalStore
import Logging
import RemoteStore
import SecretCrypto
import SyncModel
import Synchronization

/// The keys that may have sealed a version-2 envelope, resolved once per pull when first needed:
/// with verified trust the certified keys only; without, the keys of the user's own device rows
/// (a row of another user, or one listed twice, resolves to nothing).
actor SenderKeys {
    let remote: any CompleteRemote
    let trust: TrustSnapshot?
    /// Every device row of the user, when the caller already has them.
    let known: [RemoteDevice]?
    private var resolved: [UUID: X25519PublicKey]?

    init(remote: any CompleteRemote, trust: TrustSnapshot?, known: [RemoteDevice]?) {
        self.remote = remote
        self.trust = trust
        self.known = known
    }

    func keys() async throws -> [UUID: X25519PublicKey] {
        if let resolved { return resolved }
        var keys: [UUID: X25519PublicKey] = [:]
        if let trust {
            for id in trust.certificates.keys { keys[id] = trust.certifiedKey(of: id) }
            // A revoked device's key too: its envelopes open, so that they are told apart
            // (refused as `revokedSender`, once) from forgeries.
            for (id, revocation) in trust.revocations where keys[id] == nil { keys[id] = revocation.x25519PublicKey }
        } else {
            var seen = Set<UUID>(), repeated = Set<UUID>()
            let devices: [RemoteDevice]
            if let known { devices = known } else { devices = try await remote.listDevices() }
            for device in devices where device.userID == remote.userID {
                guard seen.insert(device.id).inserted else {
                    repeated.insert(device.id)
                    continue
                }
                if let text = device.publicKey, let key = try? X25519PublicKey(base64: text), !key.isLowOrder {
                    keys[device.id] = key
                }
            }
            for id in repeated { keys[id] = nil }
        }
        resolved = keys
        return keys
    }
}
