import Foundation
import LocalStore
import Logging
import RemoteStore
import SyncModel

/// How a watch runs (sync.md, "Watch mode").
public struct WatchOptions: Sendable {
    /// Time from one tick's start to the next's, while the remote answers.
    public var interval: Duration = .seconds(5)
    /// A full reconciliation (a whole push) runs at least this often, whatever changed.
    public var fullEvery: Duration = .seconds(600)
    /// The longest wait between ticks while the remote is down or refusing.
    public var maxBackoff: Duration = .seconds(60)
    /// How long a tick waits for the store lease held by a manual command before it gives the
    /// tick up (and tries again at the next one).
    public var leaseWait: Duration = .seconds(2)

    /// Creates the default options.
    public init() {}
}

/// One tick of a watch: what it saw and what it did.
public struct WatchTick: Sendable, Codable, Hashable {
    /// What a tick did.
    public enum Action: String, Sendable, Codable {
        /// Nothing changed: the heartbeat and the change feed only.
        case quiet
        /// Something changed: a push (desktop) or a pull (phone) ran.
        case sync
        /// The periodic (or first) full reconciliation ran.
        case full
        /// The remote was down or refused; the next tick waits longer.
        case failed
        /// The store lease was held by another command; nothing was done.
        case busy
    }

    /// 1 for the first tick.
    public var number: Int
    public var startedAt: Date
    public var durationSeconds = 0.0
    public var action: Action
    /// Why the tick synced (`first tick`, `2 devices changed`, `1 secret request`, ...).
    public var reasons: [String] = []
    /// HTTP requests (or embedded operations) this tick made.
    public var requests = 0
    public var envelopesSealed = 0
    /// The push or pull report, when one ran.
    public var report: SyncReport?
    /// Why the tick failed (a typed code and a message without secrets).
    public var failure: SyncIssue?
    /// Failed ticks in a row, this one included.
    public var consecutiveFailures = 0
    /// Seconds until the next tick starts.
    public var nextTickSeconds = 0.0
    /// How the remote answered the change feed.
    public var changeFeed: RemoteChanges.Method?
    /// Approval requests that changed since the last tick, from the change feed (no request of
    /// their own): a question this device may answer, or the end of one it asked. `nil` when none.
    public var approvals: [WatchApproval]?

    /// The tick as one line of JSON, in the project's one style (`JSONStyle`: camelCase keys,
    /// lowercase UUIDs, RFC 3339 UTC dates).
    public func json() -> String {
        (try? JSONStyle.text(self, pretty: false)) ?? "{}"
    }
}

extension SyncEngine {
    /// Keeps this device in sync for as long as it is iterated (sync.md, "Watch mode").
    ///
    /// A desktop's tick asks the remote only what changed, in one request where the remote has a
    /// change feed (`SyncRemote/changes(since:statements:)`): devices changed since the last
    /// tick, open secret requests and, with a pinned identity, the trust statements; it also
    /// reads the store's change sequence. When nothing changed it refreshes the heartbeat and is
    /// done (two requests, nothing sealed); otherwise it runs a push, which seals exactly what is
    /// missing and serves the requests. A full push runs at the first tick and every
    /// ``WatchOptions/fullEvery``. A phone's tick is a pull.
    ///
    /// The store lease is held for one tick at a time, so manual commands run between ticks.
    /// When the remote is down or refusing, ticks back off exponentially with jitter up to
    /// ``WatchOptions/maxBackoff``, with one log line when that starts and one when it ends.
    /// Cancelling the iterating task lets the running tick finish, then ends the sequence.
    ///
    /// - Parameters:
    ///   - options: Interval, full reconciliation period, backoff cap.
    ///   - progress: Receives the progress events of the pushes and pulls.
    /// - Returns: A sequence yielding one ``WatchTick`` per tick; it never throws.
    public func watch(_ options: WatchOptions = WatchOptions(), progress: ProgressHandler? = nil) -> SyncWatch {
        SyncWatch(engine: self, options: options, progress: progress)
    }

    /// Whether the store holds rows or deletions a push has not sent.
    func hasUnpushedChanges() async throws -> Bool {
        try await local.hasUnpushedChanges(
            repositoriesAfter: try await pushMark(.repositories), sessionsAfter: try await pushMark(.sessions))
    }
}

/// An approval request a watch saw change: its id, session and status (nothing of its content).
public struct WatchApproval: Sendable, Codable, Hashable {
    public var requestId: UUID
    public var sessionId: UUID
    public var status: ApprovalStatus
    /// Whether this device asked it.
    public var asked: Bool
}

/// The ticks of a watch; see ``SyncEngine/watch(_:progress:)``.
public struct SyncWatch: AsyncSequence, Sendable {
    public typealias Element = WatchTick
    let engine: SyncEngine
    let options: WatchOptions
    let progress: ProgressHandler?

    public func makeAsyncIterator() -> Iterator {
        Iterator(state: WatchState(engine: engine, options: options, progress: progress))
    }

    /// Runs a tick each time it is asked for one, after the wait the previous tick set.
    public struct Iterator: AsyncIteratorProtocol {
        let state: WatchState

        public mutating func next() async -> WatchTick? {
            let wait = await state.wait
            if wait > .zero {
                do { try await Task.sleep(for: wait) } catch { return nil }
            }
            if Task.isCancelled { return nil }
            // Cancelling the caller lets the tick finish (and release the lease).
            let state = self.state
            return await uncancelled { await state.tick() }
        }
    }
}

/// What a watch remembers between ticks.
actor WatchState {
    let engine: SyncEngine
    let options: WatchOptions
    let progress: ProgressHandler?
    var logger: Logger? { engine.logger }

    var number = 0
    var wait: Duration = .zero
    var cursor: ChangeCursor?
    /// Other devices' rows as last acted on, heartbeat left out.
    var devices: [UUID: RemoteDevice] = [:]
    var statements: String?
    /// The trust log's head as the change feed last reported it.
    var trustLog: TrustLogHead?
    var lastFull: ContinuousClock.Instant?
    var failures = 0
    /// Requests refused by the recipient policy: not a reason to push again until the next full run.
    var refused: Set<UUID> = []
    /// Approval requests as last surfaced, by id.
    var approvals: [UUID: ApprovalStatus] = [:]
    /// A phone's verified trust, kept from one pull to the next.
    var pullMemory = SyncEngine.PullMemory()

    init(engine: SyncEngine, options: WatchOptions, progress: ProgressHandler?) {
        self.engine = engine
        self.options = options
        self.progress = progress
    }

    func tick() async -> WatchTick {
        number += 1
        let start = ContinuousClock.now
        let before = engine.remote.metrics()
        var tick = WatchTick(number: number, startedAt: Date(), action: .quiet)
        do {
            let lease = try await engine.local.acquireSyncLease(purpose: "watch", timeout: options.leaseWait)
            defer { lease.release() }
            let (identity, user) = try await engine.signedIn(role: nil)
            if identity.role == .mobile {
                try await phoneTick(&tick, identity: identity, user: user)
            } else {
                try await desktopTick(&tick, identity: identity, user: user)
            }
            if tick.report?.outcome == .failure {
                let first = tick.report?.errors.first
                tick.failure = first ?? SyncIssue(phase: .device, code: .error, message: "every phase failed")
            }
        } catch let error as LocalStoreError where error.code == .storeBusy {
            tick.action = .busy
            tick.reasons = ["the store is busy with another command"]
        } catch let error as SyncError {
            // Not logged in, another user, an identity that changed: the same until someone acts.
            tick.failure = SyncIssue(
                phase: .device, code: SyncIssue.Code(rawValue: error.code.rawValue), message: error.message)
        } catch {
            tick.failure = SyncIssue(phase: .device, code: SyncEngine.Recorder.code(of: error), message: "\(error)")
        }
        tick.requests = engine.remote.metrics().since(before).requests
        tick.envelopesSealed = tick.report?.envelopesSealed ?? 0
        tick.durationSeconds = (ContinuousClock.now - start).seconds
        schedule(&tick, elapsed: ContinuousClock.now - start)
        return tick
    }

    /// Sets the wait before the next tick and logs a change between reachable and failing.
    func schedule(_ tick: inout WatchTick, elapsed: Duration) {
        if let failure = tick.failure {
            tick.action = .failed
            failures += 1
            tick.consecutiveFailures = failures
            // Exponential from the interval, capped, with jitter in [50%, 100%] so that many
            // agents do not return together.
            let exponent = Double(min(failures, 16))
            let capped = min(options.maxBackoff.seconds, options.interval.seconds * pow(2, exponent))
            let delay = capped * Double.random(in: 0.5...1.0)
            wait = .milliseconds(Int64(delay * 1000))
            if failures == 1 {
                logger?.warning(
                    "watch: ticks fail (\(failure.code): \(failure.message)); backing off, next try in \(String(format: "%.1f", delay)) s, at most \(Int(options.maxBackoff.seconds)) s apart"
                )
            } else {
                logger?.debug(
                    "watch: still unavailable after \(failures) ticks; next try in \(String(format: "%.1f", delay)) s")
            }
        } else {
            if failures > 0 {
                logger?.notice(
                    "watch: the remote answers again after \(failures) failed tick\(failures == 1 ? "" : "s")")
            }
            failures = 0
            wait = max(.zero, options.interval - elapsed)
        }
        tick.nextTickSeconds = wait.seconds
    }

    /// A phone's tick: a pull, which with the pull feed costs the device row and the feed when
    /// nothing changed (trust verified at an earlier tick holds while the feed says its
    /// statements are the same), and the approval requests that changed, from the same feed.
    func phoneTick(_ tick: inout WatchTick, identity: DeviceIdentity, user: UUID) async throws {
        var memory = pullMemory
        let outcome = try await engine.pull(identity: identity, user: user, progress: progress, memory: &memory)
        pullMemory = memory
        tick.report = outcome.report
        if let changes = outcome.changes {
            tick.changeFeed = .feed
            surface(changes.approvals, in: &tick, identity: identity)
        } else {
            try await approvalsTick(&tick, identity: identity)
        }
        if outcome.changedStore || outcome.report.outcome != .success {
            tick.action = .sync
            tick.reasons = ["pull"]
        }
    }

    /// The approval requests that changed, from the change feed (one request), for a phone whose
    /// remote has no pull feed.
    func approvalsTick(_ tick: inout WatchTick, identity: DeviceIdentity) async throws {
        let changes = try await engine.remote.changes(since: cursor, statements: false)
        tick.changeFeed = changes.method
        surface(changes.approvals, in: &tick, identity: identity)
        cursor = changes.cursor.map { moved($0) }
    }

    /// Puts the approval requests that changed in the tick, each once: a row seen again through
    /// the cursor's overlap, unchanged, is left out.
    func surface(_ rows: [ApprovalRequestRow], in tick: inout WatchTick, identity: DeviceIdentity) {
        let now = Date()
        var changed: [WatchApproval] = []
        for row in rows {
            let approval = WatchApproval(
                requestId: row.id, sessionId: row.sessionID, status: row.status(at: now),
                asked: row.requesterDeviceID == identity.id)
            if approvals.updateValue(approval.status, forKey: row.id) != approval.status { changed.append(approval) }
        }
        tick.approvals = changed.isEmpty ? nil : changed
        // Remember ended requests only as long as the feed's overlap could show them again.
        if approvals.count > 4_096 { approvals = approvals.filter { $0.value == .pending } }
    }

    func desktopTick(_ tick: inout WatchTick, identity: DeviceIdentity, user: UUID) async throws {
        let local = engine.local, remote = engine.remote
        let now = ContinuousClock.now
        let full = lastFull.map { now - $0 >= options.fullEvery } ?? true
        let legacyPin = try await local.pinnedIdentityKey() != nil
        let logPin = try await local.trustLogPin() != nil
        let pinned = legacyPin || logPin
        let changes = try await remote.changes(since: cursor, statements: pinned)
        tick.changeFeed = changes.method
        surface(changes.approvals, in: &tick, identity: identity)

        // What changed since the last tick that acted.
        var seen = changes.complete ? [:] : devices
        var changedDevices = 0
        for device in changes.devices where device.id != identity.id {
            var row = device
            row.lastSeenAt = nil
            if devices[device.id] != row { changedDevices += 1 }
            seen[device.id] = row
        }
        if changes.complete { changedDevices += Set(devices.keys).subtracting(seen.keys).count }
        let statementsChanged = pinned && (changes.statements != statements || changes.trustLog != trustLog)
        var requests: [SecretRequestRow] = []
        if !changes.secretRequests.isEmpty {
            let own = try await local.ownSessionIDs()
            requests = changes.secretRequests.filter {
                own.contains($0.sessionID) && (full || !refused.contains($0.id))
            }
        }
        let localChanges = try await engine.hasUnpushedChanges()

        if full { tick.reasons.append(lastFull == nil ? "first tick" : "full reconciliation") }
        if changedDevices > 0 && lastFull != nil {
            tick.reasons.append("\(changedDevices) device\(changedDevices == 1 ? "" : "s") changed")
        }
        if statementsChanged && lastFull != nil { tick.reasons.append("trust changed") }
        if !requests.isEmpty {
            tick.reasons.append("\(requests.count) secret request\(requests.count == 1 ? "" : "s")")
        }
        if localChanges { tick.reasons.append("local changes") }

        if tick.reasons.isEmpty {
            try await remote.heartbeat(deviceID: identity.id)
        } else {
            tick.action = full ? .full : .sync
            let report = try await engine.push(identity: identity, user: user, progress: progress)
            tick.report = report
            // A failed push changes nothing here: the same changes are seen (and acted on) again.
            guard report.outcome != .failure else { return }
            if full {
                lastFull = now
                refused = []
            }
            let refusedDevices = Set(report.secretRequests?.refusedDevices ?? [])
            refused.formUnion(requests.filter { refusedDevices.contains($0.requesterDeviceID) }.map(\.id))
        }
        devices = seen
        statements = changes.statements
        trustLog = changes.trustLog
        cursor = changes.cursor.map { moved($0) }
    }

    /// A cursor moved back by the sync's overlap, so rows committed late with an earlier
    /// `updated_at` are still seen (seeing a row twice is harmless: it is compared).
    func moved(_ cursor: ChangeCursor) -> ChangeCursor {
        guard let date = Timestamp.parse(cursor.since) else { return cursor }
        return ChangeCursor(since: Timestamp.format(date.addingTimeInterval(-max(engine.options.cursorOverlap, 1))))
    }
}
