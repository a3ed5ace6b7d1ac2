import DeviceTrust
import Foundation
import RemoteStore
import SyncModel
import SyncTestSupport
import TestStack
import Testing

@testable import PostLoginSync

/// An append the server committed whose answer never came back (issue 65, item 1): a proxy
/// forwards the call and answers 502, for it and for every retry (which then meets 40001 or
/// 23505). The error alone cannot say whether the key in force changed; the log decides.
@Suite("A lost answer loses no identity")
struct LostAnswerTests {
    static func proxy(deployed: Bool) async throws -> FaultProxy {
        let stack = try StackEnvironment.require()
        let url = deployed ? stack.deployedURL : stack.url
        return try await FaultProxy(upstreamHost: url.host ?? "127.0.0.1", upstreamPort: url.port ?? 80, seed: nil)
    }

    /// A manager for `device` whose every request goes through `proxy`.
    static func manager(
        _ world: World, _ device: World.Device, through proxy: FaultProxy
    ) throws
        -> DeviceTrustManager
    {
        let stack = try StackEnvironment.require()
        let url = world.deployedSchema ? stack.deployedURL : stack.url
        let user = world.user
        var configuration = PostgRESTConfiguration(
            projectURL: proxy.url(path: url.path), apiKey: stack.anonKey, userID: user
        ) { _ in stack.token(for: user) }
        configuration.baseBackoff = .milliseconds(5)
        configuration.maxBackoff = .milliseconds(20)
        configuration.deviceCredential = device.credential
        return DeviceTrustManager(local: device.store, remote: PostgRESTRemoteStore(configuration: configuration))
    }

    /// The root holds the key in force (no seed left beside it) and can append again.
    static func holdsKeyInForce(_ w: LogWorld) async throws -> TrustLogState {
        let state = try await w.manager(w.root).verifiedLog()
        #expect(try await w.root.store.identityKey()?.publicKey == state.identityKey)
        #expect(!FileManager.default.fileExists(atPath: w.root.store.nextIdentityKeyPath))
        // The key the call returned was shown to the person.
        try w.manager(w.root).recoveryKeyShown()
        _ = try await w.manager(w.root).newRecoveryKey()
        return state
    }

    /// The three commands that append a succession.
    enum Succession: String, CaseIterable, Sendable {
        case rotateIdentity, newRecoveryKey, revokeRoot
    }

    @Test(
        "a succession committed with its answer lost: the call succeeds, the root holds the new key, the recovery key shown is the one bound",
        arguments: Succession.allCases, [false, true])
    func successionAnswerLost(command: Succession, deployed: Bool) async throws {
        let w = try await LogWorld.make(.postgrest, deployed)
        // Revoking a root needs another root to revoke.
        if command == .revokeRoot { _ = try await w.secondRoot(w.spare) }
        let proxy = try await Self.proxy(deployed: deployed)
        proxy.force(.statusAfterForwarding(502), onRequestsContaining: "append_trust_entries")
        let manager = try Self.manager(w.world, w.root, through: proxy)
        let shown = await Result(awaiting: { () async throws -> RecoveryKey? in
            switch command {
            case .rotateIdentity: return try await manager.rotateIdentity()
            case .newRecoveryKey: return try await manager.newRecoveryKey()
            case .revokeRoot: return try await manager.revoke([w.spare.identity.id]).recoveryKey
            }
        })
        await proxy.shutdown()
        let recovery = try #require(try shown.get())
        let state = try await w.manager(w.root).verifiedLog()
        #expect(
            state.recoveryKey?.rawRepresentation
                == recovery.agreementKey(userID: w.world.user).publicKey.rawRepresentation)
        _ = try await Self.holdsKeyInForce(w)
    }

    @Test(
        "a succession whose answer is lost while the log cannot be read: the new key's seed stays, and the next sync settles it",
        arguments: [false, true])
    func successionUndecided(deployed: Bool) async throws {
        let w = try await LogWorld.make(.postgrest, deployed)
        let before = try await w.manager(w.root).verifiedLog().identityKey
        let proxy = try await Self.proxy(deployed: deployed)
        // The append is applied and answered 502, and so is every request after it: the reads
        // that would tell whether it took.
        proxy.force(
            .statusAfterForwarding(502), onRequestsContaining: "append_trust_entries", then: .statusAfterForwarding(502)
        )
        let outcome = await Result(awaiting: {
            try await Self.manager(w.world, w.root, through: proxy).rotateIdentity()
        })
        await proxy.shutdown()
        #expect(throws: (any Error).self) { try outcome.get() }
        #expect(FileManager.default.fileExists(atPath: w.root.store.nextIdentityKeyPath), "the seed was deleted")
        #expect(
            FileManager.default.fileExists(atPath: w.root.store.unshownRecoveryKeyPath), "the new recovery key is lost")
        // Every sync says a bound recovery key was never shown, until it is.
        for _ in 0..<2 {
            let push = try await w.root.engine.push()
            #expect(push.outcome == .success, "\(push.errors)")
            #expect(push.trust?.reports.contains { $0.code == .recoveryKeyNotShown } == true)
        }
        let manager = try w.manager(w.root)
        #expect(try await manager.status().recoveryKeyUnshown)
        let recovery = try #require(try await manager.unshownRecoveryKey())
        let state = try await manager.verifiedLog()
        #expect(state.identityKey != before)
        // It opens the newest backup, to the key in force.
        let rows = try await w.world.remote(for: w.root).trustLogRows(epoch: state.epoch, fromSeq: 0)
        let newest = try #require(rows.last { $0.backup != nil })
        let opened = LogBackup.open(
            try #require(newest.backup), with: recovery.agreementKey(userID: w.world.user), userID: w.world.user,
            epoch: newest.epoch, seq: newest.seq)
        #expect(opened?.identity.publicKey == state.identityKey)
        manager.recoveryKeyShown()
        let quiet = try await w.root.engine.push()
        #expect(quiet.trust?.reports.contains { $0.code == .recoveryKeyNotShown } == false)
        #expect(try await manager.status().recoveryKeyUnshown == false)
        _ = try await Self.holdsKeyInForce(w)
    }

    @Test(
        "a recovery key is kept until shown: one the log does not bind warns of nothing and gives way; one it binds is never replaced unshown",
        arguments: [false, true]
    )
    func recoveryKeyKeptOnlyUntilShown(deployed: Bool) async throws {
        let w = try await LogWorld.make(.postgrest, deployed)
        let proxy = try await Self.proxy(deployed: deployed)
        // Every append answered 503 before it reaches the server: nothing is bound. The key is
        // kept all the same (an error does not prove the append did not land), warned of nowhere.
        proxy.force(.status(503), onRequestsContaining: "append_trust_entries")
        let refused = await Result(awaiting: {
            try await Self.manager(w.world, w.root, through: proxy).newRecoveryKey()
        })
        await proxy.shutdown()
        #expect(throws: (any Error).self) { try refused.get() }
        #expect(FileManager.default.fileExists(atPath: w.root.store.unshownRecoveryKeyPath))
        let manager = try w.manager(w.root)
        #expect(try await manager.unshownRecoveryKey() == nil)
        #expect(try await manager.status().recoveryKeyUnshown == false)
        // The next call that binds a key replaces it, and keeps its own until shown.
        let made = try await manager.newRecoveryKey()
        #expect(try await manager.unshownRecoveryKey()?.revealText() == made.revealText())
        // Bound and never shown: another call that binds a key is refused, and changes nothing.
        await #expect {
            _ = try await manager.rotateIdentity()
        } throws: {
            ($0 as? SyncError)?.code == .recoveryKeyNotShown
        }
        #expect(try await manager.unshownRecoveryKey()?.revealText() == made.revealText())
        manager.recoveryKeyShown()
        #expect(!FileManager.default.fileExists(atPath: w.root.store.unshownRecoveryKeyPath))
        #expect(try await manager.unshownRecoveryKey() == nil)
        _ = try await manager.rotateIdentity()
    }

    @Test(
        "trust init committed with its answer lost: the call succeeds and the device is the root holding the key",
        arguments: [false, true])
    func startAnswerLost(deployed: Bool) async throws {
        let world = try World(.postgrest, deployedSchema: deployed)
        let desktop = try await world.desktop(sessions: 1)
        let proxy = try await Self.proxy(deployed: deployed)
        proxy.force(.statusAfterForwarding(502), onRequestsContaining: "start_trust_log")
        let started = await Result(awaiting: { try await Self.manager(world, desktop, through: proxy).initialize() })
        await proxy.shutdown()
        #expect(try started.get().recoveryKey != nil)
        let manager = DeviceTrustManager(local: desktop.store, remote: try world.remote(for: desktop))
        manager.recoveryKeyShown()
        let state = try await manager.verifiedLog()
        #expect(try await desktop.store.identityKey()?.publicKey == state.identityKey)
        #expect(state.isRoot(desktop.identity.id))
        _ = try await manager.newRecoveryKey()
    }
}

extension LostAnswerTests {
    @Test(
        "trust init whose answer is lost while the log cannot be read: the next trust init finishes it, the key kept",
        arguments: [false, true])
    func startUndecidedResumed(deployed: Bool) async throws {
        let world = try World(.postgrest, deployedSchema: deployed)
        let desktop = try await world.desktop(sessions: 1)
        let proxy = try await Self.proxy(deployed: deployed)
        proxy.force(
            .statusAfterForwarding(502), onRequestsContaining: "start_trust_log", then: .statusAfterForwarding(502))
        let outcome = await Result(awaiting: { try await Self.manager(world, desktop, through: proxy).initialize() })
        await proxy.shutdown()
        #expect(throws: (any Error).self) { try outcome.get() }
        #expect(FileManager.default.fileExists(atPath: desktop.store.nextIdentityKeyPath), "the seed was deleted")
        // Run again, it finishes what the first call started instead of saying a log exists.
        let manager = DeviceTrustManager(local: desktop.store, remote: try world.remote(for: desktop))
        let resumed = try await manager.initialize()
        let recovery = try #require(resumed.recoveryKey, "the kept recovery key is not returned to be shown")
        manager.recoveryKeyShown()
        let state = try await manager.verifiedLog()
        #expect(try await desktop.store.identityKey()?.publicKey == state.identityKey)
        #expect(!FileManager.default.fileExists(atPath: desktop.store.nextIdentityKeyPath))
        #expect(state.isRoot(desktop.identity.id))
        #expect(resumed.fingerprint == IdentityFingerprint(state.identityKey))
        let genesis = try #require(
            try await world.remote(for: desktop).trustLogRows(epoch: 1, fromSeq: 0).first)
        let opened = LogBackup.open(
            try #require(genesis.backup), with: recovery.agreementKey(userID: world.user), userID: world.user,
            epoch: 1, seq: 0)
        #expect(opened?.identity.publicKey == state.identityKey)
        // And it is the root: it appends.
        _ = try await manager.newRecoveryKey()
        // A third call is the plain refusal: the log is pinned.
        await #expect {
            _ = try await manager.initialize()
        } throws: {
            ($0 as? SyncError)?.code == .identityExists
        }
    }
}

extension Result where Failure == any Error {
    /// The outcome of an async throwing call.
    init(awaiting body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
