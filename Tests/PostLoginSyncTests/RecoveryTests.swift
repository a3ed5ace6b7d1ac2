import DeviceTrust
import Foundation
import Logging
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Synchronization
import Testing

@testable import LocalStore
@testable import PostLoginSync

/// A root desktop that started the log with `recoveryKey` bound, a phone paired with it and
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
        let logs = LogLines()
        let manager = DeviceTrustManager(
            local: root.store, remote: try world.remote(for: root), logger: Logger(label: "trust") { _ in logs })
        let started = try await manager.initialize()
        manager.recoveryKeyShown()
        try await TrustThreatTests.join(phone, world: world, root: manager)
        #expect(try await root.engine.push().outcome == .success)
        #expect(try await phone.engine.pull().outcome == .success)
        return RecoveryWorld(
            world: world, root: root, phone: phone, spare: spare, recoveryKey: try #require(started.recoveryKey),
            fingerprint: started.fingerprint)
    }

    func manager(_ device: World.Device) throws -> DeviceTrustManager {
        DeviceTrustManager(
            local: device.store, remote: try world.remote(for: device), logger: Logger(label: "trust") { _ in logs })
    }

    /// Recovers on `device`, confirming whatever is shown.
    func recover(_ device: World.Device, with key: RecoveryKey) async throws -> IdentityFingerprint? {
        try await manager(device).recover(with: key) { _ in true }
    }

    /// What recovery must not have written on `device` when it refused.
    func nothingWritten(on device: World.Device) async throws {
        #expect(try await device.store.identityKey() == nil)
        #expect(!FileManager.default.fileExists(atPath: device.store.identityKeyPath))
        #expect(!FileManager.default.fileExists(atPath: device.store.nextIdentityKeyPath))
        let rows = try await world.remote().trustLogRows(epoch: 1, fromSeq: 0)
        let state = try TrustLogVerifier.verify(rows.map(\.entry), userID: world.user, epoch: 1).state
        #expect(state.devices[device.identity.id] == nil && !state.isRoot(device.identity.id))
    }
}

/// Identity recovery bound to the trust log (recovery.md; trust.md, "What each threat meets"), on the
/// embedded remote and the stack.
@Suite("Recovery")
struct RecoveryTests {
    @Test(
        "the root is lost: another desktop recovers with the key, the phone keeps receiving without re-pairing",
        arguments: Backend.available)
    func recoverOnAnotherDesktop(backend: Backend) async throws {
        let r = try await RecoveryWorld.make(backend)
        #expect(try await r.manager(r.root).status().recoveryKeyBound == true)
        // The root desktop is gone, with its store.
        try FileManager.default.removeItem(at: r.world.directory.appendingPathComponent("desktop"))
        let shown = Mutex<DeviceTrustManager.RecoveryPreview?>(nil)
        let recovered = try await r.manager(r.spare).recover(with: r.recoveryKey) { preview in
            shown.withLock { $0 = preview }
            return true
        }
        #expect(recovered == r.fingerprint)
        let preview = try #require(shown.withLock { $0 })
        #expect(preview.lastEntries.count == 2 && preview.devices.contains { $0.isRoot })
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

    @Test("a person who does not confirm what recovery found gets nothing written", arguments: Backend.available)
    func notConfirmed(backend: Backend) async throws {
        let r = try await RecoveryWorld.make(backend)
        #expect(try await r.manager(r.spare).recover(with: r.recoveryKey) { _ in false } == nil)
        try await r.nothingWritten(on: r.spare)
        #expect(try await r.spare.store.trustLogPin() == nil)
    }

    @Test(
        "a recovery the log refuses (the head moved under it) keeps no seed and writes nothing",
        arguments: Backend.available)
    func refusedKeepsNoSeed(backend: Backend) async throws {
        let r = try await RecoveryWorld.make(backend)
        let root = try r.manager(r.root)
        let phone = r.phone.identity.id
        await #expect {
            try await r.manager(r.spare).recover(with: r.recoveryKey) { _ in
                // While the person reads the preview, the root appends: the recovery's entries are stale.
                (try? await root.revoke([phone])) != nil
            }
        } throws: {
            ($0 as? SyncError)?.code == .trustLogRefused
        }
        try await r.nothingWritten(on: r.spare)
        #expect(try await r.spare.store.trustLogPin() == nil)
    }

    @Test(
        "threat 9: a new recovery key retires the old one (recoveryKeyRetired, nothing written); the new one recovers",
        arguments: Backend.available)
    func newKey(backend: Backend) async throws {
        let r = try await RecoveryWorld.make(backend)
        let fresh = try await r.manager(r.root).newRecoveryKey()
        await #expect { try await r.recover(r.spare, with: r.recoveryKey) } throws: {
            ($0 as? SyncError)?.code == .recoveryKeyRetired
        }
        try await r.nothingWritten(on: r.spare)
        let recovered = try #require(try await r.recover(r.spare, with: fresh))
        #expect(recovered != r.fingerprint) // the succession replaced the identity key
        #expect(try await r.manager(r.spare).status().isTrustRoot)
        // Only a root can replace the key.
        await #expect { try await r.manager(r.phone).newRecoveryKey() } throws: {
            ($0 as? SyncError)?.code == .notTrustRoot
        }
    }

    @Test(
        "threat 9: a backup copied into a newer row (or another user's) does not open; the newest valid one is used",
        arguments: Backend.available)
    func copiedBackup(backend: Backend) async throws {
        let r = try await RecoveryWorld.make(backend)
        let rows = try await r.world.remote().trustLogRows(epoch: 1, fromSeq: 0)
        let newest = try #require(rows.last)
        // The operator copies the genesis's backup into the newest row, and garbage into others.
        try await TrustLogStaging.updateBackup(r.world, epoch: 1, seq: newest.seq, to: rows[0].backup)
        await #expect(throws: RecoveryError.doesNotOpen) { try await r.recover(r.spare, with: RecoveryKey()) }
        // The genesis's backup holds the key in force (no succession since): the recovery skips
        // the copied row and opens the genesis's own.
        #expect(try await r.recover(r.spare, with: r.recoveryKey) == r.fingerprint)
    }

    @Test(
        "threat 4 of recovery.md: the recovery key and the identity seed reach no log line or error",
        arguments: Backend.available)
    func noSecretsInLogs(backend: Backend) async throws {
        let r = try await RecoveryWorld.make(backend)
        let fresh = try await r.manager(r.root).newRecoveryKey()
        var errors: [String] = []
        do { _ = try await r.recover(r.spare, with: RecoveryKey()) } catch { errors.append("\(error)") }
        do { _ = try await r.recover(r.spare, with: r.recoveryKey) } catch { errors.append("\(error)") }
        _ = try await r.recover(r.spare, with: fresh)
        let seed = try #require(try await r.root.store.identityKey()).seedRepresentation.withUnsafeBytes { Data($0) }
        var secrets = [seed.base64EncodedString(), seed.map { String(format: "%02x", $0) }.joined()]
        for key in [r.recoveryKey, fresh] {
            secrets += [
                key.revealCompactText(), key.revealText(), key.bytes.withUnsafeBytes { Data($0).base64EncodedString() },
            ]
        }
        let text = (r.logs.all + errors).joined(separator: "\n")
        #expect(!r.logs.all.isEmpty && errors.count == 2)
        let leaked = secrets.contains { text.contains($0) }
        #expect(!leaked, "a recovery key or the identity seed reached a log line or an error")
    }

    @Test("without a recovery key: status warns, recovery does not open", arguments: Backend.available)
    func noBackup(backend: Backend) async throws {
        let world = try World(backend)
        let root = try await world.desktop(sessions: 1)
        let spare = try await world.desktop("spare", repositories: 1, sessions: 1)
        let manager = DeviceTrustManager(local: root.store, remote: try world.remote(for: root))
        try await manager.initialize(recovery: .none)
        let status = try await manager.status()
        #expect(status.recoveryKeyBound == false && status.problems.contains { $0.contains("no recovery key") })
        await #expect(throws: RecoveryError.doesNotOpen) {
            try await DeviceTrustManager(local: spare.store, remote: try world.remote(for: spare)).recover(
                with: RecoveryKey()
            ) {
                _ in true
            }
        }
    }
}
