import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS
import Synchronization

/// One TLS + HTTP/2 connection to an APNs host.
final class APNsConnection: Sendable {
    let channel: any Channel
    private let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    private let retired = Flag()
    /// Set when the server sent GOAWAY: no new stream.
    private let goingAway: Flag

    private init(channel: any Channel, multiplexer: NIOHTTP2Handler.StreamMultiplexer, goingAway: Flag) {
        self.channel = channel
        self.multiplexer = multiplexer
        self.goingAway = goingAway
    }

    var isUsable: Bool { channel.isActive && !retired.isSet && !goingAway.isSet }

    func retire() { retired.set() }

    /// What the connection tolerates from the peer before HTTP/2 calls it a connection error
    /// (which `ConnectionWatcher` answers by closing it): swift-nio-http2's bounds, said here so
    /// they are ours. At most 200 PING, SETTINGS, PRIORITY, ALTSVC or ORIGIN frames in 30 s; at
    /// most 5 CONTINUATION frames after a HEADERS; one empty DATA frame in a row; a header list
    /// of at most 16 KiB (swift-nio-http2's default settings); at most 1,000 control frames (PING and SETTINGS acknowledgements)
    /// waiting to be written to a peer that does not read.
    static let http2Bounds: NIOHTTP2Handler.ConnectionConfiguration = {
        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
        configuration.controlFrameRateLimit.maximumCount = 200
        configuration.controlFrameRateLimit.windowLength = .seconds(30)
        configuration.maximumSequentialEmptyDataFrames = 1
        configuration.maximumBufferedControlFrames = 1000
        return configuration
    }()

    /// Connects, completes TLS (h2 by ALPN, the host named by the certificate) and starts HTTP/2,
    /// all within `limit` (the transport's connect timeout, or less when the request's deadline is
    /// nearer): a server that never finishes is closed then, and the failure says so.
    static func open(
        _ endpoint: Endpoint, sslContext: NIOSSLContext, group: any EventLoopGroup, within limit: Duration,
        from start: NIODeadline = .now()
    ) async throws -> APNsConnection {
        let bound = limit
        let timeout = TimeAmount.nanoseconds(
            max(1, bound.components.seconds * 1_000_000_000 + bound.components.attoseconds / 1_000_000_000))
        let isIPLiteral = APNsTrust.ipBytes(endpoint.host) != nil
        let goingAway = Flag()
        // One bound over the TCP connect, TLS and the first SETTINGS, counted from `start` (when
        // the transport decided to connect) and armed on the event loop as each channel is made:
        // no wait for a thread of the cooperative pool (one, on a machine pinned to one core)
        // stands between the bound and the close.
        let giveUpAt = start + timeout
        let closedAtBound = Flag()
        // The whole pipeline is built before the connection is active: the server's SETTINGS
        // arrive right after the handshake, and a handler added later would never see them.
        // Nothing is sent on a stream before the handshake's checks below have passed. The
        // bootstrap may try several addresses (Happy Eyeballs), each with its own pipeline: the
        // handshake and the multiplexer are read from the channel that won.
        let connecting = ClientBootstrap(group: group)
            .connectTimeout(timeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let closer = channel.eventLoop.scheduleTask(deadline: giveUpAt) {
                        closedAtBound.set()
                        channel.close(promise: nil)
                    }
                    channel.closeFuture.whenComplete { _ in closer.cancel() }
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(ConnectBound(closer))
                    try sync.addHandler(
                        NIOSSLClientHandler(context: sslContext, serverHostname: isIPLiteral ? nil : endpoint.host))
                    try sync.addHandler(HandshakeWatcher(done: channel.eventLoop.makePromise(of: String?.self)))
                    try sync.addHandler(GoAwaySentCloser())
                    _ = try sync.configureHTTP2Pipeline(
                        mode: .client, connectionConfiguration: Self.http2Bounds, streamConfiguration: .init()
                    ) { stream in stream.close() }
                    // The first SETTINGS ends the bound on the loop itself: a connection up in
                    // time is not closed because its opener waited for a thread.
                    let settings = channel.eventLoop.makePromise(of: Void.self)
                    settings.futureResult.whenSuccess { closer.cancel() }
                    try sync.addHandler(ConnectionWatcher(settings: settings) { goingAway.set() })
                }
            }
            .connect(host: endpoint.host, port: endpoint.port)
        let channel: any Channel
        do {
            channel = try await connecting.get()
        } catch ChannelError.connectTimeout(_) {
            // The TCP connect's own timeout is the same bound.
            throw APNsTransportError.connectTimeout(bound)
        } catch {
            if closedAtBound.isSet { throw APNsTransportError.connectTimeout(bound) }
            throw error
        }
        do {
            // A server that accepts the connection and never finishes TLS is closed at the bound.
            let (done, settings, multiplexer, closer) = try await channel.eventLoop.submit {
                let sync = channel.pipeline.syncOperations
                let done = try sync.handler(type: HandshakeWatcher.self).done.futureResult
                let settings = try sync.handler(type: ConnectionWatcher.self).settings.futureResult
                return (
                    done, settings, try sync.handler(type: NIOHTTP2Handler.self).syncMultiplexer(),
                    try sync.handler(type: ConnectBound.self).closer
                )
            }.get()
            defer { closer.cancel() }
            guard try await done.get() == "h2" else { throw APNsTransportError.notHTTP2 }
            guard let leaf = try await channel.nioSSL_peerCertificate().get(),
                APNsTrust.certificate(leaf, names: endpoint.host)
            else { throw APNsTransportError.certificateName(endpoint.host) }
            // The server's first SETTINGS (APNs: one stream until a provider token is accepted)
            // before any stream: a burst opened earlier would ignore the limit.
            try await settings.get()
            return APNsConnection(channel: channel, multiplexer: multiplexer, goingAway: goingAway)
        } catch {
            try? await channel.close()
            // The bound's close explains what failed after it, not a refusal of the transport's own.
            if closedAtBound.isSet, !(error is APNsTransportError) { throw APNsTransportError.connectTimeout(bound) }
            throw error
        }
    }

    /// One request on a new stream and its whole answer. Cancelling resets the stream.
    func exchange(_ request: APNsRequest, endpoint: Endpoint) async throws -> APNsResponse {
        let answer = channel.eventLoop.makePromise(of: APNsResponse.self)
        let stream: any Channel
        do {
            stream = try await multiplexer.createStreamChannel { stream in
                stream.eventLoop.makeCompletedFuture {
                    try stream.pipeline.syncOperations.addHandler(AnswerReader(answer: answer))
                }
            }.get()
        } catch {
            answer.fail(error)
            throw error
        }
        // A deadline or a cancellation that came while the stream was being opened: nothing is
        // written, and the stream is closed before it carries a frame.
        if Task.isCancelled {
            stream.close(promise: nil)
            throw CancellationError()
        }
        var headers = HPACKHeaders([
            (":method", "POST"), (":scheme", "https"), (":authority", endpoint.authority), (":path", request.path),
        ])
        for header in request.headers { headers.add(name: header.name.lowercased(), value: header.value) }
        headers.add(name: "content-length", value: String(request.body.count))
        stream.write(HTTP2Frame.FramePayload.headers(.init(headers: headers)), promise: nil)
        let body = stream.allocator.buffer(bytes: request.body)
        stream.writeAndFlush(
            HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(body), endStream: true)), promise: nil)
        let response = try await withTaskCancellationHandler {
            try await answer.futureResult.get()
        } onCancel: {
            stream.close(promise: nil)
        }
        if (300..<400).contains(response.status) { throw APNsTransportError.redirect(response.status) }
        return response
    }
}

/// Holds the connection's bound (the close scheduled at its deadline) where the opener finds it
/// on the channel that won, to cancel it once the connection is up.
private final class ConnectBound: ChannelInboundHandler {
    typealias InboundIn = NIOAny
    let closer: Scheduled<Void>

    init(_ closer: Scheduled<Void>) { self.closer = closer }
}

/// Completes `done` with the protocol ALPN chose once TLS is up, or fails it if the connection
/// ends first.
private final class HandshakeWatcher: ChannelInboundHandler {
    typealias InboundIn = NIOAny
    let done: EventLoopPromise<String?>
    private var completed = false

    init(done: EventLoopPromise<String?>) { self.done = done }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted(let negotiated) = event { complete(.success(negotiated)) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        complete(.failure(error))
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        complete(.failure(ChannelError.ioOnClosedChannel))
        context.fireChannelInactive()
    }

    /// A connection attempt that lost (or never became active) ends here, its promise failed.
    func handlerRemoved(context: ChannelHandlerContext) {
        complete(.failure(ChannelError.ioOnClosedChannel))
    }

    private func complete(_ result: Result<String?, any Error>) {
        guard !completed else { return }
        completed = true
        done.completeWith(result)
    }
}

/// A flag set once, read from any thread.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set() { value.store(true, ordering: .releasing) }
}

/// A value handed from one thread to another.
final class Slot<Value: Sendable>: Sendable {
    private let storage = Mutex<Value?>(nil)
    var value: Value? {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
}

/// Closes the connection once this side has sent GOAWAY. swift-nio-http2 answers a connection
/// error (a protocol violation, or a flood past `APNsConnection.http2Bounds`) with GOAWAY but
/// leaves closing to the application, and a connection left open went on reading whatever the
/// peer sent until the request's deadline. The worker never sends GOAWAY otherwise, and a stream
/// error (one bad answer, a stream opened after the server's GOAWAY) sends none, so only a
/// connection error closes the connection, with every request on it.
///
/// It sits between TLS and HTTP/2 and reads the frame headers of what HTTP/2 writes: the client
/// preface (24 bytes), then frames of a 9-byte header (length, type, flags, stream) and a payload.
private final class GoAwaySentCloser: ChannelOutboundHandler {
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    private var prefaceLeft = 24
    private var header: [UInt8] = []
    private var payloadLeft = 0
    private var sentGoAway = false

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if !sentGoAway { scan(unwrapOutboundIn(data).readableBytesView) }
        context.write(data, promise: promise)
    }

    func flush(context: ChannelHandlerContext) {
        context.flush()
        if sentGoAway { context.close(promise: nil) }
    }

    private func scan(_ bytes: ByteBufferView) {
        var index = bytes.startIndex
        while index < bytes.endIndex, !sentGoAway {
            if prefaceLeft > 0 {
                let step = min(prefaceLeft, bytes.endIndex - index)
                prefaceLeft -= step
                index += step
            } else if payloadLeft > 0 {
                let step = min(payloadLeft, bytes.endIndex - index)
                payloadLeft -= step
                index += step
            } else {
                header.append(bytes[index])
                index += 1
                guard header.count == 9 else { continue }
                payloadLeft = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
                sentGoAway = header[3] == 0x7
                header.removeAll(keepingCapacity: true)
            }
        }
    }
}

/// Notes a GOAWAY from the server, and completes `settings` at its first SETTINGS frame (the
/// stream limit a request must respect is known from then on).
private final class ConnectionWatcher: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    let received: @Sendable () -> Void
    let settings: EventLoopPromise<Void>
    private var settled = false

    init(settings: EventLoopPromise<Void>, _ received: @escaping @Sendable () -> Void) {
        self.settings = settings
        self.received = received
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data).payload {
        case .goAway: received()
        case .settings(.settings):
            if !settled {
                settled = true
                settings.succeed()
            }
        default: break
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !settled {
            settled = true
            settings.fail(error)
        }
        context.fireErrorCaught(error)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if !settled {
            settled = true
            settings.fail(ChannelError.ioOnClosedChannel)
        }
    }
}

/// Reads one stream's answer: the status, and at most 4 KiB of body (a larger body is not APNs'
/// and its reason is ignored; past 64 KiB the stream is reset). A stream that ends any other way (reset, closed, cut off) fails the
/// answer: a transport fault, never a status alone.
private final class AnswerReader: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    private let answer: EventLoopPromise<APNsResponse>
    private var status: Int?
    private var body: [UInt8] = []
    private var oversized = false
    private var received = 0
    private var completed = false
    /// The most body read from one answer before its stream is reset: 64 KiB.
    static let maximumRead = 65_536

    init(answer: EventLoopPromise<APNsResponse>) { self.answer = answer }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            if status == nil {
                guard let code = frame.headers.first(name: ":status").flatMap(Int.init) else {
                    return fail(context, APNsTransportError.malformedAnswer)
                }
                // 1xx heads are informational; the answer's head follows.
                if !(100..<200).contains(code) { status = code }
            }
            if frame.endStream { finish(context) }
        case .data(let frame):
            if case .byteBuffer(let buffer) = frame.data {
                received += buffer.readableBytes
                // An answer many times APNs' largest is not an answer: the stream is reset
                // rather than read to its deadline.
                guard received <= Self.maximumRead else { return fail(context, APNsTransportError.malformedAnswer) }
                if !oversized {
                    body += buffer.readableBytesView
                    if body.count > APNsRequest.maximumPayload {
                        oversized = true
                        body = []
                    }
                }
            }
            if frame.endStream { finish(context) }
        case .rstStream(let code):
            complete(
                .failure(
                    code == .refusedStream
                        ? APNsTransportError.notProcessed : APNsTransportError.streamReset(code.networkCode)))
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        complete(.failure(ChannelError.ioOnClosedChannel))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A stream above a GOAWAY's last stream id was never processed (RFC 9113 6.8).
        // swift-nio-http2 closes such streams with the code CANCEL (its documentation says
        // REFUSED_STREAM; both are read so). A RST_STREAM from the server arrives as a frame
        // first (`channelRead`), so a closure reported here without one is the GOAWAY's.
        if let closed = error as? NIOHTTP2Errors.StreamClosed,
            closed.errorCode == .refusedStream || closed.errorCode == .cancel
        {
            return fail(context, APNsTransportError.notProcessed)
        }
        // A stream opened after the server's GOAWAY never left this side.
        if error is NIOHTTP2Errors.CreatedStreamAfterGoaway
            || (error as? NIOHTTP2Errors.StreamError)?.baseError is NIOHTTP2Errors.CreatedStreamAfterGoaway
        {
            return fail(context, APNsTransportError.notProcessed)
        }
        fail(context, error)
    }

    /// A stream closed before it ever became active ends here, its answer failed.
    func handlerRemoved(context: ChannelHandlerContext) {
        complete(.failure(ChannelError.ioOnClosedChannel))
    }

    /// The answer ended: the stream is closed on both sides, and HTTP/2 closes its channel. (A
    /// close from here would reset a stream that is already done, and a server counts resets: past
    /// its limit it ends the connection with ENHANCE_YOUR_CALM.)
    private func finish(_ context: ChannelHandlerContext) {
        guard let status else { return fail(context, APNsTransportError.malformedAnswer) }
        complete(.success(APNsResponse(status: status, body: body)))
    }

    private func fail(_ context: ChannelHandlerContext, _ error: any Error) {
        complete(.failure(error))
        context.close(promise: nil)
    }

    private func complete(_ result: Result<APNsResponse, any Error>) {
        guard !completed else { return }
        completed = true
        answer.completeWith(result)
    }
}
