import Foundation
import GRDB
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Testing

@testable import EmbeddedRemote
@testable import LocalStore
@testable import PostLoginSync

/// A desktop with two sessions on the remote and a phone with a device token, each with its
/// coordinator: the setting of notifications.md.
struct NotificationWorld {
    let world: World
    let desktop: World.Device
    let phone: World.Device
    let desktopSide: Coordinator
    let phoneSide: Coordinator
    let sessions: [UUID]
    let phoneToken: String
    let desktopToken: String

    static func make(_ backend: Backend) async throws -> NotificationWorld {
        let world = try World(backend)
        let desktop = try await world.desktop(sessions: 2)
        let phone = try await world.device("phone", role: .mobile)
        #expect(try await desktop.engine.push().outcome == .success)
        #expect(try await phone.engine.pull().outcome == .success)
        let desktopSide = Coordinator(store: desktop.store, remote: try world.remote(for: desktop))
        let phoneSide = Coordinator(store: phone.store, remote: try world.remote(for: phone))
        let phoneToken = Self.token(), desktopToken = Self.token()
        try await phoneSide.registerPushToken(phoneToken)
        try await desktopSide.registerPushToken(desktopToken)
        let sessions = try await desktop.store.sessions().map(\.id).sorted { $0.canonical < $1.canonical }
        return NotificationWorld(
            world: world, desktop: desktop, phone: phone, desktopSide: desktopSide, phoneSide: phoneSide,
            sessions: sessions, phoneToken: phoneToken, desktopToken: desktopToken)
    }

    /// A fresh token (unique on the shared stack).
    static func token() -> String { SecureBytes(randomCount: 32).withUnsafeBytes { ByteEncoding.hex($0) } }

    /// Registers a live-activity token on the phone for `session`; returns it.
    func liveActivity(_ session: UUID) async throws -> String {
        let token = Self.token()
        try await phoneSide.registerPushToken(
            token, type: .liveActivity, activityID: "activity-\(token.prefix(8))", sessionID: session)
        return token
    }

    /// The user's outbox rows for `token`, oldest first.
    func rows(_ token: String) async throws -> [OutboxEntry] {
        try await phoneSide.outbox(limit: 10_000).filter { $0.tokenHint == PushTokenText.hint(token) }.sorted {
            $0.id < $1.id
        }
    }

    func report(
        _ session: UUID, _ state: RuntimeStatus.State = .running, operation: String? = nil, task: String? = nil
    )
        async throws
    {
        try await desktopSide.reportRuntimeStatus(
            sessionID: session, state: state, currentOperation: operation,
            todoProgress: task.map { RuntimeStatus.TodoProgress(completed: 3, total: 7, currentTask: $0) })
    }

    /// What the delivery worker does: marks `token`'s rows whose time has come delivered.
    func deliverDue(_ token: String) async throws {
        switch world.backend {
        case .embedded:
            let queue = try world.operatorDatabase()
            let now = Timestamp.format(Date())
            try await queue.write { db in
                try db.execute(
                    sql: """
                        UPDATE push_outbox SET delivered_at = ?, attempts = attempts + 1
                        WHERE token = ? AND delivered_at IS NULL AND (not_before IS NULL OR not_before <= ?)
                        """, arguments: [now, token, now])
            }
        case .postgrest:
            _ = try await StackEnvironment.require().sql(
                """
                UPDATE public.push_outbox SET delivered_at = now(), attempts = attempts + 1
                WHERE token = '\(token)' AND delivered_at IS NULL AND not_before <= now()
                """)
        }
    }

    /// Every payload of the user's outbox, and on the stack the table's whole text as the
    /// database holds it.
    func outboxText() async throws -> String {
        var text = try await phoneSide.outbox(limit: 10_000).map(\.payload).joined(separator: "\n")
        if world.backend == .postgrest {
            text += try await StackEnvironment.require().sql(
                "SELECT coalesce(string_agg(o::text, E'\\n'), '') FROM public.push_outbox o WHERE user_id = '\(world.user.canonical)'"
            )
        }
        return text
    }
}

/// A payload's `aps`.
func aps(_ entry: OutboxEntry) throws -> [String: Any] {
    let object = try #require(try JSONSerialization.jsonObject(with: Data(entry.payload.utf8)) as? [String: Any])
    return try #require(object["aps"] as? [String: Any])
}

/// A live-activity payload's content state.
func contentState(_ entry: OutboxEntry) throws -> [String: Any] {
    try #require(try aps(entry)["content-state"] as? [String: Any])
}
