import DeviceTrust
import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Testing

@testable import LocalStore
@testable import PostLoginSync

/// The third audit's findings on what a phone accepts and whom a desktop seals to (1-4), each
/// replayed as the audit ran it, on the embedded remote and on the stack (the project's schema
/// and the deployed one), with the user's token (or the service role) as the attacker.
@Suite("Envelopes a server or another device forges: generations, downgrades, certificates, owners")
struct EnvelopeTrustRulesTests {
    static var remotes: [(Backend, Bool)] { Backend.variants }

    /// Writes `envelope` as the row for `session` addressed to `device`, as whoever holds the
    /// user's token can.
    static func plant(
        _ envelope: SecretEnvelope, session: UUID, for device: UUID, on remote: any CompleteRemote
    ) async throws {
        _ = try await remote.upsertEnvelopes(
            [
                EnvelopeRecord(
                    sessionID: session, deviceID: device, ephemeralPublicKey: envelope.ephemeralPublicKey,
                    encryptedSecret: envelope.encryptedSecret)
            ], onBatchAccepted: nil)
    }

    // MARK: 1

    @Test(
        "1. a rotation cannot be rolled back: the session left out of one pull, then restored with its genuine generation-1 envelope",
        arguments: remotes)
    func rotationRollback(backend: Backend, deployed: Bool) async throws {
        let p = try await TrustThreatTests.paired(backend, deployed, sessions: 2)
        let tablet = try await p.world.device("tablet", role: .mobile, type: .iosTablet)
        try await TrustThreatTests.join(tablet, world: p.world, root: p.root)
        #expect(try await p.desktop.engine.push().outcome == .success)
        let remote = try p.world.operatorRemote()
        let session = try #require(try await p.desktop.store.sessions().min { $0.id.canonical < $1.id.canonical })
        // What the attacker keeps: the session's row and the phone's genuine generation-1 envelope.
        let old = try #require(
            try await p.world.remote(for: p.phone).fetchEnvelopes(addressedTo: p.phone.identity.id).first {
                $0.sessionID == session.id
            })
        let generation1 = try #require(try await p.world.secrets(of: p.desktop)[session.id])

        // The tablet is revoked; the desktop rotates; the phone takes generation 2.
        // The revoking desktop rotates at once.
        #expect(try await p.root.revoke([tablet.identity.id]).sessionsRotated == 2)
        _ = try await p.phone.engine.pull()
        let generation2 = try #require(try await p.world.secrets(of: p.desktop)[session.id])
        #expect(generation2 != generation1)
        #expect(try await p.phone.store.openReceived(sessionID: session.id).generation == 2)

        // The session is deleted for one pull (a listing that leaves it out does the same)...
        _ = try await remote.deleteRows(.sessions, ids: [session.id])
        _ = try await p.phone.engine.pull()
        #expect(try await !p.phone.store.sessionIDs().contains(session.id))
        // ...and comes back with the genuine generation-1 envelope, which the revoked tablet can
        // open (stamped now, so that the phone's next pull sees it where no trigger stamps it).
        var restored = session
        restored.updatedAt = Date()
        _ = try await remote.upsertSessions([restored], onBatchAccepted: nil)
        _ = try await remote.upsertEnvelopes([old], onBatchAccepted: nil)
        var strict = SyncOptions()
        strict.requireAuthenticated = true
        for options in [SyncOptions(), strict] {
            let pull = try await SyncEngine(
                local: p.phone.store, remote: try p.world.remote(for: p.phone), options: options
            ).pull()
            // Reported by the first pull, counted (not failed again) by the next: the row is unchanged.
            if options.requireAuthenticated {
                #expect(pull.errors.isEmpty && pull.trust?.rejectedEnvelopes == 1, "\(pull.errors)")
            } else {
                #expect(pull.errors.contains { $0.code == .staleGeneration && $0.rowID == session.id.canonical })
            }
            let held = try? await p.phone.store.openReceived(sessionID: session.id)
            #expect(held?.secret != generation1, "the phone went back to the secret the revoked tablet knows")
        }
        // The desktop's next push repairs the row; the phone takes generation 2 again, and
        // generation 1 stays readable for the messages written under it.
        _ = try await p.desktop.engine.push()
        _ = try await p.phone.engine.pull()
        let now = try await p.phone.store.openReceived(sessionID: session.id)
        #expect(now.secret == generation2 && now.generation == 2 && now.authenticated)
        #expect(try await p.phone.store.openReceived(sessionID: session.id, generation: 1).secret == generation1)
    }

    @Test(
        "1. a generation far above the highest seen (a certified device's chosen 2^32 - 1) is refused",
        arguments: remotes)
    func generationJump(backend: Backend, deployed: Bool) async throws {
        let p = try await TrustThreatTests.paired(backend, deployed, sessions: 1)
        // A second certified desktop whose own session the phone has never seen.
        let other = try await p.world.desktop("other", sessions: 1)
        try await TrustThreatTests.join(other, world: p.world, root: p.root)
        _ = try await other.engine.push()
        let session = try #require(try await other.store.sessions().first)
        let key = try await other.store.deviceKey()
        let chosen = try SecretEnvelope.sealV2(
            SessionSecret(), for: p.phone.identity.publicKey, recipientDeviceID: p.phone.identity.id,
            sessionID: SessionID(session.id), sender: key, senderDeviceID: other.identity.id,
            generation: .max)
        try await Self.plant(chosen, session: session.id, for: p.phone.identity.id, on: p.world.operatorRemote())
        let pull = try await p.phone.engine.pull()
        #expect(pull.errors.contains { $0.code == .generationJump && $0.rowID == session.id.canonical })
        // The genuine generation 1 is taken once the owner seals it again.
        _ = try await other.engine.push()
        _ = try await p.phone.engine.pull()
        let opened = try await p.phone.store.openReceived(sessionID: session.id)
        let genuine = try await p.world.secrets(of: other)[session.id]
        #expect(opened.generation == 1 && opened.secret == genuine)
    }

    // MARK: 2

    @Test(
        "2. a v1 envelope with a chosen secret planted over a phone's v2 one is refused as a downgrade; the desktop's reseal is taken",
        arguments: remotes)
    func downgrade(backend: Backend, deployed: Bool) async throws {
        let p = try await TrustThreatTests.paired(backend, deployed, sessions: 2)
        let session = try #require(try await p.desktop.store.sessions().first)
        let genuine = try #require(try await p.world.secrets(of: p.desktop)[session.id])
        let chosen = SessionSecret()
        let planted = try SecretEnvelope.seal(chosen, for: p.phone.identity.publicKey, sessionID: SessionID(session.id))
        let remote = try p.world.operatorRemote()
        try await Self.plant(planted, session: session.id, for: p.phone.identity.id, on: remote)
        let pull = try await p.phone.engine.pull()
        #expect(pull.outcome == .partial)
        #expect(pull.errors.contains { $0.code == .downgradeRefused && $0.rowID == session.id.canonical })
        let held = try await p.phone.store.openReceived(sessionID: session.id)
        #expect(held.secret == genuine && held.authenticated && held.generation == 1)

        // The desktop sees its row replaced and seals generation 1 again: taken, not "stale".
        // (The deployed schema has no digest, and a listing cannot see a replaced row: there the
        // planted row stays, refused at every pull.)
        guard !deployed else { return }
        #expect(try await p.desktop.engine.push().envelopesSealed >= 1)
        let again = try await p.phone.engine.pull()
        #expect(again.outcome == .success)
        #expect(!again.errors.contains { $0.code == .staleGeneration })
        #expect(try await p.phone.store.openReceived(sessionID: session.id).secret == genuine)
    }

    @Test("2. a v1 envelope for a certified desktop's session is refused before the phone ever held one for it")
    func downgradeOnFirstContact() async throws {
        let p = try await TrustThreatTests.paired(.embedded, false, sessions: 1)
        let session = try await p.desktop.store.createSession(
            SessionRecord(
                userID: p.world.user, deviceID: p.desktop.identity.id,
                repositoryID: try #require(try await p.desktop.store.repositories().first).id))
        _ = try await p.desktop.engine.push()
        // The phone has never stored an envelope for the new session: no mark yet. The genuine
        // v2 row is replaced by a v1 one with a chosen secret before the phone pulls.
        let planted = try SecretEnvelope.seal(
            SessionSecret(), for: p.phone.identity.publicKey, sessionID: SessionID(session.id))
        try await Self.plant(planted, session: session.id, for: p.phone.identity.id, on: p.world.operatorRemote())
        let pull = try await p.phone.engine.pull()
        #expect(pull.errors.contains { $0.code == .downgradeRefused && $0.rowID == session.id.canonical })
        #expect(try await !p.phone.store.receivedEnvelopeSessionIDs().contains(session.id))
    }

    @Test("2. without a pinned identity too, a v1 envelope never replaces an authenticated one")
    func downgradeWithoutTrust() async throws {
        let world = try World(.embedded)
        let phone = try await world.device("phone", role: .mobile)
        _ = try await phone.engine.pull()
        let desktop = try await world.desktop(sessions: 1)
        _ = try await desktop.engine.push()
        _ = try await phone.engine.pull()
        let session = try #require(try await desktop.store.sessions().first)
        let genuine = try #require(try await world.secrets(of: desktop)[session.id])
        #expect(try await phone.store.openReceived(sessionID: session.id).authenticated)
        let planted = try SecretEnvelope.seal(
            SessionSecret(), for: phone.identity.publicKey, sessionID: SessionID(session.id))
        try await Self.plant(planted, session: session.id, for: phone.identity.id, on: world.operatorRemote())
        let pull = try await phone.engine.pull()
        #expect(pull.errors.contains { $0.code == .downgradeRefused && $0.rowID == session.id.canonical })
        #expect(try await phone.store.openReceived(sessionID: session.id).secret == genuine)
    }

    @Test(
        "2. the generation a secret is shown under is the one it was stored under (secrets show --json and --reveal agree)"
    )
    func oneGeneration() async throws {
        // Without a pinned identity (trust mode any) a v1 envelope with another secret is the
        // next generation; opening it must say so, as the store does.
        let world = try World(.embedded)
        let phone = try await world.device("phone", role: .mobile)
        _ = try await phone.engine.pull()
        var legacy = SyncOptions()
        legacy.envelopeVersions = [1]
        let desktop = try await world.desktop(sessions: 1, options: legacy)
        _ = try await desktop.engine.push()
        let session = try #require(try await desktop.store.sessions().first)
        // The phone advertises v2 and the desktop seals v2 to it; plant two v1 envelopes in turn.
        for secret in [SessionSecret(), SessionSecret()] {
            let envelope = try SecretEnvelope.seal(
                secret, for: phone.identity.publicKey, sessionID: SessionID(session.id))
            try await Self.plant(envelope, session: session.id, for: phone.identity.id, on: world.operatorRemote())
            var options = SyncOptions()
            options.recipients.trust = .any
            _ = try await SyncEngine(local: phone.store, remote: try world.remote(for: phone), options: options).pull()
        }
        let stored = try await phone.store.receivedEnvelope(sessionID: session.id)
        let opened = try await phone.store.openReceived(sessionID: session.id)
        #expect(stored.generation >= 2 && opened.generation == stored.generation)
    }

    // MARK: 3

    @Test(
        "3. a certified web browser that renames its type to linux-desktop receives nothing, and is reported",
        arguments: remotes)
    func browserRenamesType(backend: Backend, deployed: Bool) async throws {
        let p = try await TrustThreatTests.paired(backend, deployed, sessions: 2)
        let browser = try await p.world.device("browser", role: .mobile, type: .webBrowser)
        try await TrustThreatTests.join(browser, world: p.world, root: p.root)
        let before = try await p.desktop.engine.push()
        #expect(before.recipients.first { $0.deviceID == browser.identity.id }?.receives == false)
        // The browser (which may update its own row) says it is a desktop.
        try await p.world.remote(for: browser).upsertOwnDevice(
            OwnDeviceRow(
                id: browser.identity.id, userID: p.world.user, name: "browser",
                deviceType: .linuxDesktop, hostname: nil,
                publicKey: browser.identity.publicKey.base64))
        let push = try await p.desktop.engine.push()
        let decision = try #require(push.recipients.first { $0.deviceID == browser.identity.id })
        #expect(!decision.receives && decision.trust == .certificateMismatch)
        #expect(push.errors.contains { $0.code == .certificateMismatch && $0.rowID == browser.identity.id.canonical })
        #expect(try await p.world.remote(for: browser).fetchEnvelopes(addressedTo: browser.identity.id).isEmpty)
    }

    @Test(
        "3. a device certified as a temporary viewer receives nothing, whatever role the server gives its row",
        arguments: remotes)
    func viewerRoleFromCertificate(backend: Backend, deployed: Bool) async throws {
        let p = try await TrustThreatTests.paired(backend, deployed, sessions: 2)
        let viewer = try await p.world.device("viewer", role: .mobile, type: .iosPhone)
        let (code, _) = try await p.root.invite(deviceType: .iosPhone, role: .temporaryViewer)
        try await DeviceTrustManager(local: viewer.store, remote: try p.world.remote(for: viewer)).join(
            code: PairingCode(parsing: code.revealText()))
        #expect(try await p.root.approve().approved.map(\.deviceID) == [viewer.identity.id])
        // The server gives the row the role that receives (it holds trusted_executor by default anyway).
        let id = viewer.identity.id.canonical
        try await TrustThreatTests.asServiceRole(
            p.world, "UPDATE devices SET device_role = 'trusted_executor' WHERE id = '\(id)'")
        let push = try await p.desktop.engine.push()
        let decision = try #require(push.recipients.first { $0.deviceID == viewer.identity.id })
        #expect(!decision.receives && decision.reason == "temporary viewer")
        #expect(try await p.world.remote(for: viewer).fetchEnvelopes(addressedTo: viewer.identity.id).isEmpty)
    }

    @Test(
        "3. approve certifies the type the invite names or the person confirmed, never the row's alone",
        arguments: Backend.available)
    func approveCertifiesWhatWasConfirmed(backend: Backend) async throws {
        let p = try await TrustThreatTests.paired(backend, false, sessions: 1)
        let browser = try await p.world.device("browser", role: .mobile, type: .webBrowser)
        // The server renames the joining browser's row to a phone before the root approves.
        func joinAsPhone(_ code: PairingCode) async throws {
            try await DeviceTrustManager(local: browser.store, remote: try p.world.remote(for: browser)).join(
                code: PairingCode(parsing: code.revealText()))
            try await p.world.operatorRemote().upsertOwnDevice(
                OwnDeviceRow(
                    id: browser.identity.id, userID: p.world.user, name: "browser",
                    deviceType: .iosPhone, hostname: nil,
                    publicKey: browser.identity.publicKey.base64))
        }
        // An invite opened for a web browser: the row that says phone is refused.
        let (forBrowser, _) = try await p.root.invite(deviceType: .webBrowser)
        try await joinAsPhone(forBrowser)
        let refused = try await p.root.approve()
        #expect(refused.approved.isEmpty && refused.refused.first?.reason.contains("opened for web-browser") == true)
        // An invite without a type: nothing is certified unless the person confirms what is shown.
        let (untyped, _) = try await p.root.invite()
        try await joinAsPhone(untyped)
        let waiting = try await p.root.approve()
        #expect(waiting.approved.isEmpty && waiting.pending.first?.deviceType == .iosPhone)
        let declined = try await p.root.approve(confirm: { $0.deviceType == .webBrowser })
        #expect(declined.approved.isEmpty && declined.refused.first?.reason.contains("did not confirm") == true)
        #expect(try await p.world.remote().listCertificates().allSatisfy { $0.deviceID != browser.identity.id })
    }

    // MARK: 4

    @Test("4. a certified device that does not own a session cannot give a phone its secret", arguments: remotes)
    func senderNotOwner(backend: Backend, deployed: Bool) async throws {
        let p = try await TrustThreatTests.paired(backend, deployed, sessions: 1)
        let other = try await p.world.desktop("other", sessions: 0)
        try await TrustThreatTests.join(other, world: p.world, root: p.root)
        let session = try #require(try await p.desktop.store.sessions().first)
        let genuine = try #require(try await p.world.secrets(of: p.desktop)[session.id])
        // The other certified desktop seals a secret of its choosing for the first one's session.
        let planted = try SecretEnvelope.sealV2(
            SessionSecret(), for: p.phone.identity.publicKey, recipientDeviceID: p.phone.identity.id,
            sessionID: SessionID(session.id), sender: try await other.store.deviceKey(),
            senderDeviceID: other.identity.id, generation: 2)
        try await Self.plant(planted, session: session.id, for: p.phone.identity.id, on: p.world.operatorRemote())
        let pull = try await p.phone.engine.pull()
        #expect(pull.errors.contains { $0.code == .wrongSender && $0.rowID == session.id.canonical })
        let held = try await p.phone.store.openReceived(sessionID: session.id)
        #expect(held.secret == genuine && held.generation == 1)

        // Even when the server names the other desktop as the session's device, the session's
        // first sender stays the only one.
        var moved = session
        moved.deviceID = other.identity.id
        moved.updatedAt = Date()
        _ = try await p.world.operatorRemote().upsertSessions([moved], onBatchAccepted: nil)
        let second = try await p.phone.engine.pull()
        // The same row, refused for the same reason: counted, not reported again.
        #expect(second.errors.isEmpty && second.trust?.rejectedEnvelopes == 1, "\(second.errors)")
        #expect(try await p.phone.store.openReceived(sessionID: session.id).secret == genuine)
    }

    @Test("4. the owner rule holds before the phone ever held a secret for the session", arguments: Backend.available)
    func senderNotOwnerFirstContact(backend: Backend) async throws {
        let p = try await TrustThreatTests.paired(backend, false, sessions: 1)
        let other = try await p.world.desktop("other", sessions: 0)
        try await TrustThreatTests.join(other, world: p.world, root: p.root)
        let session = try await p.desktop.store.createSession(
            SessionRecord(
                userID: p.world.user, deviceID: p.desktop.identity.id,
                repositoryID: try #require(try await p.desktop.store.repositories().first).id))
        _ = try await p.desktop.engine.push()
        let planted = try SecretEnvelope.sealV2(
            SessionSecret(), for: p.phone.identity.publicKey, recipientDeviceID: p.phone.identity.id,
            sessionID: SessionID(session.id), sender: try await other.store.deviceKey(),
            senderDeviceID: other.identity.id, generation: 1)
        try await Self.plant(planted, session: session.id, for: p.phone.identity.id, on: p.world.operatorRemote())
        let pull = try await p.phone.engine.pull()
        #expect(pull.errors.contains { $0.code == .wrongSender && $0.rowID == session.id.canonical })
        #expect(try await !p.phone.store.receivedEnvelopeSessionIDs().contains(session.id))
    }

    @Test("4. a sender revoked since is counted for what this device holds from it", arguments: Backend.available)
    func revokedSenderRechecked(backend: Backend) async throws {
        let p = try await TrustThreatTests.paired(backend, false, sessions: 2)
        let other = try await p.world.desktop("other", sessions: 1)
        try await TrustThreatTests.join(other, world: p.world, root: p.root)
        _ = try await other.engine.push()
        #expect(try await p.phone.engine.pull().trust?.revokedSenderEnvelopes == 0)
        #expect(try await p.phone.store.receivedEnvelopes().count == 3)
        _ = try await p.root.revoke([other.identity.id])
        let pull = try await p.phone.engine.pull()
        #expect(pull.trust?.revokedSenderEnvelopes == 1)
    }
}
