import DeviceTrust
import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Testing

@testable import LocalStore
@testable import PostLoginSync

/// trust-log.md's threats 6 and 10-15: clocks, forks, truncations, malformed histories,
/// witnesses, a revoked desktop that keeps pushing, and the log's bounds.
@Suite("The trust log: clocks, forks, truncations and witnesses")
struct TrustLogHistoryTests {
    static var remotes: [(Backend, Bool)] { Backend.variants }

    @Test(
        "6. two roots whose clocks differ by 1,100 s append in turn; every client, whatever its clock, verifies every row",
        arguments: remotes)
    func skewedRoots(backend: Backend, deployed: Bool) async throws {
        let w = try await LogWorld.make(backend, deployed)
        let second = try await w.world.desktop("second", repositories: 1, sessions: 1)
        _ = try await w.secondRoot(second)
        let slow = try w.manager(w.root, options: LogWorld.clock(-550))
        let fast = try w.manager(second, options: LogWorld.clock(550))
        for round in 0..<2 {
            let tablet = try await w.world.device("tablet-\(round)", role: .mobile, type: .iosTablet)
            try await TrustThreatTests.join(tablet, world: w.world, root: round == 0 ? fast : slow)
            try await (round == 0 ? slow : fast).revoke([tablet.identity.id])
        }
        for offset in [-3_000.0, 0, 3_000] {
            let pulled = try await w.engine(w.phone, options: LogWorld.clock(offset)).pull()
            #expect(pulled.outcome == .success, "\(offset): \(pulled.errors)")
        }
        let status = try await w.manager(w.spare).status() // never paired: nothing to verify
        #expect(status.mode == "none")
        let rows = try await w.rows()
        #expect(throws: Never.self) { try TrustLogVerifier.verify(rows.map(\.entry), userID: w.world.user, epoch: 1) }
    }

    @Test(
        "10. a fork: a device's own pin, or a witness of another entry at seq k, gives trustLogForked; nothing is sealed",
        arguments: remotes)
    func fork(backend: Backend, deployed: Bool) async throws {
        let w = try await LogWorld.make(backend, deployed)
        try await w.manager(w.root).revoke([w.phone.identity.id])
        let rows = try await w.rows()
        let k = rows.count - 1
        // Another valid history from seq k on, as a holder of the key in force could write it (the
        // operator stores it raw): a certify where the root wrote (and witnessed) the revocation.
        let before = try TrustLogVerifier.verify(rows.prefix(k).map(\.entry), userID: w.world.user, epoch: 1).state
        var writer = try TrustLogWriter(
            state: before, identity: try #require(try await w.root.store.identityKey()), author: w.root.identity.id)
        try writer.append(
            .certify(
                DeviceCertificate(
                    userID: w.world.user, deviceID: UUID(), x25519PublicKey: X25519PrivateKey().publicKey,
                    ed25519PublicKey: Ed25519PrivateKey().publicKey, deviceType: "ios-phone",
                    deviceRole: "trusted_executor", issuedAt: 1)), createdAt: UInt64(Date().timeIntervalSince1970))
        try await TrustLogStaging.updateEntry(w.world, epoch: 1, seq: UInt64(k), to: writer.written[0].text)
        // The root pinned the genuine entry: its next read is a fork.
        let push = try await w.root.engine.push()
        #expect(LogWorld.failed(push, with: "trustLogForked"))
        #expect(push.phases.first { $0.phase == .secrets }?.status == .failed)
        // A desktop that never pinned anything verifies the other history whole; the root's
        // witness of the genuine entry says it is another one.
        await #expect { try await w.manager(w.spare).recover(with: w.recoveryKey) { _ in true } } throws: {
            ($0 as? SyncError)?.code == .trustLogForked
        }
        try await RecoveryWorldCheck.nothingWritten(w, on: w.spare)
    }

    @Test(
        "11. truncation below a pinned head or a counted witness: trustLogTruncated; nothing sealed or accepted",
        arguments: remotes)
    func truncation(backend: Backend, deployed: Bool) async throws {
        let w = try await LogWorld.make(backend, deployed)
        let tablet = try await w.world.device("tablet", role: .mobile, type: .iosTablet)
        try await TrustThreatTests.join(tablet, world: w.world, root: w.manager(w.root))
        try await w.manager(w.root).revoke([tablet.identity.id])
        #expect(try await w.phone.engine.pull().outcome == .success)
        let rows = try await w.rows()
        try await TrustLogStaging.deleteRows(w.world, epoch: 1, fromSeq: UInt64(rows.count - 2))
        let push = try await w.root.engine.push()
        #expect(LogWorld.failed(push, with: "trustLogTruncated"))
        #expect(push.phases.first { $0.phase == .secrets }?.status == .failed)
        // A device that never pinned it: the witnesses of the cut rows say it was cut.
        await #expect { try await w.manager(w.spare).recover(with: w.recoveryKey) { _ in true } } throws: {
            ($0 as? SyncError)?.code == .trustLogTruncated
        }
        try await RecoveryWorldCheck.nothingWritten(w, on: w.spare)
    }

    @Test(
        "11. a walk (recovery) is bounded by the head this device pinned and by the revocations it verified, witnesses gone or not",
        arguments: remotes)
    func truncationOnAWalk(backend: Backend, deployed: Bool) async throws {
        let w = try await LogWorld.make(backend, deployed)
        try await TrustThreatTests.join(w.spare, world: w.world, root: w.manager(w.root))
        let tablet = try await w.world.device("tablet", role: .mobile, type: .iosTablet)
        try await TrustThreatTests.join(tablet, world: w.world, root: w.manager(w.root))
        try await w.manager(w.root).revoke([tablet.identity.id])
        let watch = try await w.world.device("watch", role: .mobile, type: .iosPhone)
        try await TrustThreatTests.join(watch, world: w.world, root: w.manager(w.root))
        #expect(try await w.spare.engine.push().outcome == .success)
        let rows = try await w.rows()
        let user = w.world.user.canonical
        func cut(from seq: Int) async throws {
            try await TrustLogStaging.deleteRows(w.world, epoch: 1, fromSeq: UInt64(seq))
            try await TrustLogStaging.operatorSQL(
                w.world, stack: "DELETE FROM public.trust_log_witnesses WHERE user_id = '\(user)'",
                embedded: "DELETE FROM trust_log_witnesses WHERE user_id = '\(user)'")
        }
        // The operator cuts the last certify off, and every witness that would say so: the spare
        // recovers, and its pin is beyond the log's end.
        try await cut(from: rows.count - 1)
        await #expect { try await w.manager(w.spare).recover(with: w.recoveryKey) { _ in true } } throws: {
            ($0 as? SyncError)?.code == .trustLogTruncated
        }
        // The revocation cut off too, and the spare's pin lost (a lost cache): the revocation it
        // verified is still a floor.
        try await cut(from: rows.count - 2)
        try await w.spare.store.removeTrustLogPin()
        await #expect { try await w.manager(w.spare).recover(with: w.recoveryKey) { _ in true } } throws: {
            ($0 as? SyncError)?.code == .trustLogTruncated
        }
        #expect(try await w.spare.store.identityKey() == nil)
    }

    @Test(
        "1. a revocation remembered from an earlier epoch: a new epoch certifying the same keys is reported and not trusted",
        arguments: remotes)
    func revocationMissingFromLog(backend: Backend, deployed: Bool) async throws {
        let w = try await LogWorld.make(backend, deployed)
        try await TrustThreatTests.join(w.spare, world: w.world, root: w.manager(w.root))
        try await w.manager(w.root).revoke([w.phone.identity.id])
        #expect(try await w.spare.engine.push().outcome == .success)
        // The root starts epoch 2 (in effect at once); the spare is paired again in it.
        let reset = try await w.manager(w.root).reset(recovery: .none)
        #expect(reset.inEffect && reset.epoch == 2)
        try await TrustThreatTests.join(w.spare, world: w.world, root: w.manager(w.root))
        // A root of epoch 2 that never saw epoch 1's revocation certifies the revoked phone's keys.
        let rows = try await w.rows(2)
        let state = try TrustLogVerifier.verify(rows.map(\.entry), userID: w.world.user, epoch: 2).state
        let key = try #require(try await w.root.store.identityKey())
        var writer = try TrustLogWriter(state: state, identity: key, author: w.root.identity.id)
        try writer.append(
            .certify(
                DeviceCertificate(
                    userID: w.world.user, deviceID: w.phone.identity.id, x25519PublicKey: w.phone.identity.publicKey,
                    ed25519PublicKey: try await w.phone.store.signingKey().publicKey, deviceType: "ios-phone",
                    deviceRole: "trusted_executor", issuedAt: UInt64(Date().timeIntervalSince1970))),
            createdAt: UInt64(Date().timeIntervalSince1970))
        try await w.world.remote(for: w.root).appendTrustEntries(
            epoch: 2, firstSeq: state.headSeq + 1,
            writer.written.map { TrustLogAppend(entry: $0.text, backup: $0.backup) })
        // The spare remembers: reported, and nothing sealed to the phone.
        let push = try await w.spare.engine.push()
        #expect(push.outcome == .success, "\(push.errors)")
        #expect(push.trust?.reports.contains { $0.code == .revocationMissingFromLog } == true)
        #expect(push.recipients.first { $0.deviceID == w.phone.identity.id }?.receives != true)
    }

    @Test(
        "12. a gap, a duplicate or a wrong prev raw-inserted: trustLogInvalid at the expected position",
        arguments: remotes)
    func malformedHistory(backend: Backend, deployed: Bool) async throws {
        let w = try await LogWorld.make(backend, deployed)
        let rows = try await w.rows()
        let next = UInt64(rows.count)
        // A duplicate of the last entry at the next seq: its seq and prev are wrong there.
        try await TrustLogStaging.insertRow(w.world, epoch: 1, seq: next, entry: rows[rows.count - 1].entry)
        await #expect { try await w.manager(w.root).status() } throws: { error in
            (error as? SyncError)?.code == .trustLogInvalid
                && (error as? SyncError)?.message.contains("seq \(next) (header)") == true
        }
    }

    @Test(
        "13. garbage, foreign and other-epoch witnesses are ignored and reported; an older one replayed or one beyond the head: 22023",
        arguments: remotes)
    func witnesses(backend: Backend, deployed: Bool) async throws {
        let w = try await LogWorld.make(backend, deployed)
        let remote = try w.world.remote()
        let phone = w.phone.identity.id
        let key = try await w.phone.store.signingKey()
        let rows = try await w.rows()
        func publish(
            seq: UInt64, epoch: UInt32 = 1, hash: [UInt8]? = nil, signer: Ed25519PrivateKey? = nil
        ) async
            -> String?
        {
            let witness = TrustLogWitness(
                userID: w.world.user, deviceID: phone, epoch: epoch, seq: seq,
                entryHash: hash ?? SHA256.hash([UInt8(seq)]), seenAt: UInt64(Date().timeIntervalSince1970))
            let (body, signature) = witness.signed(by: signer ?? key)
            return await LogWorld.code {
                try await remote.publishWitness(deviceID: phone, body: body, signature: signature)
            }
        }
        // The phone witnessed the head at its pull: an older seq replayed, or one beyond the head: 22023.
        #expect(await publish(seq: 0) == "22023")
        #expect(await publish(seq: UInt64(rows.count)) == "22023")
        // Another epoch: 22023 too (the server takes the current epoch only).
        #expect(await publish(seq: UInt64(rows.count - 1), epoch: 2) == "22023")
        // The operator plants garbage and a witness signed by another key: ignored, reported, never fatal.
        let garbage = TrustLogWitness(
            userID: w.world.user, deviceID: phone, epoch: 1, seq: UInt64(rows.count - 1),
            entryHash: SHA256.hash([1]), seenAt: UInt64(Date().timeIntervalSince1970))
        let (body, signature) = garbage.signed(by: Ed25519PrivateKey())
        try await TrustLogStaging.operatorSQL(
            w.world,
            stack: "INSERT INTO public.trust_log_witnesses (user_id, device_id, epoch, seq, body, signature) VALUES "
                + "('\(w.world.user.canonical)', '\(phone.canonical)', 1, 9999, '\(body)', '\(signature)')",
            embedded: "INSERT INTO trust_log_witnesses (user_id, device_id, epoch, seq, body, signature, created_at) "
                + "VALUES ('\(w.world.user.canonical)', '\(phone.canonical)', 1, 9999, '\(body)', '\(signature)', 'x')")
        let status = try await w.manager(w.root).status()
        #expect(status.problems.contains { $0.contains("witness rows do not count") })
        #expect(try await w.root.engine.push().outcome == .success)
    }

    @Test(
        "14. a revoked desktop that keeps pushing is refused by the server; what the operator plants in its name each phone refuses once (revokedSender)",
        arguments: remotes)
    func revokedDesktopPushes(backend: Backend, deployed: Bool) async throws {
        let w = try await LogWorld.make(backend, deployed)
        let rogue = try await w.world.desktop("rogue", repositories: 1, sessions: 2)
        try await TrustThreatTests.join(rogue, world: w.world, root: w.manager(w.root))
        #expect(try await rogue.engine.push().outcome == .success)
        #expect(try await w.phone.engine.pull().outcome == .success)
        try await w.manager(w.root).revoke([rogue.identity.id])
        // The rogue desktop, with the user's token and its own credential, pushes again: its
        // credential ended with its revocation.
        var options = SyncOptions()
        options.recipients.trust = .any
        await #expect {
            _ = try await SyncEngine(local: rogue.store, remote: try w.world.remote(for: rogue), options: options)
                .push()
        } throws: { String(describing: $0).contains("this device was revoked") }
        // The operator still writes rows: envelopes sealed by the rogue's key, generation 2.
        let key = try await rogue.store.deviceKey()
        var planted: [EnvelopeRecord] = []
        for session in try await rogue.store.sessions() {
            let envelope = try SecretEnvelope.sealV2(
                SessionSecret(), for: w.phone.identity.publicKey, recipientDeviceID: w.phone.identity.id,
                sessionID: SessionID(session.id), sender: key, senderDeviceID: rogue.identity.id, generation: 2)
            planted.append(
                EnvelopeRecord(
                    sessionID: session.id, deviceID: w.phone.identity.id,
                    ephemeralPublicKey: envelope.ephemeralPublicKey,
                    encryptedSecret: envelope.encryptedSecret))
        }
        _ = try await w.world.operatorRemote().upsertEnvelopes(planted, onBatchAccepted: nil)
        let first = try await w.phone.engine.pull()
        #expect(first.outcome == .success, "\(first.errors)")
        #expect(first.trust?.revokedSenders == 2)
        let second = try await w.phone.engine.pull()
        #expect(second.outcome == .success && second.trust?.revokedSenders == 0)
        // Nothing the revoked desktop sealed after its revocation was stored.
        for session in try await rogue.store.sessions() {
            #expect(try await w.phone.store.secretGenerations(sessionID: session.id) == [1])
        }
    }

    @Test(
        "15. a sync whose head is unchanged verifies nothing and reads only the witnesses; the report says what it verified",
        arguments: remotes)
    func unchangedHead(backend: Backend, deployed: Bool) async throws {
        let w = try await LogWorld.make(backend, deployed)
        let pull = try await w.phone.engine.pull()
        #expect(pull.trust?.entriesVerified == 0)
        // With the pull feed the head comes with the changes: of the log only the witnesses are
        // read (one call: a witness beyond the head is a cut log, the newest a root's word).
        // (The deployed schema has no feed: the rows from the pin are read, and verify nothing.)
        let witnesses = try await w.world.remote(for: w.root).trustLogWitnesses(epoch: 1).count
        #expect(witnesses > 0)
        #expect(deployed || pull.trust?.entriesRead == witnesses)
        let tablet = try await w.world.device("tablet", role: .mobile, type: .iosTablet)
        try await TrustThreatTests.join(tablet, world: w.world, root: w.manager(w.root))
        let moved = try await w.phone.engine.pull()
        #expect(moved.trust?.entriesVerified == 1 && moved.trust?.head?.contains("seq 2") == true)
        let again = try await w.phone.engine.pull()
        let now = try await w.world.remote(for: w.root).trustLogWitnesses(epoch: 1).count
        #expect(again.trust?.entriesVerified == 0 && (deployed || again.trust?.entriesRead == now))
    }
}
