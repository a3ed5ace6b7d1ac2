import Foundation
import GRDB
import RemoteContract
import RemoteRules
import SyncModel

/// Task alerts on the embedded remote (`private.queue_task_alerts`, the trigger
/// `agent_coding_sessions_status_alerts` and `notify_session_event` of the project's
/// `*_notifications_2.sql`): task_complete, task_failed and task_paused for the user's other
/// trusted devices, decided per device and coalesced per token and session.
extension EmbeddedRemoteStore {
    /// The fields of a queued payload the coalescing rule reads.
    struct QueuedKind: Decodable {
        var type: String?
    }

    /// The fields of a runtime status the task-alert rule reads.
    struct RuntimeWord: Decodable {
        struct Session: Decodable {
            var status: String?
        }
        var codingSession: Session?

        enum CodingKeys: String, CodingKey {
            case codingSession = "coding_session"
        }
    }

    /// Queues a task alert of `kind` about `session` for every valid device token of the
    /// user's trusted devices but the session's desktop's. Per token: the device's decision
    /// (off, suppressed: nothing); then `TaskAlertRules.coalescing` against the
    /// token's newest row for the session.
    static func queueTaskAlerts(
        _ db: Database, user: String, session: String, kind: AlertKind, scheme: String
    ) throws -> SessionEventQueued {
        var counts = SessionEventQueued(queued: 0, coalesced: 0, suppressed: 0, off: 0)
        guard
            let desktop = try String.fetchOne(
                db, sql: "SELECT device_id FROM agent_coding_sessions WHERE id = ? AND user_id = ?",
                arguments: [session, user])
        else { return counts }
        // A task kind's alert is the same for every device that gets one.
        guard
            let payload = PushPayloads.alert(
                kind, session: session, scheme: scheme, request: nil, decision: .alert, timeSensitive: false, badge: 0
            )?.json
        else { return counts }
        let collapse = "session-" + session
        let now = Date()
        for (device, value) in try trustedTokens(db, user: user, except: desktop) {
            guard try mayQueue(db, device: device, kind: .alert) else { continue }
            let decision = try alertDecision(db, device: device, kind: kind, session: session)
            guard let priority = NotificationRules.priority(decision) else {
                if decision == .off { counts.off += 1 } else { counts.suppressed += 1 }
                continue
            }
            var due = now
            let newest = try Row.fetchOne(
                db,
                sql: """
                    SELECT id, payload, not_before, delivered_at IS NULL AND failed_at IS NULL AND attempts = 0 AS waits
                    FROM push_outbox WHERE token = ? AND collapse_id = ? ORDER BY not_before DESC, id DESC LIMIT 1
                    """, arguments: [value, collapse])
            let newestDue = (newest?["not_before"] as String?).flatMap(Timestamp.parse)
            let read = newest.flatMap { row in
                newestDue.map { due in
                    TaskAlertRules.Newest(
                        kind: (try? JSONDecoder().decode(QueuedKind.self, from: Data((row["payload"] as String).utf8)))?
                            .type,
                        age: now.timeIntervalSince(due), waits: row["waits"])
                }
            }
            switch TaskAlertRules.coalescing(kind: kind, newest: read) {
            case .coalesce:
                counts.coalesced += 1
                continue
            case .replace:
                try db.execute(
                    sql: "UPDATE push_outbox SET payload = ? WHERE id = ?",
                    arguments: [payload, newest?["id"] as Int64?])
                counts.queued += 1
                continue
            case .queueAfterNewest(let seconds):
                due = (newestDue ?? now).addingTimeInterval(seconds)
            case .queue:
                break
            }
            try enqueue(
                db, user: user, device: device, token: value, type: "alert", priority: priority, collapse: collapse,
                payload: payload, at: Timestamp.format(now), due: Timestamp.format(due))
            counts.queued += 1
        }
        return counts
    }

    /// The kind a session's runtime status change raises (`TaskAlertRules.runtimeKind`
    /// over the two statuses' `coding_session.status`).
    static func taskKind(runtimeBefore: String?, after: String?) -> AlertKind? {
        func word(_ json: String?) -> String? {
            json.flatMap { try? JSONDecoder().decode(RuntimeWord.self, from: Data($0.utf8)) }?.codingSession?.status
        }
        return TaskAlertRules.runtimeKind(
            hadStatus: runtimeBefore != nil, before: word(runtimeBefore), after: word(after))
    }

    public func notifySessionEvent(
        sessionID: UUID, deviceID: UUID, kind: AlertKind
    ) async throws
        -> SessionEventQueued
    {
        let scheme = deepLinkScheme
        return try await write("raising a task alert") { db in
            _ = try self.acting(db, deviceID, trusted: true)
            let runs =
                try Bool.fetchOne(
                    db,
                    sql:
                        "SELECT EXISTS (SELECT 1 FROM agent_coding_sessions WHERE id = ? AND user_id = ? AND device_id = ?)",
                    arguments: [sessionID.canonical, self.me, deviceID.canonical]) ?? false
            try Self.refuse(
                TaskAlertRules.eventRefusal(
                    deviceMine: try Self.owner(db, table: "devices", id: deviceID.canonical) == self.me,
                    sessionOnDevice: runs, kind: kind.rawValue))
            return try Self.queueTaskAlerts(db, user: self.me, session: sessionID.canonical, kind: kind, scheme: scheme)
        }
    }
}
