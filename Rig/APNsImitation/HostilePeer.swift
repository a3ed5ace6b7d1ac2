import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// A hostile HTTP/2 server for the worker's transport: TLS with ALPN h2 and the imitation's kind
/// of certificate, then raw frames written by hand (swift-nio-http2 would never send them), for
/// the floods a peer can use against a client (docs/push-worker.md, "What a hostile APNs peer
/// can do"). Each connection gets the server's SETTINGS at once; once the client's first request
/// has arrived, the attack begins.
public final class HostilePeer: Sendable {
    public enum Attack: Sendable, Equatable {
        /// A HEADERS frame for the client's stream without END_HEADERS, then CONTINUATION
        /// frames, each 1 KiB of header block, without end, as fast as the client reads.
        case continuationFlood
        /// `count` PING frames, then nothing.
        case pingFlood(count: Int)
        /// `count` empty SETTINGS frames, then nothing.
        case settingsFlood(count: Int)
    }

    public let port: Int
    /// The certificate to trust (PEM).
    public let certificateFile: String
    private let channel: any Channel
    private let group: MultiThreadedEventLoopGroup
    private let stats: NIOLockedValueBox<Stats>

    struct Stats {
        var connections = 0
        var closedByClient = 0
        var bytesWritten = 0
    }

    /// Connections accepted.
    public var connections: Int { stats.withLockedValue { $0.connections } }
    /// Connections the client closed (while the attack went on).
    public var closedByClient: Int { stats.withLockedValue { $0.closedByClient } }
    /// Bytes of attack written, over every connection.
    public var bytesWritten: Int { stats.withLockedValue { $0.bytesWritten } }

    public var baseURL: URL { URL(string: "https://127.0.0.1:\(port)")! }

    /// Starts the server on 127.0.0.1 with a new certificate written under `directory`.
    public static func start(_ attack: Attack, directory: URL) async throws -> HostilePeer {
        let certificate = directory.appendingPathComponent("hostile-peer-cert.pem").path
        let key = directory.appendingPathComponent("hostile-peer-key.pem").path
        try await APNsImitation.makeCertificate(certificate: certificate, key: key, names: "DNS:localhost,IP:127.0.0.1")
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let stats = NIOLockedValueBox(Stats())
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    stats.withLockedValue { $0.connections += 1 }
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try channel.pipeline.syncOperations.addHandler(RawAttacker(attack: attack, stats: stats))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return HostilePeer(
            port: channel.localAddress!.port!, certificateFile: certificate, channel: channel, group: group,
            stats: stats)
    }

    private init(
        port: Int, certificateFile: String, channel: any Channel, group: MultiThreadedEventLoopGroup,
        stats: NIOLockedValueBox<Stats>
    ) {
        self.port = port
        self.certificateFile = certificateFile
        self.channel = channel
        self.group = group
        self.stats = stats
    }

    public func shutdown() async throws {
        try await channel.close()
        try await group.shutdownGracefully()
    }
}

/// Writes frames by hand: the 9-byte frame header (RFC 9113 4.1) and a payload.
private final class RawAttacker: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let attack: HostilePeer.Attack
    let stats: NIOLockedValueBox<HostilePeer.Stats>
    private var received = 0
    private var started = false
    private var attacking = false

    init(attack: HostilePeer.Attack, stats: NIOLockedValueBox<HostilePeer.Stats>) {
        self.attack = attack
        self.stats = stats
    }

    static func frame(type: UInt8, flags: UInt8, stream: UInt32, payload: [UInt8]) -> [UInt8] {
        let length = payload.count
        return [UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, flags]
            + [UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF)]
            + payload
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received += unwrapInboundIn(data).readableBytes
        if !started {
            // The client's preface came with TLS: the server's SETTINGS (empty) and its ack.
            started = true
            write(context, Self.frame(type: 0x4, flags: 0, stream: 0, payload: []))
            write(context, Self.frame(type: 0x4, flags: 0x1, stream: 0, payload: []))
            context.flush()
        }
        // The preface (24 bytes), SETTINGS, WINDOW_UPDATE, then the request's HEADERS: anything
        // past 100 bytes is the request.
        if received > 100, !attacking {
            attacking = true
            begin(context)
        }
    }

    private func begin(_ context: ChannelHandlerContext) {
        switch attack {
        case .continuationFlood:
            // HEADERS on stream 1 with ":status: 200" (HPACK static index 8) and no END_HEADERS.
            write(context, Self.frame(type: 0x1, flags: 0, stream: 1, payload: [0x88]))
            context.flush()
            continueFlood(context)
        case .pingFlood(let count):
            for i in 0..<count {
                write(context, Self.frame(type: 0x6, flags: 0, stream: 0, payload: Self.opaque(i)))
            }
            context.flush()
        case .settingsFlood(let count):
            for _ in 0..<count { write(context, Self.frame(type: 0x4, flags: 0, stream: 0, payload: [])) }
            context.flush()
        }
    }

    static func opaque(_ i: Int) -> [UInt8] { (0..<8).map { UInt8(i >> ($0 * 8) & 0xFF) } }

    /// CONTINUATION frames of literal headers (never indexed, a new 1,000-byte name each time),
    /// 64 at a time, again each time the last batch is written, until the client closes.
    private func continueFlood(_ context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        var batch: [UInt8] = []
        for _ in 0..<64 {
            var block: [UInt8] = [0x10, 0x7F, 0xE9, 0x06] // literal never indexed, name length 1,000
            block += [UInt8](repeating: 0x61, count: 1000)
            block += [0x01, 0x62]
            batch += Self.frame(type: 0x9, flags: 0, stream: 1, payload: block)
        }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let written = context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: batch)))
        stats.withLockedValue { $0.bytesWritten += batch.count }
        // The next batch from the event loop, not from inside the write's completion (TLS is
        // still unbuffering then).
        written.whenSuccess { bound.value.1.eventLoop.execute { bound.value.0.continueFlood(bound.value.1) } }
    }

    private func write(_ context: ChannelHandlerContext, _ bytes: [UInt8]) {
        stats.withLockedValue { $0.bytesWritten += bytes.count }
        context.write(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if attacking { stats.withLockedValue { $0.closedByClient += 1 } }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
