import DeviceTrust
import Foundation
import GRDB
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Testing

@testable import PostLoginSync

/// What the review of the device credentials found still open to a token holder with a device of
/// its own (`*_device_scoped_rows.sql`), on both remotes.
extension DeviceCredentialThreatTests {
    @Test(
        "9. a token holder's own device neither reads nor deletes a joiner's pairing request, and marks no secret request served",
        arguments: remotes)
    func requestsOfOthers(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let joinerID = UUID()
        let joiner = try w.world.remote(credential: .some(.random(for: joinerID)))
        let pairing = PairingRequestRow(
            userID: w.world.user, inviteID: "invite", deviceID: joinerID, x25519PublicKey: "x",
            ed25519PublicKey: "e", mac: "m")
        try await joiner.insertPairingRequest(pairing)
        let attacker = try w.world.remote(credential: .some(.random(for: UUID())))
        let root = try w.world.remote(for: w.desktop)
        #expect(
            try await attacker.listPairingRequests().isEmpty,
            "another device's request is not the token holder's to read")
        try? await attacker.deletePairingRequest(id: pairing.id)
        #expect(try await root.listPairingRequests().map(\.id) == [pairing.id], "the root still sees it")
        #expect(try await joiner.listPairingRequests().map(\.id) == [pairing.id], "the joiner reads its own")

        let phone = try w.world.remote(for: w.phone)
        let request = SecretRequestRow(
            userID: w.world.user, sessionID: try await w.session, requesterDeviceID: w.phone.identity.id)
        #expect(try await phone.insertSecretRequests([request]).accepted == 1)
        // Neither a token holder nor the asking phone may mark it served: only the session's desktop.
        for caller in [attacker, phone] {
            try? await caller.fulfilSecretRequests(ids: [request.id])
            #expect(try await root.listOpenSecretRequests().contains { $0.id == request.id })
        }

        // The rows' own devices can: the root settles the joiner, the desktop serves the phone.
        try await root.deletePairingRequest(id: pairing.id)
        #expect(try await root.listPairingRequests().isEmpty)
        try await root.fulfilSecretRequests(ids: [request.id])
        #expect(try await !root.listOpenSecretRequests().contains { $0.id == request.id })
    }

    @Test(
        "10. a login registers at most 20 new devices an hour: a bound on the rate, so nothing it registers outlasts the hour",
        arguments: remotes)
    func deviceLimit(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        var registered = 0
        var refusal: RemoteStoreError?
        while refusal == nil && registered < 40 {
            do {
                _ = try await w.world.remote(credential: .some(.random(for: UUID()))).listDevices()
                registered += 1
            } catch let error as RemoteStoreError {
                refusal = error
            }
        }
        // The world's desktop, phone and tablet registered within the hour too.
        #expect(registered == 17)
        #expect(refusal?.code == .limitExceeded && refusal?.hint == "device-limit")
        #expect(refusal?.message.contains("last hour") == true)
        // The devices registered before keep working.
        #expect(try await w.tablet.engine.pull().outcome == .success)
    }

    @Test(
        "11. cancelling another user's request says what an unknown id gets: whether it exists is not the caller's to learn",
        arguments: remotes)
    func anothersRequest(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let (task, row) = try await w.ask()
        let stranger = try w.world.remote(as: UUID(), credential: .some(.random(for: UUID())))
        func refusal(_ id: UUID) async -> String? {
            do {
                _ = try await stranger.cancelApproval(requestID: id, control: nil)
                return nil
            } catch let error as RemoteStoreError {
                // The server's own words (the client's description is generic on purpose).
                return error.serverMessage ?? error.message
            } catch {
                return "\(error)"
            }
        }
        let unknown = await refusal(UUID())
        #expect(unknown != nil)
        #expect(await refusal(row.id) == unknown)
        task.cancel()
        _ = try? await task.value
    }

    @Test(
        "12. a device the trust log revoked before its credential row existed registers none: its thief's client reads nothing",
        arguments: remotes)
    func revokedBeforeCredentials(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let phone = w.phone.identity.id
        #expect(try await w.root.revoke([phone]).rotationProblem == nil)
        // The revocation ended the phone's credential; a file or database from before device
        // credentials has no row for it at all.
        try await Self.forgetCredential(of: phone, in: w.world)
        let thief = try w.world.remote(credential: .some(.random(for: phone)))
        do {
            _ = try await thief.listDevices()
            Issue.record("a revoked device registered a credential and read the user's devices")
        } catch let error as RemoteStoreError {
            #expect(error.code == .permissionDenied && error.isDeviceRevoked, "\(error)")
        }
    }

    @Test(
        "14. the operator's service role acts for no device: a call in a device's name is refused as one with nobody signed in",
        arguments: remotes)
    func serviceRoleActsForNoDevice(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let operatorRemote = try w.world.operatorRemote()
        do {
            try await operatorRemote.publishWitness(deviceID: w.phone.identity.id, body: "AAAA", signature: "AAAA")
            Issue.record("the service role witnessed in the phone's name")
        } catch let error as RemoteStoreError {
            // `private.acting_device`'s words: the service role is no signed-in user.
            #expect(error.code == .permissionDenied, "\(error)")
            #expect((error.serverMessage ?? error.message) == "this call needs a signed-in user", "\(error)")
        }
    }

    @Test(
        "13. a trust log naming another user's device ends nothing of it: that user's device, with a row from before credentials, still registers one",
        arguments: remotes)
    func foreignRevocation(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let other = UUID(), device = UUID()
        let key = X25519PrivateKey().publicKey
        try await w.world.remote(as: other, credential: .some(.random(for: device))).upsertOwnDevice(
            OwnDeviceRow(
                id: device, userID: other, name: "theirs", deviceType: .iosPhone, hostname: nil, publicKey: key.base64))
        try await Self.forgetCredential(of: device, in: w.world)
        // This user's root revokes the other user's device by its id, as any log may name any id.
        let revocation = DeviceRevocation(userID: w.world.user, deviceID: device, x25519PublicKey: key, revokedAt: 5)
        try await w.root.append { writer, now in try writer.append(.revoke(revocation), createdAt: now) }
        let theirs = try w.world.remote(as: other, credential: .some(.random(for: device)))
        let rows = try await theirs.listDevices()
        #expect(rows.first { $0.id == device }?.isActive == true, "the other user's device is still theirs and active")
    }

    @Test(
        "14. a token holder's call with a bad argument is refused for the missing device proof (42501) before its argument is read",
        arguments: remotes)
    func proofBeforeArguments(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let phone = w.phone.identity.id, desktop = w.desktop.identity.id
        func codes(_ remote: any CompleteRemote) async -> [RemoteStoreError.Code?] {
            [
                await Self.code {
                    _ = try await remote.registerPushToken(PushTokenRegistration(deviceID: phone, token: ""))
                },
                await Self.code { _ = try await remote.pullChanges(for: phone, since: nil, rowLimit: 9_999) },
                await Self.code { _ = try await remote.recipientDigest(deviceID: phone, buckets: 3) },
                await Self.code { _ = try await remote.secretDigest(ownerDeviceID: desktop, buckets: 3) },
            ]
        }
        for holder in try Self.tokenHolders(w) {
            #expect(await codes(holder) == Array(repeating: .permissionDenied, count: 4))
        }
        // The devices' own calls: the same arguments are refused as arguments.
        let phoneCodes = await codes(try w.world.remote(for: w.phone))
        #expect(phoneCodes.prefix(3) == [.invalidValue, .invalidValue, .invalidValue])
        let desktopCodes = await codes(try w.world.remote(for: w.desktop))
        #expect(desktopCodes.last == .invalidValue)
    }

    /// Deletes `device`'s credential row, as a file or database from before device credentials has none.
    static func forgetCredential(of device: UUID, in world: World) async throws {
        switch world.backend {
        case .embedded:
            let file = try DatabaseQueue(path: world.directory.appendingPathComponent("remote.sqlite").path)
            try await file.write { db in
                try db.execute(sql: "DELETE FROM device_credentials WHERE device_id = ?", arguments: [device.canonical])
            }
        case .postgrest:
            _ = try await StackEnvironment.require().sql(
                "DELETE FROM private.device_credentials WHERE device_id = '\(device.canonical)'")
        }
    }
}
