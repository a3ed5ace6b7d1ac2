import EnvelopeDigest
import Foundation
import LocalStore
import Logging
import RemoteStore
import SecretCrypto
import SyncModel
import Synchronization

// Push (desktop): own device row, repositories, sessions, then envelopes for exactly the
// (session, recipient) pairs that are missing remotely or were sealed to an older key.
extension SyncEngine {

    /// Pushes this desktop's device row, repositories, sessions and envelopes.
    ///
    /// - Parameter progress: Receives progress events.
    /// - Returns: The report (also saved as the store's last report).
    /// - Throws: ``SyncError``, `LocalStoreError` (`.storeBusy`, key file problems) before
    ///   anything is sent; `CancellationError`.
    public func push(progress: ProgressHandler? = nil) async throws -> SyncReport {
        let (identity, user, lease) = try await prepare(role: .desktop, purpose: "push")
        defer { lease.release() }
        return try await push(identity: identity, user: user, progress: progress)
    }

    /// The push itself, with the store lease held by the caller.
    func push(identity: DeviceIdentity, user: UUID, progress: ProgressHandler?) async throws -> SyncReport {
        let key = try await local.deviceKey()
        let before = remote.metrics()
        var trust = try await trustContext(phase: .secrets, selfID: identity.id)
        // A root's duties (a migration, vetoes of pending resets, a grant to open) before the
        // trust is used: what they append is read again.
        var duties: [SyncIssue] = []
        if trust.failure == nil, Self.mayHaveRootDuties(trust.snapshot, selfID: identity.id) {
            let manager = DeviceTrustManager(local: local, remote: remote, options: options, logger: logger)
            let done = await manager.rootDuties(given: trust.snapshot)
            duties = done.issues
            if done.appended { trust = try await trustContext(phase: .secrets, selfID: identity.id) }
        }
        let recorder = Recorder(direction: .push, deviceID: identity.id, progress: progress, logger: logger)
        recorder.report.trust = trust.summary
        recorder.report.trust?.requests = remote.metrics().since(before).requests

        try await recorder.phase(.device) { entry in
            entry.sent = 1
            try await upsertOwnDevice(identity, user: user, revoked: trust.snapshot?.revocations[identity.id] != nil)
            entry.applied = 1
        }
        try await recorder.phase(.repositories) { entry in
            let pending = try await local.pendingRemoteDeletions()
            if !pending.repositories.isEmpty {
                entry.deleted =
                    try await remote.deleteRows(.repositories, ids: pending.repositories) ?? pending.repositories.count
                try await local.clearPendingRemoteDeletions(repositories: pending.repositories, sessions: [])
            }
            try await pushRows(
                .repositories, entry: &entry, recorder: recorder,
                count: { try await local.repositoriesChangedCount(after: $0) },
                changed: { try await local.repositories(changedAfter: $0, from: $1, limit: $2) },
                send: { rows, handler in try await remote.upsertRepositories(rows, onBatchAccepted: handler) },
                stamp: { $0.updatedAt = $1 })
        }
        // The secrets phase seals only sessions whose rows are on the remote: those that existed
        // before the session rows went up, less those this push may not have put there (refused,
        // or not sent because the phase failed) that no earlier push sealed (a session in the
        // ledger was on the remote already). A session started meanwhile is sealed by the next
        // push, not refused by the remote's foreign key now.
        var sealable = try await local.ownSessionIDs()
        let sessionsMark = try await pushMark(.sessions)
        try await recorder.phase(.sessions) { entry in
            let pending = try await local.pendingRemoteDeletions()
            if !pending.sessions.isEmpty {
                entry.deleted = try await remote.deleteRows(.sessions, ids: pending.sessions) ?? pending.sessions.count
                try await local.clearPendingRemoteDeletions(repositories: [], sessions: pending.sessions)
            }
            // Sessions are independent of one another: a page goes up in `uploadConcurrency`
            // parts at once, so the client, the server and the database work side by side.
            try await pushRows(
                .sessions, entry: &entry, recorder: recorder, streams: options.uploadConcurrency,
                count: { try await local.sessionsChangedCount(after: $0) },
                changed: { try await local.sessions(changedAfter: $0, from: $1, limit: $2) },
                send: { rows, handler in try await remote.upsertSessions(rows, onBatchAccepted: handler) },
                stamp: { $0.updatedAt = $1 })
        }
        if let entry = recorder.report.phases.last, entry.phase == .sessions, entry.status != .ok {
            let unsure =
                entry.status == .failed
                ? try await sessionIDs(changedAfter: sessionsMark)
                : Set(entry.errors.compactMap { $0.rowID.flatMap(UUID.init(uuidString:)) })
            let sealed = Set(try await local.ledger(sessions: unsure).map(\.sessionID))
            sealable.subtract(unsure.subtracting(sealed))
        }
        try await recorder.phase(.secrets) { entry in
            try trust.requireVerified()
            recorder.report.trust?.reports += duties
            try await pushSecrets(
                identity: identity, key: key, trust: trust.snapshot, sealable: sealable, entry: &entry,
                recorder: recorder)
        }
        return await recorder.finish(local: local)
    }

    /// Whether this desktop may have a root's duties: it is a root of the verified log (or the
    /// log makes it one), a reset is pending, or it holds a legacy identity key before the log.
    static func mayHaveRootDuties(_ snapshot: TrustSnapshot?, selfID: UUID) -> Bool {
        guard let snapshot else { return false }
        return snapshot.roots.contains(selfID) || !snapshot.pendingResets.isEmpty || snapshot.log == nil
    }

    /// Sends the rows written since the last accepted push, a page of ``SyncOptions/rowPage``
    /// rows at a time (read, sent, let go: memory stays flat however many rows there are), in
    /// `streams` parts at once (repositories, which may name a parent, in one: in change order).
    /// Advances the push mark only past rows every one of which was accepted, so refused rows
    /// are retried next time; after each page, to the sequence before the page's last row (the
    /// rows of that sequence may go on in the next page).
    func pushRows<Row: Sendable>(
        _ phase: SyncPhase, entry: inout PhaseReport, recorder: Recorder, streams: Int = 1,
        count: (Int64) async throws -> Int,
        changed: (Int64, ChangePosition?, Int) async throws -> ChangedPage<Row>,
        send: @escaping @Sendable ([Row], BatchHandler<Row>?) async throws -> BulkWriteResult,
        stamp: (inout Row, Date) -> Void
    ) async throws {
        let mark = try await pushMark(phase)
        let pending = try await count(mark)
        guard pending > 0 else { return }
        // Deployed tables have no updated_at trigger: stamp the send time so pulls see the change.
        let now = Date()
        let done = Counter()
        let progress = recorder.progress
        var position: ChangePosition?
        var accepted = true
        var written = mark
        while true {
            var page = try await changed(mark, position, max(1, options.rowPage))
            if let last = page.last {
                for index in page.rows.indices { stamp(&page.rows[index], now) }
                entry.sent += page.rows.count
                let total = max(pending, entry.sent)
                let handler: BatchHandler<Row> = { batch in
                    let completed = done.add(batch.count)
                    progress?(SyncProgress(phase: phase, completed: completed, total: total))
                }
                let results = try await inParallel(page.rows, workers: streams, minimumSlice: options.uploadPartRows) {
                    part in
                    try await send(part, handler)
                }
                for result in results {
                    entry.applied += result.accepted
                    entry.failed += result.rejected.count
                    entry.errors += Self.issues(result.rejected, phase: phase)
                    accepted = accepted && result.rejected.isEmpty
                }
                position = last
            }
            // Once nothing follows, the last row's sequence is done (also when an empty page
            // follows a full one); before that, only the sequences before it.
            if accepted, let position {
                let through = page.complete ? position.sequence : position.sequence - 1
                if through > written {
                    try await local.setSetting(.pushMark(phase), through)
                    written = through
                }
            }
            if page.complete { break }
        }
    }

    /// The ids of this desktop's sessions changed after `mark`, a page at a time.
    func sessionIDs(changedAfter mark: Int64) async throws -> Set<UUID> {
        var ids = Set<UUID>()
        var position: ChangePosition?
        while true {
            let page = try await local.sessions(changedAfter: mark, from: position, limit: max(1, options.rowPage))
            ids.formUnion(page.rows.map(\.id))
            position = page.last ?? position
            if page.complete || page.last == nil { return ids }
        }
    }

    /// The change sequence the last accepted push of `phase` went through (0 before any).
    func pushMark(_ phase: SyncPhase) async throws -> Int64 {
        try await local.setting(.pushMark(phase)) ?? 0
    }
}
