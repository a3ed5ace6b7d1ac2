import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// The transport on SwiftNIO's HTTP/2: one TLS connection per APNs host, requests multiplexed
/// as streams on it, within the stream limit the server announces (one until a provider token is
/// accepted, then what APNs raises it to: new streams wait for room), no redirects, at most 4 KiB
/// of answer read.
///
/// - **One deadline over the whole exchange**: connecting, the answer's head and its body. A
///   request that misses it (no answer, or a body that never ends or drips) is a transport fault;
///   its stream is reset, and its connection is retired: the next requests go out on a new one,
///   and the old one is closed once the requests still on it have had their own deadline.
/// - **TLS**: the roots of ``APNsTrust`` (the production root, or the configured CA file alone),
///   and the certificate must name the host by a DNS name (an IP literal host: by that address).
/// - A connection that received GOAWAY, or closed, takes no new request.
public final class HTTP2APNsTransport: APNsTransport {
    private let sslContext: NIOSSLContext
    private let connectTimeout: Duration
    private let group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton

    private struct State {
        var connections: [Endpoint: Task<APNsConnection, any Error>] = [:]
        var isShutDown = false
    }
    private let state = Mutex(State())

    /// - Parameter caFile: the roots to trust instead of the production one (PEM): a test
    ///   server's certificate.
    ///   - connectTimeout: the most a new connection's TCP connect, TLS handshake and first
    ///     SETTINGS take together (within the request's deadline too).
    public init(caFile: String? = nil, connectTimeout: Duration = .seconds(5)) throws {
        sslContext = try APNsTrust.context(caFile: caFile)
        self.connectTimeout = connectTimeout
    }

    public func send(_ request: APNsRequest, to baseURL: URL, deadline: Duration) async throws -> APNsResponse {
        let endpoint = try Endpoint(baseURL)
        let end = ContinuousClock.now + deadline
        let used = Slot<APNsConnection>()
        let running = Slot<Task<Void, Never>>()
        let outcome = Once<APNsResponse>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                outcome.set(continuation)
                // Already cancelled (the worker stopping, the circuit opening): nothing is sent.
                guard !outcome.isDone else { return }
                let work = Task {
                    do {
                        let connection = try await self.connection(to: endpoint, before: end, grace: deadline)
                        used.value = connection
                        outcome.resume(with: .success(try await connection.exchange(request, endpoint: endpoint)))
                    } catch {
                        outcome.resume(with: .failure(error))
                    }
                }
                running.value = work
                if outcome.isDone { work.cancel() }
                // The deadline on an event loop: a cancelled NIO timer leaves its heap at once (a
                // cancelled Task.sleep would hold a dispatch timer until its deadline).
                let timer = self.group.any().scheduleTask(in: Self.timeAmount(deadline)) {
                    guard outcome.resume(with: .failure(APNsTransportError.deadline(deadline))) else { return }
                    work.cancel()
                    if let connection = used.value { self.retire(connection, endpoint, after: deadline) }
                }
                outcome.onResume { timer.cancel() }
            }
        } onCancel: {
            // The caller gave the row back: its request must not go out later (another worker
            // will send it), so the work is cancelled too (a stream already open is reset).
            outcome.resume(with: .failure(CancellationError()))
            running.value?.cancel()
        }
    }

    static func timeAmount(_ duration: Duration) -> TimeAmount {
        .nanoseconds(
            max(1, duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000))
    }

    public func shutdown() async throws {
        let tasks = state.withLock { state -> [Task<APNsConnection, any Error>] in
            state.isShutDown = true
            defer { state.connections = [:] }
            return Array(state.connections.values)
        }
        for task in tasks {
            if let connection = try? await task.value { try? await connection.channel.close() }
        }
    }

    // MARK: - Connections

    /// The endpoint's usable connection, opened (once, however many requests wait) if there is
    /// none. One that is no longer usable (GOAWAY, retired) is closed once the requests still on
    /// it have had `grace`, their deadline.
    private func connection(
        to endpoint: Endpoint, before end: ContinuousClock.Instant, grace: Duration
    ) async throws -> APNsConnection {
        for attempt in 0..<2 {
            let task = try state.withLock { state -> Task<APNsConnection, any Error> in
                guard !state.isShutDown else { throw ChannelError.ioOnClosedChannel }
                if let task = state.connections[endpoint] { return task }
                let remaining = end - ContinuousClock.now
                let start = NIODeadline.now()
                let task = Task { [sslContext, group, connectTimeout] in
                    try await APNsConnection.open(
                        endpoint, sslContext: sslContext, group: group, within: min(remaining, connectTimeout),
                        from: start)
                }
                state.connections[endpoint] = task
                return task
            }
            do {
                let connection = try await task.value
                if connection.isUsable { return connection }
                if forget(task, endpoint) { retire(connection, endpoint, after: grace) }
            } catch {
                forget(task, endpoint)
                // A connection closed while it was being set up (its handlers already gone from
                // the pipeline) is opened once more within the deadline: APNs may close a
                // connection at any time, and a fresh one is what it expects. Any other failure,
                // or a second one, is the caller's.
                if attempt == 0, Self.closedWhileOpening(error), ContinuousClock.now < end { continue }
                throw error
            }
        }
        throw ChannelError.ioOnClosedChannel
    }

    /// Whether `error` says the channel closed under the connection's setup.
    static func closedWhileOpening(_ error: any Error) -> Bool {
        if let error = error as? ChannelPipelineError, error == .notFound { return true }
        if let error = error as? ChannelError, error == .ioOnClosedChannel || error == .eof { return true }
        return false
    }

    /// Drops `task` as the endpoint's connection; whether it still was (so one caller retires it).
    @discardableResult
    private func forget(_ task: Task<APNsConnection, any Error>, _ endpoint: Endpoint) -> Bool {
        state.withLock { state in
            guard state.connections[endpoint] == task else { return false }
            state.connections[endpoint] = nil
            return true
        }
    }

    /// Takes `connection` out of use (the next request opens a new one), and closes it after
    /// `grace`. Nothing holds a connection that has closed meanwhile (or already had): a peer
    /// that gets every connection closed at once (a flood, a GOAWAY) would otherwise have each
    /// one kept, buffers and all, for the whole grace (920 MiB in 15 s of CONTINUATION floods).
    private func retire(_ connection: APNsConnection, _ endpoint: Endpoint, after grace: Duration) {
        connection.retire()
        let channel = connection.channel
        guard channel.isActive else { return }
        let closer = channel.eventLoop.scheduleTask(in: Self.timeAmount(grace + .seconds(1))) {
            channel.close(promise: nil)
        }
        channel.closeFuture.whenComplete { _ in closer.cancel() }
    }
}

/// An APNs host and port.
struct Endpoint: Hashable, Sendable {
    let host: String
    let port: Int
    /// `:authority`: the host (an IPv6 address in brackets, RFC 3986), and the port when it is
    /// not 443. `host` itself is without brackets, as connecting and the name check need it.
    var authority: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == 443 ? name : "\(name):\(port)"
    }

    init(_ url: URL) throws {
        guard url.scheme == "https", let host = url.host, !host.isEmpty else {
            throw APNsTransportError.notHTTP2
        }
        self.host = host
        port = url.port ?? 443
    }
}

/// A result delivered once: the first of an answer, the deadline and a cancellation wins.
final class Once<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, any Error>?
        var early: Result<Value, any Error>?
        var done = false
        var onResume: (@Sendable () -> Void)?
    }
    private let state = Mutex(State())

    func set(_ continuation: CheckedContinuation<Value, any Error>) {
        let early = state.withLock { state -> Result<Value, any Error>? in
            if let early = state.early { return early }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    func onResume(_ action: @escaping @Sendable () -> Void) {
        let already = state.withLock { state -> Bool in
            if state.done { return true }
            state.onResume = action
            return false
        }
        if already { action() }
    }

    /// Whether a result was delivered.
    var isDone: Bool { state.withLock { $0.done } }

    /// Whether this call was the one that delivered.
    @discardableResult
    func resume(with result: Result<Value, any Error>) -> Bool {
        let taken = state.withLock {
            state -> (continuation: CheckedContinuation<Value, any Error>?, action: (@Sendable () -> Void)?)? in
            guard !state.done else { return nil }
            state.done = true
            let continuation = state.continuation
            state.continuation = nil
            if continuation == nil { state.early = result }
            return (continuation, state.onResume)
        }
        guard let taken else { return false }
        taken.continuation?.resume(with: result)
        taken.action?()
        return true
    }
}
