import Foundation
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Testing

/// Notifications round 2, agents' questions on the remotes (notifications-2.md, "Questions,
/// sealed"; "What the tests must show", 1-4 for the question kind).
@Suite("Notifications round 2: questions", .serialized)
struct QuestionAlertTests {
    static let text = "Which database should the migration target? marker-q-7f3a"

    static func outbox(_ w: ApprovalWorld, _ collapse: String) async throws -> [OutboxEntry] {
        try await w.world.remote().listOutbox(limit: 1_000).filter { $0.collapseID == collapse }
    }

    @Test(
        "a question: sealed (the server holds no text), alerted with exactly its members to the other devices, opened by the phone, badge counted, delivery outcomes for the asker only; closed, its prompts clear once",
        arguments: Backend.available)
    func askOpenClose(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let session = try await w.session
        let desktop = SessionAlerts(local: w.desktop.store, remote: try w.world.remote(for: w.desktop))
        let asked = try await desktop.ask(session: session, text: Self.text, timeout: .seconds(600))
        #expect(asked.devicesNotified == 2)
        #expect(asked.deliveries?.summary == "queued for phone, tablet")
        let id = asked.questionId

        let alerts = try await Self.outbox(w, "question-" + id.canonical)
        #expect(Set(alerts.compactMap(\.deviceID)) == [w.phone.identity.id, w.tablet.identity.id])
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
            #expect(aps["category"] as? String == "AGENT_QUESTION" && aps["badge"] as? Int == 1)
            #expect(
                aps["alert"] as? [String: String] == [
                    "title": "Your agent has a question", "body": "An agent session is waiting for your answer",
                    "title-loc-key": "notification.question.title", "loc-key": "notification.question.body.generic",
                ])
            // Whatever scheme the deployment has now (another test may be changing it).
            let link = try #require(payload["deepLink"] as? String)
            #expect(
                link.wholeMatch(
                    of: try Regex("^[a-z][a-z0-9+.-]{0,31}://session/\(session.canonical)/question/\(id.canonical)$"))
                    != nil)
            let parsed = try AlertPayload(json: Data(alert.payload.utf8))
            #expect(parsed.kind == .question && parsed.route == .question(session: session, question: id))
            #expect(alert.priority == 10 && !alert.payload.contains("loc-args"))
        }
        // Nothing of the question on the server: not in a table, not in a payload.
        #expect(!(try await w.everything()).contains("marker-q-7f3a"))

        let phone = SessionAlerts(local: w.phone.store, remote: try w.world.remote(for: w.phone))
        #expect(try await phone.open(question: id).text == Self.text)
        // A service extension given the alert without `sealed` (left out of a long question's
        // payload) fetches the question and shows its text, sanitised, only with details on.
        let mine = try #require(alerts.first { $0.deviceID == w.phone.identity.id })
        var object = try #require(JSONSerialization.jsonObject(with: Data(mine.payload.utf8)) as? [String: Any])
        object["sealed"] = nil
        let unsealed = try AlertPayload(json: try JSONSerialization.data(withJSONObject: object))
        let shown = await ApprovalCenter.notificationDisplay(
            unsealed, store: w.phone.store, showDetails: true, remote: try w.world.remote(for: w.phone))
        #expect(shown.text == Self.text && !shown.canAnswer)
        let hidden = await ApprovalCenter.notificationDisplay(
            unsealed, store: w.phone.store, showDetails: false, remote: try w.world.remote(for: w.phone))
        #expect(hidden.text == nil)
        #expect(try await desktop.open(question: id).text == Self.text, "the asker opens its own")
        let changes = try await w.world.remote().changes(since: nil, statements: false)
        #expect(changes.questions.map(\.id) == [id], "the change feed carries the pending question")

        // A second question: the badge counts both.
        let second = try await desktop.ask(session: session, text: "And the schema name?")
        let badge = try await Self.outbox(w, "question-" + second.questionId.canonical).compactMap {
            ((try JSONSerialization.jsonObject(with: Data($0.payload.utf8)) as? [String: Any])?["aps"]
                as? [String: Any])?["badge"] as? Int
        }
        #expect(badge == [2, 2])

        // Delivery outcomes: the asker's; another user's view, and a random id, refused alike.
        let deliveries = try await ApprovalCenter(local: w.desktop.store, remote: try w.world.remote(for: w.desktop))
            .deliveries(of: id)
        #expect(deliveries.kind == "question" && deliveries.devices.count == 2)
        for (remote, alert) in [(try w.world.remote(as: UUID()), id), (try w.world.remote(), UUID())] {
            await #expect {
                _ = try await ApprovalCenter(local: w.desktop.store, remote: remote).deliveries(of: alert)
            } throws: {
                ($0 as? RemoteStoreError)?.code == .permissionDenied
            }
        }

        // Closed: the other devices' prompts clear (with the new badge); a second close changes nothing.
        let closed = try await desktop.close(question: id, answered: true)
        #expect(closed == QuestionClosed(closed: true, status: .answered, devicesNotified: 2))
        let clearings = try await Self.outbox(w, "question-clear-" + id.canonical)
        #expect(clearings.count == 2 && clearings.allSatisfy { $0.pushType == "background" })
        for clearing in clearings {
            let payload = try #require(
                JSONSerialization.jsonObject(with: Data(clearing.payload.utf8)) as? [String: Any])
            #expect(payload["clearQuestionId"] as? String == id.canonical && payload["reason"] as? String == "answered")
            #expect((payload["aps"] as? [String: Any])?["badge"] as? Int == 1)
        }
        #expect(try await desktop.close(question: id, answered: false).closed == false)
        #expect(try await Self.outbox(w, "question-clear-" + id.canonical).count == 2)
    }

    @Test(
        "questions expire with expire_approvals (reason timeout, which still counts approvals only); another device active makes the phone's alert passive, never suppressed; questions off: off",
        arguments: Backend.available)
    func expiryQuietAndOff(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let session = try await w.session
        let desktop = SessionAlerts(local: w.desktop.store, remote: try w.world.remote(for: w.desktop))
        let tablet = Coordinator(store: w.tablet.store, remote: try w.world.remote(for: w.tablet))
        _ = try await tablet.claim(sessionID: session)
        let quiet = try await desktop.ask(session: session, text: "Quiet?")
        let phoneAlert = try #require(
            try await Self.outbox(w, "question-" + quiet.questionId.canonical).first {
                $0.deviceID == w.phone.identity.id
            })
        #expect(try ApprovalAlertTests.isPassive(phoneAlert), "passive, never suppressed")

        try await w.asServiceRole(
            "UPDATE agent_questions SET expires_at = 1 WHERE id = '\(quiet.questionId.canonical)'")
        let expired = try await w.expire()
        if backend == .embedded {
            // (On the stack other tests' approvals expire too.)
            #expect(expired == 0, "expire_approvals still counts approvals only")
        }
        let questions: any QuestionRemote = try w.world.remote()
        let row = try #require(try await questions.agentQuestion(id: quiet.questionId))
        #expect(row.status == .expired)
        let clearings = try await Self.outbox(w, "question-clear-" + quiet.questionId.canonical)
        #expect(clearings.count == 2 && clearings.allSatisfy { $0.payload.contains("\"timeout\"") })

        let phone = Coordinator(store: w.phone.store, remote: try w.world.remote(for: w.phone))
        try await phone.setNotificationSettings(NotificationSettings.Change([.questions: false]))
        let off = try await desktop.ask(session: session, text: "Off?")
        let byDevice = Dictionary(uniqueKeysWithValues: (off.devices ?? []).map { ($0.deviceID, $0) })
        #expect(byDevice[w.phone.identity.id]?.outcome == .off && byDevice[w.tablet.identity.id]?.outcome == .queued)

        // Limits: out of range, refused before anything is sent.
        await #expect(throws: CryptoError.invalidApprovalContent) {
            _ = try await desktop.ask(session: session, text: "x", timeout: .seconds(59))
        }
        await #expect(throws: CryptoError.invalidApprovalContent) {
            _ = try await desktop.ask(session: session, text: "")
        }
    }
}
