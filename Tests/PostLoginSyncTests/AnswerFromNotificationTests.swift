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

/// Answering from the lock screen (notifications-2.md, "What the tests must show", 9; 8 in
/// part): `ApprovalCenter.answerNotification` and `notificationDisplay` on an approval's real push.
@Suite("Notifications round 2: answering from the lock screen")
struct AnswerFromNotificationTests {
    static func payload(_ text: String, _ change: (inout [String: Any]) -> Void = { _ in }) throws -> AlertPayload {
        var object = try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        change(&object)
        return try AlertPayload(json: JSONSerialization.data(withJSONObject: object))
    }

    @Test(
        "a payload without sealed is fetched and answered; an expired one sends nothing; a swapped body is never answered; a question or task payload is refused",
        arguments: Backend.available)
    func answer(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let (task, row) = try await w.ask(tool: "Bash", summary: "npm test")
        let (other, second) = try await w.ask(tool: "Edit", summary: "App.swift")
        let alert = try #require(try await w.outbox(row.id).alerts.first { $0.deviceID == w.phone.identity.id })
        let remote = try w.world.remote()

        // What the extension shows: the session's repository, and with details the question.
        let shown = try await ApprovalCenter.notificationDisplay(
            Self.payload(alert.payload), store: w.phone.store, showDetails: true, remote: remote)
        #expect(shown.canAnswer && shown.tool == "Bash" && shown.summary == "npm test")
        #expect(shown.sessionLabel?.hasPrefix("repo-") == true)
        let hidden = try await ApprovalCenter.notificationDisplay(
            Self.payload(alert.payload), store: w.phone.store, showDetails: false, remote: nil)
        #expect(hidden.canAnswer && hidden.tool == nil && hidden.summary == nil)

        // Refused before any request: expired, a question, a task.
        for (change, expected) in [
            ({ (o: inout [String: Any]) in o["expiresAt"] = 1_000 }, AlertPayloadError.expired),
            ({ (o: inout [String: Any]) in o["type"] = "question" }, .notAnApproval),
            ({ (o: inout [String: Any]) in o["type"] = "task_complete" }, .notAnApproval),
        ] as [((inout [String: Any]) -> Void, AlertPayloadError)] {
            let before = remote.metrics().requests
            await #expect(throws: expected) {
                try await ApprovalCenter.answerNotification(
                    Self.payload(alert.payload, change), verdict: .approve, store: w.phone.store, remote: remote)
            }
            #expect(remote.metrics().requests == before, "no request sent")
        }

        // The other request's body in this one's payload: never opened, nothing submitted.
        await #expect(throws: CryptoError.authenticationFailure) {
            try await ApprovalCenter.answerNotification(
                Self.payload(alert.payload) { $0["sealed"] = second.body }, verdict: .approve, store: w.phone.store,
                remote: remote)
        }
        #expect(try await remote.approvalRequest(id: row.id)?.status == .pending)

        // Without sealed (a payload that had no room): fetched by id, answered.
        let answered = try await ApprovalCenter.answerNotification(
            Self.payload(alert.payload) { $0["sealed"] = nil }, verdict: .deny, store: w.phone.store, remote: remote)
        #expect(answered.accepted && answered.status == .denied && answered.decidedBy == w.phone.identity.id)
        #expect(try await task.value == .denied(by: w.phone.identity.id))
        other.cancel()
    }

    @Test(
        "against a remote that never answers, the call ends with deadlineExceeded at its deadline, not when the remote gives up"
    )
    func deadline() async throws {
        let w = try await ApprovalWorld.make(.embedded)
        let (task, row) = try await w.ask()
        let alert = try #require(try await w.outbox(row.id).alerts.first { $0.deviceID == w.phone.identity.id })
        let path = w.world.directory.appendingPathComponent("remote.sqlite").path
        // The remote waits ten minutes for a lock held until the call has ended: only the
        // deadline can end the call, and it must end it without waiting for the blocked body
        // (the ceiling, far below ten minutes, catches one that waits).
        let stuck = try EmbeddedRemoteStore(path: path, userID: w.world.user, busyTimeout: 600)
        let blocker = try DatabaseBlocker(path: path)
        defer { blocker.release() }
        let payload = try Self.payload(alert.payload)
        let ended = Mutex<Result<ApprovalAnswered, Error>?>(nil)
        let call = Task {
            let result: Result<ApprovalAnswered, Error>
            do {
                result = .success(
                    try await ApprovalCenter.answerNotification(
                        payload, verdict: .approve, store: w.phone.store, remote: stuck, deadline: .seconds(2)))
            } catch {
                result = .failure(error)
            }
            ended.withLock { $0 = result }
        }
        defer { call.cancel() }
        #expect(
            try await Waiting.until { ended.withLock { $0 } != nil },
            "hang: the call waited for the blocked remote instead of ending at its deadline")
        let result = ended.withLock { $0 }
        #expect(throws: SyncError.self) { try result?.get() }
        if case .failure(let error) = result { #expect((error as? SyncError)?.code == .deadlineExceeded) }
        task.cancel()
    }

    @Test("a deadline under a second is said in milliseconds (an agent hook's 300 ms read once said 0 s)")
    func deadlineSaid() async throws {
        for (limit, said) in [
            (Duration.milliseconds(300), "no answer within 300 ms:"), (.seconds(1), "no answer within 1 s:"),
        ] {
            let error = await #expect(throws: SyncError.self) {
                try await ApprovalCenter.within(limit) { try await Task.sleep(for: .seconds(600)) }
            }
            #expect(
                error?.code == .deadlineExceeded && error?.message.hasPrefix(said) == true,
                "\(String(describing: error))")
        }
    }
}

/// Holds SQLite's write lock on a database file until released: every writer waits.
final class DatabaseBlocker: Sendable {
    let queue: DatabaseQueue

    init(path: String) throws {
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        queue = try DatabaseQueue(path: path, configuration: configuration)
        try queue.inDatabase { try $0.execute(sql: "BEGIN IMMEDIATE") }
    }

    func release() {
        try? queue.inDatabase { try $0.execute(sql: "ROLLBACK") }
    }
}
