import DeviceTrust
import Foundation
import GRDB
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Testing

@testable import LocalStore
@testable import PostLoginSync

/// The seven threats of trust.md, each against the embedded remote and the PostgreSQL stack
/// (the project's schema and the deployed variant), with a second actor holding the user's
/// token or the service role (the superuser on the stack, the file itself for the embedded
/// remote) as the attacker.
@Suite("Device trust: the threats of trust.md")
struct TrustThreatTests {
    static var remotes: [(Backend, Bool)] { Backend.variants }

    /// A desktop (the trust root) with sessions, and a phone paired with it; both synced once.
    struct Paired {
        let world: World
        let desktop: World.Device
        let phone: World.Device
        let root: DeviceTrustManager
    }

    static func paired(_ backend: Backend, _ deployed: Bool, sessions: Int = 3) async throws -> Paired {
        let world = try World(backend, deployedSchema: deployed)
        let phone = try await world.device("phone", role: .mobile)
        let desktop = try await world.desktop(sessions: sessions)
        let root = DeviceTrustManager(local: desktop.store, remote: try world.remote(for: desktop))
        try await root.initialize()
        root.recoveryKeyShown()
        try await join(phone, world: world, root: root)
        #expect(try await desktop.engine.push().outcome == .success)
        #expect(try await phone.engine.pull().outcome == .success)
        return Paired(world: world, desktop: desktop, phone: phone, root: root)
    }

    static func join(
        _ device: World.Device, world: World, root: DeviceTrustManager, options: SyncOptions = SyncOptions()
    ) async throws {
        let (code, _) = try await root.invite(deviceType: device.identity.deviceType)
        try await DeviceTrustManager(local: device.store, remote: try world.remote(for: device), options: options)
            .join(code: PairingCode(parsing: code.revealText()))
        let approval = try await root.approve()
        #expect(approval.approved.map(\.deviceID) == [device.identity.id])
    }

    /// Runs SQL with the powers of the service role: the stack's superuser, or the embedded file.
    static func asServiceRole(_ world: World, _ sql: String) async throws {
        switch world.backend {
        case .embedded:
            // Waits for the remote's own writers (a desktop reopening a refused decision) as they wait for it.
            let queue = try world.operatorDatabase()
            try await queue.write { try $0.execute(sql: sql) }
        case .postgrest:
            _ = try await StackEnvironment.require().sql(
                sql, database: world.deployedSchema ? "sync_deployed" : "sync_own")
        }
    }

    /// Whether any envelope addressed to `device` opens with `key`, read through `credential`
    /// (the device's own); without one, whether anything at all is addressed to it.
    static func anyOpens(
        _ world: World, for device: UUID, with key: X25519PrivateKey, credential: DeviceCredential? = nil
    ) async throws -> Bool {
        guard let credential else { return try await !world.addressed(to: device).isEmpty }
        for row in try await world.remote(credential: .some(credential)).fetchEnvelopes(addressedTo: device) {
            let envelope = SecretEnvelope(
                ephemeralPublicKey: row.ephemeralPublicKey, encryptedSecret: row.encryptedSecret)
            if (try? envelope.open(sessionID: SessionID(row.sessionID), recipientDeviceID: device, using: key) { _ in
                nil
            }) != nil {
                return true
            }
            if (try? envelope.open(sessionID: SessionID(row.sessionID), using: key)) != nil { return true }
        }
        return false
    }

    // MARK: 1

    @Test(
        "1. a device row inserted with an attacker's key (token holder or service role) receives nothing from a verified desktop",
        arguments: remotes)
    func insertedDevice(backend: Backend, deployed: Bool) async throws {
        let p = try await Self.paired(backend, deployed)
        let attackerKey = X25519PrivateKey()
        let byToken = UUID(), byService = UUID()
        // A token holder registers a credential for a new id and writes that device's row.
        try await p.world.plantDevice(
            OwnDeviceRow(
                id: byToken, userID: p.world.user, name: "totally my laptop",
                deviceType: .macDesktop, hostname: nil, publicKey: attackerKey.publicKey.base64))
        try await Self.asServiceRole(
            p.world,
            """
            INSERT INTO devices (id, user_id, name, device_type, public_key, is_active, is_trusted, created_at, updated_at)
            VALUES ('\(byService.canonical)', '\(p.world.user.canonical)', 'operator phone', 'ios-phone', '\(attackerKey.publicKey.base64)',
                    TRUE, TRUE, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')
            """)
        let push = try await p.desktop.engine.push()
        for id in [byToken, byService] {
            let decision = try #require(push.recipients.first { $0.deviceID == id })
            #expect(!decision.receives && decision.trust == .unverified)
            #expect(try await p.world.addressed(to: id).isEmpty)
            #expect(try await !Self.anyOpens(p.world, for: id, with: attackerKey))
        }
        #expect(push.trust?.mode == .verified && push.trust?.unverified == 2 && push.trust?.verified == 2)
        // The defence is the mode: with `--trust any` the same rows would have received.
        var any = SyncOptions()
        any.recipients.trust = .any
        let open = SyncEngine(local: p.desktop.store, remote: try p.world.remote(for: p.desktop), options: any)
        #expect(
            RecipientPolicy.evaluate(
                try await p.world.operatorRemote().listDevices(), userID: p.world.user, selfID: p.desktop.identity.id,
                options: any.recipients
            ).filter { [byToken, byService].contains($0.deviceID) }.allSatisfy(\.receives))
        _ = open
    }

    // MARK: 2

    @Test(
        "2. a certified device's public_key swapped in its row: nothing is sealed to the new key, and it is reported",
        arguments: remotes)
    func swappedKey(backend: Backend, deployed: Bool) async throws {
        let p = try await Self.paired(backend, deployed)
        let attackerKey = X25519PrivateKey()
        try await p.world.setDevice(p.phone.identity.id, publicKey: attackerKey.publicKey.base64)
        try await p.desktop.store.createSession(
            SessionRecord(
                userID: p.world.user, deviceID: p.desktop.identity.id,
                repositoryID: try await p.desktop.store.repositories()[0].id, title: "new"))
        let push = try await p.desktop.engine.push()
        #expect(push.trust?.keyMismatch == 1)
        #expect(push.errors.contains { $0.code == .keyMismatch && $0.rowID == p.phone.identity.id.canonical })
        let decision = try #require(push.recipients.first { $0.deviceID == p.phone.identity.id })
        #expect(!decision.receives && decision.trust == .keyMismatch)
        #expect(
            try await !Self.anyOpens(
                p.world, for: p.phone.identity.id, with: attackerKey, credential: p.phone.credential))
        let status = try await p.root.status()
        #expect(status.devices.first { $0.deviceID == p.phone.identity.id }?.status == .keyMismatch)
    }

    @Test("2b. this desktop's own row with a swapped key gets no self copy sealed to it", arguments: Backend.available)
    func swappedOwnKey(backend: Backend) async throws {
        let p = try await Self.paired(backend, false)
        let attackerKey = X25519PrivateKey()
        try await p.world.setDevice(p.desktop.identity.id, publicKey: attackerKey.publicKey.base64)
        var options = SyncOptions()
        options.recipients.trust = .any
        // Even in mode any: the engine knows its own key, so a swapped own row is an attack.
        let decisions = RecipientPolicy.evaluate(
            try await p.world.operatorRemote().listDevices(), userID: p.world.user, selfID: p.desktop.identity.id,
            options: options.recipients, selfKey: p.desktop.identity.publicKey)
        #expect(decisions.first { $0.deviceID == p.desktop.identity.id }?.receives == false)
    }

    // MARK: 3

    @Test(
        "3. legacy certificate and revocation rows planted by the operator change nothing for devices that verified the log",
        arguments: remotes)
    func forgedStatements(backend: Backend, deployed: Bool) async throws {
        let p = try await Self.paired(backend, deployed)
        let attackerKey = X25519PrivateKey()
        let planted = UUID()
        try await p.world.plantDevice(
            OwnDeviceRow(
                id: planted, userID: p.world.user, name: "plant", deviceType: .iosPhone, hostname: nil,
                publicKey: attackerKey.publicKey.base64))
        // The legacy rows are read-only for every API role: only the operator can write them.
        let body = try DeviceCertificate(
            userID: p.world.user, deviceID: planted, x25519PublicKey: attackerKey.publicKey,
            ed25519PublicKey: Ed25519PrivateKey().publicKey, deviceType: "ios-phone", deviceRole: "trusted_executor",
            issuedAt: 1
        ).body()
        let revocation = DeviceRevocation(
            userID: p.world.user, deviceID: p.phone.identity.id, x25519PublicKey: p.phone.identity.publicKey,
            revokedAt: 2)
        try await TrustLogStaging.legacyRow(
            p.world, "device_certificates", device: planted, body: ByteEncoding.base64(body), signature: "AA==")
        try await TrustLogStaging.legacyRow(
            p.world, "device_revocations", device: p.phone.identity.id,
            body: ByteEncoding.base64(revocation.body()), signature: "AA==")
        let push = try await p.desktop.engine.push()
        #expect(push.outcome == .success, "\(push.errors)")
        #expect(push.recipients.first { $0.deviceID == planted }?.receives == false)
        #expect(try await p.world.addressed(to: planted).isEmpty)
        #expect(push.recipients.first { $0.deviceID == p.phone.identity.id }?.receives == true)
        #expect(try await p.world.addressed(to: p.phone.identity.id).count == 3)
    }

    // MARK: 4

    @Test(
        "4. the log's genesis replaced by the operator (another identity): every device reports a fork and seals nothing",
        arguments: remotes)
    func replacedIdentity(backend: Backend, deployed: Bool) async throws {
        let p = try await Self.paired(backend, deployed)
        let before = try await p.world.addressed(to: p.phone.identity.id)
        // The operator writes a whole new log under another key in place of the user's.
        let usurper = try RemoteLogWriterForWorld(world: p.world)
        try await TrustLogStaging.replaceEpoch(p.world, epoch: 1, with: usurper.texts)
        let push = try await p.desktop.engine.push()
        #expect(push.phases.first { $0.phase == .secrets }?.status == .failed)
        #expect(push.errors.contains { $0.code == .init(rawValue: "trustLogForked") })
        // The phone's feed reports the head it pinned (the operator left the server's own record
        // of it alone): it keeps the log it verified and trusts nothing new. Without the feed's
        // word it reads the rows, and finds the fork.
        let pull = try await p.phone.engine.pull()
        if backend == .postgrest && deployed {
            // The deployed schema has no feed: the pull reads the rows and finds the fork.
            #expect(pull.phases.first { $0.phase == .envelopes }?.status == .failed)
            #expect(pull.errors.contains { $0.code == .init(rawValue: "trustLogForked") })
        } else {
            #expect(pull.outcome == .success && pull.trust?.entriesVerified == 0)
        }
        await #expect {
            try await DeviceTrustManager(local: p.phone.store, remote: try p.world.remote(for: p.phone)).status()
        } throws: { ($0 as? SyncError)?.code == .trustLogForked }
        await #expect { try await p.root.status() } throws: { ($0 as? SyncError)?.code == .trustLogForked }
        await #expect { try await p.root.invite() } throws: { ($0 as? SyncError)?.code == .trustLogForked }
        await #expect { try await p.root.revokeAllOthers() } throws: { ($0 as? SyncError)?.code == .trustLogForked }
        #expect(try await p.world.addressed(to: p.phone.identity.id) == before)
        // A join with a code for the real identity refuses the substituted key and pins nothing.
        let third = try await p.world.device("tablet", role: .mobile, type: .iosTablet)
        let code = try PairingCode(
            inviteID: Array(repeating: 1, count: 8), secret: SecureBytes(randomCount: 16),
            fingerprint: IdentityFingerprint(try #require(try await p.desktop.store.identityKey()).publicKey))
        await #expect {
            try await DeviceTrustManager(local: third.store, remote: try p.world.remote(for: third)).join(code: code)
        } throws: {
            ($0 as? SyncError)?.code == .pairingRefused
        }
        #expect(try await third.store.trustLogPin() == nil)
    }

    // MARK: 5

    @Test(
        "5. pairing requests with a wrong MAC, for an expired or used invite, or replayed are refused",
        arguments: remotes)
    func forgedPairing(backend: Backend, deployed: Bool) async throws {
        let p = try await Self.paired(backend, deployed)
        let tablet = try await p.world.device("tablet", role: .mobile, type: .iosTablet)
        let remote = try p.world.remote(for: tablet)
        _ = try await tablet.engine.pull()
        let signing = try await tablet.store.signingKey().publicKey

        // Wrong MAC for an open invite: refused, and the invite is still usable.
        let (code, _) = try await p.root.invite(deviceType: .iosTablet)
        try await remote.insertPairingRequest(
            PairingRequestRow(
                userID: p.world.user, inviteID: code.inviteIDText, deviceID: tablet.identity.id,
                x25519PublicKey: tablet.identity.publicKey.base64,
                ed25519PublicKey: signing.base64, mac: ByteEncoding.base64([UInt8](repeating: 7, count: 32))))
        let wrong = try await p.root.approve()
        #expect(wrong.approved.isEmpty && wrong.refused.count == 1 && wrong.refused[0].reason.contains("MAC"))
        #expect(try await remote.listPairingRequests().isEmpty)

        // A genuine request whose keys were altered on the way (the server swaps the X25519 key).
        let swapped = X25519PrivateKey()
        let mac = PairingMAC.mac(
            secret: code.secret, inviteID: code.inviteID, userID: p.world.user, deviceID: tablet.identity.id,
            x25519PublicKey: tablet.identity.publicKey, ed25519PublicKey: signing)
        try await remote.insertPairingRequest(
            PairingRequestRow(
                userID: p.world.user, inviteID: code.inviteIDText, deviceID: tablet.identity.id,
                x25519PublicKey: swapped.publicKey.base64,
                ed25519PublicKey: signing.base64, mac: ByteEncoding.base64(mac)))
        #expect(try await p.root.approve().refused.count == 1)

        // The genuine request is approved once; the same request again is a replay.
        let genuine = PairingRequestRow(
            userID: p.world.user, inviteID: code.inviteIDText, deviceID: tablet.identity.id,
            x25519PublicKey: tablet.identity.publicKey.base64, ed25519PublicKey: signing.base64,
            mac: ByteEncoding.base64(mac))
        try await remote.insertPairingRequest(genuine)
        #expect(try await p.root.approve().approved.map(\.deviceID) == [tablet.identity.id])
        var replay = genuine
        replay.id = UUID()
        try await remote.insertPairingRequest(replay)
        let replayed = try await p.root.approve()
        #expect(replayed.approved.isEmpty && replayed.refused.first?.reason.contains("already joined") == true)

        // An expired invite.
        let (late, _) = try await p.root.invite(deviceType: .iosTablet)
        let lateMAC = PairingMAC.mac(
            secret: late.secret, inviteID: late.inviteID, userID: p.world.user, deviceID: tablet.identity.id,
            x25519PublicKey: tablet.identity.publicKey, ed25519PublicKey: signing)
        try await remote.insertPairingRequest(
            PairingRequestRow(
                userID: p.world.user, inviteID: late.inviteIDText, deviceID: tablet.identity.id,
                x25519PublicKey: tablet.identity.publicKey.base64,
                ed25519PublicKey: signing.base64, mac: ByteEncoding.base64(lateMAC)))
        let expired = try await p.root.approve(now: Date().addingTimeInterval(DeviceTrustManager.inviteLifetime + 1))
        #expect(expired.approved.isEmpty && expired.refused.first?.reason.contains("expired") == true)

        // An invite this trust root never made.
        try await remote.insertPairingRequest(
            PairingRequestRow(
                userID: p.world.user, inviteID: "0011223344556677", deviceID: tablet.identity.id,
                x25519PublicKey: tablet.identity.publicKey.base64,
                ed25519PublicKey: signing.base64, mac: ByteEncoding.base64(lateMAC)))
        #expect(try await p.root.approve().refused.count == 1)
    }

    // MARK: 6

    @Test(
        "6. an envelope planted for a phone by a device without a certificate: v2 rejected, v1 kept unauthenticated or rejected when required",
        arguments: remotes)
    func plantedEnvelope(backend: Backend, deployed: Bool) async throws {
        let p = try await Self.paired(backend, deployed, sessions: 2)
        // The server refuses a token holder's envelope for a session its device does not run, so
        // the operator plants it: what the phone itself must refuse.
        let remote = try p.world.operatorRemote()
        let sessions = try await p.desktop.store.sessions().map(\.id).sorted { $0.canonical < $1.canonical }
        let genuine = try await p.world.secrets(of: p.desktop)
        // The attacker registers a device row (token holder) and seals its own secret to the phone as v2.
        let attacker = X25519PrivateKey(), attackerID = UUID()
        try await p.world.plantDevice(
            OwnDeviceRow(
                id: attackerID, userID: p.world.user, name: "evil", deviceType: .linuxDesktop,
                hostname: nil, publicKey: attacker.publicKey.base64))
        let planted = SessionSecret()
        let v2 = try SecretEnvelope.sealV2(
            planted, for: p.phone.identity.publicKey, recipientDeviceID: p.phone.identity.id,
            sessionID: SessionID(sessions[0]), sender: attacker, senderDeviceID: attackerID, generation: 1)
        let v1 = try SecretEnvelope.seal(planted, for: p.phone.identity.publicKey, sessionID: SessionID(sessions[1]))
        _ = try await remote.upsertEnvelopes(
            [
                EnvelopeRecord(
                    sessionID: sessions[0], deviceID: p.phone.identity.id, ephemeralPublicKey: v2.ephemeralPublicKey,
                    encryptedSecret: v2.encryptedSecret),
                EnvelopeRecord(
                    sessionID: sessions[1], deviceID: p.phone.identity.id, ephemeralPublicKey: v1.ephemeralPublicKey,
                    encryptedSecret: v1.encryptedSecret),
            ], onBatchAccepted: nil)

        let pull = try await p.phone.engine.pull()
        #expect(pull.errors.contains { $0.code == .uncertifiedSender && $0.rowID == sessions[0].canonical })
        #expect(try await p.phone.store.openReceivedSecret(sessionID: sessions[0]) == genuine[sessions[0]])
        // The v1 envelope names no sender and the session's device is certified (and an
        // authenticated secret is held): a downgrade, refused as an error; the genuine one stays.
        #expect(pull.errors.contains { $0.code == .downgradeRefused && $0.rowID == sessions[1].canonical })
        let kept = try await p.phone.store.openReceived(sessionID: sessions[1])
        #expect(kept.authenticated && kept.secret == genuine[sessions[1]])
        #expect(
            pull.trust?.unauthenticatedEnvelopes == 0 && pull.trust?.rejectedEnvelopes == 2 && pull.outcome == .partial)

        // With authenticated envelopes required, the v1 one is refused too (the phone re-reads it after a reset).
        var strict = SyncOptions()
        strict.requireAuthenticated = true
        try await p.phone.store.deleteReceivedEnvelopes(notIn: [])
        let strictPull = try await SyncEngine(
            local: p.phone.store, remote: try p.world.remote(for: p.phone), options: strict
        ).pull()
        #expect(strictPull.errors.contains { $0.code == .unauthenticatedEnvelope && $0.rowID == sessions[1].canonical })
        await #expect(throws: LocalStoreError.self) { try await p.phone.store.openReceived(sessionID: sessions[1]) }
    }

    // MARK: 7

    @Test(
        "a certified phone whose capabilities list only v1 still gets v2 (the server's column cannot steer the sealer into v1), and keeps the earlier generation",
        arguments: Backend.available)
    func capabilitiesCannotDowngrade(backend: Backend) async throws {
        let p = try await Self.paired(backend, false, sessions: 2)
        var legacy = SyncOptions()
        legacy.envelopeVersions = [1]
        let old = try await p.world.device("old-phone", role: .mobile, type: .iosTablet, options: legacy)
        try await Self.join(old, world: p.world, root: p.root, options: legacy)
        #expect(
            try await p.world.operatorRemote().listDevices().first { $0.id == old.identity.id }?.envelopeVersions == [1]
        )
        _ = try await p.desktop.engine.push()
        _ = try await old.engine.pull()
        let before = try await p.world.opened(by: old)
        #expect(before.count == 2)
        for session in before.keys { #expect(try await old.store.receivedEnvelope(sessionID: session).authenticated) }
        #expect(try await p.root.revoke([p.phone.identity.id]).sessionsRotated == 2)
        _ = try await old.engine.pull()
        let after = try await p.world.opened(by: old)
        #expect(after == (try await p.world.secrets(of: p.desktop)) && after != before)
        for (session, secret) in before {
            let current = try await old.store.receivedEnvelope(sessionID: session)
            #expect(current.generation == 2 && current.authenticated)
            #expect(try await old.store.openReceived(sessionID: session, generation: 1).secret == secret)
        }
    }

    @Test(
        "7. after a revocation no envelope is addressed to the device, and every active session it had gets a new secret it never received",
        arguments: remotes)
    func revocationRotates(backend: Backend, deployed: Bool) async throws {
        let p = try await Self.paired(backend, deployed, sessions: 4)
        let tablet = try await p.world.device("tablet", role: .mobile, type: .iosTablet)
        try await Self.join(tablet, world: p.world, root: p.root)
        let all = try await p.desktop.store.sessions()
        let ended = all[0]
        var endedRecord = ended
        endedRecord.status = .ended
        endedRecord.sessionEndedAt = Date()
        try await p.desktop.store.upsertSessions([endedRecord])
        #expect(try await p.desktop.engine.push().outcome == .success)
        _ = try await p.phone.engine.pull()
        let phoneHad = try await p.world.opened(by: p.phone)
        #expect(phoneHad.count == 4)

        // The revoking desktop rotates at once; the server deleted what was addressed to the phone.
        let revoked = try await p.root.revoke([p.phone.identity.id])
        #expect(revoked.revoked == [p.phone.identity.id] && revoked.sessionsRotated == 3)
        #expect(try await p.world.addressed(to: p.phone.identity.id).isEmpty)
        let push = try await p.desktop.engine.push()
        #expect(push.trust?.sessionsRotated == 0 && push.trust?.revoked == 1)
        #expect(try await p.world.addressed(to: p.phone.identity.id).isEmpty)
        #expect(push.recipients.first { $0.deviceID == p.phone.identity.id }?.trust == .revoked)

        let now = try await p.world.secrets(of: p.desktop)
        for session in all where session.id != ended.id {
            #expect(now[session.id] != phoneHad[session.id])
            #expect(try await p.desktop.store.ownSealedSecret(sessionID: session.id).generation == 2)
            // The earlier generation stays readable here.
            #expect(
                try await p.desktop.store.openOwnSecret(sessionID: session.id, generation: 1) == phoneHad[session.id])
        }
        #expect(now[ended.id] == phoneHad[ended.id])
        // The remaining recipient gets generation 2, authenticated; the phone's key opens none of it.
        _ = try await tablet.engine.pull()
        #expect(try await p.world.opened(by: tablet) == now)
        for session in all where session.id != ended.id {
            #expect(try await tablet.store.openReceived(sessionID: session.id).generation == 2)
        }
        #expect(try await !Self.anyOpens(p.world, for: p.phone.identity.id, with: try await p.phone.store.deviceKey()))
        // The revoked phone's own sync is refused (its credential ended with the revocation), and
        // says why; its row stays inactive.
        var refusal = ""
        do {
            let revokedPull = try await p.phone.engine.pull()
            refusal = revokedPull.errors.map(\.message).joined(separator: "\n") + (revokedPull.trust?.note ?? "")
        } catch {
            refusal = String(describing: error)
        }
        #expect(refusal.contains("this device was revoked"), "\(refusal)")
        #expect(
            try await p.world.operatorRemote().listDevices().first { $0.id == p.phone.identity.id }?.isActive == false)
        // A second push rotates nothing more; a deleted revocation row is remembered.
        // Scoped to this world's user: the stack is shared, and unscoped these rewrote every
        // user's devices (their updated_at moves) while the attack sweep compared its victim's.
        let user = p.world.user.canonical
        try await Self.asServiceRole(p.world, "DELETE FROM device_revocations WHERE user_id = '\(user)'")
        try await Self.asServiceRole(p.world, "UPDATE devices SET is_active = TRUE WHERE user_id = '\(user)'")
        let again = try await p.desktop.engine.push()
        #expect(
            again.trust?.sessionsRotated == 0
                && again.recipients.first { $0.deviceID == p.phone.identity.id }?.receives == false)
    }
}

extension TrustThreatTests {
    @Test(
        "a revocation interrupted after it was appended (the row still active) is finished by the next push, which succeeds",
        arguments: remotes)
    func interruptedRevocation(backend: Backend, deployed: Bool) async throws {
        let p = try await Self.paired(backend, deployed)
        let phone = p.phone.identity.id
        let revocation = DeviceRevocation(
            userID: p.world.user, deviceID: phone, x25519PublicKey: p.phone.identity.publicKey, revokedAt: 5)
        // What `trust revoke` does first; killed there, it did nothing else.
        try await p.root.append { writer, now in try writer.append(.revoke(revocation), createdAt: now) }
        let remote = try p.world.operatorRemote()
        let push = try await p.desktop.engine.push()
        #expect(push.outcome == .success, "\(push.errors)")
        #expect(push.trust?.sessionsRotated == 3)
        #expect(try await remote.listDevices().first { $0.id == phone }?.isActive == false)
        #expect(try await p.world.addressed(to: phone).isEmpty)
        #expect(try await p.desktop.engine.push().outcome == .success)
    }
}
