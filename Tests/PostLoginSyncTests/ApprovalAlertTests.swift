import EmbeddedRemote
import Foundation
import GRDB
import PostLoginSync
import RemoteStore
import SyncModel
import SyncTestSupport
import Synchronization
import TestStack
import Testing

/// Notifications round 2, the approval alert (notifications-2.md, "Payloads" and "Deep links";
/// "What the tests must show", 2, for the approval kind): exactly the table's members, the loc
/// keys and their English fallbacks, no `loc-args`, a deep link under the deployment's scheme,
/// and a scheme of another form refused.
@Suite("The approval alert: its members, deep link, deliveries and settings", .serialized)
struct ApprovalAlertTests {
    /// Asks with the desktop's store over `remote`, until the phone sees the request; then
    /// leaves the asking task to the caller.
    static func ask(
        _ w: ApprovalWorld, over remote: any CompleteRemote
    ) async throws -> (Task<ApprovalOutcome, Error>, UUID) {
        let asking = ApprovalCenter(local: w.desktop.store, remote: remote)
        let phoneCenter = try w.center(w.phone)
        let before = Set(try await phoneCenter.pending().map(\.id))
        let session = try await w.session
        let task = Task {
            try await asking.request(
                session: session, tool: "Bash", summary: "npm test", timeout: .seconds(600),
                pollInterval: .milliseconds(20))
        }
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            if let row = try await phoneCenter.pending().first(where: { !before.contains($0.id) }) {
                return (task, row.id)
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        task.cancel()
        throw CancellationError()
    }

    /// Every alert of `request`: its members checked against the table; returns the deep links.
    static func checkedAlerts(_ w: ApprovalWorld, request: UUID, scheme: String) async throws -> [String] {
        let session = try await w.session
        let (alerts, _) = try await w.outbox(request)
        #expect(alerts.count == 2, "one a trusted device")
        var links: [String] = []
        for alert in alerts {
            let payload = try #require(JSONSerialization.jsonObject(with: Data(alert.payload.utf8)) as? [String: Any])
            #expect(
                Set(payload.keys) == [
                    "aps", "type", "sessionId", "deepLink", "requestId", "requesterDeviceId", "generation", "expiresAt",
                    "sealed",
                ])
            let aps = try #require(payload["aps"] as? [String: Any])
            #expect(
                Set(aps.keys) == [
                    "alert", "category", "thread-id", "interruption-level", "sound", "mutable-content", "badge",
                ])
            #expect(
                aps["category"] as? String == "APPROVAL_REQUEST" && aps["thread-id"] as? String == session.canonical)
            #expect(aps["sound"] as? String == "default" && aps["mutable-content"] as? Int == 1)
            #expect(
                aps["alert"] as? [String: String] == [
                    "title": "Approval needed", "body": "An agent session is waiting for you",
                    "title-loc-key": "notification.approval.title", "loc-key": "notification.approval.body.generic",
                ])
            #expect(!alert.payload.contains("loc-args"))
            let link = try #require(payload["deepLink"] as? String)
            #expect(link == "\(scheme)://session/\(session.canonical)/approval/\(request.canonical)")
            #expect(
                link.wholeMatch(
                    of: try Regex("^\(scheme)://session/[0-9a-f-]{36}(/(approval|question)/[0-9a-f-]{36})?$")) != nil)
            let parsed = try AlertPayload(json: Data(alert.payload.utf8))
            #expect(parsed.route == .approval(session: session, request: request))
            #expect(AlertRoute(url: try #require(URL(string: link)), scheme: scheme) == parsed.route)
            #expect(alert.priority == 10 && alert.pushType == "alert")
            links.append(link)
        }
        return links
    }

    @Test(
        "the approval alert has exactly its members, and the deployment's scheme in its deep link",
        arguments: Backend.available)
    func approvalAlert(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let (first, request) = try await Self.ask(w, over: try w.world.remote(for: w.desktop))
        _ = try await Self.checkedAlerts(w, request: request, scheme: "codingbridge")
        first.cancel()

        // Another scheme: the next alerts carry it.
        let path = w.world.directory.appendingPathComponent("remote.sqlite").path
        let remote: any CompleteRemote
        switch backend {
        case .embedded:
            remote = try EmbeddedRemoteStore(
                path: path, userID: w.world.user, deepLinkScheme: "myapp", credential: w.desktop.credential)
            #expect(throws: RemoteStoreError.self) {
                try EmbeddedRemoteStore(path: path, userID: w.world.user, deepLinkScheme: "My App")
            }
        case .postgrest:
            let stack = try StackEnvironment.require()
            _ = try await stack.sql("UPDATE private.notification_config SET deep_link_scheme = 'myapp'")
            await #expect(throws: (any Error).self) {
                try await stack.sql("UPDATE private.notification_config SET deep_link_scheme = 'My App'")
            }
            remote = try w.world.remote(for: w.desktop)
        }
        let askAgain = {
            let (second, again) = try await Self.ask(w, over: remote)
            let links = try await Self.checkedAlerts(w, request: again, scheme: "myapp")
            #expect(links.allSatisfy { $0.hasPrefix("myapp://") })
            second.cancel()
        }
        switch backend {
        case .embedded: try await askAgain()
        case .postgrest:
            try await StackEnvironment.require().afterwards(
                run: "UPDATE private.notification_config SET deep_link_scheme = 'codingbridge'", askAgain)
        }
    }

    /// The newest alert of `request` for `device`.
    static func alert(_ w: ApprovalWorld, _ request: UUID, for device: World.Device) async throws -> OutboxEntry? {
        try await w.outbox(request).alerts.first { $0.deviceID == device.identity.id }
    }

    /// Whether `alert` is the quiet form: passive, no sound, priority 5.
    static func isPassive(_ alert: OutboxEntry) throws -> Bool {
        let payload = try #require(JSONSerialization.jsonObject(with: Data(alert.payload.utf8)) as? [String: Any])
        let aps = try #require(payload["aps"] as? [String: Any])
        let passive = aps["interruption-level"] as? String == "passive" && aps["sound"] == nil && alert.priority == 5
        let usual =
            aps["interruption-level"] as? String == "time-sensitive" && aps["sound"] as? String == "default"
            && alert.priority == 10
        #expect(passive || usual, "\(alert.payload) priority \(alert.priority)")
        return passive
    }

    /// Moves the session's claim `seconds` into the past, as the service role.
    static func ageClaim(_ w: ApprovalWorld, session: UUID, seconds: Int) async throws {
        switch w.world.backend {
        case .embedded:
            let queue = try w.world.operatorDatabase()
            try await queue.write {
                try $0.execute(
                    sql: "UPDATE session_active_clients SET last_activity_at = ? WHERE session_id = ?",
                    arguments: [Timestamp.format(Date().addingTimeInterval(-Double(seconds))), session.canonical])
            }
        case .postgrest:
            _ = try await StackEnvironment.require().sql(
                "UPDATE public.session_active_clients SET last_activity_at = now() - interval '\(seconds) seconds' "
                    + "WHERE session_id = '\(session.canonical)'")
        }
    }

    @Test(
        "another device active on the session: the phone's approval alert arrives quietly; 61 s after or with the setting off, as usual; only the session's desktop touches; approvals off: none",
        arguments: Backend.available)
    func quietWhileActive(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let session = try await w.session
        let phone = Coordinator(store: w.phone.store, remote: try w.world.remote(for: w.phone))
        let tablet = Coordinator(store: w.tablet.store, remote: try w.world.remote(for: w.tablet))
        func ask() async throws -> UUID {
            let (task, request) = try await Self.ask(w, over: try w.world.remote(for: w.desktop))
            task.cancel()
            return request
        }
        // The tablet claimed the session 10 s ago.
        _ = try await tablet.claim(sessionID: session)
        try await Self.ageClaim(w, session: session, seconds: 10)
        var request = try await ask()
        #expect(try Self.isPassive(try #require(try await Self.alert(w, request, for: w.phone))))
        #expect(try !Self.isPassive(try #require(try await Self.alert(w, request, for: w.tablet))), "the holder's own")

        // The phone's quiet-while-active off: as usual.
        try await phone.setNotificationSettings(NotificationSettings.Change([.quietWhileActive: false]))
        request = try await ask()
        #expect(try !Self.isPassive(try #require(try await Self.alert(w, request, for: w.phone))))
        try await phone.setNotificationSettings(NotificationSettings.Change([.quietWhileActive: true]))

        // 61 s after the claim: as usual. Only the session's desktop touches a session: the
        // phone's touch, and the tablet's (the holder's), are refused and change nothing.
        try await Self.ageClaim(w, session: session, seconds: 61)
        for device in [phone, tablet] {
            await #expect { _ = try await device.touch(sessionID: session) } throws: {
                ($0 as? RemoteStoreError)?.code == .permissionDenied
            }
        }
        request = try await ask()
        #expect(try !Self.isPassive(try #require(try await Self.alert(w, request, for: w.phone))))
        // The holder claiming again makes the claim fresh: quiet.
        _ = try await tablet.claim(sessionID: session)
        request = try await ask()
        #expect(try Self.isPassive(try #require(try await Self.alert(w, request, for: w.phone))))

        // Approvals off for the phone: no alert for it, the tablet's as before.
        let updated = try await phone.setNotificationSettings(NotificationSettings.Change([.approvals: false]))
        #expect(updated.settings.alertApprovals == false && updated.settings.alertQuestions == true)
        #expect(try await phone.notificationSettings().alertApprovals == false)
        request = try await ask()
        #expect(try await Self.alert(w, request, for: w.phone) == nil)
        #expect(try await Self.alert(w, request, for: w.tablet) != nil)
    }

    @Test(
        "alert_deliveries: one entry per device but the asker's, off for a setting turned off, never a token; another user's or a random id: refused",
        arguments: Backend.available)
    func deliveries(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let phone = Coordinator(store: w.phone.store, remote: try w.world.remote(for: w.phone))
        try await phone.setNotificationSettings(NotificationSettings.Change([.approvals: false]))
        let (task, request) = try await Self.ask(w, over: try w.world.remote(for: w.desktop))
        defer { task.cancel() }
        let center = ApprovalCenter(local: w.desktop.store, remote: try w.world.remote(for: w.desktop))
        let deliveries = try await center.deliveries(of: request)
        #expect(deliveries.alertID == request && deliveries.kind == "approval")
        #expect(Set(deliveries.devices.map(\.deviceID)) == [w.phone.identity.id, w.tablet.identity.id])
        let byDevice = Dictionary(uniqueKeysWithValues: deliveries.devices.map { ($0.deviceID, $0) })
        #expect(
            byDevice[w.phone.identity.id]?.outcome == .off && byDevice[w.phone.identity.id]?.reason == "setting off")
        #expect(byDevice[w.tablet.identity.id]?.outcome == .queued && byDevice[w.tablet.identity.id]?.attempts == 0)
        #expect(!deliveries.isFinal, "the tablet's alert is still queued")
        #expect(deliveries.summary == "queued for tablet; off: phone (setting off)")
        let text = "\(deliveries)"
        for token in w.tokens.values { #expect(!text.contains(token)) }

        // Another user's view of this id, and a random id: refused alike.
        for (remote, id) in [(try w.world.remote(as: UUID()), request), (try w.world.remote(for: w.desktop), UUID())] {
            await #expect {
                _ = try await ApprovalCenter(local: w.desktop.store, remote: remote).deliveries(of: id)
            } throws: {
                ($0 as? RemoteStoreError)?.code == .permissionDenied
            }
        }
    }
}

extension ApprovalAlertTests {
    /// Marks every alert row of `request` delivered, as the worker would on APNs' 200.
    static func deliver(_ w: ApprovalWorld, request: UUID) async throws {
        let collapse = "approval-request-" + request.canonical
        switch w.world.backend {
        case .embedded:
            let queue = try w.world.operatorDatabase()
            try await queue.write {
                try $0.execute(
                    sql: "UPDATE push_outbox SET delivered_at = ?, attempts = 1 WHERE collapse_id = ?",
                    arguments: [Timestamp.format(Date()), collapse])
            }
        case .postgrest:
            _ = try await StackEnvironment.require().sql(
                "UPDATE public.push_outbox SET delivered_at = now(), attempts = 1 WHERE collapse_id = '\(collapse)'")
        }
    }

    @Test(
        "onDeliveries: where the alert went as soon as it is queued, then each change until final; the request itself is unaffected",
        arguments: Backend.available)
    func onDeliveries(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let session = try await w.session
        let reports = Mutex<[AlertDeliveries]>([])
        let center = ApprovalCenter(local: w.desktop.store, remote: try w.world.remote(for: w.desktop))
        let task = Task {
            try await center.request(
                session: session, tool: "Bash", summary: "npm test", timeout: .seconds(600),
                pollInterval: .milliseconds(50),
                onDeliveries: { deliveries in reports.withLock { $0.append(deliveries) } })
        }
        defer { task.cancel() }
        let phone = try w.center(w.phone)
        let row = try #require(
            try await Waiting.value { try await phone.pending().first }, "hang: the request never reached the phone")
        let id = row.id
        // Told where the alert went before anything was delivered: the first report is the queue.
        let first = try #require(
            try await Waiting.value { reports.withLock { $0.first } }, "hang: no report within the ceiling")
        #expect(first.alertID == id && !first.isFinal)
        #expect(first.summary == "queued for phone, tablet")

        try await Self.deliver(w, request: id)
        _ = try await Waiting.until(every: .milliseconds(50)) { reports.withLock { $0.last?.isFinal } == true }
        let last = try #require(reports.withLock { $0.last })
        #expect(last.isFinal && last.summary == "delivered to phone, tablet")
        #expect(reports.withLock { $0.count } == 2, "one report per change")
        _ = try await phone.answer(try await phone.open(row), verdict: .approve)
        #expect(try await task.value == .approved(by: w.phone.identity.id))
    }
}
