import Foundation
import GRDB
import RemoteRules
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Testing

@testable import EmbeddedRemote
@testable import LocalStore
@testable import PostLoginSync

/// Notifications a person controls (notifications.md), on the embedded remote and the stack.
@Suite("Notifications")
struct NotificationTests {
    @Test(
        "100 status changes in 10 s: at most one update per token per 15 s, the newest state, an end at once",
        arguments: Backend.available)
    func throttle(backend: Backend) async throws {
        let n = try await NotificationWorld.make(backend)
        try await n.phoneSide.setNotificationSettings(.init([.details: true]))
        let session = n.sessions[0]
        let token = try await n.liveActivity(session)
        let start = Date()
        // The worker delivers what is due, then the desktop reports. The last report always
        // leaves one update waiting: it replaces a waiting row, or queues one after the last
        // delivery (on a loaded machine, one already due: nothing delivers after it).
        for i in 0..<100 {
            try await n.deliverDue(token)
            try await n.report(session, i % 10 == 9 ? .waiting : .running, operation: "step \(i)", task: "task \(i)")
            let next = start.addingTimeInterval(Double(i + 1) * 0.1)
            if next > Date() { try await Task.sleep(for: .milliseconds(Int(next.timeIntervalSinceNow * 1000))) }
        }
        let rows = try await n.rows(token)
        #expect(rows.allSatisfy { $0.pushType == "liveactivity" })
        // Every update's time is at least 15 s after the previous one's.
        let times = try rows.map { try #require($0.notBefore) }
        for (a, b) in zip(times, times.dropFirst()) { #expect(b.timeIntervalSince(a) >= 14.999) }
        let elapsed = Date().timeIntervalSince(start)
        #expect(rows.count <= Int((elapsed / 15).rounded(.down)) + 2)
        #expect(rows.filter { $0.deliveredAt == nil }.count == 1)
        // The one still waiting carries the newest state.
        let waiting = try #require(rows.last)
        #expect(waiting.deliveredAt == nil)
        let state = try contentState(waiting)
        #expect(state["currentOperation"] as? String == "step 99")
        #expect(state["status"] as? String == "waiting_approval" && waiting.priority == 10)
        let todo = try #require(state["todoProgress"] as? [String: Any])
        #expect(
            todo["completed"] as? Int == 3 && todo["total"] as? Int == 7 && todo["currentTask"] as? String == "task 99")
        let payload = try aps(waiting)
        #expect(payload["event"] as? String == "update")
        let stamp = try #require(payload["timestamp"] as? Int)
        #expect(payload["stale-date"] as? Int == stamp + 300 && payload["dismissal-date"] == nil)
        #expect((state["elapsedSeconds"] as? Int).map { $0 >= 0 } == true)

        // The session ends: the waiting update becomes an end that may go at once.
        var record = try #require(try await n.desktop.store.session(id: session))
        record.status = .ended
        record.sessionEndedAt = Date()
        try await n.desktop.store.upsertSessions([record])
        #expect(try await n.desktop.engine.push().outcome == .success)
        let ended = try await n.rows(token)
        #expect(ended.count == rows.count)
        let end = try #require(ended.last)
        let endPayload = try aps(end)
        #expect(endPayload["event"] as? String == "end" && end.priority == 10)
        #expect(try contentState(end)["status"] as? String == "completed")
        #expect(endPayload["dismissal-date"] as? Int == (endPayload["timestamp"] as? Int).map { $0 + 900 })
        #expect(try #require(end.notBefore) <= Date().addingTimeInterval(1))
        // After the end, nothing more for that token.
        try await n.report(session, .running, operation: "after the end")
        #expect(try await n.rows(token).count == ended.count)
    }

    @Test("status mapping: running, waiting, error, idle, not-available", arguments: Backend.available)
    func statusMapping(backend: Backend) async throws {
        let n = try await NotificationWorld.make(backend)
        let session = n.sessions[0]
        let token = try await n.liveActivity(session)
        let expected: [(RuntimeStatus.State, String, Int)] = [
            (.running, "processing", 5), (.waiting, "waiting_approval", 10), (.error, "error", 5),
            (.idle, "idle", 5), (.notAvailable, "idle", 5),
        ]
        for (state, status, priority) in expected {
            try await n.report(session, state)
            // Coalesced into the one waiting row: it always says the newest.
            let last = try #require(try await n.rows(token).last)
            #expect(try contentState(last)["status"] as? String == status)
            #expect(last.priority == priority)
        }
    }

    @Test("settings: the defaults, each key alone, only the device's own user", arguments: Backend.available)
    func settings(backend: Backend) async throws {
        let n = try await NotificationWorld.make(backend)
        #expect(try await n.phoneSide.notificationSettings() == .defaults)
        #expect(
            NotificationSettings.defaults
                == NotificationSettings(
                    liveActivities: true, backgroundNotifications: true, showDetails: false, timeSensitive: true))
        var expected = NotificationSettings.defaults
        for key in NotificationSettings.Key.allCases {
            expected[key].toggle()
            let updated = try await n.phoneSide.setNotificationSettings(.init([key: expected[key]]))
            #expect(updated.settings == expected)
            #expect(try await n.phoneSide.notificationSettings() == expected)
        }
        // The desktop's settings are its own.
        #expect(try await n.desktopSide.notificationSettings() == .defaults)
        // Another user can neither read nor write them.
        let other: any NotificationRemote = try n.world.remote(as: UUID())
        await #expect(throws: RemoteStoreError.self) {
            _ = try await other.notificationSettings(deviceID: n.phone.identity.id)
        }
        do {
            _ = try await other.setNotificationSettings(deviceID: n.phone.identity.id, .init([.details: true]))
            Issue.record("another user changed the settings")
        } catch let error as RemoteStoreError {
            #expect(error.code == .permissionDenied)
        }
        #expect(try await n.phoneSide.notificationSettings() == expected)
    }

    @Test("on the stack, a user writes the table directly for their own devices only; off ends activities there too")
    func directWrites() async throws {
        guard !StackEnvironment.skipped else { return }
        let n = try await NotificationWorld.make(.postgrest)
        let stack = try StackEnvironment.require()
        let token = try await n.liveActivity(n.sessions[0])
        try await n.report(n.sessions[0], .running)
        let phone = n.phone.identity.id.canonical
        let mine = try await stack.request(
            "POST", "/rest/v1/notification_settings", token: stack.token(for: n.world.user),
            headers: n.phone.credential.headers.merging(["Prefer": "resolution=merge-duplicates,return=representation"])
            {
                a, _ in a
            },
            body: #"{"device_id":"\#(phone)","enable_live_activities":false}"#)
        #expect(mine.status == 201, "\(mine.body)")
        #expect(try await n.phoneSide.notificationSettings().liveActivities == false)
        #expect(try aps(try #require(try await n.rows(token).last))["event"] as? String == "end")
        // Another user: cannot write a row for this device, nor read the one there is, nor claim
        // the row of a device that has none yet (the desktop), which would lock its owner out.
        let stranger = UUID()
        let desktop = n.desktop.identity.id.canonical
        for body in [
            #"{"device_id":"\#(phone)","enable_time_sensitive":false}"#,
            #"{"device_id":"\#(phone)","user_id":"\#(stranger.canonical)","enable_time_sensitive":false}"#,
            #"{"device_id":"\#(desktop)","user_id":"\#(stranger.canonical)","enable_time_sensitive":false}"#,
        ] {
            let theirs = try await stack.request(
                "POST", "/rest/v1/notification_settings", token: stack.token(for: stranger),
                headers: ["Prefer": "resolution=merge-duplicates"], body: body)
            #expect(theirs.status == 403 || theirs.status == 401, "\(theirs.status)")
        }
        let read = try await stack.request(
            "GET", "/rest/v1/notification_settings?device_id=eq.\(phone)", token: stack.token(for: stranger))
        #expect(read.status == 200 && read.body == "[]")
        #expect(try await n.phoneSide.notificationSettings().timeSensitive == true)
        #expect(try await n.desktopSide.setNotificationSettings(.init([.details: true])).settings.showDetails)
    }

    @Test(
        "live activities off: no updates, open activities end; the handoff push still goes",
        arguments: Backend.available)
    func liveActivitiesOff(backend: Backend) async throws {
        let n = try await NotificationWorld.make(backend)
        let session = n.sessions[0]
        let token = try await n.liveActivity(session)
        try await n.report(session, .running)
        #expect(try await n.rows(token).count == 1)
        let off = try await n.phoneSide.setNotificationSettings(.init([.liveActivities: false]))
        #expect(off.liveActivitiesEnded == 1)
        let rows = try await n.rows(token)
        #expect(rows.count == 1)
        #expect(try aps(try #require(rows.first))["event"] as? String == "end")
        // A new activity's token gets nothing while the setting is off.
        let second = try await n.liveActivity(session)
        for state in [RuntimeStatus.State.waiting, .running, .error] { try await n.report(session, state) }
        #expect(try await n.rows(second).isEmpty)
        // Not suppressed: the handoff push to the phone's device token.
        _ = try await n.phoneSide.claim(sessionID: session)
        _ = try await n.desktopSide.claim(sessionID: session)
        #expect(try await n.rows(n.phoneToken).contains { $0.collapseID == "handoff-\(session.canonical)" })
        // On again: the new activity hears of the next change.
        try await n.phoneSide.setNotificationSettings(.init([.liveActivities: true]))
        try await n.report(session, .running)
        #expect(try await n.rows(second).count == 1)
    }

    @Test(
        "background off: background pushes stop, but approval clearing and handoff still go",
        arguments: Backend.available)
    func backgroundOff(backend: Backend) async throws {
        let n = try await NotificationWorld.make(backend)
        try await n.phoneSide.setNotificationSettings(.init([.background: false]))
        // The generic background path every future silent push goes through refuses.
        #expect(try await Self.queueBackground(n, device: n.phone.identity.id, token: n.phoneToken) == false)
        #expect(try await Self.queueBackground(n, device: n.desktop.identity.id, token: n.desktopToken) == true)
        #expect(try await n.rows(n.phoneToken).filter { $0.collapseID == "background-test" }.isEmpty)
        #expect(try await n.rows(n.desktopToken).filter { $0.collapseID == "background-test" }.count == 1)
        // Never suppressed: clearing an approval and a handoff.
        let request = UUID().canonical
        _ = try await n.desktopSide.clearApproval(requestID: request, excludingToken: n.desktopToken)
        #expect(try await n.rows(n.phoneToken).contains { $0.collapseID == "approval-\(request)" })
        let session = n.sessions[1]
        _ = try await n.phoneSide.claim(sessionID: session)
        _ = try await n.desktopSide.claim(sessionID: session)
        #expect(try await n.rows(n.phoneToken).contains { $0.collapseID == "handoff-\(session.canonical)" })
        // On again: the generic path queues.
        try await n.phoneSide.setNotificationSettings(.init([.background: true]))
        #expect(try await Self.queueBackground(n, device: n.phone.identity.id, token: n.phoneToken) == true)
    }

    /// The remote's generic background queuing (no API operation sends other background pushes
    /// yet): `private.queue_background_push` on the stack, the same rule on the embedded file.
    static func queueBackground(_ n: NotificationWorld, device: UUID, token: String) async throws -> Bool {
        switch n.world.backend {
        case .embedded:
            let remote = try #require(try n.world.remote() as? EmbeddedRemoteStore)
            let user = n.world.user.canonical
            return try await remote.write("test") { db in
                try EmbeddedRemoteStore.queueBackground(
                    db, user: user, device: device.canonical, token: token, collapse: "background-test",
                    payload: PushPayload(aps: .silent()))
            }
        case .postgrest:
            let answer = try await StackEnvironment.require().sql(
                """
                SELECT private.queue_background_push('\(n.world.user.canonical)', '\(device.canonical)', '\(token)',
                    'background-test', '{"aps":{"content-available":1}}'::jsonb)
                """)
            return answer == "t"
        }
    }

    @Test(
        "details off: no operation or task text reaches the outbox; on: only sanitised text",
        arguments: Backend.available)
    func details(backend: Backend) async throws {
        let n = try await NotificationWorld.make(backend)
        let session = n.sessions[0]
        let token = try await n.liveActivity(session)
        let texts = (0..<5).map { "operation-\($0)-\(UUID().canonical.prefix(8))" }
        let tasks = (0..<5).map { "task-\($0)-\(UUID().canonical.prefix(8))" }
        for (operation, task) in zip(texts, tasks) {
            try await n.report(session, .running, operation: operation, task: task)
            try await n.deliverDue(token)
        }
        // Handed off and ended too: every kind of live-activity row was queued.
        _ = try await n.phoneSide.claim(sessionID: session)
        _ = try await n.desktopSide.claim(sessionID: session)
        let outbox = try await n.outboxText()
        #expect(!outbox.isEmpty)
        for text in texts + tasks { #expect(!outbox.contains(text), "\(text) reached push_outbox") }
        let rows = try await n.rows(token)
        #expect(rows.count >= 2)
        for row in rows where (try aps(row)["event"] as? String) == "update" {
            let state = try contentState(row)
            #expect(state["currentOperation"] as? String == "Working")
            #expect((state["todoProgress"] as? [String: Any])?["currentTask"] as? String == "")
        }
        #expect(
            try contentState(try #require(rows.last))["currentOperation"] as? String == "Continued on another device")

        // Details on: the text arrives, passed through the sanitiser (a session secret in it is not).
        let other = n.sessions[1]
        let second = try await n.liveActivity(other)
        try await n.phoneSide.setNotificationSettings(.init([.details: true]))
        let secret = try #require(try await n.world.secrets(of: n.desktop)[other]).revealTextForm()
        try await n.report(other, .running, operation: "Running tests with \(secret)", task: "Fix\u{7} auth bug")
        let state = try contentState(try #require(try await n.rows(second).last))
        // Compared as booleans: a failure must not print the secret.
        let redacted = state["currentOperation"] as? String == "Running tests with [REDACTED]"
        #expect(redacted, "the operation did not arrive sanitised")
        #expect((state["todoProgress"] as? [String: Any])?["currentTask"] as? String == "Fix auth bug")
        let leaked = try await n.outboxText().contains(secret)
        #expect(!leaked, "the session secret reached push_outbox")
    }

    @Test("handoff away from the phone ends its activity; one active session per device", arguments: Backend.available)
    func handoffAndSingleSession(backend: Backend) async throws {
        let n = try await NotificationWorld.make(backend)
        let (first, second) = (n.sessions[0], n.sessions[1])
        let firstToken = try await n.liveActivity(first)
        try await n.report(first, .running)
        #expect(try await n.rows(firstToken).count == 1)
        let secondToken = try await n.liveActivity(second)
        // The second session becomes active: the first one's activity ends.
        try await n.report(second, .running)
        let ended = try #require(try await n.rows(firstToken).last)
        #expect(try aps(ended)["event"] as? String == "end")
        #expect(try await n.rows(secondToken).count == 1)
        // The desktop takes the second session from the phone: its activity ends with the handoff text.
        _ = try await n.phoneSide.claim(sessionID: second)
        _ = try await n.desktopSide.claim(sessionID: second)
        let handedOff = try #require(try await n.rows(secondToken).last)
        #expect(try aps(handedOff)["event"] as? String == "end")
        #expect(try contentState(handedOff)["currentOperation"] as? String == "Continued on another device")
        // A handoff to the phone ends nothing of the phone's.
        let third = try await n.liveActivity(first)
        try await n.report(first, .idle)
        let before = try await n.rows(third)
        #expect(before.count == 1)
        _ = try await n.desktopSide.claim(sessionID: first)
        _ = try await n.phoneSide.claim(sessionID: first)
        #expect(try await n.rows(third) == before)
    }

    @Test(
        "approval alerts: the badge counts pending requests, time-sensitive follows the setting",
        arguments: Backend.available)
    func badgeAndTimeSensitive(backend: Backend) async throws {
        let n = try await NotificationWorld.make(backend)
        let remote: any ApprovalRemote = try n.world.remote(for: n.desktop)
        try await n.phoneSide.setNotificationSettings(.init([.timeSensitive: false]))
        let tablet = try await n.world.device("tablet", role: .mobile, type: .iosTablet)
        // Approval pushes go only to devices the trust log certifies.
        let root = DeviceTrustManager(local: n.desktop.store, remote: try n.world.remote(for: n.desktop))
        try await root.initialize()
        root.recoveryKeyShown()
        try await TrustThreatTests.join(n.phone, world: n.world, root: root)
        try await TrustThreatTests.join(tablet, world: n.world, root: root)
        #expect(try await tablet.engine.pull().outcome == .success)
        let tabletToken = NotificationWorld.token()
        try await Coordinator(store: tablet.store, remote: try n.world.remote(for: tablet)).registerPushToken(
            tabletToken)

        var requests: [UUID] = []
        for count in 1...2 {
            let id = UUID()
            requests.append(id)
            _ = try await remote.requestApproval(
                sessionID: n.sessions[0], requestID: id, requesterDeviceID: n.desktop.identity.id,
                body: Self.sealedBody(), generation: 1, expiresAt: UInt64(Date().timeIntervalSince1970) + 300)
            for (token, level) in [(n.phoneToken, "active"), (tabletToken, "time-sensitive")] {
                let alert = try #require(
                    try await n.rows(token).first { $0.collapseID == "approval-request-\(id.canonical)" })
                let payload = try aps(alert)
                #expect(payload["badge"] as? Int == count)
                #expect(payload["interruption-level"] as? String == level)
                #expect(alert.pushType == "alert")
            }
            // The asking desktop gets no alert.
            #expect(try await n.rows(n.desktopToken).allSatisfy { $0.pushType != "alert" })
        }
        // The phone answers the first: the tablet's clearing push carries the new count.
        _ = try await (try n.world.remote(for: n.phone) as any ApprovalRemote).answerApproval(
            requestID: requests[0], deviceID: n.phone.identity.id, verdict: .approve,
            decisionBody: Data(
                [UInt8](repeating: 1, count: 140) + Array(n.phone.identity.id.canonical.utf8)
                    + [UInt8](repeating: 1, count: 1 + 1 + 32 + 32 + 8 + 44)
            ).base64EncodedString(),
            decisionSignature: Data(repeating: 2, count: 64).base64EncodedString())
        let clearing = try #require(
            try await n.rows(tabletToken).first { $0.collapseID == "approval-\(requests[0].canonical)" })
        #expect(try aps(clearing)["badge"] as? Int == 1)
        #expect(try await n.rows(n.phoneToken).allSatisfy { $0.collapseID != "approval-\(requests[0].canonical)" })
        // Cancelling the second: every other device's badge is 0.
        _ = try await remote.cancelApproval(requestID: requests[1])
        for token in [n.phoneToken, tabletToken] {
            let cleared = try #require(
                try await n.rows(token).first { $0.collapseID == "approval-\(requests[1].canonical)" })
            #expect(try aps(cleared)["badge"] as? Int == 0)
        }
    }

    @Test("the sanitiser redacts what the engine produces: a session secret, a stack JWT, device keys")
    func sanitiserOnEngineSecrets() async throws {
        let privateKey = SecureBytes(randomCount: 32).withUnsafeBytes { Data($0).base64EncodedString() }
        // Ten secrets: some text forms hold a run of 40 base64 characters that the base64
        // pattern would catch anyway, most do not.
        var samples: [(String, String)] = (0..<10).map { _ in ("session secret", SessionSecret().revealTextForm()) }
        samples += [("device public key", X25519PrivateKey().publicKey.base64), ("device private key", privateKey)]
        if !StackEnvironment.skipped {
            samples.append(("stack JWT", try StackEnvironment.require().token(for: UUID())))
        }
        for (name, value) in samples {
            // Alone it becomes exactly one redaction, whatever the pattern that matched it; in a
            // sentence, the words around it stay.
            let alone = LockScreenText.sanitised(value) == "[REDACTED]"
            #expect(alone, "\(name) alone is not redacted whole")
            let sentence = LockScreenText.sanitised("Using \(value) now")
            let kept = sentence == "Using [REDACTED] now"
            #expect(kept, "\(name) in a sentence is not redacted exactly")
        }
    }

    /// A request body the remote accepts (it cannot open it): version 1, generation 1, a nonce,
    /// some ciphertext and a tag.
    static func sealedBody() -> String {
        Data([1, 0, 0, 0, 1] + SecureBytes(randomCount: 12 + 40 + 16).withUnsafeBytes { Array($0) })
            .base64EncodedString()
    }
}
