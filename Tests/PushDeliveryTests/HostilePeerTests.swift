import APNsImitation
import Foundation
import PushDelivery
import TestStack
import Testing

/// What a hostile APNs peer can do to the worker's transport, (issue 66, item 3;
/// docs/push-worker.md).
@Suite struct HostilePeerTests {
    static func request() throws -> APNsRequest {
        let row = OutboxRow(
            id: 1, token: String(repeating: "0a", count: 32), pushType: .background, priority: 5, collapseID: nil,
            payload: #"{"aps":{}}"#, apnsID: UUID(), expiresAt: nil, createdAt: Date(), attempts: 1,
            environment: "production")
        return try APNsRequest.make(row: row, bundleID: "com.x", providerToken: "x.y.z")
    }

    /// A flood that swift-nio-http2 calls a connection error ends the connection at once: the
    /// request fails well before its deadline (without the close, it would read the flood until
    /// the deadline), and the peer sees the client close.
    @Test(arguments: [
        HostilePeer.Attack.continuationFlood, .pingFlood(count: 20_000), .settingsFlood(count: 20_000),
    ])
    func aFloodClosesTheConnectionInsteadOfReadingToTheDeadline(_ attack: HostilePeer.Attack) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let peer = try await HostilePeer.start(attack, directory: directory)
        let transport = try HTTP2APNsTransport(caFile: peer.certificateFile, connectTimeout: Waiting.ceiling)
        var failure: (any Error)?
        do {
            _ = try await transport.send(try Self.request(), to: peer.baseURL, deadline: Waiting.ceiling)
        } catch {
            failure = error
        }
        let error = try #require(failure, "a flood is never an answer")
        if case APNsTransportError.deadline = error {
            Issue.record("the request ran to its deadline: the flooded connection was not closed")
        }
        #expect(try await Waiting.until { peer.closedByClient == 1 }, "the client closed the flooded connection")
        try await transport.shutdown()
        try await peer.shutdown()
    }
}

/// What an APNs that refuses streams costs a row (issue 66, item 4). Serialised with the other
/// worker suites: every worker claims every due row.
extension PushStackTests {
    @Suite struct RefusedStreamTests {
        /// A stream APNs never processed (above a GOAWAY's last stream id, or refused) is sent again
        /// without charge: with one attempt allowed, a charged refusal would kill the row.
        @Test func goawayAndRefusedStreamsAreSentAgainWithoutCharge() async throws {
            let world = try await PushWorld()
            let token = try await world.token()
            world.imitation.script(token: token, [.goaway, .refuse, .goaway, .refuse])
            let ids = try await world.enqueue(token: token)
            let running = try RunningWorker(world.configuration { $0.maxAttempts = 1 })
            #expect(try await world.drained())
            try await running.stop()
            let rows = try await world.rows(
                "SELECT delivered_at IS NOT NULL AS delivered, attempts, last_error FROM public.push_outbox WHERE id = \(ids[0])"
            )
            #expect(rows.first?["delivered"] == "true", "\(rows)")
            #expect(rows.first?["attempts"] == "1")
            #expect(world.imitation.requests.filter { $0.token == token }.count == 5)
            await world.close()
        }
    }
}
