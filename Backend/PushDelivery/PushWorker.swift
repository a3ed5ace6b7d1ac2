import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The push worker: claims due outbox rows, sends each to APNs, and writes what APNs answered
/// (push-delivery.md). A `Service`: in a `ServiceGroup`, SIGTERM stops the claims, lets the
/// requests in flight finish within the drain timeout, gives back the rest and leaves no lease.
public final class PushWorker: Service, Sendable {
    public let configuration: PushWorkerConfiguration
    public let outbox: Outbox
    public let tokens: ProviderTokens
    let transport: any APNsTransport
    let logger: Logger
    let state = Mutex(State())
    private let wakeStream: AsyncStream<Void>
    private let wakeContinuation: AsyncStream<Void>.Continuation
    private let completions = CompletionBuffer()
    /// Requests on their way, by row: an open circuit cancels the ones not yet answered, so
    /// that a refused provider token stops sending at once.
    let sends = Mutex<[Int64: Task<APNsResponse, any Error>]>([:])
    /// Rows this worker claimed whose outcome is not written yet: it never claims them again,
    /// though their lease ends (a starved worker whose lease ran out mid-request sent the same
    /// row twice: it re-claimed its own row).
    let unrecorded = Mutex<Set<Int64>>([])

    struct State {
        var inFlight = 0
        var stopping = false
        var circuit = Circuit.closed
        var tokenHolds: [String: (until: Date, strikes: Int)] = [:]
        var approvalsSupported = true
        /// The newest provider-token generation APNs has accepted. Until the current one is
        /// accepted, one request at a time: a refused token costs one request, not a batch.
        var provenGeneration = 0
        var currentGeneration = 0
    }

    enum Circuit: Equatable {
        case closed
        case open(until: Date)
        /// One request is allowed through to see whether the provider credentials work again.
        case probing
    }

    public init(
        configuration: PushWorkerConfiguration, client: PostgresClient, transport: any APNsTransport,
        tokens: ProviderTokens, logger: Logger
    ) {
        self.configuration = configuration
        self.outbox = Outbox(client: client, workerID: configuration.workerID, logger: logger)
        self.transport = transport
        self.tokens = tokens
        self.logger = logger
        (wakeStream, wakeContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Whether the circuit is open or probing (`InvalidProviderToken` seen): a test reads it.
    public var circuitOpen: Bool { state.withLock { $0.circuit != .closed } }

    /// Asks the worker to stop: no more claims; requests in flight get the drain timeout.
    public func stop() {
        state.withLock { $0.stopping = true }
        wakeContinuation.yield()
    }

    private func wake() { wakeContinuation.yield() }

    public func run() async throws {
        logger.info(
            "push worker started",
            metadata: [
                "worker": "\(configuration.workerID)",
                "environments": "\(configuration.environment.served.joined(separator: ","))",
                "batch": "\(configuration.batchSize)", "inFlight": "\(configuration.maxInFlight)",
            ])
        try await withGracefulShutdownHandler {
            try await loop()
        } onGracefulShutdown: {
            self.stop()
        }
        logger.info("push worker stopped", metadata: ["worker": "\(configuration.workerID)"])
    }

    private func loop() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.listen() }
            group.addTask { await self.tick() }
            group.addTask { await self.flushLoop() }
            var wakes = wakeStream.makeAsyncIterator()
            while !state.withLock({ $0.stopping }) && !Task.isCancelled {
                let capacity = claimCapacity()
                if capacity > 0 {
                    let claim: Outbox.Claim
                    do {
                        claim = try await outbox.claim(
                            limit: capacity, lease: configuration.lease, environments: configuration.environment.served,
                            excluding: unrecorded.withLock { Array($0) })
                    } catch {
                        logger.warning("claim failed; trying again at the next wake", metadata: ["error": "\(error)"])
                        _ = await wakes.next()
                        continue
                    }
                    for (id, reason, kind) in claim.closed {
                        PushMetrics.closed("dropped", reason: reason.label)
                        // Closed at claim: dropped (never sent), or failed when it had expired, as
                        // alert_deliveries says.
                        if let kind {
                            PushMetrics.alertClosed(kind: kind, outcome: reason.outcome, reason: reason.label)
                        }
                        logger.info(
                            "row closed without a request", metadata: ["row": "\(id)", "reason": "\(reason.rawValue)"])
                    }
                    state.withLock { $0.inFlight += claim.rows.count }
                    unrecorded.withLock { $0.formUnion(claim.rows.map(\.id)) }
                    for row in claim.rows {
                        group.addTask { await self.deliver(row) }
                    }
                    if claim.rows.count + claim.closed.count == capacity { continue }
                }
                _ = await wakes.next()
            }
            // Drain: the requests in flight get the drain timeout, then are cancelled (their
            // rows are given back); then the helpers stop.
            let deadline = ContinuousClock.now + configuration.drainTimeout
            while state.withLock({ $0.inFlight }) > 0 && ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(10))
            }
            group.cancelAll()
        }
        // Not cancellable: the last completions and the given-back leases must be written.
        await Task {
            await self.flush()
            do {
                let released = try await self.outbox.releaseAll()
                if released > 0 { self.logger.info("gave back leased rows", metadata: ["rows": "\(released)"]) }
            } catch {
                self.logger.error(
                    "could not give back leased rows; they return when their lease ends",
                    metadata: ["error": "\(error)"])
            }
        }.value
    }

    /// How many rows to claim now: none while the circuit is open (one while probing), else
    /// up to a batch, within the in-flight limit.
    private func claimCapacity() -> Int {
        state.withLock { state in
            switch state.circuit {
            case .open(let until):
                guard Date() >= until else { return 0 }
                state.circuit = .probing
                return state.inFlight == 0 ? 1 : 0
            case .probing:
                return state.inFlight == 0 ? 1 : 0
            case .closed:
                if state.provenGeneration < state.currentGeneration || state.currentGeneration == 0 {
                    return state.inFlight == 0 ? 1 : 0
                }
                return min(configuration.batchSize, configuration.maxInFlight - state.inFlight)
            }
        }
    }

    private func deliver(_ row: OutboxRow) async {
        let completion = await attempt(row)
        PushMetrics.completed(row, completion)
        await completions.add(row.id, row.attempts, completion)
        state.withLock { $0.inFlight -= 1 }
        wake()
    }

    /// A charged retry with full jitter, or death after the last attempt or past `expires_at`.
    func retry(_ row: OutboxRow, status: Int?, reason: String?, cause: String) -> Completion {
        PushMetrics.retry(cause: cause)
        if row.attempts >= configuration.maxAttempts {
            PushMetrics.closed("dead", reason: "attempts")
            logger.warning(
                "row dead after its last attempt", metadata: ["row": "\(row.id)", "token": "\(row.tokenSuffix)"])
            return .dead(status: status, reason: reason, note: "attempts")
        }
        let ceiling = min(configuration.backoffMax, configuration.backoffBase * (1 << min(row.attempts - 1, 20)))
        let delay = Duration.milliseconds(Int64.random(in: 0...max(0, Int64(ceiling.seconds * 1000))))
        if let expires = row.expiresAt, Date().addingTimeInterval(delay.seconds) >= expires {
            PushMetrics.closed("dead", reason: "expired")
            return .dead(status: status, reason: reason, note: "expired")
        }
        return .retry(status: status, reason: reason, delay: delay)
    }

    /// An error's description for a log line: at most 200 characters, the device token cut to its suffix.
    static func describe(_ error: any Error, token row: OutboxRow) -> String {
        // The request's URL holds the token, and a transport error may quote it.
        String(String(describing: error).replacingOccurrences(of: row.token, with: row.tokenSuffix).prefix(200))
    }

    // MARK: - helpers that run beside the loop

    /// LISTEN push_outbox: each notification wakes the loop. Reconnects after a lost connection;
    /// polling covers the gap.
    private func listen() async {
        while !Task.isCancelled {
            do {
                try await outbox.client.withConnection { connection in
                    try await connection.listen(on: "push_outbox") { notifications in
                        for try await _ in notifications { self.wake() }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("LISTEN lost; polling until it is back", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// Every poll interval: a wake (rows whose backoff or throttle ended), `expire_approvals()`,
    /// and now and then retention and the backlog gauges.
    private func tick() async {
        var lastHousekeeping = ContinuousClock.now - .seconds(3600)
        while !Task.isCancelled {
            wake()
            if state.withLock({ $0.approvalsSupported }) {
                do {
                    if let expired = try await outbox.expireApprovals() {
                        if expired > 0 { PushMetrics.approvalsExpired.increment(by: expired) }
                    } else {
                        state.withLock { $0.approvalsSupported = false }
                        logger.info("the database has no expire_approvals(); not calling it")
                    }
                } catch {
                    logger.warning("expire_approvals() failed", metadata: ["error": "\(error)"])
                }
            }
            if ContinuousClock.now - lastHousekeeping >= .seconds(10) {
                lastHousekeeping = .now
                do {
                    let deleted = try await outbox.deleteClosed(olderThan: configuration.retention)
                    if deleted > 0 { logger.info("retention: deleted closed rows", metadata: ["rows": "\(deleted)"]) }
                    let backlog = try await outbox.backlog()
                    PushMetrics.pending.record(backlog.pending)
                    PushMetrics.oldestPendingAge.record(backlog.oldestAge)
                    PushMetrics.liveActivitiesOpen.record(try await outbox.openLiveActivities())
                } catch {
                    logger.warning("housekeeping failed", metadata: ["error": "\(error)"])
                }
            }
            try? await Task.sleep(for: configuration.pollInterval)
        }
    }

    private func flushLoop() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(20))
            await flush()
        }
    }

    private func flush() async {
        let batch = await completions.take()
        guard !batch.isEmpty else { return }
        guard let error = await record(batch).error else { return }
        // A batch the database refuses is written row by row, and a row is blamed only by
        // contrast: refused alone while another row of the batch is written (changed, not only
        // fenced off: a statement that changes no row runs no trigger or check). Everything else
        // waits for the next flush: the database away, the worker stopping, or every row refused
        // alike (a deploy half done); so does a refused outcome with no other beside it yet.
        var waiting: [CompletionBuffer.Outcome] = []
        var refused: [(CompletionBuffer.Outcome, any Error)] = []
        var written = 0
        if Self.isRefusal(error), batch.count > 1 {
            for outcome in batch {
                let alone = await record([outcome])
                guard let error = alone.error else {
                    written += alone.written
                    continue
                }
                if Self.isRefusal(error) { refused.append((outcome, error)) } else { waiting.append(outcome) }
            }
        } else {
            waiting = batch
        }
        for (outcome, error) in refused {
            if written > 0, await close(outcome, refusedWith: error) { continue }
            waiting.append(outcome)
        }
        guard !waiting.isEmpty else { return }
        if written == 0 {
            logger.warning(
                "writing completions failed; retrying", metadata: ["error": "\(error)", "rows": "\(batch.count)"])
        }
        await completions.putBack(waiting)
    }

    /// Writes `batch`'s outcomes: how many rows it changed (the rest were fenced off), or why it
    /// could not.
    private func record(_ batch: [CompletionBuffer.Outcome]) async -> (written: Int, error: (any Error)?) {
        do {
            let written = try await outbox.complete(batch)
            unrecorded.withLock { $0.subtract(batch.map(\.id)) }
            if written < batch.count {
                logger.warning(
                    "completions fenced off: their lease had ended and was taken",
                    metadata: ["rows": "\(batch.count - written)"])
            }
            return (written, nil)
        } catch {
            return (0, error)
        }
    }

    /// Whether the database refused a statement for what it holds, not because it is away, busy
    /// or stopping, or the worker is: a server error whose SQLSTATE is not of a connection (08),
    /// transaction state (25), rollback (40), resource (53), object state (55), operator (57) or
    /// system (58) class. Errors without one (the connection, a cancellation) are never refusals.
    static func isRefusal(_ error: any Error) -> Bool {
        guard let state = (error as? PSQLError)?.serverInfo?[.sqlState] else { return false }
        return !["08", "25", "40", "53", "55", "57", "58"].contains(String(state.prefix(2)))
    }

    /// An outcome the database refused alone, beside others it wrote: the row is closed as dead
    /// (`outcome refused`), so this worker neither holds it nor sends it again. When the closing
    /// is refused too, the worker keeps the row (it never claims it again) and it stays pending,
    /// where the backlog gauges show it, until a restart or another worker takes it when its lease
    /// ends. Whether it was dealt with; `false` (the closing failed otherwise) leaves it waiting.
    private func close(_ outcome: CompletionBuffer.Outcome, refusedWith error: any Error) async -> Bool {
        let state = (error as? PSQLError)?.serverInfo?[.sqlState] ?? "?"
        let metadata: Logger.Metadata = [
            "row": "\(outcome.id)", "sqlstate": "\(state)", "outcome": "\(outcome.completion)",
        ]
        let closing = (outcome.id, outcome.attempt, Completion.dead(status: nil, reason: nil, note: "outcome refused"))
        guard let failure = await record([closing]).error else {
            PushMetrics.closed("dead", reason: "outcome refused")
            logger.error("the database refused a row's outcome: closed as dead (outcome refused)", metadata: metadata)
            return true
        }
        guard Self.isRefusal(failure) else { return false }
        logger.error(
            "the database refused a row's outcome and its closing: this worker keeps the row; it stays pending",
            metadata: metadata)
        return true
    }

    // MARK: - send-once

    /// What `send-once` did with one row.
    public enum SingleResult: Sendable, Equatable {
        case notPending
        case closed(reason: ClosedReason)
        case completed(Completion)
    }

    /// Claims row `id` if it is pending and not leased (due or not), sends it and writes the
    /// outcome.
    public func sendOnce(id: Int64) async throws -> SingleResult {
        let claim = try await outbox.claim(
            limit: 1, lease: configuration.lease, environments: configuration.environment.served, only: id)
        if let closed = claim.closed.first { return .closed(reason: closed.reason) }
        guard let row = claim.rows.first else { return .notPending }
        let completion = await attempt(row)
        try await outbox.complete([(row.id, row.attempts, completion)])
        return .completed(completion)
    }
}

/// Completions waiting to be written in one statement.
actor CompletionBuffer {
    typealias Outcome = (id: Int64, attempt: Int, completion: Completion)
    private var pending: [Outcome] = []
    func add(_ id: Int64, _ attempt: Int, _ completion: Completion) { pending.append((id, attempt, completion)) }
    func take() -> [Outcome] {
        defer { pending = [] }
        return pending
    }
    func putBack(_ batch: [Outcome]) { pending = batch + pending }
}
