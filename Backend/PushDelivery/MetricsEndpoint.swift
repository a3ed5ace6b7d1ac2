import Foundation
import Metrics
import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus
import Synchronization

/// Where `push-worker run` serves its metrics (`PUSH_METRICS_PORT`, `PUSH_METRICS_HOST`).
public struct MetricsEndpointSettings: Sendable, Equatable {
    public var host: String
    public var port: Int

    public init(host: String = "127.0.0.1", port: Int) {
        self.host = host
        self.port = port
    }

    /// The URL a scraper reads.
    public var url: String { "http://\(host.contains(":") ? "[\(host)]" : host):\(port)/metrics" }

    /// The timer buckets, in seconds (notifications-2.md, "Metrics").
    public static let timerBuckets: [Double] = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]

    /// Reads the settings from `environment`: `nil` without `PUSH_METRICS_PORT` (no endpoint).
    static func fromEnvironment(_ environment: [String: String]) throws(ConfigurationError) -> Self? {
        guard let text = environment["PUSH_METRICS_PORT"] else { return nil }
        guard let port = Int(text), (1...65_535).contains(port) else {
            throw ConfigurationError(variable: "PUSH_METRICS_PORT", problem: "must be a whole number in 1...65535")
        }
        let host = environment["PUSH_METRICS_HOST"].flatMap { $0.isEmpty ? nil : $0 } ?? "127.0.0.1"
        guard isLoopback(host) || environment["PUSH_METRICS_ALLOW_NON_LOOPBACK"] == "1" else {
            throw ConfigurationError(
                variable: "PUSH_METRICS_ALLOW_NON_LOOPBACK",
                problem:
                    "must be 1 to serve metrics on \(host) (PUSH_METRICS_HOST is not a loopback address: anyone who can reach it reads the worker's figures)"
            )
        }
        return Self(host: host, port: port)
    }

    /// `localhost`, `::1`, or an IPv4 address (four decimal octets) in 127.0.0.0/8; a name that
    /// merely starts with "127." is not.
    static func isLoopback(_ host: String) -> Bool {
        if DatabaseSettings.loopbackHosts.contains(host) { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets.first == "127"
            && octets.allSatisfy { $0.count <= 3 && $0.allSatisfy(\.isNumber) && UInt8($0) != nil }
    }
}

/// The worker's Prometheus endpoint: one `PrometheusCollectorRegistry` behind swift-metrics,
/// served on `GET /metrics` as `text/plain; version=0.0.4; charset=utf-8` (404 for other paths,
/// 405 for other methods), at most 16 connections at once.
///
/// Each request must arrive whole within ``requestDeadline`` of the connection opening or of the
/// previous answer, or the connection is closed: an absolute deadline, not an idle timer, so
/// clients that send a byte now and then cannot hold the 16 slots and lock scrapers out.
public final class MetricsEndpoint: Sendable {
    /// The registry every metric of this process is written to once ``bootstrap()`` ran.
    public let registry: PrometheusCollectorRegistry
    private let channel: Mutex<(any Channel)?> = Mutex(nil)
    public static let maxConnections = 16
    /// The most a request may take to arrive (5 s by default).
    public let requestDeadline: Duration

    public init(
        registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(), requestDeadline: Duration = .seconds(5)
    ) {
        self.registry = registry
        self.requestDeadline = requestDeadline
    }

    /// Makes swift-metrics write to ``registry`` (once per process), with the timer buckets of
    /// ``MetricsEndpointSettings/timerBuckets``.
    public func bootstrap() {
        MetricsSystem.bootstrap(factory())
        PushMetrics.announce()
    }

    /// The factory over ``registry``.
    public func factory() -> PrometheusMetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = MetricsEndpointSettings.timerBuckets.map {
            .milliseconds(Int64(($0 * 1000).rounded()))
        }
        return factory
    }

    /// Starts serving; returns the port bound (the one asked, or the system's choice for 0).
    @discardableResult
    public func start(_ settings: MetricsEndpointSettings) async throws -> Int {
        let registry = registry
        let deadline = TimeAmount.nanoseconds(
            Int64(requestDeadline.components.seconds) * 1_000_000_000
                + requestDeadline.components.attoseconds / 1_000_000_000)
        let open = Atomic<Int>(0)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                guard open.add(1, ordering: .relaxed).newValue <= Self.maxConnections else {
                    open.subtract(1, ordering: .relaxed)
                    return child.close()
                }
                child.closeFuture.whenComplete { _ in open.subtract(1, ordering: .relaxed) }
                return child.pipeline.configureHTTPServerPipeline(withErrorHandling: true).flatMapThrowing {
                    try child.pipeline.syncOperations.addHandler(RequestDeadline(deadline))
                    try child.pipeline.syncOperations.addHandler(MetricsHandler(registry: registry))
                }
            }
            .bind(host: settings.host, port: settings.port).get()
        self.channel.withLock { $0 = channel }
        return channel.localAddress?.port ?? settings.port
    }

    /// Stops serving.
    public func stop() async {
        let channel = self.channel.withLock { channel in
            defer { channel = nil }
            return channel
        }
        try? await channel?.close()
    }
}

/// Answers one HTTP/1.1 request at a time on a connection.
final class MetricsHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let registry: PrometheusCollectorRegistry
    private let request = Mutex<HTTPRequestHead?>(nil)

    init(registry: PrometheusCollectorRegistry) { self.registry = registry }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): request.withLock { $0 = head }
        case .body: break
        case .end:
            guard let head = request.withLock({ $0 }) else { return }
            let (status, type, body): (HTTPResponseStatus, String, [UInt8])
            if head.method != .GET {
                (status, type, body) = (.methodNotAllowed, "text/plain; charset=utf-8", Array("GET only\n".utf8))
            } else if head.uri.split(separator: "?", maxSplits: 1).first != "/metrics" {
                (status, type, body) = (.notFound, "text/plain; charset=utf-8", Array("not found: GET /metrics\n".utf8))
            } else {
                var buffer: [UInt8] = []
                registry.emit(into: &buffer)
                (status, type, body) = (.ok, "text/plain; version=0.0.4; charset=utf-8", buffer)
            }
            var headers = HTTPHeaders([("content-type", type), ("content-length", String(body.count))])
            if status == .methodNotAllowed { headers.add(name: "allow", value: "GET") }
            if !head.isKeepAlive { headers.add(name: "connection", value: "close") }
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))),
                promise: nil)
            context.write(
                wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
            let keepAlive = head.isKeepAlive
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                if !keepAlive { channel.close(promise: nil) }
            }
        }
    }
}

/// Closes the connection unless a whole request arrives within `deadline` of the connection
/// opening or of the previous answer's end. Bytes arriving do not move the deadline.
final class RequestDeadline: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    private let deadline: TimeAmount
    private var timer: Scheduled<Void>?

    init(_ deadline: TimeAmount) { self.deadline = deadline }

    func handlerAdded(context: ChannelHandlerContext) { arm(context) }

    func handlerRemoved(context: ChannelHandlerContext) { timer?.cancel() }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .end = unwrapInboundIn(data) {
            timer?.cancel()
            timer = nil
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let isEnd = if case .end = unwrapOutboundIn(data) { true } else { false }
        context.write(data, promise: promise)
        if isEnd { arm(context) }
    }

    private func arm(_ context: ChannelHandlerContext) {
        timer?.cancel()
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: deadline) { channel.close(promise: nil) }
    }
}
