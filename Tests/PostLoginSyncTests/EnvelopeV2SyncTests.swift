import Foundation
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Testing

@testable import LocalStore

/// Envelope v2 through the engine: capability negotiation, sealing, receiving.
@Suite("Envelope v2 in sync")
struct EnvelopeV2SyncTests {
    /// Every remote: embedded, and the stack with the project's and the deployed schema.
    static var remotes: [(Backend, Bool)] { Backend.variants }

    @Test(
        "a desktop seals v2 to a phone that advertises it and v1 to one that does not; both open theirs",
        arguments: remotes)
    func mixedRecipients(backend: Backend, deployedSchema: Bool) async throws {
        let world = try World(backend, deployedSchema: deployedSchema)
        let modern = try await world.device("modern", role: .mobile)
        var legacy = SyncOptions()
        legacy.envelopeVersions = [1]
        let old = try await world.device("old", role: .mobile, options: legacy)
        _ = try await modern.engine.pull()
        _ = try await old.engine.pull()
        let desktop = try await world.desktop(sessions: 4)
        let push = try await desktop.engine.push()
        #expect(push.outcome == .success)

        let pairs = try await world.remote(for: modern).fetchEnvelopes(addressedTo: modern.identity.id)
        #expect(pairs.count == 4 && pairs.allSatisfy { $0.ephemeralPublicKey.hasPrefix("v2:") })
        let legacyPairs = try await world.remote(for: old).fetchEnvelopes(addressedTo: old.identity.id)
        #expect(legacyPairs.count == 4 && legacyPairs.allSatisfy { !$0.ephemeralPublicKey.hasPrefix("v2:") })

        _ = try await modern.engine.pull()
        _ = try await old.engine.pull()
        let secrets = try await world.secrets(of: desktop)
        #expect(try await world.opened(by: modern) == secrets)
        #expect(try await world.opened(by: old) == secrets)
        for envelope in try await modern.store.receivedEnvelopes() {
            #expect(
                envelope.authenticated && envelope.senderDeviceID == desktop.identity.id && envelope.generation == 1)
            let opened = try await modern.store.openReceived(sessionID: envelope.sessionID)
            #expect(opened.authenticated && opened.version == 2)
        }
        #expect(try await old.store.receivedEnvelopes().allSatisfy { !$0.authenticated && $0.senderDeviceID == nil })
        // Nothing changed: the second push seals nothing, whatever the versions.
        #expect(try await desktop.engine.push().envelopesSealed == 0)
    }

    @Test("a phone that starts advertising v2 gets its envelopes re-sealed as v2 once", arguments: Backend.available)
    func upgradedPhone(backend: Backend) async throws {
        let world = try World(backend)
        var legacy = SyncOptions()
        legacy.envelopeVersions = [1]
        let phone = try await world.device("phone", role: .mobile, options: legacy)
        _ = try await phone.engine.pull()
        let desktop = try await world.desktop(sessions: 3)
        _ = try await desktop.engine.push()
        let upgraded = try await world.device("phone", role: .mobile)
        _ = try await upgraded.engine.pull()
        #expect(try await desktop.engine.push().envelopesSealed == 3)
        #expect(try await desktop.engine.push().envelopesSealed == 0)
        _ = try await upgraded.engine.pull()
        #expect(try await upgraded.store.receivedEnvelopes().allSatisfy(\.authenticated))
    }

    @Test("advertising keeps the keys other clients keep in devices.capabilities", arguments: remotes)
    func capabilitiesMerge(backend: Backend, deployedSchema: Bool) async throws {
        let world = try World(backend, deployedSchema: deployedSchema)
        let phone = try await world.device("phone", role: .mobile)
        // Another client of the same device (the deployed daemon keeps cli.* entries) wrote first.
        let remote = try world.remote(for: phone)
        try await remote.upsertOwnDevice(
            OwnDeviceRow(
                id: phone.identity.id, userID: world.user, name: "phone", deviceType: .iosPhone,
                hostname: nil, publicKey: phone.identity.publicKey.base64))
        try await world.setCapabilities(phone.identity.id, json: #"{"cli.version":"2.3.1","cli.features":["handoff"]}"#)
        _ = try await phone.engine.pull()
        let text = try #require(try await world.capabilities(phone.identity.id))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["cli.version"] as? String == "2.3.1")
        #expect(object["session_secret_envelopes"] as? [Int] == [1, 2])
        #expect(try await remote.listDevices().first { $0.id == phone.identity.id }?.envelopeVersions == [1, 2])
    }

    @Test(
        "a v2 envelope naming a sender that is not one of the user's devices is reported and not stored",
        arguments: Backend.available)
    func unknownSender(backend: Backend) async throws {
        let world = try World(backend)
        let phone = try await world.device("phone", role: .mobile)
        _ = try await phone.engine.pull()
        let desktop = try await world.desktop(sessions: 1)
        _ = try await desktop.engine.push()
        let session = try #require(try await desktop.store.sessions().first)
        // The server plants a v2 envelope sealed by a key no device row has (a token holder's is
        // refused: its device does not run the session).
        let stranger = X25519PrivateKey()
        let planted = try SecretEnvelope.sealV2(
            SessionSecret(), for: phone.identity.publicKey, recipientDeviceID: phone.identity.id,
            sessionID: SessionID(session.id), sender: stranger, senderDeviceID: UUID(), generation: 1)
        _ = try await world.operatorRemote().upsertEnvelopes(
            [
                EnvelopeRecord(
                    sessionID: session.id, deviceID: phone.identity.id,
                    ephemeralPublicKey: planted.ephemeralPublicKey,
                    encryptedSecret: planted.encryptedSecret)
            ], onBatchAccepted: nil)
        let pull = try await phone.engine.pull()
        #expect(pull.errors.contains { $0.code == .unknownSender && $0.rowID == session.id.canonical })
        #expect(try await phone.store.receivedEnvelopes().allSatisfy { $0.envelope != planted })
    }

    @Test("a store gains a signing key on first use, 0600, and keeps it")
    func signingKey() async throws {
        let world = try World(.embedded)
        let phone = try await world.device("phone", role: .mobile)
        #expect(!FileManager.default.fileExists(atPath: phone.store.signingKeyPath))
        let first = try await phone.store.signingKey()
        let mode =
            try FileManager.default.attributesOfItem(atPath: phone.store.signingKeyPath)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try await phone.store.signingKey().publicKey == first.publicKey)
        async let a = phone.store.signingKey()
        async let b = phone.store.signingKey()
        #expect(try await a.publicKey == b.publicKey)
    }
}
