import Foundation
import Logging
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Synchronization
import TestStack
import Testing

@testable import LocalStore
@testable import PostLoginSync

/// Watch mode (sync.md) and on-demand secret requests (coordination.md), against the embedded
/// remote and both schema variants of the stack (the deployed one has no change feed, so the
/// watch polls table by table there). Every wait is counted in ticks of a 1-second interval and
/// bounded: "within 2 intervals" is "by the end of the second tick after the change".
@Suite("Watch mode and secret requests")
struct WatchTests {
    static var remotes: [(Backend, Bool)] { Backend.variants }

    static var fast: WatchOptions {
        var options = WatchOptions()
        options.interval = .seconds(1)
        options.maxBackoff = .seconds(2)
        return options
    }

    /// Runs up to `ticks` ticks and returns the number of the first after which `done` holds
    /// (`nil` when none did), with the ticks run.
    static func within(
        _ ticks: Int, of iterator: inout SyncWatch.Iterator, until done: () async throws -> Bool
    ) async throws -> (Int?, [WatchTick]) {
        var seen: [WatchTick] = []
        for index in 1...ticks {
            guard let tick = await iterator.next() else { break }
            seen.append(tick)
            if try await done() { return (index, seen) }
        }
        return (nil, seen)
    }

    /// A phone that never asks by itself (the test asks instead).
    static var noRequests: SyncOptions {
        var options = SyncOptions()
        options.requestMissingSecrets = false
        return options
    }

    static func phoneRow(_ phone: World.Device, user: UUID) -> OwnDeviceRow {
        OwnDeviceRow(
            id: phone.identity.id, userID: user, name: phone.identity.name, deviceType: .iosPhone, hostname: nil,
            publicKey: phone.identity.publicKey.base64)
    }

    @Test(
        "a phone that joins, a session started on the desktop and a secret request each reach the phone within 2 ticks",
        arguments: remotes)
    func propagation(backend: Backend, deployed: Bool) async throws {
        let world = try World(backend, deployedSchema: deployed)
        let desktop = try await world.desktop(sessions: 4)
        let phone = try await world.device("phone", role: .mobile)
        let remote = try world.remote(for: phone)
        var ticks = desktop.engine.watch(Self.fast).makeAsyncIterator()

        let first = try #require(await ticks.next())
        #expect(first.action == .full && first.reasons.first == "first tick" && first.failure == nil)
        #expect(first.changeFeed == (deployed ? .polling : .feed))

        // A phone joins: its device row appears.
        try await remote.upsertOwnDevice(Self.phoneRow(phone, user: world.user))
        let (joined, joinTicks) = try await Self.within(2, of: &ticks) {
            try await remote.fetchEnvelopes(addressedTo: phone.identity.id).count == 4
        }
        #expect(
            joined != nil, "the joining phone did not get its 4 envelopes within 2 ticks: \(joinTicks.map(\.reasons))")
        #expect(joinTicks.last?.reasons.contains("1 device changed") == true)
        #expect(try await phone.engine.pull().outcome == .success)
        #expect(try await world.opened(by: phone) == world.secrets(of: desktop))

        // A session started on the desktop.
        let repository = try #require(try await desktop.store.repositories().first)
        let started = try await desktop.store.createSession(
            SessionRecord(
                userID: world.user, deviceID: desktop.identity.id, repositoryID: repository.id,
                title: "started later", sessionPID: 4242, workingDirectory: repository.localPath))
        let (arrived, startTicks) = try await Self.within(2, of: &ticks) {
            try await remote.fetchEnvelopes(addressedTo: phone.identity.id).contains { $0.sessionID == started.id }
        }
        #expect(
            arrived != nil,
            "the new session's envelope did not reach the remote within 2 ticks: \(startTicks.map(\.reasons))")
        #expect(startTicks.last?.reasons.contains("local changes") == true)
        #expect(try await phone.engine.pull().outcome == .success)
        #expect(try await world.opened(by: phone)[started.id] == world.secrets(of: desktop)[started.id])

        // The phone lost one envelope (deleted remotely): its pull asks, the watch serves.
        let lost = try #require(try await desktop.store.sessions().first { $0.id != started.id })
        try await world.operatorRemote().deleteEnvelopes(
            .pairs([EnvelopePair(sessionID: lost.id, deviceID: phone.identity.id)]))
        try await phone.store.deleteReceivedEnvelopes(
            notIn: Set(try await phone.store.sessions().map(\.id)).subtracting([lost.id]))
        let asking = try await phone.engine.pull()
        #expect(asking.secretRequests?.created == 1)
        let request = try #require(try await remote.listOpenSecretRequests().first)
        #expect(request.sessionID == lost.id && request.requesterDeviceID == phone.identity.id)
        // Asking again while the request is open adds nothing.
        #expect(try await phone.engine.pull().secretRequests?.pending == 1)
        #expect(try await remote.listOpenSecretRequests().count == 1)
        let (served, serveTicks) = try await Self.within(2, of: &ticks) {
            try await remote.listOpenSecretRequests().isEmpty
        }
        #expect(served != nil, "the request was not fulfilled within 2 ticks: \(serveTicks.map(\.reasons))")
        #expect(serveTicks.last?.report?.secretRequests?.fulfilled == 1)
        #expect(try await phone.engine.pull().outcome == .success)
        #expect(try await world.opened(by: phone)[lost.id] == world.secrets(of: desktop)[lost.id])
    }

    @Test(
        "a quiet tick makes at most 3 requests and seals nothing; the store is free between ticks", arguments: remotes)
    func quietTicks(backend: Backend, deployed: Bool) async throws {
        let world = try World(backend, deployedSchema: deployed)
        let desktop = try await world.desktop(sessions: 3)
        let phone = try await world.device("phone", role: .mobile)
        #expect(try await phone.engine.pull().outcome == .success)
        var ticks = desktop.engine.watch(Self.fast).makeAsyncIterator()
        #expect(try #require(await ticks.next()).action == .full)
        for _ in 0..<3 {
            let tick = try #require(await ticks.next())
            #expect(tick.action == .quiet, "reasons: \(tick.reasons)")
            #expect(tick.requests <= 3 && tick.envelopesSealed == 0)
            #expect(tick.requests == (deployed ? 3 : 2), "\(tick.json())")
            // A manual command runs between ticks.
            #expect(try await desktop.engine.push().outcome == .success)
        }
        // The heartbeat moves: a quiet tick after the last push (which wrote the device row
        // itself) writes a later time. Ticks are a second apart.
        let remote = try world.remote()
        func lastSeen() async throws -> Date? {
            try await remote.listDevices().first { $0.id == desktop.identity.id }?.lastSeenAt
        }
        let afterPush = try #require(try await lastSeen())
        #expect(try #require(await ticks.next()).action == .quiet)
        let seen = try #require(try await lastSeen())
        #expect(seen > afterPush, "the quiet tick wrote no heartbeat")
        // A tick while a manual command holds the store gives up and says so.
        let lease = try await desktop.store.acquireSyncLease(purpose: "manual")
        var busyOptions = Self.fast
        busyOptions.leaseWait = .milliseconds(100)
        var busy = desktop.engine.watch(busyOptions).makeAsyncIterator()
        #expect(try #require(await busy.next()).action == .busy)
        lease.release()
    }

    @Test(
        "a request from a device that does not qualify is reported, not served, and does not make every tick push",
        arguments: remotes)
    func refusedRequest(backend: Backend, deployed: Bool) async throws {
        let world = try World(backend, deployedSchema: deployed)
        let desktop = try await world.desktop(sessions: 2)
        let phone = try await world.device("phone", role: .mobile)
        #expect(try await phone.engine.pull().outcome == .success)
        var ticks = desktop.engine.watch(Self.fast).makeAsyncIterator()
        #expect(try #require(await ticks.next()).action == .full)
        // The phone is deactivated (it no longer qualifies), then asks.
        try await world.setDevice(phone.identity.id, isActive: false)
        let session = try #require(try await desktop.store.sessions().first)
        let remote = try world.remote(for: phone)
        let inserted = try await remote.insertSecretRequests([
            SecretRequestRow(userID: world.user, sessionID: session.id, requesterDeviceID: phone.identity.id)
        ])
        #expect(inserted.accepted == 1)
        let tick = try #require(await ticks.next())
        #expect(tick.action == .sync)
        #expect(
            tick.report?.secretRequests?.refused == 1
                && tick.report?.secretRequests?.refusedDevices == [phone.identity.id])
        #expect(tick.report?.secretRequests?.fulfilled ?? 0 == 0)
        #expect(try await remote.listOpenSecretRequests().count == 1)
        // Its envelopes went (it stopped qualifying) and none came back.
        #expect(try await remote.fetchEnvelopes(addressedTo: phone.identity.id).isEmpty)
        let next = try #require(await ticks.next())
        #expect(next.action == .quiet, "reasons: \(next.reasons)")
    }

    @Test(
        "duplicate open requests are refused by the remote; a request names only the user's own session and device",
        arguments: remotes)
    func requestRules(backend: Backend, deployed: Bool) async throws {
        let world = try World(backend, deployedSchema: deployed)
        let desktop = try await world.desktop(sessions: 1)
        let phone = try await world.device("phone", role: .mobile, options: Self.noRequests)
        #expect(try await desktop.engine.push().outcome == .success)
        #expect(try await phone.engine.pull().outcome == .success)
        let session = try #require(try await desktop.store.sessions().first)
        let remote = try world.remote(for: phone)
        let row = SecretRequestRow(userID: world.user, sessionID: session.id, requesterDeviceID: phone.identity.id)
        #expect(try await remote.insertSecretRequests([row]).accepted == 1)
        let duplicate = try await remote.insertSecretRequests([
            SecretRequestRow(userID: world.user, sessionID: session.id, requesterDeviceID: phone.identity.id)
        ])
        #expect(duplicate.accepted == 0 && duplicate.rejected.map(\.error.code) == [.conflict])
        // Another user sees nothing and cannot ask for this user's session.
        let stranger = UUID()
        let other = try world.remote(as: stranger)
        #expect(try await other.listOpenSecretRequests().isEmpty)
        let foreign = try await other.insertSecretRequests([
            SecretRequestRow(userID: stranger, sessionID: session.id, requesterDeviceID: phone.identity.id)
        ])
        #expect(foreign.accepted == 0 && foreign.rejected.count == 1)
        try await other.fulfilSecretRequests(ids: [row.id])
        #expect(try await remote.listOpenSecretRequests().map(\.id) == [row.id])
        // The change feed shows a user only their own rows.
        let theirs = try await other.changes(since: nil, statements: true)
        #expect(theirs.devices.isEmpty && theirs.secretRequests.isEmpty)
        let mine = try await remote.changes(since: nil, statements: true)
        #expect(
            Set(mine.devices.map(\.id)) == [desktop.identity.id, phone.identity.id]
                && mine.secretRequests.map(\.id) == [row.id])
        // The asking phone cannot mark its own request served; the session's desktop can, and then
        // a new request may be made.
        try await remote.fulfilSecretRequests(ids: [row.id])
        #expect(try await remote.listOpenSecretRequests().map(\.id) == [row.id])
        try await world.remote(for: desktop).fulfilSecretRequests(ids: [row.id])
        #expect(try await remote.listOpenSecretRequests().isEmpty)
        #expect(
            try await remote.insertSecretRequests([
                SecretRequestRow(userID: world.user, sessionID: session.id, requesterDeviceID: phone.identity.id)
            ]).accepted == 1)
    }

    @Test("cancelling the iterating task ends the watch after the running tick and frees the store")
    func cancellation() async throws {
        let world = try World(.embedded)
        let desktop = try await world.desktop(sessions: 2)
        let count = Mutex(0)
        let task = Task {
            for await _ in desktop.engine.watch(Self.fast) { count.withLock { $0 += 1 } }
        }
        // The first tick is a full push of two sessions; the ceiling only catches a hang.
        _ = try await Waiting.until { count.withLock { $0 } > 0 }
        task.cancel()
        await task.value
        #expect(count.withLock { $0 } >= 1)
        let lease = try await desktop.store.acquireSyncLease(purpose: "after")
        lease.release()
    }

    @Test(
        "a store that cannot sync (another user's remote) fails its ticks with the engine's typed code, and backs off")
    func typedFailure() async throws {
        let world = try World(.embedded)
        let desktop = try await world.device("desktop", role: .desktop)
        let engine = SyncEngine(local: desktop.store, remote: try world.remote(as: UUID()))
        var ticks = engine.watch(Self.fast).makeAsyncIterator()
        let tick = try #require(await ticks.next())
        #expect(tick.action == .failed && tick.failure?.code == "userMismatch" && tick.consecutiveFailures == 1)
        #expect(tick.nextTickSeconds >= 1 && tick.nextTickSeconds <= 2)
    }

    @Test(
        "an unreachable remote: ticks fail with a typed code, back off exponentially with jitter up to the cap, one log line"
    )
    func backoff() async throws {
        let world = try World(.embedded)
        let desktop = try await world.device("desktop", role: .desktop)
        var configuration = PostgRESTConfiguration(
            projectURL: URL(string: "http://127.0.0.1:9")!, apiKey: "anon", userID: world.user
        ) { _ in "token" }
        configuration.baseBackoff = .milliseconds(1)
        configuration.maxAttempts = 1
        let lines = LogLines()
        let logger = Logger(label: "test") { _ in lines }
        let engine = SyncEngine(
            local: desktop.store, remote: PostgRESTRemoteStore(configuration: configuration), logger: logger)
        var options = WatchOptions()
        options.interval = .milliseconds(100)
        options.maxBackoff = .milliseconds(400)
        var ticks = engine.watch(options).makeAsyncIterator()
        var waits: [Double] = []
        for _ in 0..<4 {
            let tick = try #require(await ticks.next())
            #expect(tick.action == .failed && tick.failure?.code == "network")
            waits.append(tick.nextTickSeconds)
        }
        // Exponential from the interval (0.2, 0.4, then capped at 0.4), each in [50%, 100%].
        #expect(waits[0] >= 0.1 && waits[0] <= 0.2)
        #expect(waits[1] >= 0.2 && waits[1] <= 0.4)
        #expect(waits[2...].allSatisfy { $0 >= 0.2 && $0 <= 0.4 })
        #expect(lines.warnings.count == 1, "one line when the remote goes away: \(lines.warnings)")
    }
}

/// Collects log lines.
final class LogLines: LogHandler, @unchecked Sendable {
    // @unchecked: the lock guards every access.
    private let lines = Mutex<[(Logger.Level, String)]>([])
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) { lines.withLock { $0.append((event.level, "\(event.message)")) } }
    var warnings: [String] { lines.withLock { $0.filter { $0.0 == .warning }.map(\.1) } }
    var all: [String] { lines.withLock { $0.map(\.1) } }
}
