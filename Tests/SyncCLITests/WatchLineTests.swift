import Foundation
import Testing

@testable import PostLoginSync
@testable import sync_cli

@Suite("A watch tick's line")
struct WatchLineTests {
    @Test("counts agree with their nouns: 1 request, 2 requests")
    func plurals() {
        var tick = WatchTick(number: 3, startedAt: Date(), action: .quiet)
        tick.requests = 1
        #expect(WatchRunner.line(tick).contains(": 1 request, 0 sealed"))
        tick.requests = 2
        #expect(WatchRunner.line(tick).contains(": 2 requests, 0 sealed"))
        #expect(counted(1, "secret") == "1 secret" && counted(0, "secret") == "0 secrets")
    }
}
