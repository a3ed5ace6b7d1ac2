import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Testing

extension ServerSecurityTests {
    // MARK: 10, 11: ownership of referenced rows, public_key format

    @Test("a user cannot reference another user's device, repository or parent", arguments: [false, true])
    func crossUserReferences(deployed: Bool) async throws {
        let harness = try PostgRESTHarness(deployedVariant: deployed)
        let a = try await Actor(harness)
        let b = try await Actor(harness)
        let aRepository = a.repository()
        _ = try await a.store.upsertRepositories([aRepository], onBatchAccepted: nil)
        let bRepository = b.repository()
        _ = try await b.store.upsertRepositories([bRepository], onBatchAccepted: nil)
        let bSession = b.session(bRepository)
        _ = try await b.store.upsertSessions([bSession], onBatchAccepted: nil)

        // A session of B's on A's repository; a repository of B's on A's device; a worktree of
        // B's whose parent is A's; an envelope of B's session addressed to A's device.
        var session = b.session(bRepository)
        session.repositoryID = aRepository.id
        #expect(
            try await b.store.upsertSessions([session], onBatchAccepted: nil).rejected.first?.error.code
                == .permissionDenied)
        var onADevice = b.repository()
        onADevice.deviceID = a.desktop
        #expect(
            try await b.store.upsertRepositories([onADevice], onBatchAccepted: nil).rejected.first?.error.code
                == .permissionDenied)
        var worktree = b.repository()
        worktree.parentRepositoryID = aRepository.id
        worktree.isWorktree = true
        #expect(
            try await b.store.upsertRepositories([worktree], onBatchAccepted: nil).rejected.first?.error.code
                == .permissionDenied)
        let envelope = b.envelope(bSession, to: a.desktop)
        #expect(
            try await b.store.upsertEnvelopes([envelope], onBatchAccepted: nil).rejected.first?.error.code
                == .permissionDenied)

        // A's delete therefore cannot reach B's rows.
        _ = try await a.store.deleteRows(.repositories, ids: [aRepository.id])
        #expect(try await b.store.listIDs(.sessions, deviceID: nil) == [bSession.id])
    }

    @Test(
        "the ownership checks cannot be called over RPC (they tell whether an id is another user's); the policies keep using them",
        arguments: [false, true])
    func ownershipChecksNotExposed(deployed: Bool) async throws {
        let stack = try StackEnvironment.require()
        let base = deployed ? stack.deployedURL : stack.url
        let user = UUID()
        for (function, argument) in [
            ("not_anothers_device", "device"), ("not_anothers_session", "session"),
            ("not_anothers_repository", "repository"),
        ] {
            let r = try await stack.request(
                "POST", "/rest/v1/rpc/\(function)", base: base, token: stack.token(for: user),
                body: #"{"\#(argument)":"\#(UUID().canonical)"}"#)
            #expect(r.status == 404 && r.body.contains("PGRST202"), "\(function) answered \(r.status)")
        }
        let exposed = try await stack.sql(
            """
            SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = 'public' AND p.proname LIKE 'not_anothers_%'
            """, database: deployed ? "sync_deployed" : "sync_own")
        #expect(exposed == "0")
    }

    @Test(
        "the project's schema refuses public keys that are not the base64 of a usable X25519 key",
        arguments: [
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
            "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
            "4Ot6fDtBuK4WVuP68Z/EatoJjeucMrH9hmIFFl9JuAA=",
            "X5yVvKNQjCSx0LFVnIPvWwREXMRYHI6G2CJO3dCfEVc=",
            "7P///////////////////////////////////////38=",
            "7f///////////////////////////////////////38=",
            "7v///////////////////////////////////////38=",
            "7f////////////////////////////////////////8=",
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==",
            "not base64 at all, but forty-four chars long",
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB=",
        ])
    func publicKeyCheck(key: String) async throws {
        let r = try await Self.postDevice(publicKey: key, user: UUID())
        #expect(r.status == 400 && r.body.contains("23514"), "\(key): \(r.status)")
    }

    @Test("a 100 KB public key is refused, and a real key is accepted")
    func publicKeySizes() async throws {
        let user = UUID()
        for (key, status) in [
            (String(repeating: "A", count: 100_000), 400), (X25519PrivateKey().publicKey.base64, 201),
        ] {
            #expect(try await Self.postDevice(publicKey: key, user: user).status == status)
        }
    }

    /// A new device row of `user`'s with `key` as its public key, posted as that (registered) device.
    static func postDevice(publicKey key: String, user: UUID) async throws -> (status: Int, body: String) {
        let stack = try StackEnvironment.require()
        let device = UUID()
        let credential = try await stack.registeredCredential(for: device, user: user)
        let row =
            #"[{"id":"\#(device.canonical)","user_id":"\#(user.canonical)","name":"x","device_type":"ios-phone","public_key":"\#(key)"}]"#
        let r = try await stack.request(
            "POST", "/rest/v1/devices", token: stack.token(for: user), body: row, credential: credential)
        return (r.status, r.body)
    }
}
