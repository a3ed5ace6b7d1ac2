import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// What the proxy does to one request.
public enum Fault: Sendable, Hashable, CustomStringConvertible {
    /// Forwarded and answered as the server answered.
    case pass
    /// Forwarded after a delay.
    case delay(milliseconds: Int)
    /// The connection is reset before anything is forwarded: the server never sees the request.
    case resetBeforeForwarding
    /// Forwarded (the server applied it); the answer is cut after `bytes` bytes by a reset.
    case resetAfter(bytes: Int)
    /// Forwarded; the answer's headers arrive intact, half its body, then the connection closes.
    case truncateBody
    /// Answered with `status` (502, 503) without forwarding, as a gateway whose upstream is down.
    case status(Int)
    /// Forwarded (the server applied it), then answered with `status` instead of its answer.
    case statusAfterForwarding(Int)
    /// Forwarded; nothing comes back for ``FaultProxy/stallDuration``, past the client's timeout.
    case stall

    public var description: String {
        switch self {
        case .pass: "pass"
        case let .delay(milliseconds): "delay \(milliseconds) ms"
        case .resetBeforeForwarding: "reset before forwarding"
        case let .resetAfter(bytes): "reset after \(bytes) bytes"
        case .truncateBody: "truncated body"
        case let .status(status): "\(status) without forwarding"
        case let .statusAfterForwarding(status): "\(status) after forwarding"
        case .stall: "stall"
        }
    }
}

/// A reproducible stream of faults: SplitMix64 from a seed, so a failing round can be replayed.
public struct SeededFaults: Sendable {
    var state: UInt64

    public init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The next fault: about a third of requests misbehave, each kind about equally often,
    /// stalls more rarely (each costs the client a whole timeout).
    public mutating func fault() -> Fault {
        let roll = next() % 1000
        switch roll {
        case 0..<650: return .pass
        case 650..<720: return .delay(milliseconds: Int(next() % 200))
        case 720..<780: return .resetBeforeForwarding
        case 780..<840: return .resetAfter(bytes: Int(next() % 400))
        case 840..<890: return .truncateBody
        case 890..<940: return .status(next() % 2 == 0 ? 502 : 503)
        case 940..<990: return .statusAfterForwarding(next() % 2 == 0 ? 502 : 503)
        default: return .stall
        }
    }
}

/// A TCP proxy on 127.0.0.1, on SwiftNIO, between the client and an HTTP server, that injects
/// faults request by request: delays, resets before or after forwarding, truncated bodies,
/// 502/503 answers, stalls past the client's timeout.
///
/// Each client connection carries one request (the proxy forwards it with `Connection: close`
/// and closes after answering), so every request gets its own fault and none can hide behind a
/// pooled connection.
public final class FaultProxy: Sendable {
    /// The port to point the client at.
    public let port: Int
    /// How long a ``Fault/stall`` holds the connection before closing it.
    public let stallDuration: Duration
    let group: MultiThreadedEventLoopGroup
    let server: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>
    let accepting: Task<Void, Never>
    let shared: Shared

    struct State {
        var forced: Fault?
        /// A fault for the requests whose request line contains the text, before any other rule,
        /// and the fault every request gets once one of those came (`then`).
        var targeted: (text: String, fault: Fault, then: Fault?)?
        var faults: SeededFaults?
        var injected: [Fault: Int] = [:]
        var requests = 0
    }

    /// The fault stream and tally, shared by every connection's task.
    final class Shared: Sendable {
        let state: Mutex<State>
        init(_ state: State) { self.state = Mutex(state) }
    }

    /// Starts a proxy to `upstreamHost:upstreamPort`.
    ///
    /// - Parameters:
    ///   - seed: The seed of the fault stream; `nil` forwards everything untouched until
    ///     ``setFaults(seed:)``.
    ///   - stallDuration: How long a stall lasts; longer than the client's request timeout.
    public init(
        upstreamHost: String, upstreamPort: Int, seed: UInt64?, stallDuration: Duration = .seconds(2)
    ) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        self.group = group
        self.server = server
        self.port = server.channel.localAddress?.port ?? 0
        self.stallDuration = stallDuration
        let shared = Shared(State(faults: seed.map(SeededFaults.init(seed:))))
        self.shared = shared
        accepting = Task {
            await withDiscardingTaskGroup { tasks in
                try? await server.executeThenClose { inbound in
                    for try await connection in inbound {
                        tasks.addTask {
                            await Self.serve(
                                connection, upstreamHost: upstreamHost, upstreamPort: upstreamPort, group: group,
                                stallDuration: stallDuration, shared: shared)
                        }
                    }
                }
            }
        }
    }

    /// The proxy's URL with `path` (for a client's project URL).
    public func url(path: String = "") -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    /// Starts a new fault stream from `seed`, or forwards everything untouched (`nil`).
    public func setFaults(seed: UInt64?) {
        shared.state.withLock { $0.faults = seed.map(SeededFaults.init(seed:)) }
    }

    /// Gives every request `fault` (the seeded stream, if any, waits), or goes back to the stream
    /// (`nil`).
    public func force(_ fault: Fault?) {
        shared.state.withLock { $0.forced = fault }
    }

    /// Gives `fault` to every request whose request line (method, path and query) contains
    /// `text`, every other request going as before until the first of those, and from then on
    /// getting `then` when given; `nil` stops.
    public func force(_ fault: Fault?, onRequestsContaining text: String, then: Fault? = nil) {
        shared.state.withLock { $0.targeted = fault.map { (text, $0, then) } }
    }

    /// How many requests came through, and each fault injected so far.
    public var tally: (requests: Int, faults: [Fault: Int]) {
        shared.state.withLock { ($0.requests, $0.injected) }
    }

    /// Stops accepting, waits for open connections to end, and stops the event loop.
    public func shutdown() async {
        try? await server.channel.close()
        await accepting.value
        try? await group.shutdownGracefully()
    }

    // MARK: - One connection

    static func serve(
        _ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>, upstreamHost: String, upstreamPort: Int,
        group: MultiThreadedEventLoopGroup, stallDuration: Duration, shared: Shared
    ) async {
        try? await connection.executeThenClose { inbound, outbound in
            var received: [UInt8] = []
            var iterator = inbound.makeAsyncIterator()
            var request: [UInt8]?
            while request == nil {
                request = Self.completeRequest(received)
                if request != nil { break }
                guard var chunk = try await iterator.next() else { return }
                received += chunk.readBytes(length: chunk.readableBytes) ?? []
            }
            let line = String(decoding: (request ?? []).prefix { $0 != 0x0D && $0 != 0x0A }, as: UTF8.self)
            let fault = shared.state.withLock { state -> Fault in
                state.requests += 1
                let targeted = state.targeted.flatMap { line.contains($0.text) ? $0.fault : nil }
                if targeted != nil, let then = state.targeted?.then { state.forced = then }
                let fault = targeted ?? state.forced ?? state.faults?.fault() ?? .pass
                if fault != .pass { state.injected[fault.kind, default: 0] += 1 }
                return fault
            }
            func reset() async {
                // SO_LINGER 0: the close sends RST instead of FIN.
                _ = try? await (connection.channel as? SocketOptionProvider)?.setSoLinger(
                    linger(l_onoff: 1, l_linger: 0)
                ).get()
            }
            func status(_ code: Int) async throws {
                let body = "<html><body>\(code) proxy fault</body></html>"
                let head =
                    "HTTP/1.1 \(code) \(code == 502 ? "Bad Gateway" : "Service Unavailable")\r\ncontent-type: text/html\r\n"
                    + "content-length: \(body.utf8.count)\r\nconnection: close\r\n\r\n"
                try await outbound.write(ByteBuffer(string: head + body))
            }
            switch fault {
            case .resetBeforeForwarding:
                await reset()
                return
            case let .status(code):
                try await status(code)
                return
            case let .delay(milliseconds):
                try await Task.sleep(for: .milliseconds(milliseconds))
            default:
                break
            }
            let response = try await Self.forward(
                Self.closing(request!), host: upstreamHost, port: upstreamPort, group: group)
            switch fault {
            case let .resetAfter(bytes):
                if bytes > 0 {
                    try await outbound.write(ByteBuffer(bytes: response.prefix(min(bytes, max(response.count - 1, 0)))))
                }
                await reset()
            case .truncateBody:
                let split = Self.headerEnd(response) ?? response.count
                let body = response.count - split
                try await outbound.write(ByteBuffer(bytes: response.prefix(split + body / 2)))
                if body == 0 { await reset() }
            case let .statusAfterForwarding(code):
                try await status(code)
            case .stall:
                try await Task.sleep(for: stallDuration)
            default:
                try await outbound.write(ByteBuffer(bytes: response))
            }
        }
    }

    /// Sends `request` to the server on a connection of its own and returns the whole answer:
    /// up to its `Content-Length`, or to the server's close.
    static func forward(
        _ request: [UInt8], host: String, port: Int, group: MultiThreadedEventLoopGroup
    ) async throws -> [UInt8] {
        let upstream = try await ClientBootstrap(group: group).connect(host: host, port: port) { channel in
            channel.eventLoop.makeCompletedFuture {
                try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
            }
        }
        return try await upstream.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(bytes: request))
            var response: [UInt8] = []
            for try await var chunk in inbound {
                response += chunk.readBytes(length: chunk.readableBytes) ?? []
                if let end = headerEnd(response), let length = contentLength(response[..<end]),
                    response.count >= end + length
                {
                    break
                }
            }
            return response
        }
    }

    /// The bytes of one complete request at the start of `bytes` (headers and a
    /// `Content-Length` body), or `nil` while more must be read.
    static func completeRequest(_ bytes: [UInt8]) -> [UInt8]? {
        guard let end = headerEnd(bytes) else { return nil }
        let length = contentLength(bytes[..<end]) ?? 0
        return bytes.count >= end + length ? Array(bytes[..<(end + length)]) : nil
    }

    /// The request with `Connection: close` instead of any connection header it had.
    static func closing(_ request: [UInt8]) -> [UInt8] {
        guard let end = headerEnd(request) else { return request }
        let head = String(decoding: request[..<(end - 4)], as: UTF8.self)
        let lines = head.components(separatedBy: "\r\n").filter { !$0.lowercased().hasPrefix("connection:") }
        return Array((lines.joined(separator: "\r\n") + "\r\nConnection: close\r\n\r\n").utf8) + request[end...]
    }

    /// The index just past the blank line that ends the headers.
    static func headerEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index + 4
        }
        return nil
    }

    static func contentLength(_ head: ArraySlice<UInt8>) -> Int? {
        for line in String(decoding: head, as: UTF8.self).components(separatedBy: "\r\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "content-length" {
                return Int(parts[1].trimmingCharacters(in: .whitespaces))
            }
        }
        return nil
    }
}

extension Fault {
    /// The fault without its parameter, for counting.
    var kind: Fault {
        switch self {
        case .delay: .delay(milliseconds: 0)
        case .resetAfter: .resetAfter(bytes: 0)
        case .status: .status(0)
        case .statusAfterForwarding: .statusAfterForwarding(0)
        default: self
        }
    }
}
