import Foundation
import LocalStore
import Logging
import PostLoginSync
import RemoteStore
import SyncModel

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The background handler: the remote work events queue, done in the order the agent fired them.
extension AgentHookRunner {
    /// The queue entry an event makes, if any.
    static func journalKind(_ kind: AgentEvent.Kind) -> (AgentJournalEntry.Kind, String?)? {
        switch kind {
        case .promptSubmitted: return (.running, nil)
        case .stop(let running): return running ? nil : (.idle, nil)
        case .stopFailure(let type): return (.error, type)
        case .sessionEnd: return (.ended, nil)
        case .notification(let type) where type == "idle_prompt" || type == "permission_prompt": return (.needsYou, nil)
        default: return nil
        }
    }

    /// Queues `event`'s remote work for its session (the blocking handler's part).
    func queue(_ event: AgentEvent, key: String) async throws {
        guard let session = try await ensureSession(event, reactivate: false),
            let (kind, detail) = Self.journalKind(event.kind)
        else { return }
        try await store.queueAgentEvent(key: key, sessionID: session.id, kind: kind, detail: detail, at: now())
    }

    /// The background handler: makes sure `event`'s work is queued (the blocking handler queues
    /// it first, in the agent's order; this waits a moment for that, then queues it itself), then,
    /// holding the store's agent lock, cancels requests whose process is gone, pushes, and does
    /// every pending entry in order. What fails to reach the remote stays queued for the next event.
    public func handleInBackground(_ event: AgentEvent, key: String) async -> HookOutcome {
        var problem: String?
        do {
            switch event.kind {
            case .sessionStart(let source) where source != "compact":
                // Made if missing, never reactivated here: the blocking handler reactivates a
                // resumed session in the agent's order, and this handler may run after a later
                // SessionEnd (a loaded machine), which it must not undo.
                _ = try await ensureSession(event, reactivate: false)
            case .notification(let type):
                guard let session = try await ensureSession(event, reactivate: false) else { break }
                if type == "permission_prompt", try await hasOpenRequest(session.id) { break }
                try await queue(event, key: key)
            case .promptSubmitted, .stop, .stopFailure, .sessionEnd:
                try await awaitJournal(event, key: key)
            default:
                return .nothing
            }
        } catch {
            // This event's part failed; what earlier events queued is still done.
            problem = Self.problem(error)
        }
        do {
            let drained = try await withAgentLock { try await drain() }
            return HookOutcome(problem: problem ?? drained.problem)
        } catch {
            return HookOutcome(problem: problem ?? Self.problem(error))
        }
    }

    /// Waits for the blocking handler's entry of this event; queues it after ``journalWait``.
    func awaitJournal(_ event: AgentEvent, key: String) async throws {
        guard Self.journalKind(event.kind) != nil else { return }
        let start = now()
        let since = start.addingTimeInterval(-60)
        let deadline = ContinuousClock.now + journalWait
        while ContinuousClock.now < deadline {
            if try await store.hasAgentEvent(key: key, since: since) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        guard let session = try await ensureSession(event, reactivate: false),
            let (kind, detail) = Self.journalKind(event.kind)
        else { return }
        try await store.queueAgentEvent(
            key: key, sessionID: session.id, kind: kind, detail: detail, at: start, unlessSince: since)
    }

    /// Whether a request of a live hook process is open for `session`.
    func hasOpenRequest(_ session: UUID) async throws -> Bool {
        try await store.agentRequests().contains {
            $0.sessionID == session && ProcessIdentity(pid: $0.ownerPID, started: $0.ownerStarted).isAlive
        }
    }

    /// Runs `body` holding the exclusive lock `agent.lock` in the store directory (never the sync
    /// lease), waiting for it at most a minute.
    func withAgentLock<T>(_ body: () async throws -> T) async throws -> T {
        let path = store.directory.appendingPathComponent("agent.lock").path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw AgentEventError("cannot open \(path)") }
        defer { close(descriptor) }
        let deadline = ContinuousClock.now + .seconds(60)
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard ContinuousClock.now < deadline else {
                throw AgentEventError("another hook process held the store's agent lock for a minute")
            }
            try await Task.sleep(for: .milliseconds(25))
        }
        defer { flock(descriptor, LOCK_UN) }
        return try await body()
    }

    /// Cancels orphaned requests, pushes, and does the pending entries in order.
    func drain() async throws -> HookOutcome {
        let remote = try await self.remote()
        var problem = try await cancelOrphans(remote)
        var options = SyncOptions()
        options.leaseTimeout = .seconds(30)
        do {
            _ = try await SyncEngine(local: store, remote: remote, options: options, logger: logger).push()
        } catch {
            problem = problem ?? Self.problem(error)
        }
        let coordinator = Coordinator(store: store, remote: remote)
        let alerts = SessionAlerts(local: store, remote: remote, logger: logger)
        let pending = try await store.pendingAgentEvents()
        for (index, entry) in pending.enumerated() {
            if Self.isSuperseded(entry, by: pending[(index + 1)...], now: now()) {
                try await store.settleAgentEvent(entry.seq, state: .stale, note: "superseded by a later event")
                continue
            }
            do {
                try await perform(entry, coordinator: coordinator, alerts: alerts)
                try await store.settleAgentEvent(entry.seq, state: .done)
            } catch let error as RemoteStoreError where Self.retriable.contains(error.code) {
                // The remote cannot be reached: this entry and the later ones wait for the next event.
                return HookOutcome(problem: Self.problem(error))
            } catch {
                try await store.settleAgentEvent(entry.seq, state: .failed, note: Self.problem(error))
                problem = problem ?? Self.problem(error)
            }
        }
        return HookOutcome(problem: problem)
    }

    /// What leaves an entry queued rather than failed.
    static let retriable: Set<RemoteStoreError.Code> = [.network, .unauthorized, .http]

    /// Whether an entry no longer matters: a "needs you" after which the person prompted again,
    /// or anything older than 15 minutes that a later entry of its session replaces.
    static func isSuperseded(_ entry: AgentJournalEntry, by later: ArraySlice<AgentJournalEntry>, now: Date) -> Bool {
        let ofSession = later.filter { $0.sessionID == entry.sessionID }
        if entry.kind == .needsYou && ofSession.contains(where: { $0.kind == .running }) { return true }
        return now.timeIntervalSince(entry.at) > 900 && !ofSession.isEmpty
    }

    /// Does one entry on the remote.
    func perform(_ entry: AgentJournalEntry, coordinator: Coordinator, alerts: SessionAlerts) async throws {
        switch entry.kind {
        case .running:
            try await coordinator.reportRuntimeStatus(sessionID: entry.sessionID, state: .running, at: entry.at)
            try await store.setAgentNeedsYouAlerted(entry.sessionID, false)
            do {
                _ = try await coordinator.claim(sessionID: entry.sessionID)
            } catch let error as RemoteStoreError where !Self.retriable.contains(error.code) {
                logger?.warning("agent hook: the session's claim was refused: \(error)")
            }
        case .idle:
            try await coordinator.reportRuntimeStatus(sessionID: entry.sessionID, state: .idle, at: entry.at)
        case .error:
            try await coordinator.reportRuntimeStatus(
                sessionID: entry.sessionID, state: .error, errorMessage: entry.detail ?? "unknown", at: entry.at)
        case .ended:
            try await coordinator.reportRuntimeStatus(sessionID: entry.sessionID, state: .notAvailable, at: entry.at)
        case .needsYou:
            // Marked alerted only once the alert is queued: a remote that fails leaves it to retry.
            guard try await !store.isAgentNeedsYouAlerted(entry.sessionID) else { return }
            _ = try await alerts.notify(session: entry.sessionID, kind: .taskPaused)
            try await store.setAgentNeedsYouAlerted(entry.sessionID, true)
        }
    }

    /// Cancels the requests whose hook process is gone (killed by its agent's timeout, say): an
    /// approval with its control, a question closed as cancelled. Returns a problem to report.
    func cancelOrphans(_ remote: any CompleteRemote) async throws -> String? {
        var problem: String?
        for request in try await store.agentRequests()
        where !ProcessIdentity(pid: request.ownerPID, started: request.ownerStarted).isAlive {
            do {
                switch request.kind {
                case .approval:
                    _ = try await remote.cancelApproval(requestID: request.requestID, control: request.control)
                case .question:
                    _ = try await remote.closeQuestion(questionID: request.requestID, status: .cancelled)
                }
                try await store.removeAgentRequest(request.requestID)
            } catch let error as RemoteStoreError where !Self.retriable.contains(error.code) {
                // Not the user's any more, or already ended: nothing left to cancel.
                try await store.removeAgentRequest(request.requestID)
            } catch {
                problem = problem ?? Self.problem(error)
            }
        }
        return problem
    }
}
