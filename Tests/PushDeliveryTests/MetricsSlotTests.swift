import Foundation
import NIOCore
import NIOPosix
import PushDelivery
import TestStack
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `/metrics` keeps its 16 connection slots for scrapers (issue 66, item 7): a client that
/// sends a byte now and then holds a slot only until the request deadline.
@Suite struct MetricsSlotTests {
    @Test func drippingClientsLoseTheirSlotsAtTheRequestDeadline() async throws {
        let endpoint = MetricsEndpoint(requestDeadline: .seconds(1))
        let port = try await endpoint.start(MetricsEndpointSettings(host: "127.0.0.1", port: 0))
        // Every slot taken by a client that sends one byte of a request every 200 ms.
        var drippers: [any Channel] = []
        for _ in 0..<MetricsEndpoint.maxConnections {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: "127.0.0.1", port: port).get()
            channel.eventLoop.scheduleRepeatedTask(initialDelay: .zero, delay: .milliseconds(200)) { task in
                guard channel.isActive else { return task.cancel() }
                channel.writeAndFlush(channel.allocator.buffer(string: "G"), promise: nil)
            }
            drippers.append(channel)
        }
        let url = URL(string: "http://127.0.0.1:\(port)/metrics")!
        let scraped = try await Waiting.until(every: .milliseconds(100)) {
            guard let (_, response) = try? await URLSession.shared.data(from: url) else { return false }
            return (response as? HTTPURLResponse)?.statusCode == 200
        }
        #expect(scraped, "a scraper got a slot while 16 clients dripped bytes")
        let all = drippers
        #expect(try await Waiting.until { all.allSatisfy { !$0.isActive } }, "every dripping connection was closed")
        for channel in drippers { try? await channel.close() }
        await endpoint.stop()
    }
}
