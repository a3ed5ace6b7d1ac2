import DeviceTrust
import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Testing

@testable import LocalStore
@testable import PostLoginSync

/// A user paired before the trust log: a legacy identity key held by a root desktop (and by a
/// second legacy root), certificates of the roots and a phone, a revoked tablet, a backup; the
/// rows written as the old version wrote them (the operator's hand here: they are read-only now).
struct LegacyWorld {
    let world: World
    let root: World.Device
    let other: World.Device
    let phone: World.Device
    let tablet: World.Device
    let legacy: Ed25519PrivateKey
    let recoveryKey: RecoveryKey

    static func make(_ backend: Backend, _ deployed: Bool = false) async throws -> LegacyWorld {
        let world = try World(backend, deployedSchema: deployed)
        let root = try await world.desktop(sessions: 2)
        let other = try await world.desktop("other", repositories: 1, sessions: 1)
        let phone = try await world.device("phone", role: .mobile)
        let tablet = try await world.device("tablet", role: .mobile, type: .iosTablet)
        for device in [root, other, phone, tablet] {
            _ = try await device.engine.sync()
        }
        let legacy = Ed25519PrivateKey()
        let recoveryKey = RecoveryKey()
        try await TrustLogStaging.legacyRow(world, "user_identity_keys", body: legacy.publicKey.base64)
        for (device, role) in [
            (root, "trust_root"), (other, "trust_root"), (phone, "trusted_executor"),
            (tablet, "trusted_executor"),
        ] {
            let signed = try DeviceCertificate(
                userID: world.user, deviceID: device.identity.id, x25519PublicKey: device.identity.publicKey,
                ed25519PublicKey: try await device.store.signingKey().publicKey,
                deviceType: device.identity.deviceType.rawValue, deviceRole: role, issuedAt: 1
            ).signed(by: legacy)
            try await TrustLogStaging.legacyRow(
                world, "device_certificates", device: device.identity.id, body: signed.body,
                signature: signed.signature)
            try await device.store.pinIdentityKey(legacy.publicKey)
        }
        let revocation = DeviceRevocation(
            userID: world.user, deviceID: tablet.identity.id, x25519PublicKey: tablet.identity.publicKey, revokedAt: 2
        ).signed(by: legacy)
        try await TrustLogStaging.legacyRow(
            world, "device_revocations", device: tablet.identity.id, body: revocation.body,
            signature: revocation.signature)
        try await TrustLogStaging.legacyRow(
            world, "identity_key_backups",
            body: try IdentityBackup.seal(legacy, userID: world.user, recoveryKey: recoveryKey))
        for device in [root, other] { try await device.store.storeIdentityKey(legacy) }
        return LegacyWorld(
            world: world, root: root, other: other, phone: phone, tablet: tablet, legacy: legacy,
            recoveryKey: recoveryKey)
    }
}

/// The migration of a legacy identity to the trust log (trust-log.md, "Migration from the legacy tables"; threats 3,
/// 4, 7 and 8), on the embedded remote and the stack's two variants.
@Suite("The trust log: migrating an identity from before it")
struct TrustLogMigrationTests {
    static var remotes: [(Backend, Bool)] { Backend.variants }

    @Test(
        "legacy mode until a root migrates; its sync migrates (vetoing a reset asked before), carries devices, revocations and roots; devices adopt epoch 1",
        arguments: remotes)
    func migration(backend: Backend, deployed: Bool) async throws {
        let l = try await LegacyWorld.make(backend, deployed)
        // Legacy mode: fail closed on the legacy rows, reported.
        let before = try await l.phone.engine.pull()
        #expect(before.trust?.reports.contains { $0.code == .trustLogMissing } == true)
        // A thief with the password asks for a reset before the migration.
        let thief = try await l.world.desktop("thief", repositories: 1, sessions: 1)
        let reset = try await DeviceTrustManager(local: thief.store, remote: try l.world.remote(for: thief)).reset(
            recovery: .none)
        #expect(!reset.inEffect && reset.epoch == 2)
        // The root's sync migrates: genesis under the legacy key, a succession, the veto, then the rest.
        let push = try await l.root.engine.push()
        #expect(push.outcome == .success, "\(push.errors) \(push.trust?.reports ?? [])")
        let rows = try await l.world.remote().trustLogRows(epoch: 1, fromSeq: 0)
        let state = try TrustLogVerifier.verify(rows.map(\.entry), userID: l.world.user, epoch: 1).state
        #expect(state.retiredIdentityKeys.first?.key == Data(l.legacy.publicKey.rawRepresentation))
        #expect(state.vetoes.map(\.epoch) == [2])
        #expect(state.devices[l.phone.identity.id]?.isTrusted == true)
        #expect(state.devices[l.tablet.identity.id]?.isRevoked == true)
        #expect(state.devices[l.other.identity.id]?.role == "trusted_executor" && state.isRoot(l.other.identity.id))
        // The root's identity.key is the new key; the legacy seed verifies nothing from seq 1.
        #expect(try await l.root.store.identityKey()?.publicKey == state.identityKey)
        // The phone adopts epoch 1 and keeps receiving.
        let after = try await l.phone.engine.pull()
        #expect(after.outcome == .success, "\(after.errors)")
        #expect(try await l.phone.store.trustLogPin()?.epoch == 1)
        // The second legacy root opens its grant at its sync and is a root.
        #expect(try await l.other.engine.push().outcome == .success)
        #expect(
            try await DeviceTrustManager(local: l.other.store, remote: try l.world.remote(for: l.other)).status()
                .isTrustRoot)
        // After the migration the legacy recovery key finds a retired key.
        let spare = try await l.world.desktop("spare", repositories: 1, sessions: 1)
        await #expect {
            try await DeviceTrustManager(local: spare.store, remote: try l.world.remote(for: spare)).recover(
                with: l.recoveryKey
            ) {
                _ in true
            }
        } throws: { ($0 as? SyncError)?.code == .recoveryKeyRetired }
    }

    @Test(
        "7. a revoked legacy root that kept the legacy seed cannot start the log (its revocation row), nor append after the migration",
        arguments: remotes)
    func revokedLegacyRoot(backend: Backend, deployed: Bool) async throws {
        let l = try await LegacyWorld.make(backend, deployed)
        let revocation = DeviceRevocation(
            userID: l.world.user, deviceID: l.other.identity.id, x25519PublicKey: l.other.identity.publicKey,
            revokedAt: 3
        ).signed(by: l.legacy)
        try await TrustLogStaging.legacyRow(
            l.world, "device_revocations", device: l.other.identity.id, body: revocation.body,
            signature: revocation.signature)
        // The revoked root, with its own client, sends the migration's first call itself (its
        // genesis under the legacy key, a succession): the server refuses it (its revocation row).
        let otherKey = try await l.other.store.signingKey()
        let now = UInt64(Date().timeIntervalSince1970)
        var own = try TrustLogWriter.genesis(
            userID: l.world.user, epoch: 1, priorEpoch: 0, identity: l.legacy, recoveryKey: nil,
            certificate: DeviceCertificate(
                userID: l.world.user, deviceID: l.other.identity.id, x25519PublicKey: l.other.identity.publicKey,
                ed25519PublicKey: otherKey.publicKey, deviceType: l.other.identity.deviceType.rawValue,
                deviceRole: "trust_root", issuedAt: now),
            signingKey: otherKey, createdAt: now)
        try own.succeed(
            to: Ed25519PrivateKey(), reason: .seedSuspected, newRecoveryKey: nil, revocations: [], createdAt: now)
        #expect(
            await LogWorld.code {
                try await l.world.remote().startTrustLog(
                    own.written.map { TrustLogAppend(entry: $0.text, backup: $0.backup) })
            } == "22023")
        #expect(try await l.world.remote().trustLogGeneses().isEmpty)
        // Through the library the same attempt is refused before anything is sent.
        await #expect {
            try await DeviceTrustManager(local: l.other.store, remote: try l.world.remote(for: l.other)).migrate(
                recoveryKey: nil)
        } throws: { error in
            (error as? SyncError)?.code == .notTrustRoot
                || ((error as? RemoteStoreError)?.postgrestCode?.rawValue == "22023")
        }
        // The genuine root migrates; the revoked one's proofs under the legacy chain are refused.
        #expect(try await l.root.engine.push().outcome == .success)
        let rows = try await l.world.remote().trustLogRows(epoch: 1, fromSeq: 0)
        let state = try TrustLogVerifier.verify(rows.map(\.entry), userID: l.world.user, epoch: 1).state
        #expect(state.devices[l.other.identity.id]?.isRevoked == true && !state.isRoot(l.other.identity.id))
        var entry = TrustLogEntry(
            userID: l.world.user, epoch: 1, seq: state.headSeq + 1, prev: Array(state.headHash), type: .certify,
            createdAt: UInt64(Date().timeIntervalSince1970), author: l.other.identity.id,
            appendProof: AppendChain.proof(
                seed: l.legacy.seedRepresentation, userID: l.world.user, epoch: 1, steps: Int(state.headSeq + 1)),
            body: try DeviceCertificate(
                userID: l.world.user, deviceID: UUID(), x25519PublicKey: X25519PrivateKey().publicKey,
                ed25519PublicKey: Ed25519PrivateKey().publicKey, deviceType: "ios-phone",
                deviceRole: "trusted_executor", issuedAt: 1
            ).body())
        entry.sign(identity: l.legacy)
        #expect(
            await LogWorld.code {
                try await l.world.remote().appendTrustEntries(
                    epoch: 1, firstSeq: state.headSeq + 1, [TrustLogAppend(entry: entry.text, backup: nil)])
            } == "22023")
    }

    @Test(
        "3. starting the log without a fresh sign-in: 28000; a first genesis under another key is not adopted (identityChanged)",
        arguments: remotes)
    func unfreshOrForeignStart(backend: Backend, deployed: Bool) async throws {
        let l = try await LegacyWorld.make(backend, deployed)
        let stale = DeviceTrustManager(local: l.root.store, remote: try l.world.remote(signedIn: nil))
        #expect(await LogWorld.code { try await stale.migrate(recoveryKey: nil) } == "freshSignInRequired")
        // The operator writes a genesis under its own key as epoch 1: devices pinned the legacy key.
        let foreign = try RemoteLogWriterForWorld(world: l.world)
        try await TrustLogStaging.insertRow(l.world, epoch: 1, seq: 0, entry: foreign.texts[0])
        await #expect { try await l.phone.engine.pull() } throws: { ($0 as? SyncError)?.code == .identityChanged }
        #expect(try await l.phone.store.trustLogPin() == nil)
    }
}
