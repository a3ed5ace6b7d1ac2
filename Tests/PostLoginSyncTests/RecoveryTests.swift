import DeviceTrust
import Foundation
import Logging
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Testing

@testable import LocalStore
@testable import PostLoginSync

/// A root desktop whose identity has a backup under `recoveryKey`, a phone paired with it and
/// receiving its secrets, and a second desktop of the same user that never paired.
struct RecoveryWorld {
    let world: World
    let root: World.Device
    let phone: World.Device
    let spare: World.Device
    let recoveryKey: RecoveryKey
    let fingerprint: IdentityFingerprint
    let logs = LogLines()

    static func make(_ backend: Backend, deployedSchema: Bool = false) async throws -> RecoveryWorld {
        let world = try World(backend, deployedSchema: deployedSchema)
        let root = try await world.desktop(sessions: 2)
        let phone = try await world.device("phone", role: .mobile)
        let spare = try await world.desktop("spare", repositories: 1, sessions: 1)
        let recoveryKey = RecoveryKey()
        let logs = LogLines()
        let manager = DeviceTrustManager(
            local: root.store, remote: try world.remote(), logger: Logger(label: "trust") { _ in logs })
        let fingerprint = try await manager.initialize(recoveryKey: recoveryKey)
        try await TrustThreatTests.join(phone, world: world, root: manager)
        #expect(try await root.engine.push().outcome == .success)
        #expect(try await phone.engine.pull().outcome == .success)
        return RecoveryWorld(
            world: world, root: root, phone: phone, spare: spare, recoveryKey: recoveryKey, fingerprint: fingerprint)
    }

    func manager(_ device: World.Device) throws -> DeviceTrustManager {
        DeviceTrustManager(
            local: device.store, remote: try world.remote(), logger: Logger(label: "trust") { _ in logs })
    }

    /// What recovery must not have written on `device` when it refused.
    func nothingWritten(on device: World.Device) async throws {
        #expect(try await device.store.identityKey() == nil)
        #expect(!FileManager.default.fileExists(atPath: device.store.identityKeyPath))
        let certificates = try await (world.remote() as any TrustRemote).listCertificates()
        #expect(!certificates.contains { $0.deviceID == device.identity.id })
    }
}

/// Identity recovery (recovery.md): the flow and its five threats, on the embedded remote and the stack.
@Suite("Recovery")
struct RecoveryTests {
    @Test(
        "the root is lost: another desktop recovers with the key, the phone keeps receiving without re-pairing",
        arguments: Backend.available)
    func recoverOnAnotherDesktop(backend: Backend) async throws {
        let r = try await RecoveryWorld.make(backend)
        #expect(try await r.manager(r.root).status().recoveryBackup == true)
        // The root desktop is gone, with its store.
        try FileManager.default.removeItem(at: r.world.directory.appendingPathComponent("desktop"))
        let recovered = try await r.manager(r.spare).recover(with: r.recoveryKey)
        #expect(recovered == r.fingerprint)
        #expect(try await r.spare.store.identityKey() != nil)
        let status = try await r.manager(r.spare).status()
        #expect(status.isTrustRoot && status.thisDevice == .verified)
        #expect(status.devices.first { $0.isThisDevice }?.isRoot == true)
        // Its sessions reach the phone, which opens them: nothing was re-paired.
        #expect(try await r.spare.engine.push().outcome == .success)
        #expect(try await r.phone.engine.pull().outcome == .success)
        let spareSessions = try await r.spare.store.sessions().map(\.id)
        let opened = try await r.world.opened(by: r.phone)
        #expect(!spareSessions.isEmpty && spareSessions.allSatisfy { opened[$0] != nil })
        // And it is a root: it pairs a new device.
        let tablet = try await r.world.device("tablet", role: .mobile, type: .iosTablet)
        try await TrustThreatTests.join(tablet, world: r.world, root: r.manager(r.spare))
        #expect(
            try await r.manager(r.spare).status().devices.first { $0.deviceID == tablet.identity.id }?.status
                == .verified)
    }

    @Test("a new recovery key replaces the backup: the old key stops opening it", arguments: Backend.available)
    func newKey(backend: Backend) async throws {
        let r = try await RecoveryWorld.make(backend)
        let fresh = try await r.manager(r.root).newRecoveryKey()
        await #expect(throws: RecoveryError.doesNotOpen) { try await r.manager(r.spare).recover(with: r.recoveryKey) }
        try await r.nothingWritten(on: r.spare)
        #expect(try await r.manager(r.spare).recover(with: fresh) == r.fingerprint)
        // Only a root can replace the key.
        await #expect { try await r.manager(r.phone).newRecoveryKey() } throws: {
            ($0 as? SyncError)?.code == .notTrustRoot
        }
    }

    @Test("threat 1: a backup swapped for another identity's is refused, nothing written", arguments: Backend.available)
    func swappedBackup(backend: Backend) async throws {
        let r = try await RecoveryWorld.make(backend)
        // The server's power: any body in the row. Sealed under the person's own key and user,
        // for another identity: the best a server holding such a body could do.
        let other = Ed25519PrivateKey()
        let published = try #require(try await r.root.store.identityKey()).publicKey
        let nonce = Array(repeating: UInt8(7), count: 12)
        // Sealed for the published identity (its AAD) but holding another seed: only the check
        // of the seed's public key refuses it.
        let mismatched = try ChaCha20Poly1305.seal(
            other.seedRepresentation, using: IdentityBackup.key(recoveryKey: r.recoveryKey, userID: r.world.user),
            nonce: nonce, authenticating: IdentityBackup.aad(userID: r.world.user, identityPublicKey: published))
        for body in [
            try IdentityBackup.seal(other, userID: r.world.user, recoveryKey: r.recoveryKey),
            try IdentityBackup.seal(Ed25519PrivateKey(), userID: r.world.user, recoveryKey: RecoveryKey()),
            Data([1] + nonce + mismatched).base64EncodedString(),
        ] {
            try await Self.replaceBackup(r, with: body)
            await #expect(throws: RecoveryError.doesNotOpen) {
                try await r.manager(r.spare).recover(with: r.recoveryKey)
            }
            try await r.nothingWritten(on: r.spare)
        }
    }

    /// Writes the backup row as the server could (the service role on the stack).
    static func replaceBackup(_ r: RecoveryWorld, with body: String) async throws {
        switch r.world.backend {
        case .embedded:
            try await (r.world.remote() as! any IdentityBackupRemote).storeIdentityBackup(body)
        case .postgrest:
            _ = try StackEnvironment.require().sql(
                "UPDATE public.identity_key_backups SET body = '\(body)' WHERE user_id = '\(r.world.user.canonical)'",
                database: r.world.deployedSchema ? "sync_deployed" : "sync_own")
        }
    }

    @Test(
        "threat 2: another user can neither read nor write the backup; nobody deletes it", arguments: Backend.variants)
    func otherUsers(backend: Backend, deployedSchema: Bool) async throws {
        let r = try await RecoveryWorld.make(backend, deployedSchema: deployedSchema)
        let stranger = UUID()
        let theirs = try r.world.remote(as: stranger) as! any IdentityBackupRemote
        #expect(try await theirs.fetchIdentityBackup() == nil)
        let mine = try #require(try await (r.world.remote() as! any IdentityBackupRemote).fetchIdentityBackup())
        guard backend == .postgrest else { return }
        let stack = try StackEnvironment.require()
        let base = deployedSchema ? stack.deployedURL : stack.url
        let user = r.world.user.canonical
        let forged = try IdentityBackup.seal(Ed25519PrivateKey(), userID: r.world.user, recoveryKey: RecoveryKey())
        let strangerToken = stack.token(for: stranger), ownerToken = stack.token(for: r.world.user)
        let read = try await stack.request(
            "GET", "/rest/v1/identity_key_backups?user_id=eq.\(user)", base: base, token: strangerToken)
        #expect(read.status == 200 && read.body == "[]")
        let insert = try await stack.request(
            "POST", "/rest/v1/identity_key_backups", base: base, token: strangerToken,
            headers: ["Prefer": "resolution=merge-duplicates"], body: #"{"user_id":"\#(user)","body":"\#(forged)"}"#)
        #expect(insert.status == 403 || insert.status == 401 || insert.status == 409, "\(insert.status)")
        let patch = try await stack.request(
            "PATCH", "/rest/v1/identity_key_backups?user_id=eq.\(user)", base: base, token: strangerToken,
            headers: ["Prefer": "return=representation"], body: #"{"body":"\#(forged)"}"#)
        #expect(patch.status == 200 && patch.body == "[]" || patch.status == 403)
        for token in [strangerToken, ownerToken] {
            let delete = try await stack.request(
                "DELETE", "/rest/v1/identity_key_backups?user_id=eq.\(user)", base: base, token: token,
                headers: ["Prefer": "return=representation"])
            #expect(delete.status == 403 || delete.status == 401 || delete.body == "[]", "\(delete.status)")
        }
        #expect(try await (r.world.remote() as! any IdentityBackupRemote).fetchIdentityBackup() == mine)
    }

    @Test("threat 4: the recovery key and the identity seed reach no log line or error", arguments: Backend.available)
    func noSecretsInLogs(backend: Backend) async throws {
        let r = try await RecoveryWorld.make(backend)
        let fresh = try await r.manager(r.root).newRecoveryKey()
        var errors: [String] = []
        do { try await r.manager(r.spare).recover(with: RecoveryKey()) } catch { errors.append("\(error)") }
        try await r.manager(r.spare).recover(with: fresh)
        let seed = try #require(try await r.root.store.identityKey()).seedRepresentation.withUnsafeBytes { Data($0) }
        var secrets = [seed.base64EncodedString(), seed.map { String(format: "%02x", $0) }.joined()]
        for key in [r.recoveryKey, fresh] {
            secrets += [
                key.revealCompactText(), key.revealText(), key.bytes.withUnsafeBytes { Data($0).base64EncodedString() },
            ]
        }
        let text = (r.logs.all + errors).joined(separator: "\n")
        #expect(!r.logs.all.isEmpty && !errors.isEmpty)
        let leaked = secrets.contains { text.contains($0) }
        #expect(!leaked, "a recovery key or the identity seed reached a log line or an error")
    }

    @Test(
        "threat 5: a store that pinned another identity refuses to recover, nothing written",
        arguments: Backend.available)
    func pinnedOtherIdentity(backend: Backend) async throws {
        let r = try await RecoveryWorld.make(backend)
        let elsewhere = Ed25519PrivateKey().publicKey
        try await r.spare.store.pinIdentityKey(elsewhere)
        await #expect { try await r.manager(r.spare).recover(with: r.recoveryKey) } throws: {
            ($0 as? SyncError)?.code == .identityChanged
        }
        try await r.nothingWritten(on: r.spare)
        #expect(try await r.spare.store.pinnedIdentityKey() == elsewhere)
    }

    @Test("no backup: status warns, recovery says so", arguments: Backend.available)
    func noBackup(backend: Backend) async throws {
        let world = try World(backend)
        let root = try await world.desktop(sessions: 1)
        let spare = try await world.desktop("spare", repositories: 1, sessions: 1)
        let manager = DeviceTrustManager(local: root.store, remote: try world.remote())
        try await manager.initialize()
        #expect(try await manager.status().recoveryBackup == false)
        await #expect {
            try await DeviceTrustManager(local: spare.store, remote: try world.remote()).recover(with: RecoveryKey())
        } throws: { ($0 as? SyncError)?.code == .noRecoveryBackup }
    }

    @Test(
        "trust reset: a new identity that the old devices refuse; another user's reset touches nothing",
        arguments: Backend.available)
    func reset(backend: Backend) async throws {
        let r = try await RecoveryWorld.make(backend)
        let root = try r.manager(r.root)
        // Another user's reset touches only their own (absent) identity.
        try await (r.world.remote(as: UUID()) as! any IdentityBackupRemote).resetIdentity()
        #expect(try await root.status().identityFingerprint == r.fingerprint.description)
        #expect(try await (r.world.remote() as! any IdentityBackupRemote).fetchIdentityBackup() != nil)
        await #expect { try await r.manager(r.phone).reset(recoveryKey: nil) } throws: {
            ($0 as? SyncError)?.code == .wrongRole
        }

        let fresh = RecoveryKey()
        let fingerprint = try await root.reset(recoveryKey: fresh)
        #expect(fingerprint != r.fingerprint)
        let status = try await root.status()
        #expect(status.isTrustRoot && status.thisDevice == .verified)
        #expect(status.identityFingerprint == fingerprint.description)
        #expect(status.devices.first { $0.deviceID == r.phone.identity.id }?.status == .unverified)
        // The phone pinned the old identity: it stops until paired again.
        await #expect { try await r.phone.engine.pull() } throws: { ($0 as? SyncError)?.code == .identityChanged }
        // The old recovery key opens nothing any more; the new one does.
        await #expect(throws: RecoveryError.doesNotOpen) { try await r.manager(r.spare).recover(with: r.recoveryKey) }
        #expect(try await r.manager(r.spare).recover(with: fresh) == fingerprint)
    }
}
