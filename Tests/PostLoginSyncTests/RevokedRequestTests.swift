import Foundation
import RemoteStore
import SyncModel
import SyncTestSupport
import Testing

@testable import PostLoginSync

/// A secret request from a device the trust log revoked can never be served: the desktop settles
/// it once (issue 69 item 15), instead of refusing it again at every watch start.
@Suite("A revoked device's secret request")
struct RevokedRequestTests {
    @Test(
        "is closed by the next push and not refused again by a later watch's first tick",
        arguments: Backend.variants)
    func settledOnce(backend: Backend, deployed: Bool) async throws {
        let w = try await LogWorld.make(backend, deployed)
        let session = try #require(try await w.root.store.sessions().first)
        // The phone asks while it may, then is revoked (its credential ends: it asks no more).
        let asked = try await w.world.remote(for: w.phone).insertSecretRequests([
            SecretRequestRow(userID: w.world.user, sessionID: session.id, requesterDeviceID: w.phone.identity.id)
        ])
        #expect(asked.accepted == 1)
        try await w.manager(w.root).revoke([w.phone.identity.id])
        let desktop = try w.world.remote(for: w.root)
        _ = try await w.root.engine.push()
        #expect(try await desktop.listOpenSecretRequests().isEmpty, "the revoked device's request is still open")
        // A watch started later finds nothing to refuse.
        var ticks = w.root.engine.watch(WatchTests.fast).makeAsyncIterator()
        let first = try #require(await ticks.next())
        #expect(first.action == .full)
        #expect(first.report?.secretRequests == nil, "\(String(describing: first.report?.secretRequests))")
    }
}
