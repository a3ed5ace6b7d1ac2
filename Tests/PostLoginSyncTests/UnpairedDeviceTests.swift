import DeviceTrust
import Foundation
import LocalStore
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import TestStack
import Testing

@testable import PostLoginSync

/// Issue 69, item 1: once the user has a trust log, a device that is not in it seals nothing
/// (whatever trust mode it was given: a login alone does not choose who receives secrets), and a
/// phone reports an envelope it refuses once, with the fix, instead of failing every pull.
@Suite("A device outside the user's trust log")
struct UnpairedDeviceTests {
    static var remotes: [(Backend, Bool)] { Backend.variants }

    @Test(
        "a desktop that is not in the user's trust log seals nothing, says how to pair, and the phone stays clean",
        arguments: remotes)
    func unpairedDesktopSealsNothing(backend: Backend, deployed: Bool) async throws {
        let p = try await TrustThreatTests.paired(backend, deployed, sessions: 1)
        var any = SyncOptions()
        any.recipients = .init(trust: .any)
        for options in [SyncOptions(), any] {
            let second = try await p.world.desktop(
                "second-\(options.recipients.trust.map { "\($0)" } ?? "default")",
                sessions: 1, options: options)
            let push = try await second.engine.push()
            let refusal = try #require(push.errors.first { $0.code.rawValue == SyncError.Code.notPaired.rawValue })
            #expect(refusal.message.contains("sync-cli trust join"), "\(refusal.message)")
            let session = try #require(try await second.store.sessions().first).id
            // The session itself reached the remote: only its secret was withheld.
            #expect(
                try await p.world.operatorRemote().fetchSessions(after: nil).contains { $0.record.id == session })
            for device in [p.phone, p.desktop, second] {
                let sealed = try await p.world.operatorRemote().fetchEnvelopes(
                    addressedTo: device.identity.id, sessions: [session])
                #expect(sealed.isEmpty, "an unpaired desktop sealed to \(device.identity.name)")
            }
        }
        let pull = try await p.phone.engine.pull()
        #expect(pull.outcome == .success, "\(pull.errors)")
    }

    @Test("a desktop that joined but was not approved yet seals nothing and says so; approved, it seals")
    func joinedNotApproved() async throws {
        let p = try await TrustThreatTests.paired(.embedded, false, sessions: 1)
        let second = try await p.world.desktop("second", sessions: 1)
        let (code, _) = try await p.root.invite(deviceType: second.identity.deviceType)
        _ = try await DeviceTrustManager(local: second.store, remote: try p.world.remote(for: second))
            .join(code: PairingCode(parsing: code.revealText()))
        let waiting = try await second.engine.push()
        let refusal = try #require(
            waiting.errors.first { $0.code.rawValue == SyncError.Code.notPaired.rawValue }, "\(waiting.errors)")
        #expect(refusal.message.contains("sync-cli trust approve"))
        _ = try await p.root.approve()
        #expect(try await second.engine.push().outcome == .success)
        let pull = try await p.phone.engine.pull()
        #expect(pull.outcome == .success, "\(pull.errors)")
        let session = try #require(try await second.store.sessions().first).id
        #expect(try await p.phone.store.openReceived(sessionID: session).authenticated)
    }

    @Test("an operator who hides the log from an unpaired desktop after it saw it changes nothing")
    func hiddenLogAfterSeen() async throws {
        let stack = try StackEnvironment.require()
        let p = try await TrustThreatTests.paired(.postgrest, false, sessions: 1)
        let second = try await p.world.desktop("second", sessions: 1)
        let first = try await second.engine.push()
        #expect(first.errors.contains { $0.code.rawValue == SyncError.Code.notPaired.rawValue })
        // The operator removes the user's log: every genesis is gone from then on.
        _ = try await stack.sql(
            "ALTER TABLE public.trust_log DISABLE TRIGGER USER; "
                + "DELETE FROM public.trust_log WHERE user_id = '\(p.world.user.canonical)'; "
                + "ALTER TABLE public.trust_log ENABLE TRIGGER USER;")
        #expect(try await p.world.remote(for: second).trustLogGeneses().isEmpty)
        let push = try await second.engine.push()
        #expect(push.errors.contains { $0.code.rawValue == SyncError.Code.notPaired.rawValue }, "\(push.errors)")
        let session = try #require(try await second.store.sessions().first).id
        let sealed = try await p.world.operatorRemote().fetchEnvelopes(
            addressedTo: p.phone.identity.id, sessions: [session])
        #expect(sealed.isEmpty, "the desktop sealed to the phone once the log was hidden")
    }

    @Test(
        "a phone outside the user's log accepts no envelope, even one a device row seals to it, and its pull says how to pair",
        arguments: remotes)
    func unpairedPhoneAcceptsNothing(backend: Backend, deployed: Bool) async throws {
        let p = try await TrustThreatTests.paired(backend, deployed, sessions: 1)
        let session = try #require(try await p.desktop.store.sessions().first).id
        let tablet = try await p.world.device("tablet", role: .mobile, type: .iosTablet)
        let sender = X25519PrivateKey(), senderID = UUID()
        try await p.world.plantDevice(
            OwnDeviceRow(
                id: senderID, userID: p.world.user, name: "unpaired", deviceType: .linuxDesktop, hostname: nil,
                publicKey: sender.publicKey.base64))
        let envelope = try SecretEnvelope.sealV2(
            SessionSecret(), for: tablet.identity.publicKey, recipientDeviceID: tablet.identity.id,
            sessionID: SessionID(session), sender: sender, senderDeviceID: senderID, generation: 1)
        _ = try await p.world.operatorRemote().upsertEnvelopes(
            [
                EnvelopeRecord(
                    sessionID: session, deviceID: tablet.identity.id, ephemeralPublicKey: envelope.ephemeralPublicKey,
                    encryptedSecret: envelope.encryptedSecret)
            ], onBatchAccepted: nil)
        // The remote refuses an uncertified device's envelope reads too (issue 64): this shows
        // what the pull says, and that it fails nothing, more than the client's own guard.
        for _ in 0..<2 {
            let pull = try await tablet.engine.pull()
            #expect(pull.outcome == .success, "\(pull.errors)")
            #expect(pull.trust?.note?.contains("sync-cli trust join") == true, "\(pull.trust?.note ?? "")")
            #expect(pull.trust?.rejectedEnvelopes == 0)
            await #expect(throws: (any Error).self, "an envelope was accepted") {
                try await tablet.store.openReceived(sessionID: session)
            }
        }
    }

    @Test(
        "an envelope the phone refuses is reported once, names the fix, and fails no later pull while unchanged",
        arguments: remotes)
    func refusalReportedOnce(backend: Backend, deployed: Bool) async throws {
        let p = try await TrustThreatTests.paired(backend, deployed, sessions: 1)
        let remote = try p.world.operatorRemote()
        let session = try #require(try await p.desktop.store.sessions().first).id
        // A device row the log does not certify seals its own secret to the phone (the operator
        // writes the row, as in TrustThreatTests 6).
        let attacker = X25519PrivateKey(), attackerID = UUID()
        try await p.world.plantDevice(
            OwnDeviceRow(
                id: attackerID, userID: p.world.user, name: "unpaired", deviceType: .linuxDesktop, hostname: nil,
                publicKey: attacker.publicKey.base64))
        func plant() async throws {
            let envelope = try SecretEnvelope.sealV2(
                SessionSecret(), for: p.phone.identity.publicKey, recipientDeviceID: p.phone.identity.id,
                sessionID: SessionID(session), sender: attacker, senderDeviceID: attackerID, generation: 1)
            _ = try await remote.upsertEnvelopes(
                [
                    EnvelopeRecord(
                        sessionID: session, deviceID: p.phone.identity.id,
                        ephemeralPublicKey: envelope.ephemeralPublicKey, encryptedSecret: envelope.encryptedSecret)
                ], onBatchAccepted: nil)
        }
        try await plant()
        let first = try await p.phone.engine.pull()
        let issue = try #require(first.errors.first { $0.code == .uncertifiedSender })
        #expect(issue.message.contains("pair it") && issue.message.contains("sync-cli trust join"))
        #expect(first.outcome == .partial)
        // Unchanged: counted, not failed again; the reason stays where `secrets show` reads it.
        for _ in 0..<2 {
            let again = try await p.phone.engine.pull()
            #expect(again.outcome == .success && again.errors.isEmpty, "\(again.errors)")
            #expect(again.trust?.rejectedEnvelopes == 1)
        }
        let manager = DeviceTrustManager(local: p.phone.store, remote: try p.world.remote(for: p.phone))
        guard case .refused(let code, _) = try await manager.missingEnvelopeReason(sessionID: session) else {
            Issue.record("the kept refusal is not the reason given")
            return
        }
        #expect(code == .uncertifiedSender)
        // A new row is a new refusal: reported again.
        try await plant()
        let changed = try await p.phone.engine.pull()
        #expect(changed.errors.contains { $0.code == .uncertifiedSender }, "\(changed.errors)")
    }
}
