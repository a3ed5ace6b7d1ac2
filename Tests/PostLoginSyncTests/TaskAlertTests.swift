import Foundation
import PostLoginSync
import RemoteStore
import SyncModel
import SyncTestSupport
import Testing

/// Notifications round 2, the task alerts (notifications-2.md, "Alert kinds", "Payloads",
/// "Per-device control, quiet while active, coalescing"; "What the tests must show", 2, 4, 5).
@Suite("Notifications round 2: task alerts", .serialized)
struct TaskAlertTests {
    /// The task alerts of `session`, oldest first.
    static func alerts(_ w: ApprovalWorld, _ session: UUID) async throws -> [OutboxEntry] {
        try await w.world.remote().listOutbox(limit: 1_000).filter { $0.collapseID == "session-" + session.canonical }
            .sorted { $0.id < $1.id }
    }

    static func type(_ entry: OutboxEntry) throws -> String? {
        try (JSONSerialization.jsonObject(with: Data(entry.payload.utf8)) as? [String: Any])?["type"] as? String
    }

    /// Sets the session's task alerts as queued and delivered `seconds` ago.
    static func age(_ w: ApprovalWorld, _ session: UUID, seconds: Double) async throws {
        let then = Timestamp.format(Date().addingTimeInterval(-seconds))
        try await w.asServiceRole(
            "UPDATE push_outbox SET not_before = '\(then)', created_at = '\(then)', delivered_at = '\(then)', attempts = 1 "
                + "WHERE collapse_id = 'session-\(session.canonical)'")
    }

    @Test(
        "a session's transitions raise task_complete, task_failed and task_paused for the other devices, exactly the table's members, no badge; a first status raises nothing",
        arguments: Backend.available)
    func transitions(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let session = try await w.session
        let desktop = Coordinator(store: w.desktop.store, remote: try w.world.remote(for: w.desktop))
        _ = try await desktop.reportRuntimeStatus(sessionID: session, state: .running)
        #expect(try await Self.alerts(w, session).isEmpty, "a first status raises nothing")
        _ = try await desktop.reportRuntimeStatus(sessionID: session, state: .idle)
        let complete = try await Self.alerts(w, session)
        #expect(
            Set(complete.compactMap(\.deviceID)) == [w.phone.identity.id, w.tablet.identity.id],
            "every other device, never the session's desktop")
        for alert in complete {
            let payload = try #require(JSONSerialization.jsonObject(with: Data(alert.payload.utf8)) as? [String: Any])
            #expect(Set(payload.keys) == ["aps", "type", "sessionId", "deepLink"])
            let aps = try #require(payload["aps"] as? [String: Any])
            #expect(
                Set(aps.keys) == ["alert", "category", "thread-id", "interruption-level", "sound", "mutable-content"],
                "no badge: the badge is left as it is")
            #expect(aps["category"] as? String == "SESSION_STATUS" && aps["interruption-level"] as? String == "active")
            #expect(aps["thread-id"] as? String == session.canonical && aps["sound"] as? String == "default")
            #expect(
                aps["alert"] as? [String: String] == [
                    "title": "Task complete", "body": "An agent session finished working",
                    "title-loc-key": "notification.complete.title", "loc-key": "notification.complete.body.generic",
                ])
            // Whatever scheme the deployment has now (another test may be changing it).
            let link = try #require(payload["deepLink"] as? String)
            #expect(link.wholeMatch(of: try Regex("^[a-z][a-z0-9+.-]{0,31}://session/\(session.canonical)$")) != nil)
            #expect(!alert.payload.contains("loc-args") && alert.priority == 10 && alert.pushType == "alert")
            let parsed = try AlertPayload(json: Data(alert.payload.utf8))
            #expect(parsed.kind == .taskComplete && parsed.route == .session(session))
        }

        // Within the minute, another kind replaces the waiting alert: the latest state arrives.
        _ = try await desktop.reportRuntimeStatus(sessionID: session, state: .error, errorMessage: "boom")
        var alerts = try await Self.alerts(w, session)
        #expect(alerts.count == 2 && alerts.allSatisfy { (try? Self.type($0)) == "task_failed" })
        let failed = try #require(JSONSerialization.jsonObject(with: Data(alerts[0].payload.utf8)) as? [String: Any])
        #expect(
            (failed["aps"] as? [String: Any])?["alert"] as? [String: String] == [
                "title": "Task failed", "body": "An agent session stopped with an error",
                "title-loc-key": "notification.error.title", "loc-key": "notification.error.body.generic",
            ])
        #expect(!alerts.contains { $0.payload.contains("boom") }, "no content in a payload")

        // Paused, from the session's status.
        var record = try #require(try await w.desktop.store.sessions().first { $0.id == session })
        record.status = .paused
        _ = try await w.world.remote(for: w.desktop).upsertSessions([record], onBatchAccepted: nil)
        alerts = try await Self.alerts(w, session)
        #expect(alerts.count == 2 && alerts.allSatisfy { (try? Self.type($0)) == "task_paused" })
        let paused = try #require(JSONSerialization.jsonObject(with: Data(alerts[0].payload.utf8)) as? [String: Any])
        #expect(
            (paused["aps"] as? [String: Any])?["alert"] as? [String: String] == [
                "title": "Task paused", "body": "An agent session is paused; open it to continue",
                "title-loc-key": "notification.paused.title", "loc-key": "notification.paused.body",
            ])
    }

    @Test(
        "coalescing: ten idle transitions queue one task_complete per token; the same kind on request right after queues nothing; task_failed 20 s after a delivered task_complete is due 60 s after it",
        arguments: Backend.available)
    func coalescing(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let session = try await w.session
        let desktop = Coordinator(store: w.desktop.store, remote: try w.world.remote(for: w.desktop))
        let alerts = SessionAlerts(local: w.desktop.store, remote: try w.world.remote(for: w.desktop))
        for _ in 0..<10 {
            _ = try await desktop.reportRuntimeStatus(sessionID: session, state: .running)
            _ = try await desktop.reportRuntimeStatus(sessionID: session, state: .idle)
        }
        #expect(try await Self.alerts(w, session).count == 2, "one per token")
        let again = try await alerts.notify(session: session, kind: .taskComplete)
        #expect(again == SessionEventQueued(queued: 0, coalesced: 2, suppressed: 0, off: 0))
        #expect(try await Self.alerts(w, session).count == 2)

        try await Self.age(w, session, seconds: 20)
        let failed = try await alerts.notify(session: session, kind: .taskFailed)
        #expect(failed == SessionEventQueued(queued: 2, coalesced: 0, suppressed: 0, off: 0))
        let later = try await Self.alerts(w, session).filter { (try? Self.type($0)) == "task_failed" }
        #expect(later.count == 2)
        for alert in later {
            let due = try #require(alert.notBefore).timeIntervalSinceNow
            #expect(due > 35 && due < 45, "due 60 s after the delivered one, not at once: \(due)")
        }
    }

    @Test(
        "quiet while active and the settings: another device active on the session suppresses the phone's task alert; 61 s after, or quiet off, it goes; a kind turned off is off; only the session's desktop may raise one",
        arguments: Backend.available)
    func quietAndSettings(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let session = try await w.session
        let alerts = SessionAlerts(local: w.desktop.store, remote: try w.world.remote(for: w.desktop))
        let phone = Coordinator(store: w.phone.store, remote: try w.world.remote(for: w.phone))
        let tablet = Coordinator(store: w.tablet.store, remote: try w.world.remote(for: w.tablet))
        _ = try await tablet.claim(sessionID: session)
        try await ApprovalAlertTests.ageClaim(w, session: session, seconds: 10)
        #expect(
            try await alerts.notify(session: session, kind: .taskComplete)
                == SessionEventQueued(queued: 1, coalesced: 0, suppressed: 1, off: 0))
        #expect(try await Self.alerts(w, session).compactMap(\.deviceID) == [w.tablet.identity.id])

        try await phone.setNotificationSettings(NotificationSettings.Change([.quietWhileActive: false]))
        #expect(try await alerts.notify(session: session, kind: .taskFailed).queued == 2)
        try await phone.setNotificationSettings(NotificationSettings.Change([.quietWhileActive: true]))
        try await ApprovalAlertTests.ageClaim(w, session: session, seconds: 61)
        #expect(try await alerts.notify(session: session, kind: .taskPaused).queued == 2)

        try await phone.setNotificationSettings(NotificationSettings.Change([.complete: false]))
        try await Self.age(w, session, seconds: 120)
        #expect(
            try await alerts.notify(session: session, kind: .taskComplete)
                == SessionEventQueued(queued: 1, coalesced: 0, suppressed: 0, off: 1))
        #expect(try await alerts.notify(session: session, kind: .taskFailed).off == 0, "only that kind is off")

        // The phone does not run the session; a kind that is not a task's is refused unsent.
        await #expect {
            _ = try await SessionAlerts(local: w.phone.store, remote: try w.world.remote(for: w.phone)).notify(
                session: session, kind: .taskComplete)
        } throws: {
            ($0 as? RemoteStoreError)?.code == .permissionDenied
        }
        await #expect {
            _ = try await alerts.notify(session: session, kind: .approval)
        } throws: {
            ($0 as? RemoteStoreError)?.code == .invalidValue
        }
    }
}
