import DeviceTrust
import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Testing

@testable import LocalStore
@testable import PostLoginSync

/// trust-log.md's "Threats the tests must show closed", on the embedded remote and the stack's
/// two schema variants (the migration's threats are in TrustLogMigrationTests).
@Suite("The trust log: the threats of trust-log.md")
struct TrustLogThreatTests {
    static var remotes: [(Backend, Bool)] { Backend.variants }

    @Test(
        "2. re-inserting a saved genuine entry: refused (40001); raw-inserted by the operator: trustLogForked or Invalid",
        arguments: remotes)
    func reinsertedEntry(backend: Backend, deployed: Bool) async throws {
        let w = try await LogWorld.make(backend, deployed)
        let saved = try await w.rows()
        try await w.manager(w.root).revoke([w.phone.identity.id])
        // A token holder: a login, and a credential it registered for a device of its own.
        let remote = try w.world.remote(credential: .some(.random(for: UUID())))
        let head = try await w.rows().count
        #expect(
            await LogWorld.code {
                try await remote.appendTrustEntries(
                    epoch: 1, firstSeq: UInt64(head), [TrustLogAppend(entry: saved[1].entry, backup: nil)])
            } == "40001")
        #expect(try await w.rows().count == head)
        // The operator puts the saved certify back in place of the revocation: every device that
        // pinned the revocation sees another entry at that seq.
        let revocationSeq = UInt64(head - 1)
        try await TrustLogStaging.updateEntry(w.world, epoch: 1, seq: revocationSeq, to: saved[1].entry)
        await #expect { try await w.manager(w.root).status() } throws: {
            ($0 as? SyncError)?.code == .trustLogForked
        }
        // A device that never pinned it verifies from seq 0 and refuses it at its position.
        await #expect { try await w.manager(w.spare).recover(with: w.recoveryKey) { _ in true } } throws: {
            ($0 as? SyncError)?.code == .trustLogInvalid
        }
        try await RecoveryWorldCheck.nothingWritten(w, on: w.spare)
    }

    @Test(
        "3. a token holder appending at the head (garbage, or genuine-looking under another key): 22023, the log and every client unchanged",
        arguments: remotes)
    func tokenHolderAppends(backend: Backend, deployed: Bool) async throws {
        let w = try await LogWorld.make(backend, deployed)
        let before = try await w.rows()
        let remote = try w.world.remote()
        let next = UInt64(before.count)
        // Garbage.
        #expect(
            await LogWorld.code {
                try await remote.appendTrustEntries(
                    epoch: 1, firstSeq: next, [TrustLogAppend(entry: "AAAA", backup: nil)])
            } == "22023")
        // A well-formed certify of an attacker's device, signed by a key of the attacker's, with a
        // proof the attacker cannot compute.
        let state = try TrustLogVerifier.verify(before.map(\.entry), userID: w.world.user, epoch: 1).state
        let attacker = Ed25519PrivateKey()
        let certificate = DeviceCertificate(
            userID: w.world.user, deviceID: UUID(), x25519PublicKey: X25519PrivateKey().publicKey,
            ed25519PublicKey: Ed25519PrivateKey().publicKey, deviceType: "ios-phone", deviceRole: "trusted_executor",
            issuedAt: UInt64(Date().timeIntervalSince1970))
        var entry = TrustLogEntry(
            userID: w.world.user, epoch: 1, seq: next, prev: Array(state.headHash), type: .certify,
            createdAt: UInt64(Date().timeIntervalSince1970), author: w.root.identity.id,
            appendProof: SHA256.hash(Array("guess".utf8)), body: try certificate.body())
        entry.sign(identity: attacker)
        #expect(
            await LogWorld.code {
                try await remote.appendTrustEntries(
                    epoch: 1, firstSeq: next, [TrustLogAppend(entry: entry.text, backup: nil)])
            } == "22023")
        #expect(try await w.rows() == before)
        let push = try await w.root.engine.push()
        let pull = try await w.phone.engine.pull()
        #expect(push.outcome == .success && pull.outcome == .success)
        #expect(push.trust?.reports.isEmpty == true && pull.trust?.reports.isEmpty == true)
        // Re-running trust init on the root: identityExists, nothing changes.
        await #expect { try await w.manager(w.root).initialize() } throws: {
            ($0 as? SyncError)?.code == .identityExists
        }
        #expect(try await w.rows() == before)
    }

    @Test(
        "4. a token holder's reset: 28000 without a fresh sign-in; with one, pending and vetoed by a root's sync; unvetoed, identityReset after 72 h",
        arguments: remotes)
    func tokenHolderReset(backend: Backend, deployed: Bool) async throws {
        let w = try await LogWorld.make(backend, deployed)
        // Starting another identity: refused (a log exists).
        let usurper = try RemoteLogWriterForWorld(world: w.world)
        #expect(
            await LogWorld.code {
                try await w.world.remote().startTrustLog([TrustLogAppend(entry: usurper.texts[0], backup: nil)])
            } == "23505")
        // A reset by a token whose sign-in is older than 10 minutes (a refreshed, stolen one): 28000.
        let stale = DeviceTrustManager(
            local: w.spare.store, remote: try w.world.remote(signedIn: Date(timeIntervalSinceNow: -700)))
        await #expect { _ = try await stale.reset(recovery: .none) } throws: {
            ($0 as? SyncError)?.code == .freshSignInRequired
        }
        #expect(try await w.world.remote().trustLogGeneses().map(\.epoch) == [1])
        // A reset from the spare desktop (the thief's): pending.
        let outcome = try await w.manager(w.spare).reset(recovery: .none)
        #expect(!outcome.inEffect && outcome.epoch == 2)
        let pulled = try await w.phone.engine.pull()
        #expect(pulled.outcome == .success)
        #expect(pulled.trust?.reports.contains { $0.code == .resetPending } == true)
        // 72 hours later on a device that never saw a veto: the identity was reset; nothing accepted.
        let later = try await w.engine(w.phone, options: LogWorld.clock(259_200 + 700)).pull()
        #expect(LogWorld.failed(later, with: "identityReset"))
        #expect(later.phases.first { $0.phase == .envelopes }?.status == .failed)
        // A root's sync vetoes it: from then on no device sees it pending or in effect.
        let push = try await w.root.engine.push()
        #expect(push.outcome == .success, "\(push.errors)")
        let vetoed = try await w.engine(w.phone, options: LogWorld.clock(259_200 + 700)).pull()
        #expect(vetoed.outcome == .success, "\(vetoed.errors)")
        #expect(vetoed.trust?.reports.contains { $0.code == .resetPending } == false)
        // The spare's seed of the vetoed reset is deleted at its next look.
        _ = try? await w.manager(w.spare).status()
        #expect(w.spare.store.resetIdentitySeedEpochs().isEmpty)
        // Another reset within 24 hours: refused, saying why on both remotes (PostgREST's reason
        // is the server's message, not in the error's description).
        await #expect {
            _ = try await w.manager(w.spare).reset(recovery: .none)
        } throws: {
            ($0 as? SyncError)?.code == .trustLogRefused
                && ($0 as? SyncError)?.message.contains("in the last 24 hours") == true
        }
    }

    @Test(
        "5. a reset genesis 601 s off the server's clock: 22023; an honest one is pending until T + 600, shown until T, and a veto at T - 1 wins",
        arguments: remotes)
    func resetClock(backend: Backend, deployed: Bool) async throws {
        let w = try await LogWorld.make(backend, deployed)
        let backdated = try w.manager(w.spare, options: LogWorld.clock(-601))
        #expect(await LogWorld.code { _ = try await backdated.reset(recovery: .none) } == "22023")
        let outcome = try await w.manager(w.spare).reset(recovery: .none)
        let genesis = try #require(try await w.rows(outcome.epoch).first)
        let created = try #require(TrustLogEpochs.readGeneses([genesis.entry], userID: w.world.user).geneses.first)
        let t = Date(timeIntervalSince1970: TimeInterval(created.createdAt + 259_200))
        // Just before T + 600: still pending. The deadline a person is shown is T, when
        // the server stops taking vetoes, not T + 600 (the allowance for clocks).
        let early = try await w.engine(w.phone, options: LogWorld.at(t + 590)).pull()
        #expect(early.outcome == .success && early.trust?.reports.contains { $0.code == .resetPending } == true)
        let shown = try await w.manager(w.phone, options: LogWorld.at(t - 60)).status().pendingResets
        #expect(shown.map(\.deadline) == [created.createdAt + 259_200], "\(shown)")
        let message = early.trust?.reports.first { $0.code == .resetPending }?.message ?? ""
        #expect(message.contains(JSONStyle.date(t)), "\(message)")
        let late = try await w.engine(w.phone, options: LogWorld.at(t + 601)).pull()
        #expect(LogWorld.failed(late, with: "identityReset"))
        // A root's veto (committed before T) is seen first by any clock.
        #expect(try await w.root.engine.push().outcome == .success)
        let after = try await w.engine(w.phone, options: LogWorld.at(t + 5_000)).pull()
        #expect(after.outcome == .success, "\(after.errors)")
        // A backdated reset the operator inserts into the active epoch never takes effect: the
        // epoch went on after its T + 600.
        let forged = try RemoteLogWriterForWorld(world: w.world, epoch: 9, priorEpoch: 1, createdAt: 1_000_000)
        try await TrustLogStaging.insertRow(w.world, epoch: 9, seq: 0, entry: forged.texts[0])
        let pulled = try await w.phone.engine.pull()
        #expect(pulled.outcome == .success, "\(pulled.errors)")
        #expect(pulled.trust?.reports.contains { $0.code == .resetPending } == false)
        // A device joining now walks every genesis from epoch 1: it stays in epoch 1, so the
        // root's code (of epoch 1's key) pairs it.
        let tablet = try await w.world.device("tablet", role: .mobile, type: .iosTablet)
        try await TrustThreatTests.join(tablet, world: w.world, root: w.manager(w.root))
        let walked = try await tablet.engine.pull()
        #expect(walked.outcome == .success, "\(walked.errors)")
        #expect(walked.trust?.head?.hasPrefix("epoch 1,") == true)
    }
}

/// What recovery must not have written.
enum RecoveryWorldCheck {
    static func nothingWritten(_ w: LogWorld, on device: World.Device) async throws {
        #expect(try await device.store.identityKey() == nil)
        #expect(!FileManager.default.fileExists(atPath: device.store.nextIdentityKeyPath))
        #expect(try await device.store.trustLogPin() == nil)
    }
}
