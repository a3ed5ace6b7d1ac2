import EnvelopeDigest
import Foundation
import LocalStore
import Logging
import RemoteStore
import SecretCrypto
import SyncModel
import Synchronization

// Pull (phone): its own device row; then, from the pull feed where the remote has one, only
// what changed (the changed rows with the answer, digests for deletions and envelopes),
// otherwise every table paged into the store; then the envelope rows that differ from what the
// store holds, opened and checked.
extension SyncEngine {

    /// Pulls into this phone's store: its device row, repositories, sessions and envelopes.
    ///
    /// Where the remote has the pull feed (docs/sync.md, "The pull feed"), a pull asks what
    /// changed since the last one in one request and reads nothing more when nothing changed;
    /// otherwise it pages through every table. Pages go into the store as they arrive: memory does
    /// not grow with the number of sessions.
    ///
    /// - Parameter progress: Receives progress events.
    /// - Returns: The report (also saved as the store's last report).
    /// - Throws: ``SyncError`` or `LocalStoreError` before anything is fetched; `CancellationError`.
    public func pull(progress: ProgressHandler? = nil) async throws -> SyncReport {
        let (identity, user, lease) = try await prepare(role: .mobile, purpose: "pull")
        defer { lease.release() }
        var memory = PullMemory()
        return try await pull(identity: identity, user: user, progress: progress, memory: &memory).report
    }

    /// What a watch keeps from one pull to the next: the trust it verified, valid while the
    /// feed reports the same head of the trust log.
    struct PullMemory: Sendable {
        var trust: TrustContext?
        var reported: TrustLogHead??
    }

    /// What a pull did, and what the feed said beside it.
    struct PullOutcome: Sendable {
        var report: SyncReport
        /// The feed's answer, when the remote has one.
        var changes: PullChanges?
        /// Whether anything in the store changed: rows, envelopes, deletions.
        var changedStore: Bool
    }

    /// The pull itself, with the store lease held by the caller. `memory` carries verified
    /// trust from one pull of a watch to the next.
    func pull(
        identity: DeviceIdentity, user: UUID, progress: ProgressHandler?, memory: inout PullMemory
    ) async throws -> PullOutcome {
        let recorder = Recorder(direction: .pull, deviceID: identity.id, progress: progress, logger: logger)
        // The device phase needs only whether this device was revoked, which it remembers.
        let revokedBefore = try await local.knownRevocations().contains { $0.deviceID == identity.id }
        try await recorder.phase(.device) { entry in
            entry.sent = 1
            do {
                try await upsertOwnDevice(identity, user: user, revoked: revokedBefore)
            } catch let error as RemoteStoreError where error.isDeviceRevoked {
                // The remote takes nothing more from a revoked device, and addresses it nothing:
                // what it received goes, as the log's revocation would have made it go.
                entry.deleted = try await local.forgetReceivedEnvelopes()
                throw error
            }
            entry.applied = 1
        }
        var pull = PullState(identity: identity, trust: nil)
        try await recorder.phase(.repositories) { entry in
            pull.changes = try await askFeed(identity: identity, since: &pull.since)
            try await pullRepositories(pull, entry: &entry, recorder: recorder)
        }
        // The trust log's head as the feed reported it: when it is the pinned head, trust comes
        // from the pin alone (nothing read, nothing verified); a watch keeps it while unchanged.
        let reported: TrustLogHead?? = pull.changes.map { .some($0.trustLog) } ?? .none
        let trustStart = remote.metrics()
        let trust: TrustContext
        if let kept = memory.trust, kept.failure == nil, case .some = reported, memory.reported == reported {
            trust = kept
        } else {
            trust = try await trustContext(phase: .envelopes, selfID: identity.id, reported: reported)
        }
        let trustRequests = remote.metrics().since(trustStart).requests
        pull.trust = trust.mode == .verified ? trust.snapshot : nil
        pull.trustFailure = trust.failure
        pull.unpaired = trust.unpaired
        if !revokedBefore && trust.snapshot?.revocations[identity.id] != nil {
            try await upsertOwnDevice(identity, user: user, revoked: true)
        }
        memory = PullMemory(trust: trust, reported: reported)
        recorder.report.trust = trust.summary
        recorder.report.trust?.requests = trustRequests

        try await pullSessions(&pull, recorder: recorder)
        try await recorder.phase(.envelopes) { entry in
            try await pullEnvelopes(&pull, entry: &entry, recorder: recorder)
        }
        let report = await recorder.finish(local: local)
        // The feed's cursor moves only when every phase did its part: what a failed phase missed is
        // read again next time.
        if let changes = pull.changes, !pull.holdCursor, report.phases.allSatisfy({ $0.status != .failed }) {
            try await local.setSetting(.pullFeedSince, moved(changes.cursor).since)
        }
        let changed = report.phases.contains { $0.phase != .device && ($0.applied > 0 || $0.deleted > 0) }
        return PullOutcome(report: report, changes: pull.changes, changedStore: changed)
    }

    /// What one pull knows as it goes.
    struct PullState: Sendable {
        let identity: DeviceIdentity
        /// The verified trust in force (mode `verified`), or `nil`.
        var trust: TrustSnapshot?
        /// The trust failed to verify: envelopes are not accepted (the phase fails with it).
        var trustFailure: (any Error & Sendable)?
        /// The user has a trust log this device is not in: no envelope is accepted (not a failure).
        var unpaired = false
        /// The feed's answer, when the remote has a feed.
        var changes: PullChanges?
        /// The cursor the feed was asked from.
        var since: ChangeCursor?
        /// A session was left out (its repository did not arrive): the cursors stay, so it is
        /// read again next time.
        var holdCursor = false
    }

    /// A feed cursor moved back by ``SyncOptions/cursorOverlap``, so rows committed late with an
    /// earlier `updated_at` are still seen (a row read twice is equal to the one stored, and not
    /// written again).
    func moved(_ cursor: ChangeCursor) -> ChangeCursor {
        guard let date = Timestamp.parse(cursor.since), options.cursorOverlap > 0 else { return cursor }
        return ChangeCursor(since: Timestamp.format(date.addingTimeInterval(-options.cursorOverlap)))
    }

    /// The pull feed's answer since the last pull's, or `nil` from a deployment without it (or
    /// when it refuses this device, whose row did not make it): the tables are paged through then.
    func askFeed(
        identity: DeviceIdentity, since: inout ChangeCursor?
    ) async throws
        -> PullChanges?
    {
        let cursor = try await local.setting(.pullFeedSince).map(ChangeCursor.init(since:))
        do {
            let changes = try await remote.pullChanges(
                for: identity.id, since: cursor, rowLimit: options.pullFeedRowLimit)
            since = cursor
            return changes
        } catch let error as RemoteStoreError where error.code == .missingFunction || error.code == .permissionDenied {
            logger?.debug("pull feed not available (\(error.code)): paging through the tables")
            return nil
        }
    }

    /// The repositories phase of a pull (after the feed, when there is one).
    func pullRepositories(_ pull: PullState, entry: inout PhaseReport, recorder: Recorder) async throws {
        let applied: AppliedRows
        if let changes = pull.changes {
            // Every changed repository fits in memory (a user has hundreds): read them all when
            // the feed did not bring them, then delete what the digest says is gone, first (a
            // path freed on the remote can be taken again by a new row).
            let rows: [RepositoryRecord]
            if let listed = changes.repositories {
                rows = listed.map(\.record)
            } else {
                rows = try await remote.fetchRepositories(after: pull.since.map(Self.cursor(from:))).map(\.record)
            }
            applied = try await applyPulled(
                rows, expected: changes.repositoryIDs, held: try await local.repositoryIDs(),
                list: { try await remote.listIDs(.repositories, deviceID: nil) },
                apply: { try await local.applyRepositories($0, retaining: $1) },
                everything: { try await remote.fetchRepositories(after: nil).map(\.record) })
        } else {
            // The changed rows and the id listing are fetched at once.
            let cursor = try await local.cursor(for: .repositories)
            async let listed = remote.listIDs(.repositories, deviceID: nil)
            let changed = try await remote.fetchRepositories(after: cursor)
            applied = try await local.applyRepositories(changed.map(\.record), retaining: try await listed)
            try await advance(.repositories, to: changed.last.map { ($0.updatedAt, $0.record.id) })
        }
        entry.applied = applied.changed
        entry.deleted = applied.deleted
        recorder.emit(.repositories, applied.changed, applied.changed)
    }

    /// The sessions phase of a pull, a page at a time into the store.
    func pullSessions(_ pull: inout PullState, recorder: Recorder) async throws {
        let changes = pull.changes
        let since = pull.since.map(Self.cursor(from:))
        var hold = false
        try await recorder.phase(.sessions) { entry in
            // A first pull fills an empty table: its indexes are built once, after the pages.
            try await local.loadingSessionsInBulk {
                var sink = SessionSink(local: local, repositories: try await local.repositoryIDs(), recorder: recorder)
                if let changes {
                    try await pullChangedSessions(changes, since: since, into: &sink)
                } else {
                    let cursor = try await local.cursor(for: .sessions)
                    // Deletions first, then the changed rows a page at a time.
                    try await sink.apply([], retaining: try await remote.listIDs(.sessions, deviceID: nil))
                    try await sink.applyPages(
                        producing: { page in try await remote.fetchSessions(after: cursor, pages: page) })
                    let last = sink.last
                    // Orphans are retried next pull: do not move the cursor past them.
                    if sink.orphans.isEmpty { try await advance(.sessions, to: last.map { ($0.updatedAt, $0.id) }) }
                }
                entry.applied = sink.applied.changed
                entry.deleted = sink.applied.deleted
                entry.skipped = sink.orphans.count
                entry.errors += sink.orphans.map {
                    SyncIssue(
                        phase: .sessions, code: .missingRepository, rowID: $0.id.canonical,
                        message: "session skipped: its repository \($0.repositoryID.canonical) is not available")
                }
                hold = !sink.orphans.isEmpty
            }
        }
        pull.holdCursor = pull.holdCursor || hold
    }

    /// The sessions the feed names (or, when it names more than it carries, those read since
    /// its cursor); then, when the store's ids do not add up to the feed's digest, the remote's
    /// ids listed and the others deleted, and every session read again if the cursor missed some.
    func pullChangedSessions(_ changes: PullChanges, since: PullCursor?, into sink: inout SessionSink) async throws {
        if let listed = changes.sessions {
            try await sink.applyPages(producing: { page in try await page(listed) })
        } else {
            // More than the feed carries: a page at a time into the store.
            try await sink.applyPages(producing: { page in try await remote.fetchSessions(after: since, pages: page) })
        }
        guard try await local.sessionIDsDigest() != changes.sessionIDs else { return }
        // Something was deleted (or missed): the listing says what the remote holds.
        let ids = try await remote.listIDs(.sessions, deviceID: nil)
        try await sink.apply([], retaining: ids)
        if !ids.subtracting(try await local.sessionIDs()).isEmpty {
            // Rows the cursor missed: read every session again.
            try await sink.applyPages(producing: { page in try await remote.fetchSessions(after: nil, pages: page) })
        }
    }

    /// Where a pull's sessions go: those whose repository is here into the store, the others
    /// kept aside to report (and retried at the next pull).
    struct SessionSink {
        let local: DeviceStore
        let repositories: Set<UUID>
        let recorder: Recorder
        var orphans: [SessionRecord] = []
        var applied = AppliedRows()
        /// The greatest (updated_at, id) read: the pages of a listing's ranges come in any order.
        var last: (date: Date, updatedAt: String, id: UUID)?

        /// Moves ``last`` past the rows of `page`.
        mutating func see(_ page: [Versioned<SessionRecord>]) {
            for row in page {
                let date = Timestamp.parse(row.updatedAt) ?? .distantPast
                if let seen = last,
                    seen.date > date || (seen.date == date && !seen.id.canonicallyPrecedes(row.record.id))
                {
                    continue
                }
                last = (date, row.updatedAt, row.record.id)
            }
        }

        /// Splits off the sessions whose repository is not here.
        mutating func kept(_ page: [SessionRecord]) -> [SessionRecord] {
            var keep: [SessionRecord] = []
            for row in page {
                if repositories.contains(row.repositoryID) { keep.append(row) } else { orphans.append(row) }
            }
            return keep
        }

        /// Applies `page` and deletes every session not in `retaining`, at once.
        mutating func apply(_ page: [SessionRecord], retaining: Set<UUID>) async throws {
            let result = try await local.applySessions(kept(page), retaining: retaining)
            applied.changed += result.changed
            applied.deleted += result.deleted
            recorder.emit(.sessions, applied.changed, 0)
        }

        /// Applies every page `producing` lists, through a ``Pipeline``: a page's values are made
        /// as it arrives and it is written while the next one is read.
        mutating func applyPages(
            producing: @escaping @Sendable (@escaping PageHandler<Versioned<SessionRecord>>) async throws -> Void
        ) async throws {
            let local = self.local
            let pipeline = Pipeline<[SessionRecord], PreparedSessions, PreparedSessions, AppliedRows>(
                transform: { PreparedSessions($0) }, write: { try await local.applySessions($0) }, placement: .inline)
            try await pipeline.run(
                reading: { emit in
                    try await PageQueue<Versioned<SessionRecord>>().drain(
                        producing: producing,
                        consuming: { page in
                            see(page)
                            try await emit(kept(page.map(\.record)))
                        })
                },
                check: { $0 },
                written: { result in
                    applied.changed += result.changed
                    recorder.emit(.sessions, applied.changed, 0)
                })
        }
    }

    /// Applies repositories read since the cursor so that the store holds what the remote does:
    /// when the ids here and the new ones do not add up to the remote's `expected` digest, the
    /// remote's ids are listed and the others deleted first; ids listed but never read (a row the
    /// cursor missed) make the whole table be read again.
    func applyPulled(
        _ rows: [RepositoryRecord], expected: RowSetDigest, held: Set<UUID>,
        list: () async throws -> Set<UUID>, apply: ([RepositoryRecord], Set<UUID>?) async throws -> AppliedRows,
        everything: () async throws -> [RepositoryRecord]
    ) async throws -> AppliedRows {
        var after = SecretDigest.digest(ofIDs: held)
        for id in Set(rows.map(\.id)) where !held.contains(id) { after.add(SecretDigest.idHash(id)) }
        guard after != expected else { return try await apply(rows, nil) }
        let ids = try await list()
        var applied = try await apply(rows, ids)
        if !ids.subtracting(held).subtracting(rows.map(\.id)).isEmpty {
            let again = try await apply(try await everything(), nil)
            applied.changed += again.changed
        }
        return applied
    }

    /// A pull cursor that starts at a feed cursor's time.
    static func cursor(from feed: ChangeCursor) -> PullCursor {
        PullCursor(updatedAt: feed.since, id: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
    }

    /// Moves a pull cursor to just before the last row seen (by ``SyncOptions/cursorOverlap``).
    func advance(_ table: CursorTable, to last: (updatedAt: String, id: UUID)?) async throws {
        guard let last else { return }
        if let date = Timestamp.parse(last.updatedAt), options.cursorOverlap > 0 {
            let earlier = Timestamp.format(date.addingTimeInterval(-options.cursorOverlap))
            try await local.setCursor(
                PullCursor(updatedAt: earlier, id: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))),
                for: table)
        } else {
            try await local.setCursor(PullCursor(updatedAt: last.updatedAt, id: last.id), for: table)
        }
    }
}
