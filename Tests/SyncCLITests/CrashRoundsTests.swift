import EmbeddedRemote
import Foundation
import GRDB
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel
import Synchronization
import TestStack
import Testing

/// The real `sync-cli`, killed with SIGKILL at a random moment of its long operations, round after
/// round on one world (a desktop with 1,000 sessions, a phone, tablets paired and revoked):
/// `session start`, `push`, `pull`, `sync --watch`, and `trust revoke` followed by the rotating
/// push. After every round: every store opens without repair, every secret the desktop reported
/// as created still opens there; then, after one normal sync on every device, every qualifying
/// device opens every secret, no envelope is addressed to a revoked device, no generation went
/// backwards, and the desktop's ledger is exactly what the remote holds.
@Suite("Killed at a random moment: nothing lost", .serialized)
struct CrashRoundsTests {
    @Test("rounds on the embedded remote (30; 200 in make soak)")
    func embedded() async throws {
        let harness = try await CrashHarness(remote: .embedded, seed: Soak.seed(33, suite: "kill rounds, embedded"))
        try await harness.run(rounds: Soak.rounds(quick: 30, soak: 200))
    }

    @Test("rounds on the PostgreSQL stack (10; 50 in make soak)", .enabled(if: !StackEnvironment.skipped))
    func stack() async throws {
        let harness = try await CrashHarness(
            remote: .stack(try StackEnvironment.require()), seed: Soak.seed(3_300, suite: "kill rounds, stack"))
        try await harness.run(rounds: Soak.rounds(quick: 10, soak: 50))
    }
}

/// A seeded generator (SplitMix64): the same seed, the same rounds and kill points.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

final class CrashHarness: @unchecked Sendable {
    // @unchecked: one test task drives it, round after round; nothing in it is shared.
    enum Remote {
        case embedded
        case stack(StackEnvironment)
    }

    let remoteKind: Remote
    let cli: CLI
    var random: SeededGenerator
    let user: UUID
    let environment: [String: String]
    let repo: URL
    var desktop: URL { cli.directory.appendingPathComponent("d") }
    var phone: URL { cli.directory.appendingPathComponent("p") }
    /// Paired tablets not revoked yet, and revoked ones (by store path and device id).
    var tablets: [(store: URL, id: UUID)] = []
    var revoked: [UUID] = []
    var tabletCount = 0
    /// Every session `session start` reported as created (and the harness has not deleted since).
    var reported: Set<UUID> = []
    /// How many `session start` reported, in all.
    var reportedTotal = 0
    /// The generations seen last round: the desktop's own and each receiver's, by session.
    var generations: [String: [UUID: UInt32]] = [:]
    /// How long each operation took when it ran to the end (kill points are drawn within it).
    var typical: [String: Double] = ["session start": 0.15, "push": 1.0, "pull": 0.5, "watch": 2.0, "revoke": 0.3]
    var log: [String] = []
    var failures: [String] = []

    init(remote: Remote, seed: UInt64) async throws {
        remoteKind = remote
        cli = try CLI()
        random = SeededGenerator(seed: seed)
        repo = cli.directory.appendingPathComponent("project")
        try FileManager.default.createDirectory(at: repo, withIntermediateDirectories: true)
        switch remote {
        case .embedded:
            user = UUID() // replaced by the user login derives from the email
            environment = [:]
        case .stack(let stack):
            user = UUID()
            environment = [
                "SYNC_REMOTE": stack.url.absoluteString, "SUPABASE_ANON_KEY": stack.anonKey,
                "SYNC_ACCESS_TOKEN": stack.token(for: user, expiresIn: 7200),
            ]
        }
    }

    // MARK: - Processes

    /// Runs sync-cli to the end.
    @discardableResult
    func run(_ arguments: [String], stdin: String? = nil) async throws -> (status: Int32, out: String, err: String) {
        try await cli.run(arguments, stdin: stdin, environment: environment)
    }

    /// Runs sync-cli and sends it SIGKILL after `delay` seconds unless it ended first; the wait
    /// is off the cooperative pool (``offThePool(_:)``).
    func runKilled(_ arguments: [String], after delay: Double) async throws -> (killed: Bool, out: String) {
        let (cli, environment) = (self.cli, self.environment)
        return try await ChildProcesses.slots.run {
            try await offThePool { try Self.runKilled(arguments, after: delay, cli: cli, environment: environment) }
        }
    }

    static func runKilled(
        _ arguments: [String], after delay: Double, cli: CLI, environment: [String: String]
    ) throws -> (killed: Bool, out: String) {
        let child = try SpawnedChild(
            CLI.path, arguments, environment: cli.environment(environment), workingDirectory: cli.directory)
        let started = ContinuousClock.now
        var killed = false
        while try child.ended() == nil {
            if ContinuousClock.now - started >= .milliseconds(Int(delay * 1000)) {
                child.kill(SIGKILL)
                killed = true
                break
            }
            Thread.sleep(forTimeInterval: 0.002)
        }
        let status = try child.wait()
        return (killed && SpawnedChild.signalled(status), child.output)
    }

    // MARK: - In-process views of the stores and the remote

    func remote(for store: DeviceStore) async throws -> any CompleteRemote {
        let user = try #require(try await store.identity()?.userID)
        let credential = try await store.deviceCredential()
        switch remoteKind {
        case .embedded:
            return try EmbeddedRemoteStore(
                path: cli.directory.appendingPathComponent("remote.sqlite").path, userID: user, credential: credential)
        case .stack(let stack):
            var configuration = PostgRESTConfiguration(projectURL: stack.url, apiKey: stack.anonKey, userID: user) {
                _ in
                stack.token(for: user)
            }
            configuration.baseBackoff = .milliseconds(10)
            configuration.deviceCredential = credential
            return PostgRESTRemoteStore(configuration: configuration)
        }
    }

    /// The operator's hand (the service role): what the remote "loses" or holds, whoever's.
    func operatorRemote(user: UUID) throws -> any CompleteRemote {
        switch remoteKind {
        case .embedded:
            return try EmbeddedRemoteStore.serviceRole(
                path: cli.directory.appendingPathComponent("remote.sqlite").path, userID: user)
        case .stack(let stack):
            var configuration = PostgRESTConfiguration(projectURL: stack.url, apiKey: stack.serviceKey, userID: user) {
                _ in stack.serviceKey
            }
            configuration.baseBackoff = .milliseconds(10)
            return PostgRESTRemoteStore(configuration: configuration)
        }
    }

    func engine(_ directory: URL) async throws -> SyncEngine {
        let store = try await DeviceStore.opened(directory: directory)
        return SyncEngine(local: store, remote: try await remote(for: store))
    }

    // MARK: - Setup

    func login(_ store: URL) async throws {
        switch remoteKind {
        case .embedded:
            #expect(try await run(["login", "--store", store.path, "--email", "crash@example.com"]).status == 0)
        case .stack: #expect(try await run(["login", "--store", store.path]).status == 0)
        }
    }

    /// A new store of `role`, logged in.
    func makeStore(_ store: URL, role: String, name: String, type: String? = nil) async throws {
        var arguments = ["init", "--store", store.path, "--role", role, "--name", name]
        if let type { arguments += ["--device-type", type] }
        #expect(try await run(arguments).status == 0)
        try await login(store)
    }

    /// Pairs `store` (of `type`) with the desktop by code, as a person would.
    func pair(_ store: URL, type: String) async throws {
        let invite = try await run(["trust", "invite", "--store", desktop.path, "--device-type", type, "--json"])
        let code = try #require(
            (try JSONSerialization.jsonObject(with: Data(invite.out.utf8)) as? [String: String])?["code"])
        #expect(try await run(["trust", "join", "--no-wait", "--store", store.path], stdin: code + "\n").status == 0)
        let approved = try await run(["trust", "approve", "--store", desktop.path, "--json"])
        #expect(approved.status == 0 && approved.out.contains("\"approved\""), "\(approved.out)")
    }

    /// Adds `count` sessions to the desktop and deletes as many of the oldest beyond 1,000 (the
    /// deletions reach the remote at the next push), so the world stays at size M.
    func addSessions(_ count: Int) async throws {
        let store = try await DeviceStore.opened(directory: desktop)
        let identity = try await store.requireIdentity()
        let existing = try await store.sessions().sorted { $0.createdAt < $1.createdAt }
        let surplus = max(0, existing.count + count - 1_000)
        if surplus > 0 {
            let gone = Set(existing.prefix(surplus).map(\.id))
            try await store.removeSessions(ids: gone)
            // Deleted on purpose: no longer a secret the desktop must keep.
            reported.subtract(gone)
        }
        let repository = try #require(try await store.repositories().first)
        let userID = try #require(identity.userID)
        let records = (0..<count).map { index in
            SessionRecord(userID: userID, deviceID: identity.id, repositoryID: repository.id, title: "crash \(index)")
        }
        try await store.createSessions(records)
    }

    func setUp() async throws {
        try await makeStore(desktop, role: "desktop", name: "laptop")
        try await makeStore(phone, role: "mobile", name: "phone")
        #expect(try await run(["repo", "add", "--store", desktop.path, repo.path]).status == 0)
        try await addSessions(1_000)
        #expect(try await run(["trust", "init", "--store", desktop.path]).status == 0)
        try await pair(phone, type: "ios-phone")
        #expect(try await run(["sync", "--store", desktop.path]).status == 0)
        #expect(try await run(["sync", "--store", phone.path]).status == 0)
        try await verify(round: 0)
    }

    // MARK: - Rounds

    func delay(for operation: String) -> Double {
        Double.random(in: 0...(1.2 * (typical[operation] ?? 1)), using: &random)
    }

    func run(rounds: Int) async throws {
        try await setUp()
        var killedCount = 0
        for round in 1...rounds {
            let pick = Int.random(in: 0..<100, using: &random)
            let (operation, killed, delay) =
                switch pick {
                case 0..<25: try await sessionStartRound()
                case 25..<50: try await pushRound()
                case 50..<70: try await pullRound()
                case 70..<85: try await watchRound()
                default: try await revokeRound()
                }
            if killed { killedCount += 1 }
            let line = "round \(round): \(operation), \(killed ? "killed" : "ended") at \(Int(delay * 1000)) ms"
            log.append(line)
            try await verify(round: round)
        }
        let name = if case .embedded = remoteKind { "embedded remote" } else { "stack" }
        let summary =
            "crash harness (\(name)): \(rounds) rounds, \(killedCount) killed mid-operation, \(failures.count) failures, "
            + "\(reportedTotal) sessions reported created, \(revoked.count) devices revoked"
        print(([summary] + log.suffix(rounds)).joined(separator: "\n"))
        #expect(failures.count == 0, "\(failures.prefix(10).joined(separator: "\n"))")
    }

    func sessionStartRound() async throws -> (String, Bool, Double) {
        let delay = delay(for: "session start")
        let result = try await runKilled(
            ["session", "start", "--store", desktop.path, "--repo", repo.path], after: delay)
        for line in result.out.split(separator: "\n") {
            if let id = UUID.parse(line.trimmingCharacters(in: .whitespaces)) {
                reported.insert(id)
                reportedTotal += 1
            }
        }
        return ("session start", result.killed, delay)
    }

    func pushRound() async throws -> (String, Bool, Double) {
        // Work for the push: new sessions, or a recipient's envelopes the remote lost (all resealed).
        if Bool.random(using: &random) {
            try await addSessions(Int.random(in: 20...200, using: &random))
        } else {
            let identity = try await DeviceStore.opened(directory: phone).requireIdentity()
            let user = try #require(identity.userID)
            _ = try await operatorRemote(user: user).deleteEnvelopes(.recipients([identity.id]))
        }
        let delay = delay(for: "push")
        let started = ContinuousClock.now
        let result = try await runKilled(["push", "--store", desktop.path], after: delay)
        if !result.killed { typical["push"] = (ContinuousClock.now - started).seconds }
        return ("push", result.killed, delay)
    }

    func pullRound() async throws -> (String, Bool, Double) {
        // Work for the pull: sessions the desktop pushed, which the phone has not seen.
        try await addSessions(Int.random(in: 20...200, using: &random))
        #expect(try await engine(desktop).push().outcome == .success)
        let delay = delay(for: "pull")
        let started = ContinuousClock.now
        let result = try await runKilled(["pull", "--store", phone.path], after: delay)
        if !result.killed { typical["pull"] = (ContinuousClock.now - started).seconds }
        return ("pull", result.killed, delay)
    }

    func watchRound() async throws -> (String, Bool, Double) {
        try await addSessions(Int.random(in: 0...50, using: &random))
        let store = Bool.random(using: &random) ? desktop : phone
        let delay = Double.random(in: 0.1...3.0, using: &random)
        let result = try await runKilled(["sync", "--store", store.path, "--watch", "--interval", "1"], after: delay)
        return ("sync --watch (\(store == desktop ? "desktop" : "phone"))", result.killed, delay)
    }

    func revokeRound() async throws -> (String, Bool, Double) {
        // A tablet joins and receives everything, then is revoked; the push that rotates is killed.
        tabletCount += 1
        let tablet = cli.directory.appendingPathComponent("t\(tabletCount)")
        try await makeStore(tablet, role: "mobile", name: "tablet \(tabletCount)", type: "ios-tablet")
        try await pair(tablet, type: "ios-tablet")
        #expect(try await engine(desktop).push().outcome == .success)
        let tabletEngine = try await engine(tablet)
        #expect(try await tabletEngine.pull().outcome == .success)
        let id = try await tabletEngine.local.requireIdentity().id
        tablets.append((tablet, id))
        // The revocation itself is killed now and then too.
        let killRevoke = Int.random(in: 0..<4, using: &random) == 0
        let revokeDelay = delay(for: "revoke")
        let revoke = try await runKilled(
            ["trust", "revoke", "--store", desktop.path, id.canonical, "--yes"], after: killRevoke ? revokeDelay : 60)
        // Revoked means revoked in the trust log the desktop verifies.
        let desktopEngine = try await engine(desktop)
        let standing = try await DeviceTrustManager(local: desktopEngine.local, remote: desktopEngine.remote).status()
        if standing.devices.contains(where: { $0.deviceID == id && $0.status == .revoked }) {
            revoked.append(id)
            tablets.removeAll { $0.id == id }
        } else if !revoke.killed {
            failures.append("trust revoke ended without publishing the revocation of \(id.canonical)")
        }
        let delay = delay(for: "push")
        let push = try await runKilled(["push", "--store", desktop.path], after: delay)
        return ("trust revoke\(revoke.killed ? " (killed)" : "") + rotating push", push.killed, delay)
    }

    // MARK: - After every round

    /// SQLite's own check of a store, read-only.
    func integrity(_ store: URL) throws -> String {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(
            path: store.appendingPathComponent("store.sqlite").path, configuration: configuration)
        return try queue.read { db in
            let check = try String.fetchAll(db, sql: "PRAGMA integrity_check").joined(separator: "; ")
            let keys = try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").count
            return keys == 0 ? check : "\(check); \(keys) foreign-key violations"
        }
    }

    func fail(_ round: Int, _ message: String) {
        failures.append("round \(round): \(message)")
    }

    func verify(round: Int) async throws {
        let receivers = [phone] + tablets.map(\.store)
        for store in [desktop] + receivers {
            let check = try integrity(store)
            if check != "ok" { fail(round, "\(store.lastPathComponent) does not open cleanly: \(check)") }
        }
        let desktopEngine = try await engine(desktop)
        let local = desktopEngine.local
        let key = try await local.deviceKey()
        for id in reported {
            if (try? await local.openOwnSecret(sessionID: id, using: key)) == nil {
                fail(round, "session \(id.canonical), reported created, does not open on the desktop")
            }
        }
        // One normal sync on every device.
        let push = try await desktopEngine.push()
        if push.outcome != .success {
            fail(round, "the normal push was \(push.outcome.rawValue): \(push.errors.prefix(3))")
        }
        // Every secret, opened on both cores: the desktop's own, then each receiver's.
        let sealed = try await local.ownSealedSecrets()
        let secrets = try await Self.inParallel(Array(sealed)) { item in
            (item.key, try item.value.envelope.open(sessionID: SessionID(item.key), using: key))
        }
        try checkGenerations("desktop", sealed.mapValues(\.generation), round: round)
        for store in receivers {
            let engine = try await engine(store)
            let pull = try await engine.pull()
            if pull.outcome != .success {
                fail(
                    round,
                    "the normal pull of \(store.lastPathComponent) was \(pull.outcome.rawValue): \(pull.errors.prefix(3))"
                )
            }
            let deviceKey = try await engine.local.deviceKey()
            let me = try await engine.local.requireIdentity().id
            let received = Dictionary(
                try await engine.local.receivedEnvelopes().map { ($0.sessionID, $0) }, uniquingKeysWith: { a, _ in a })
            let opened = try await Self.inParallel(Array(received.values)) { item in
                let secret = try? item.envelope.open(
                    sessionID: SessionID(item.sessionID), recipientDeviceID: me, using: deviceKey
                ) {
                    $0 == item.senderDeviceID ? item.senderPublicKey : nil
                }.secret
                return (item.sessionID, secret)
            }
            for (session, secret) in secrets {
                guard let mine = opened[session] ?? nil else {
                    fail(round, "\(store.lastPathComponent) cannot open session \(session.canonical)")
                    continue
                }
                if mine != secret {
                    fail(round, "\(store.lastPathComponent) holds another secret for \(session.canonical)")
                }
            }
            try checkGenerations(store.lastPathComponent, received.mapValues(\.generation), round: round)
        }
        let remote = desktopEngine.remote
        let user = try #require(try await local.identity()?.userID)
        let pairs = try await operatorRemote(user: user).listEnvelopePairs()
        for id in revoked where pairs.contains(where: { $0.deviceID == id }) {
            fail(round, "an envelope is addressed to revoked device \(id.canonical)")
        }
        // The ledger says exactly what the remote holds for this desktop's sessions.
        let ownIDs = try await local.ownSessionIDs()
        let ledger = Dictionary(
            try await local.ledger().map {
                (EnvelopePair(sessionID: $0.sessionID, deviceID: $0.recipientDeviceID), $0.ephemeralPublicKey)
            },
            uniquingKeysWith: { first, _ in first })
        let held = Dictionary(
            try await remote.listEnvelopeKeys(sessions: ownIDs, atMost: nil).map {
                ($0.pair, Optional($0.ephemeralPublicKey))
            },
            uniquingKeysWith: { first, _ in first })
        if ledger != held {
            fail(round, "the ledger (\(ledger.count) entries) is not what the remote holds (\(held.count) rows)")
        }
    }

    /// `body` over `items` on two tasks; the results by key.
    static func inParallel<Item: Sendable, Value: Sendable>(
        _ items: [Item], _ body: @escaping @Sendable (Item) throws -> (UUID, Value)
    ) async throws -> [UUID: Value] {
        try await withThrowingTaskGroup(of: [(UUID, Value)].self) { group in
            let half = (items.count + 1) / 2
            for part in [Array(items.prefix(half)), Array(items.dropFirst(half))] {
                group.addTask { try part.map(body) }
            }
            var result: [UUID: Value] = [:]
            for try await part in group { for (key, value) in part { result[key] = value } }
            return result
        }
    }

    func checkGenerations(_ device: String, _ now: [UUID: UInt32], round: Int) throws {
        for (session, generation) in now {
            if let before = generations[device]?[session], generation < before {
                fail(
                    round,
                    "\(device): session \(session.canonical) went from generation \(before) back to \(generation)")
            }
        }
        generations[device, default: [:]].merge(now) { max($0, $1) }
    }
}

extension Duration {
    fileprivate var seconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}
