import Foundation
import Logging
import PostLoginSync
import RemoteStore
import SyncModel
import SyncTestSupport
import TestStack
import Testing

/// A desktop waits minutes for an answer; the remote may fail some of its polls meanwhile (a
/// gateway's 503, a dropped connection). Nothing is accepted from a poll that failed, and the
/// question stays asked: the genuine answer that comes after still ends it.
@Suite("Approvals: a poll the remote fails does not end the question", .enabled(if: !StackEnvironment.skipped))
struct ApprovalPollFaultTests {
    @Test(
        "every poll failing for a while (503 from a gateway): the request still waits, and the phone's answer ends it")
    func pollsFailThenAnswer() async throws {
        let stack = try StackEnvironment.require()
        let w = try await ApprovalWorld.make(.postgrest)
        let proxy = try await FaultProxy(
            upstreamHost: stack.url.host ?? "127.0.0.1", upstreamPort: stack.url.port ?? 80, seed: nil)
        defer { Task { await proxy.shutdown() } }
        // The desktop's remote goes through the proxy, with one attempt a call: a failed poll is
        // not absorbed by the client's retries.
        let user = w.world.user
        var configuration = PostgRESTConfiguration(
            projectURL: proxy.url(path: stack.url.path), apiKey: stack.anonKey, userID: user
        ) { _ in stack.token(for: user) }
        configuration.maxAttempts = 1
        configuration.deviceCredential = w.desktop.credential
        let asking = ApprovalCenter(
            local: w.desktop.store, remote: PostgRESTRemoteStore(configuration: configuration),
            logger: Logger(label: "approvals") { _ in SwiftLogNoOpLogHandler() })
        let session = try await w.session
        let phone = try w.center(w.phone)
        let task = Task {
            try await asking.request(
                session: session, tool: "Bash", summary: "npm test", timeout: .seconds(600),
                pollInterval: .milliseconds(20))
        }
        defer { task.cancel() }
        let row = try #require(
            try await Waiting.value { try await phone.pending().first }, "hang: the request never reached the phone")
        // Every request of the desktop's is answered 503 until at least five polls have failed.
        proxy.force(.status(503))
        #expect(
            try await Waiting.until { proxy.tally.faults[.status(0), default: 0] >= 5 },
            "hang: the desktop stopped polling")
        proxy.force(nil)
        let answered = try await phone.answer(try await phone.open(row), verdict: .approve)
        #expect(answered.accepted)
        #expect(try await task.value == .approved(by: w.phone.identity.id))
    }
}
