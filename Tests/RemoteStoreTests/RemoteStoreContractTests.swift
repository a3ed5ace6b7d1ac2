import EmbeddedRemote
import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Testing

/// What the contract suite needs besides the ``SyncRemote`` protocol itself: a store per user,
/// and the trust flow's hand on device rows (which sync never touches).
protocol RemoteHarness: Sendable {
    /// A store signed in as `user`, acting for the device of `credential` (none: a login alone).
    func store(for user: UUID, credential: DeviceCredential?) async throws -> any CompleteRemote
    func setTrust(user: UUID, device: UUID, isTrusted: Bool) async throws
}

/// The implementations the contract runs against: the embedded store, and the PostgREST client
/// against the real PostgreSQL stack with the project's schema and with the deployed variant.
enum RemoteKind: String, CaseIterable, CustomStringConvertible, Sendable {
    case embedded
    case postgrest
    case postgrestDeployedSchema

    var description: String { rawValue }

    /// Every kind, unless the stack tests are deliberately skipped (then a missing stack is not
    /// a failure); otherwise a missing stack fails the stack cases with how to start it.
    static var available: [RemoteKind] { StackEnvironment.skipped ? [.embedded] : allCases }

    func harness() throws -> any RemoteHarness {
        switch self {
        case .embedded: return try EmbeddedHarness()
        case .postgrest: return try PostgRESTHarness(deployedVariant: false)
        case .postgrestDeployedSchema: return try PostgRESTHarness(deployedVariant: true)
        }
    }
}

final class EmbeddedHarness: RemoteHarness {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("remote-\(UUID().canonical)")
    var path: String { directory.appendingPathComponent("remote.sqlite").path }

    init() throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    func store(for user: UUID, credential: DeviceCredential?) async throws -> any CompleteRemote {
        try EmbeddedRemoteStore(path: path, userID: user, credential: credential)
    }

    func setTrust(user: UUID, device: UUID, isTrusted: Bool) async throws {
        try await EmbeddedRemoteStore(path: path, userID: user).setTrust(deviceID: device, isTrusted: isTrusted)
    }
}

/// A user with a desktop device on some remote.
struct Actor {
    let user = UUID()
    let desktop = UUID()
    let key = X25519PrivateKey()
    /// The desktop's credential: what its store acts with.
    let credential: DeviceCredential
    let store: any CompleteRemote
    /// Kept alive as long as the actor: it owns the remote's files.
    let harness: any RemoteHarness

    init(_ harness: any RemoteHarness) async throws {
        self.harness = harness
        credential = DeviceCredential.random(for: desktop)
        store = try await harness.store(for: user, credential: credential)
        try await store.upsertOwnDevice(
            OwnDeviceRow(
                id: desktop, userID: user, name: "desktop", deviceType: .linuxDesktop,
                hostname: "box", publicKey: key.publicKey.base64))
    }

    /// Another device of this user, through its own client (its own credential), with its row.
    func device(_ id: UUID, type: DeviceType = .iosPhone) async throws -> any CompleteRemote {
        let store = try await harness.store(for: user, credential: .random(for: id))
        try await store.upsertOwnDevice(
            OwnDeviceRow(
                id: id, userID: user, name: "phone", deviceType: type, hostname: nil,
                publicKey: X25519PrivateKey().publicKey.base64))
        return store
    }

    func repository(_ path: String = "/src/\(UUID().canonical)") -> RepositoryRecord {
        RepositoryRecord(
            userID: user, deviceID: desktop, name: "repo", localPath: path, remoteURL: "git@x:y.git",
            defaultBranch: "main")
    }

    func session(_ repository: RepositoryRecord, title: String? = "t") -> SessionRecord {
        SessionRecord(
            userID: user, deviceID: desktop, repositoryID: repository.id, title: title, sessionPID: 7,
            currentBranch: "main", workingDirectory: repository.localPath)
    }

    func envelope(_ session: SessionRecord, to device: UUID, text: String = "c2VjcmV0") -> EnvelopeRecord {
        EnvelopeRecord(
            sessionID: session.id, deviceID: device, ephemeralPublicKey: key.publicKey.base64, encryptedSecret: text)
    }
}

/// Compares what matters of a row, with timestamps at the remote's microsecond precision and
/// `updated_at` left to the remote.
func same(_ a: RepositoryRecord, _ b: RepositoryRecord) -> Bool {
    var x = a, y = b
    x.updatedAt = y.updatedAt
    return x.id == y.id && x.userID == y.userID && x.deviceID == y.deviceID && x.name == y.name
        && x.localPath == y.localPath
        && x.remoteURL == y.remoteURL && x.defaultBranch == y.defaultBranch
        && x.parentRepositoryID == y.parentRepositoryID
        && x.isWorktree == y.isWorktree && x.status == y.status
        && Timestamp.format(x.createdAt) == Timestamp.format(y.createdAt)
}

func same(_ a: SessionRecord, _ b: SessionRecord) -> Bool {
    a.id == b.id && a.userID == b.userID && a.deviceID == b.deviceID && a.repositoryID == b.repositoryID
        && a.title == b.title
        && a.sessionPID == b.sessionPID && Timestamp.format(a.sessionStartedAt) == Timestamp.format(b.sessionStartedAt)
        && a.sessionEndedAt.map(Timestamp.format) == b.sessionEndedAt.map(Timestamp.format) && a.status == b.status
        && a.currentBranch == b.currentBranch && a.workingDirectory == b.workingDirectory
        && a.isWorktree == b.isWorktree
        && a.worktreePath == b.worktreePath
}

@Suite("SyncRemote contract")
struct RemoteStoreContractTests {
    @Test("own device upserts, lists, and never resets trust", arguments: RemoteKind.available)
    func devices(kind: RemoteKind) async throws {
        let harness = try kind.harness()
        let me = try await Actor(harness)
        try await harness.setTrust(user: me.user, device: me.desktop, isTrusted: true)
        try await me.store.upsertOwnDevice(
            OwnDeviceRow(
                id: me.desktop, userID: me.user, name: "renamed", deviceType: .linuxDesktop,
                hostname: "box", publicKey: me.key.publicKey.base64))
        let devices = try await me.store.listDevices()
        #expect(devices.count == 1)
        let device = try #require(devices.first)
        #expect(device.id == me.desktop && device.name == "renamed" && device.isTrusted && device.isActive)
        #expect(device.publicKey == me.key.publicKey.base64 && device.deviceType == .linuxDesktop)
    }

    @Test("repositories and sessions round-trip, list ids and delete with cascade", arguments: RemoteKind.available)
    func content(kind: RemoteKind) async throws {
        let me = try await Actor(try kind.harness())
        let repositories = (0..<3).map { _ in me.repository() }
        #expect(
            try await me.store.upsertRepositories(repositories, onBatchAccepted: nil) == BulkWriteResult(accepted: 3))
        let sessions = repositories.flatMap { r in (0..<2).map { _ in me.session(r) } }
        #expect(try await me.store.upsertSessions(sessions, onBatchAccepted: nil) == BulkWriteResult(accepted: 6))

        let fetched = try await me.store.fetchRepositories(after: nil)
        #expect(fetched.count == 3)
        for repository in repositories {
            #expect(fetched.contains { same($0.record, repository) })
        }
        let fetchedSessions = try await me.store.fetchSessions(after: nil)
        for session in sessions {
            #expect(fetchedSessions.contains { same($0.record, session) })
        }
        #expect(try await me.store.listIDs(.repositories, deviceID: me.desktop) == Set(repositories.map(\.id)))
        #expect(try await me.store.listIDs(.sessions, deviceID: nil) == Set(sessions.map(\.id)))
        #expect(try await me.store.listIDs(.sessions, deviceID: UUID()).isEmpty)

        _ = try await me.store.upsertEnvelopes([me.envelope(sessions[0], to: me.desktop)], onBatchAccepted: nil)
        try await me.store.deleteRows(.repositories, ids: [repositories[0].id])
        #expect(try await me.store.listIDs(.sessions, deviceID: nil) == Set(sessions[2...].map(\.id)))
        #expect(try await me.store.listEnvelopePairs().isEmpty, "envelopes cascade with their session")
        try await me.store.deleteRows(.sessions, ids: [sessions[2].id])
        #expect(try await me.store.listIDs(.sessions, deviceID: nil) == Set(sessions[3...].map(\.id)))
    }

    @Test("rows after a cursor are exactly the ones written since", arguments: RemoteKind.available)
    func cursor(kind: RemoteKind) async throws {
        let me = try await Actor(try kind.harness())
        var first = (0..<5).map { _ in me.repository() }
        _ = try await me.store.upsertRepositories(first, onBatchAccepted: nil)
        let all = try await me.store.fetchRepositories(after: nil)
        let last = try #require(all.last)
        let cursor = PullCursor(updatedAt: last.updatedAt, id: last.record.id)
        #expect(try await me.store.fetchRepositories(after: cursor).isEmpty)

        try await Task.sleep(for: .milliseconds(5))
        // Old deployments have no updated_at trigger: the writer sets it, as the engine does.
        first[2].name = "renamed"
        first[2].updatedAt = Date()
        let added = me.repository()
        _ = try await me.store.upsertRepositories([first[2], added], onBatchAccepted: nil)
        let changed = try await me.store.fetchRepositories(after: cursor)
        #expect(Set(changed.map(\.record.id)) == [first[2].id, added.id])
        #expect(changed.first { $0.record.id == first[2].id }?.record.name == "renamed")
        #expect(
            zip(changed, changed.dropFirst()).allSatisfy {
                ($0.updatedAt, $0.record.id.canonical) < ($1.updatedAt, $1.record.id.canonical)
            })
    }

    @Test("envelopes upsert by pair, list, fetch by recipient and delete three ways", arguments: RemoteKind.available)
    func envelopes(kind: RemoteKind) async throws {
        let me = try await Actor(try kind.harness())
        let repository = me.repository()
        let sessions = (0..<3).map { _ in me.session(repository) }
        _ = try await me.store.upsertRepositories([repository], onBatchAccepted: nil)
        _ = try await me.store.upsertSessions(sessions, onBatchAccepted: nil)
        let phone = UUID(), tablet = UUID()
        let phoneStore = try await me.device(phone)
        _ = try await me.device(tablet)
        let rows = sessions.flatMap { [me.envelope($0, to: phone), me.envelope($0, to: tablet)] }
        #expect(try await me.store.upsertEnvelopes(rows, onBatchAccepted: nil).accepted == 6)
        // Re-sending one pair with a new value replaces it, never duplicates it.
        _ = try await me.store.upsertEnvelopes(
            [me.envelope(sessions[0], to: phone, text: "bmV3")], onBatchAccepted: nil)
        #expect(
            Set(try await me.store.listEnvelopePairs())
                == Set(rows.map { EnvelopePair(sessionID: $0.sessionID, deviceID: $0.deviceID) }))
        let forPhone = try await phoneStore.fetchEnvelopes(addressedTo: phone)
        #expect(forPhone.count == 3)
        // The deployed bytea column answers in the \x form; every form decodes to the same bytes.
        let stored = try #require(forPhone.first { $0.sessionID == sessions[0].id }?.encryptedSecret)
        #expect(try SecretEnvelope.decodeEncryptedSecret(stored) == Array("new".utf8))

        try await me.store.deleteEnvelopes(.pairs([EnvelopePair(sessionID: sessions[1].id, deviceID: phone)]))
        #expect(try await phoneStore.fetchEnvelopes(addressedTo: phone).count == 2)
        try await me.store.deleteEnvelopes(.sessions([sessions[2].id]))
        #expect(try await me.store.listEnvelopePairs().count == 3)
        try await me.store.deleteEnvelopes(.recipients([tablet]))
        #expect(try await me.store.listEnvelopePairs() == [EnvelopePair(sessionID: sessions[0].id, deviceID: phone)])
    }

    @Test(
        "a session before its repository and a repeated (device, path) are refused row by row",
        arguments: RemoteKind.available)
    func constraints(kind: RemoteKind) async throws {
        let me = try await Actor(try kind.harness())
        let repository = me.repository("/same/path")
        _ = try await me.store.upsertRepositories([repository], onBatchAccepted: nil)
        let clash = me.repository("/same/path")
        let fine = me.repository()
        let result = try await me.store.upsertRepositories([clash, fine], onBatchAccepted: nil)
        #expect(result.accepted == 1)
        #expect(result.rejected.map(\.key) == [clash.id.canonical])
        #expect(result.rejected.first?.error.code == .conflict)

        let orphan = me.session(me.repository())
        let good = me.session(repository)
        let sessions = try await me.store.upsertSessions([orphan, good], onBatchAccepted: nil)
        #expect(sessions.accepted == 1)
        #expect(sessions.rejected.map(\.key) == [orphan.id.canonical])
        #expect(sessions.rejected.first?.error.code == .foreignKeyViolation)
    }

    @Test("a row without a title keeps the title already stored", arguments: RemoteKind.available)
    func optionalColumnKept(kind: RemoteKind) async throws {
        let me = try await Actor(try kind.harness())
        let repository = me.repository()
        _ = try await me.store.upsertRepositories([repository], onBatchAccepted: nil)
        var session = me.session(repository, title: "keep me")
        _ = try await me.store.upsertSessions([session], onBatchAccepted: nil)
        session.title = nil
        session.currentBranch = "other"
        _ = try await me.store.upsertSessions([session], onBatchAccepted: nil)
        let stored = try #require(try await me.store.fetchSessions(after: nil).first?.record)
        #expect(stored.title == "keep me" && stored.currentBranch == "other")
    }

    @Test("one user can neither read nor write another user's rows", arguments: RemoteKind.available)
    func crossUserIsolation(kind: RemoteKind) async throws {
        let harness = try kind.harness()
        let alice = try await Actor(harness)
        let bob = try await Actor(harness)
        let repository = alice.repository()
        let session = alice.session(repository)
        _ = try await alice.store.upsertRepositories([repository], onBatchAccepted: nil)
        _ = try await alice.store.upsertSessions([session], onBatchAccepted: nil)
        _ = try await alice.store.upsertEnvelopes([alice.envelope(session, to: alice.desktop)], onBatchAccepted: nil)

        #expect(try await bob.store.listDevices().map(\.id) == [bob.desktop])
        #expect(try await bob.store.fetchRepositories(after: nil).isEmpty)
        #expect(try await bob.store.fetchSessions(after: nil).isEmpty)
        #expect(try await bob.store.listEnvelopePairs().isEmpty)
        // Nothing of Alice's: the embedded remote finds none; PostgreSQL's pull function refuses
        // a device that is not the caller's (42501).
        do {
            #expect(try await bob.store.fetchEnvelopes(addressedTo: alice.desktop).isEmpty)
        } catch let error as RemoteStoreError {
            #expect(error.code == .permissionDenied)
        }

        var stolen = repository
        stolen.name = "mine now"
        stolen.userID = bob.user
        let overwrite = try await bob.store.upsertRepositories([stolen], onBatchAccepted: nil)
        #expect(overwrite.accepted == 0 && overwrite.rejected.first?.error.code == .permissionDenied)
        let foreign = try await bob.store.upsertRepositories([alice.repository()], onBatchAccepted: nil)
        #expect(foreign.accepted == 0 && foreign.rejected.first?.error.code == .permissionDenied)
        let envelope = try await bob.store.upsertEnvelopes(
            [bob.envelope(session, to: bob.desktop)], onBatchAccepted: nil)
        #expect(envelope.accepted == 0 && envelope.rejected.count == 1)

        try await bob.store.deleteRows(.repositories, ids: [repository.id])
        try await bob.store.deleteEnvelopes(.recipients([alice.desktop]))
        #expect(try await alice.store.fetchRepositories(after: nil).first?.record.name == "repo")
        #expect(try await alice.store.listEnvelopePairs().count == 1)
    }
}
