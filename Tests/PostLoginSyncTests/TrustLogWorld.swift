import DeviceTrust
import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport

@testable import LocalStore
@testable import PostLoginSync

/// A user whose root desktop started the trust log (with a recovery key), a phone paired with it,
/// and a spare desktop that never paired; all synced once.
struct LogWorld {
    let world: World
    let root: World.Device
    let phone: World.Device
    let spare: World.Device
    let recoveryKey: RecoveryKey

    static func make(_ backend: Backend, _ deployed: Bool = false, sessions: Int = 2) async throws -> LogWorld {
        let world = try World(backend, deployedSchema: deployed)
        let phone = try await world.device("phone", role: .mobile)
        let spare = try await world.desktop("spare", repositories: 1, sessions: 1)
        let root = try await world.desktop(sessions: sessions)
        let started = try await DeviceTrustManager(local: root.store, remote: try world.remote(for: root)).initialize()
        let manager = DeviceTrustManager(local: root.store, remote: try world.remote(for: root))
        manager.recoveryKeyShown()
        try await TrustThreatTests.join(phone, world: world, root: manager)
        _ = try await root.engine.push()
        _ = try await phone.engine.pull()
        guard let recoveryKey = started.recoveryKey else { throw SyncError(code: .noIdentity, message: "no key") }
        return LogWorld(world: world, root: root, phone: phone, spare: spare, recoveryKey: recoveryKey)
    }

    func manager(_ device: World.Device, options: SyncOptions = SyncOptions()) throws -> DeviceTrustManager {
        DeviceTrustManager(local: device.store, remote: try world.remote(for: device), options: options)
    }

    /// A device's engine with other options (a clock of its own).
    func engine(_ device: World.Device, options: SyncOptions) throws -> SyncEngine {
        SyncEngine(local: device.store, remote: try world.remote(for: device), options: options)
    }

    /// Pairs `device` and makes it a root too; returns its manager.
    func secondRoot(_ device: World.Device) async throws -> DeviceTrustManager {
        try await TrustThreatTests.join(device, world: world, root: manager(root))
        try await manager(root).grantRoot(device.identity.id)
        _ = try await device.engine.push() // its sync opens the grant
        return try manager(device)
    }

    /// Every row of an epoch as stored.
    func rows(_ epoch: UInt32 = 1) async throws -> [TrustLogRow] {
        try await world.remote(for: root).trustLogRows(epoch: epoch, fromSeq: 0)
    }

    /// The error code a call throws (`SyncError` code, or the remote's SQLSTATE), or `nil`.
    static func code(_ body: () async throws -> Void) async -> String? {
        do {
            try await body()
            return nil
        } catch let error as SyncError {
            return error.code.rawValue
        } catch let error as RemoteStoreError {
            return error.postgrestCode?.rawValue ?? error.code.description
        } catch {
            return "\(error)"
        }
    }

    /// Whether a report names a trust failure code.
    static func failed(_ report: SyncReport, with code: String) -> Bool {
        report.errors.contains { $0.code.rawValue == code }
    }

    /// A clock `seconds` from now, as a device's options.
    static func clock(_ seconds: TimeInterval) -> SyncOptions {
        var options = SyncOptions()
        options.now = { Date().addingTimeInterval(seconds) }
        return options
    }

    /// A clock stopped at `date`: what a device sees then, however long the test takes to get
    /// there (a clock offset from now drifts by the test's own time on a loaded machine).
    static func at(_ date: Date) -> SyncOptions {
        var options = SyncOptions()
        options.now = { date }
        return options
    }
}
