import Foundation
import LocalStore
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
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
            for device in [p.phone, p.desktop, second] {
                let sealed = try await p.world.operatorRemote().fetchEnvelopes(
                    addressedTo: device.identity.id, sessions: [session])
                #expect(sealed.isEmpty, "an unpaired desktop sealed to \(device.identity.name)")
            }
        }
        let pull = try await p.phone.engine.pull()
        #expect(pull.outcome == .success, "\(pull.errors)")
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
