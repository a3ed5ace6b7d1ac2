import Foundation
import RemoteStore
import Synchronization
import Testing

@testable import PostLoginSync

/// The asker's `onDeliveries` (notifications-2.md, "Nothing silently lost"): where the alert went
/// is told as soon as the request is recorded, from the request's own answer, not at the first
/// read of `alert_deliveries` two seconds later.
@Suite("Where an alert went: the first report")
struct DeliveryWatcherTests {
    @Test("the request's own answer is reported at once, with no read of alert_deliveries")
    func startReportsTheAnswer() async throws {
        let w = try await ApprovalWorld.make(.embedded)
        // A remote nothing can be read from (a closed port): a report can only come from the
        // answer handed to start(with:), and an hour's interval leaves no poll to make one.
        let nowhere = PostgRESTRemoteStore(
            configuration: PostgRESTConfiguration(
                projectURL: URL(string: "http://127.0.0.1:9")!, apiKey: "anon", userID: w.world.user
            ) { _ in "token" })
        let center = ApprovalCenter(local: w.desktop.store, remote: nowhere)
        let reports = Mutex<[AlertDeliveries]>([])
        let watcher = DeliveryWatcher(center: center, alertID: UUID(), interval: .seconds(3600)) { deliveries in
            reports.withLock { $0.append(deliveries) }
        }
        let phone = AlertDelivery(deviceID: UUID(), deviceName: "phone", outcome: .queued)
        await watcher.start(with: [phone])
        let first = try #require(reports.withLock { $0.first }, "nothing reported from the request's answer")
        #expect(first.summary == "queued for phone" && !first.isFinal)
        // Within the interval nothing is read again.
        await watcher.poll()
        #expect(reports.withLock { $0.count } == 1)
    }
}
