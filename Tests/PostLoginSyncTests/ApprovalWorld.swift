import DeviceTrust
import Foundation
import GRDB
import Logging
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Synchronization
import TestStack
import Testing

@testable import EmbeddedRemote
@testable import LocalStore
@testable import PostLoginSync

/// A desktop (the trust root) with sessions, a phone and a tablet paired with it and holding
/// the sessions' secrets, each device with a push token; for the threats of approvals.md.
struct ApprovalWorld {
    let world: World
    let desktop: World.Device
    let phone: World.Device
    let tablet: World.Device
    let root: DeviceTrustManager
    let logs = LogLines()
    /// Each device's push token.
    let tokens: [UUID: String]

    static func make(_ backend: Backend, sessions: Int = 2) async throws -> ApprovalWorld {
        let world = try World(backend)
        let phone = try await world.device("phone", role: .mobile)
        let tablet = try await world.device("tablet", role: .mobile, type: .iosTablet)
        let desktop = try await world.desktop(sessions: sessions)
        let root = DeviceTrustManager(local: desktop.store, remote: try world.remote(for: desktop))
        try await root.initialize()
        root.recoveryKeyShown()
        try await TrustThreatTests.join(phone, world: world, root: root)
        try await TrustThreatTests.join(tablet, world: world, root: root)
        #expect(try await desktop.engine.push().outcome == .success)
        #expect(try await phone.engine.pull().outcome == .success)
        #expect(try await tablet.engine.pull().outcome == .success)
        var tokens: [UUID: String] = [:]
        for device in [desktop, phone, tablet] {
            // Unique: on the stack a token another test's user holds would not move here.
            let token = SecureBytes(randomCount: 32).withUnsafeBytes { ByteEncoding.hex($0) }
            try await world.remote(for: device).registerPushToken(
                PushTokenRegistration(deviceID: device.identity.id, token: token))
            tokens[device.identity.id] = token
        }
        return ApprovalWorld(world: world, desktop: desktop, phone: phone, tablet: tablet, root: root, tokens: tokens)
    }

    /// The trust-log head a device pinned, as a decision names it.
    static func pinnedHead(_ store: DeviceStore) async throws -> ApprovalDecision.LogHead {
        let pin = try #require(try await store.trustLogPin())
        return ApprovalDecision.LogHead(epoch: pin.epoch, seq: pin.headSeq, hash: pin.headHash)
    }

    func center(_ device: World.Device) throws -> ApprovalCenter {
        ApprovalCenter(
            local: device.store, remote: try world.remote(for: device), logger: Logger(label: "approvals") { _ in logs }
        )
    }

    var session: UUID {
        get async throws { try #require(try await desktop.store.sessions().first).id }
    }

    /// The desktop asks in the background; returns the task and the request as the phone (or
    /// `lister`) lists it.
    func ask(
        tool: String = "Bash", summary: String = "npm test", detail: String = "", timeout: Duration = .seconds(600),
        refusals: Refusals? = nil, listedBy lister: World.Device? = nil
    ) async throws -> (Task<ApprovalOutcome, Error>, ApprovalRequestRow) {
        let asking = try center(desktop)
        let phoneCenter = try center(lister ?? phone)
        let session = try await session
        let before = Set(try await phoneCenter.pending().map(\.id))
        let task = Task {
            try await asking.request(
                session: session, tool: tool, summary: summary, detail: detail, timeout: timeout,
                pollInterval: .milliseconds(20), onRefused: { refusals?.add($0) })
        }
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            if let row = try await phoneCenter.pending().first(where: { !before.contains($0.id) }) {
                return (task, row)
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        task.cancel()
        throw CancellationError()
    }

    /// Runs SQL as the service role (the stack's superuser, or the embedded file itself).
    func asServiceRole(_ sql: String) async throws {
        try await TrustThreatTests.asServiceRole(world, sql)
    }

    /// Every text the remote holds, table by table, read with the service role's powers.
    func everything() async throws -> String {
        switch world.backend {
        case .embedded:
            let queue = try world.operatorDatabase()
            return try await queue.read { db in
                var out = ""
                for table in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'") {
                    for row in try Row.fetchAll(db, sql: "SELECT * FROM \"\(table)\"") { out += "\(row)\n" }
                }
                return out
            }
        case .postgrest:
            let stack = try StackEnvironment.require()
            let tables = try await stack.sql(
                "SELECT table_schema || '.' || table_name FROM information_schema.tables "
                    + "WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')")
            var out = ""
            for table in tables.split(separator: "\n") {
                let parts = table.split(separator: ".")
                out +=
                    try await stack.sql(
                        "SELECT coalesce(string_agg(t::text, E'\\n'), '') FROM \"\(parts[0])\".\"\(parts[1])\" t")
                    + "\n"
            }
            return out
        }
    }

    /// How many of `device`'s push tokens are valid, read with the service role's powers.
    func validTokens(of device: UUID) async throws -> Int {
        let sql = "SELECT count(*) FROM push_tokens WHERE device_id = '\(device.canonical)' AND is_valid"
        switch world.backend {
        case .embedded:
            return try await world.operatorDatabase().read { try Int.fetchOne($0, sql: sql) } ?? -1
        case .postgrest:
            return Int(try await StackEnvironment.require().sql(sql)) ?? -1
        }
    }

    /// The outbox rows of one request: alerts and clearings.
    func outbox(_ request: UUID) async throws -> (alerts: [OutboxEntry], clearings: [OutboxEntry]) {
        let rows = try await world.remote().listOutbox(limit: 1_000)
        return (
            rows.filter { $0.collapseID == "approval-request-" + request.canonical },
            rows.filter { $0.collapseID == "approval-" + request.canonical }
        )
    }
}

/// Refusals reported while a desktop waits.
final class Refusals: Sendable {
    let list = Mutex<[ApprovalRefusal]>([])
    func add(_ refusal: ApprovalRefusal) { list.withLock { $0.append(refusal) } }
    var count: Int { list.withLock { $0.count } }
    var last: ApprovalRefusal? { list.withLock { $0.last } }

    /// Waits until `count` refusals arrived. On a hang, says whether the desktop's request (`asking`)
    /// is still waiting or has ended, and how: which wait starved.
    func wait(for count: Int, asking: Task<ApprovalOutcome, Error>? = nil) async throws {
        // A ceiling that only catches a hang: a loaded two-core machine took over 10 s for one.
        if try await Waiting.until(every: .milliseconds(10), { self.count >= count }) { return }
        var state = "no request given"
        if let asking {
            // Awaiting a task's value is not cancellable: it is read from a task of its own.
            let ended = Mutex<String?>(nil)
            Task {
                let result: String
                do { result = "\(try await asking.value)" } catch { result = "\(error)" }
                ended.withLock { $0 = result }
            }
            try await Task.sleep(for: .seconds(1))
            state = ended.withLock { $0 }.map { "the request ended: \($0)" } ?? "the request is still waiting"
        }
        Issue.record("hang: \(self.count) of \(count) refusals reported within \(Waiting.ceiling); \(state)")
    }
}

extension ApprovalWorld {
    static var fastWatch: WatchOptions {
        var options = WatchOptions()
        options.interval = .milliseconds(10)
        return options
    }

    /// What the remote holds for `users`: their approval requests and outbox rows, as they read them.
    func snapshot(_ users: [UUID]) async throws -> String {
        var out = ""
        for user in users {
            let remote = try world.remote(as: user)
            out += "\(try await remote.approvalRequests(status: nil))\n\(try await remote.listOutbox(limit: 1_000))\n"
        }
        return out
    }

    /// The delivery worker's `expire_approvals()`.
    func expire() async throws -> Int {
        switch world.backend {
        case .embedded:
            return try await EmbeddedRemoteStore(
                path: world.directory.appendingPathComponent("remote.sqlite").path, userID: world.user
            ).expireApprovals()
        case .postgrest:
            return Int(try await StackEnvironment.require().sql("SELECT public.expire_approvals()")) ?? -1
        }
    }
}
