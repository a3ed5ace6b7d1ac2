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
        let feed = remote as? any PullFeedRemote
        let recorder = Recorder(direction: .pull, deviceID: identity.id, progress: progress, logger: logger)
        // The device phase needs only whether this device was revoked, which it remembers.
        let revokedBefore = try await local.knownRevocations().contains { $0.deviceID == identity.id }
        try await recorder.phase(.device) { entry in
            entry.sent = 1
            try await upsertOwnDevice(identity, user: user, revoked: revokedBefore)
            entry.applied = 1
        }
        var pull = PullState(identity: identity, trust: nil)
        try await recorder.phase(.repositories) { entry in
            if let feed { pull.changes = try await askFeed(feed, identity: identity, since: &pull.since) }
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
        _ feed: any PullFeedRemote, identity: DeviceIdentity, since: inout ChangeCursor?
    ) async throws
        -> PullChanges?
    {
        let cursor = try await local.setting(.pullFeedSince).map(ChangeCursor.init(since:))
        do {
            let changes = try await feed.pullChanges(
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
                list: { try await remote.listRepositoryIDs(deviceID: nil) },
                apply: { try await local.applyRepositories($0, retaining: $1) },
                everything: { try await remote.fetchRepositories(after: nil).map(\.record) })
        } else {
            // The changed rows and the id listing are fetched at once.
            let cursor = try await local.cursor(for: .repositories)
            async let listed = remote.listRepositoryIDs(deviceID: nil)
            let changed = try await remote.fetchRepositories(after: cursor)
            applied = try await local.applyRepositories(changed.map(\.record), retaining: try await listed)
            try await advance(.repositories, to: changed.last.map { ($0.updatedAt, $0.record.id) })
        }
        entry.applied = applied.changed
        entry.deleted = applied.deleted
        recorder.emit(.repositories, applied.changed, applied.changed, "Syncing repositories...")
    }

    /// The sessions phase of a pull, a page at a time into the store.
    func pullSessions(_ pull: inout PullState, recorder: Recorder) async throws {
        let changes = pull.changes
        let since = pull.since
        var hold = false
        try await recorder.phase(.sessions) { entry in
            // A first pull fills an empty table: its indexes are built once, after the pages.
            try await local.loadingSessionsInBulk {
                let repositories = try await local.repositoryIDs()
                var orphans: [SessionRecord] = []
                var applied = AppliedRows()
                // A page of sessions being written: the next page's values are made meanwhile.
                var writing: Task<AppliedRows, Error>?
                defer { writing?.cancel() }
                /// Waits for the page being written (if any) and counts what it changed.
                func written() async throws {
                    guard let page = writing else { return }
                    writing = nil
                    let result = try await page.value
                    applied.changed += result.changed
                    recorder.emit(.sessions, applied.changed, 0, "Syncing sessions...")
                }
                /// Applies one page: the sessions whose repository is here; the others are reported.
                /// A page without deletions is written while the next is read (``written()`` waits).
                func apply(_ page: [SessionRecord], retaining: Set<UUID>?) async throws {
                    var keep: [SessionRecord] = []
                    for row in page {
                        if repositories.contains(row.repositoryID) { keep.append(row) } else { orphans.append(row) }
                    }
                    if retaining == nil {
                        let prepared = PreparedSessions(keep)
                        try await written()
                        let local = self.local
                        writing = Task { try await local.applySessions(prepared) }
                        return
                    }
                    try await written()
                    let result = try await local.applySessions(keep, retaining: retaining)
                    applied.changed += result.changed
                    applied.deleted += result.deleted
                    recorder.emit(.sessions, applied.changed, 0, "Syncing sessions...")
                }
                if let changes {
                    if let listed = changes.sessions {
                        try await apply(listed.map(\.record), retaining: nil)
                    } else {
                        // More than the feed carries: a page at a time into the store.
                        let pages = PageQueue<Versioned<SessionRecord>>()
                        try await pages.drain(
                            producing: { page in
                                try await remote.fetchSessions(after: since.map(Self.cursor(from:)), pages: page)
                            },
                            consuming: { try await apply($0.map(\.record), retaining: nil) })
                    }
                    try await written()
                    let after = try await local.sessionIDsDigest()
                    if after != changes.sessionIDs {
                        // Something was deleted (or missed): the listing says what the remote holds.
                        let ids = try await remote.listSessionIDs(deviceID: nil)
                        try await apply([], retaining: ids)
                        if !ids.subtracting(try await local.sessionIDs()).isEmpty {
                            // Rows the cursor missed: read every session again.
                            let pages = PageQueue<Versioned<SessionRecord>>()
                            try await pages.drain(
                                producing: { page in try await remote.fetchSessions(after: nil, pages: page) },
                                consuming: { try await apply($0.map(\.record), retaining: nil) })
                            try await written()
                        }
                    }
                } else {
                    let cursor = try await local.cursor(for: .sessions)
                    let ids = try await remote.listSessionIDs(deviceID: nil)
                    // Deletions first, then the changed rows a page at a time.
                    try await apply([], retaining: ids)
                    // The pages of the listing's ranges come in any order: the last row is the
                    // greatest (updated_at, id) of them all.
                    var last: (date: Date, updatedAt: String, id: UUID)?
                    let pages = PageQueue<Versioned<SessionRecord>>()
                    try await pages.drain(
                        producing: { page in try await remote.fetchSessions(after: cursor, pages: page) },
                        consuming: { page in
                            for row in page {
                                let date = Timestamp.parse(row.updatedAt) ?? .distantPast
                                if let seen = last,
                                    seen.date > date
                                        || (seen.date == date && !seen.id.canonicallyPrecedes(row.record.id))
                                {
                                    continue
                                }
                                last = (date, row.updatedAt, row.record.id)
                            }
                            try await apply(page.map(\.record), retaining: nil)
                        })
                    try await written()
                    // Orphans are retried next pull: do not move the cursor past them.
                    if orphans.isEmpty { try await advance(.sessions, to: last.map { ($0.updatedAt, $0.id) }) }
                }
                entry.applied = applied.changed
                entry.deleted = applied.deleted
                entry.skipped = orphans.count
                entry.errors += orphans.map {
                    SyncIssue(
                        phase: .sessions, code: .missingRepository, rowID: $0.id.canonical,
                        message: "session skipped: its repository \($0.repositoryID.canonical) is not available")
                }
                hold = !orphans.isEmpty
            }
        }
        pull.holdCursor = pull.holdCursor || hold
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

    /// An envelope that opened, as it would be stored.
    struct OpenedEnvelope: Sendable {
        var received: ReceivedEnvelope
        /// A version-1 envelope whose secret differs from the last one stored for its session
        /// (held now, or kept in the history when the session was deleted).
        var changesSecret: Bool
    }

    /// Opens `envelopes`, each against the last envelope stored for its session: the one held
    /// (`held`), or for a session deleted since, the one its history kept at its mark.
    ///
    /// With verified trust (`trust` given), a version-2 envelope's sender is resolved only to its
    /// certified key; without it, among the user's own devices (a row of another user, or one
    /// listed twice, resolves to nothing).
    func open(
        _ envelopes: [EnvelopeRecord], identity: DeviceIdentity, senders: SenderKeys,
        held: [UUID: ReceivedEnvelope], marks: [UUID: GenerationMark]
    ) async throws -> [UUID: Result<OpenedEnvelope, CryptoError>] {
        guard !envelopes.isEmpty else { return [:] }
        let senderKeys =
            envelopes.contains(where: { $0.ephemeralPublicKey.hasPrefix(SecretEnvelope.version2Prefix) })
            ? try await senders.keys() : [:]
        var previous = held
        for item in envelopes
        where held[item.sessionID] == nil && !item.ephemeralPublicKey.hasPrefix(SecretEnvelope.version2Prefix) {
            guard let mark = marks[item.sessionID] else { continue }
            previous[item.sessionID] = try? await local.receivedEnvelope(
                sessionID: item.sessionID, generation: mark.generation)
        }

        var outcomes: [UUID: Result<OpenedEnvelope, CryptoError>] = [:]
        let key = try await local.deviceKey()
        let me = identity.id
        let resolved = senderKeys
        let before = previous
        let now = Date()
        for (session, outcome) in try await inParallel(
            envelopes,
            { part in
                var results: [(UUID, Result<OpenedEnvelope, CryptoError>)] = []
                // Each sender's static exchange once per part: one X25519 an envelope, not two.
                var exchanges = SenderExchanges()
                for (index, item) in part.enumerated() {
                    try Task.checkCancellation()
                    // The pull's other stages (reading the next batch, storing the last) run on the
                    // same threads: let them in now and then.
                    if index % 64 == 63 { await Task.yield() }
                    let envelope = SecretEnvelope(
                        ephemeralPublicKey: item.ephemeralPublicKey, encryptedSecret: item.encryptedSecret)
                    do {
                        let opened = try envelope.open(
                            sessionID: SessionID(item.sessionID), recipientDeviceID: me, using: key,
                            senderKey: { resolved[$0] }, exchanges: &exchanges)
                        // A version-1 envelope carries no generation: it is the generation of the
                        // last secret stored when it carries the same secret, and otherwise the one
                        // after it (what the pull then does with it depends on the trust mode).
                        var generation = opened.generation
                        var changes = false
                        if !opened.authenticated, let last = before[item.sessionID],
                            let old = try? last.envelope.open(
                                sessionID: SessionID(item.sessionID), recipientDeviceID: me, using: key,
                                senderKey: { $0 == last.senderDeviceID ? last.senderPublicKey : nil },
                                exchanges: &exchanges)
                        {
                            changes = old.secret != opened.secret
                            generation = changes ? last.generation &+ 1 : last.generation
                        }
                        results.append(
                            (
                                item.sessionID,
                                .success(
                                    OpenedEnvelope(
                                        received: ReceivedEnvelope(
                                            sessionID: item.sessionID, envelope: envelope, fetchedAt: now,
                                            senderDeviceID: opened.senderDeviceID,
                                            senderPublicKey: opened.senderDeviceID.flatMap { resolved[$0] },
                                            generation: generation,
                                            authenticated: opened.authenticated), changesSecret: changes))
                            ))
                    } catch let error as CryptoError {
                        results.append((item.sessionID, .failure(error)))
                    } catch {
                        results.append((item.sessionID, .failure(.authenticationFailure)))
                    }
                }
                return results
            }
        ).joined() {
            outcomes[session] = outcome
        }
        return outcomes
    }

    /// A batch of envelope rows on its way through a pull: what checking them needs, and once
    /// opened, the outcome of each.
    struct Opening: Sendable {
        /// Every row of the batch, recorded when it is stored.
        var all: [EnvelopeRecord]
        /// Those to open.
        var rows: [EnvelopeRecord]
        var owners: [UUID: UUID]
        var held: [UUID: ReceivedEnvelope]
        var marks: [UUID: GenerationMark]
        var outcomes: [UUID: Result<OpenedEnvelope, CryptoError>] = [:]
    }

    /// What the pull knows about one session when it decides on an envelope for it.
    struct EnvelopeContext {
        /// The session's high-water mark, if an envelope was ever stored for it.
        var mark: GenerationMark?
        /// The device that owns the session (its row's `device_id`).
        var owner: UUID?
        /// Verified trust is in force and the owner holds (or held, before a revocation) a
        /// certificate: it seals version 2, so version 1 is never accepted for the session.
        var ownerCertified: Bool
        var verified: Bool
        var requireAuthenticated: Bool
        var window: UInt32
    }

    /// Whether an envelope that opened may be stored (docs/trust.md): `nil` to store it, or the
    /// reason it is refused.
    ///
    /// - The high-water rule: never below the highest generation stored for the session (the
    ///   mark survives the session's deletion), nor more than `window` above it.
    /// - The owner rule: a version-2 envelope only from the device that owns the session, and
    ///   from the first authenticated sender the session had.
    /// - No downgrade: version 1 never after an authenticated envelope, nor from a certified
    ///   owner; in verified mode it never replaces a secret (it names no sender).
    static func refusal(of opened: OpenedEnvelope, _ context: EnvelopeContext) -> (SyncIssue.Code, String)? {
        let item = opened.received
        let highest = context.mark?.generation ?? 0
        if item.generation < highest {
            return (
                .staleGeneration,
                "the envelope for this session is of generation \(item.generation), older than the \(highest) this device "
                    + "has seen; it was not stored"
            )
        }
        if UInt64(item.generation) > UInt64(max(highest, 1)) + UInt64(context.window) {
            return (
                .generationJump,
                "the envelope for this session claims generation \(item.generation), more than \(context.window) above "
                    + "the \(max(highest, 1)) this device has seen; it was not stored"
            )
        }
        if item.authenticated {
            if let owner = context.owner, item.senderDeviceID != owner {
                return (
                    .wrongSender,
                    "the envelope for this session was sealed by device \(item.senderDeviceID?.canonical ?? "?"), "
                        + "not by the device that owns the session; it was not stored"
                )
            }
            if let first = context.mark?.senderDeviceID, item.senderDeviceID != first {
                return (
                    .wrongSender,
                    "the envelope for this session was sealed by another device than its earlier secrets; it was not stored"
                )
            }
            return nil
        }
        if context.requireAuthenticated {
            return (
                .unauthenticatedEnvelope,
                "the envelope for this session is version 1 (no sender) and authenticated envelopes are required; "
                    + "it was not stored"
            )
        }
        if context.mark?.authenticated == true {
            return (
                .downgradeRefused,
                "the envelope for this session is version 1, but this device holds an authenticated secret for it: "
                    + "a downgrade, refused; it was not stored"
            )
        }
        if context.ownerCertified {
            return (
                .downgradeRefused,
                "the envelope for this session is version 1, but the session's device is certified and seals version 2: "
                    + "a downgrade, refused; it was not stored"
            )
        }
        if context.verified && opened.changesSecret {
            return (
                .unauthenticatedReplacement,
                "the envelope for this session is version 1 (no sender) and carries another secret than the "
                    + "one stored: it cannot replace it; it was not stored"
            )
        }
        return nil
    }

    /// The envelopes phase: brings the store's record of the envelope rows addressed to this
    /// device up to date, then opens and checks every recorded row that differs from the envelope
    /// stored for its session, a chunk at a time.
    ///
    /// With the feed, the rows of the sessions it listed come with it, and the digest of every row
    /// says whether anything else changed; only then are the buckets that differ read (or, with
    /// nothing recorded yet, every row). Without a feed, every row is listed.
    ///
    /// A row that opens and that ``refusal(of:_:)`` lets through is stored; one that does not
    /// open, or is refused, is reported and never stored (a junk row must not displace a good
    /// envelope kept from an earlier pull, nor sit in the store looking like a secret). It stays
    /// recorded, and is checked again at each pull (the trust that refused it may change).
    ///
    /// With verified trust (`pull.trust`), a sender without a valid certificate is refused
    /// (`uncertifiedSender`); a version-1 envelope, which names no sender, is kept marked
    /// unauthenticated while the session's owner is not certified, or refused with
    /// ``SyncOptions/requireAuthenticated``.
    func pullEnvelopes(_ pull: inout PullState, entry: inout PhaseReport, recorder: Recorder) async throws {
        if let failure = pull.trustFailure { throw failure }
        let identity = pull.identity
        let trust = pull.trust
        let senders = SenderKeys(remote: remote, trust: trust, known: pull.since == nil ? pull.changes?.devices : nil)
        var opened = 0
        // Three stages, each batch a stage behind the one before it: while a batch is opened (on
        // every core), the next is read from the store and the one before is stored.
        var opening: Task<Opening, Error>?
        var storing: Task<Void, Error>?
        defer {
            opening?.cancel()
            storing?.cancel()
        }

        /// Reads what checking `rows` needs (rows that may differ from the envelope stored):
        /// those of sessions held are to be opened; all are recorded when the batch is stored.
        func prepare(_ rows: [EnvelopeRecord]) async throws -> Opening {
            let sessions = Set(rows.map(\.sessionID))
            let owners = try await local.sessionOwners(of: sessions)
            let held = try await local.receivedEnvelopes(sessions: sessions)
            // A row equal to the envelope stored was checked when it was stored; one recorded as
            // refused for good (a revoked sender's), unchanged, is not checked again either.
            let settled = try await local.settledEnvelopeRows(rows)
            let candidates = rows.filter {
                !settled.contains($0.sessionID)
                    && held[$0.sessionID]?.envelope
                        != SecretEnvelope(
                            ephemeralPublicKey: $0.ephemeralPublicKey, encryptedSecret: $0.encryptedSecret)
            }
            let kept = candidates.filter { owners[$0.sessionID] != nil }
            entry.skipped += candidates.count - kept.count
            return Opening(
                all: rows, rows: kept, owners: owners, held: held,
                marks: kept.isEmpty ? [:] : try await local.generationMarks(of: Set(kept.map(\.sessionID))))
        }

        /// Starts opening a prepared batch, after finishing the one being opened.
        func advance(_ next: Opening?) async throws {
            if let opening { try await finish(try await opening.value) }
            opening = next.map { batch in
                Task {
                    var batch = batch
                    if !batch.rows.isEmpty {
                        batch.outcomes = try await open(
                            batch.rows, identity: identity, senders: senders, held: batch.held, marks: batch.marks)
                    }
                    return batch
                }
            }
        }

        /// Checks an opened batch against the rules, reports what is refused or does not open,
        /// and starts recording the batch's rows and storing what passed (after the batch before).
        func finish(_ batch: Opening) async throws {
            var good: [ReceivedEnvelope] = []
            var revoked: [EnvelopeRecord] = []
            for item in batch.outcomes.values.compactMap({ try? $0.get() }).sorted(by: {
                $0.received.sessionID.canonicallyPrecedes($1.received.sessionID)
            }) {
                let session = item.received.sessionID
                let owner = batch.owners[session]
                let context = EnvelopeContext(
                    mark: batch.marks[session], owner: owner,
                    ownerCertified: trust.map { trust in
                        owner.map { trust.certificates[$0] != nil || trust.revocations[$0] != nil } ?? false
                    } ?? false,
                    verified: trust != nil, requireAuthenticated: options.requireAuthenticated,
                    window: options.generationWindow)
                if let trust, let sender = item.received.senderDeviceID, !trust.isTrusted(sender),
                    trust.revocations[sender] != nil
                {
                    // A revoked device's envelope: refused, once (its row is settled), counted; not a failure.
                    recorder.report.trust?.revokedSenders += 1
                    if let row = batch.rows.first(where: { $0.sessionID == session }) { revoked.append(row) }
                    continue
                }
                if let (code, message) = Self.refusal(of: item, context) {
                    recorder.report.trust?.rejectedEnvelopes += 1
                    entry.failed += 1
                    entry.errors.append(
                        SyncIssue(phase: .envelopes, code: code, rowID: session.canonical, message: message))
                } else {
                    if !item.received.authenticated { recorder.report.trust?.unauthenticatedEnvelopes += 1 }
                    good.append(item.received)
                }
            }
            let failures = batch.outcomes.compactMap { session, outcome -> (UUID, CryptoError)? in
                if case let .failure(error) = outcome { return (session, error) }
                return nil
            }.sorted { $0.0.canonicallyPrecedes($1.0) }
            try await storing?.value
            let (local, rows, stored, settled) = (self.local, batch.all, good, revoked)
            storing = Task { try await local.recordEnvelopeRows(rows, storing: stored, settling: settled) }
            entry.applied += good.count
            recorder.report.envelopesOpened += good.count
            entry.failed += failures.count
            entry.errors += failures.map { session, error in
                if error == .unknownSender && trust != nil {
                    recorder.report.trust?.rejectedEnvelopes += 1
                    return SyncIssue(
                        phase: .envelopes, code: .uncertifiedSender, rowID: session.canonical,
                        message:
                            "the envelope for this session was sealed by a device without a valid certificate; it was not stored"
                    )
                }
                return error == .unknownSender
                    ? SyncIssue(
                        phase: .envelopes, code: .unknownSender, rowID: session.canonical,
                        message:
                            "the envelope for this session names a sender that is not one of the user's devices; it was not stored"
                    )
                    : SyncIssue(
                        phase: .envelopes, code: .envelopeUnreadable, rowID: session.canonical,
                        message:
                            "the envelope for this session cannot be opened with this device's key; it was not stored")
            }
            opened += batch.outcomes.count
            recorder.emit(.envelopes, opened, 0, "Syncing envelopes...")
        }

        // Every row listed (a first pull, a remote without the feed): each page is recorded,
        // opened and stored as it arrives, while the next pages are fetched.
        var evaluated = Set<UUID>()
        if try await needsEveryEnvelopeRow(pull) {
            let pages = PageQueue<EnvelopeRecord>()
            try await pages.drain(
                producing: { page in try await remote.fetchEnvelopes(addressedTo: identity.id, pages: page) },
                consuming: { page in
                    evaluated.formUnion(page.map(\.sessionID))
                    try await advance(try await prepare(page))
                })
            // Everything listed is recorded before the rows the listing did not have go.
            try await advance(nil)
            try await storing?.value
            storing = nil
            try await local.deleteEnvelopeRows(notIn: evaluated)
        } else if let changes = pull.changes {
            try await refreshEnvelopeRows(changes, me: identity.id, recorder: recorder)
        }
        // Then every recorded row that differs from what is stored, a chunk at a time (rows
        // evaluated just now are not checked twice).
        var after: UUID?
        while true {
            let chunk = try await local.pendingEnvelopeRows(after: after, limit: options.openChunk)
            guard let last = chunk.last else { break }
            after = last.sessionID
            let rest = chunk.filter { !evaluated.contains($0.sessionID) }
            if !rest.isEmpty { try await advance(try await prepare(rest)) }
        }
        try await advance(nil)
        try await storing?.value
        storing = nil
        // An envelope the remote no longer addresses here is deleted (its history keeps it).
        entry.deleted = try await local.deleteReceivedEnvelopesWithoutRows()
        if let trust {
            // A sender revoked since: what it sealed stays readable, but the revoked device knows
            // the secret. Counted at every pull while such an envelope is held.
            recorder.report.trust?.revokedSenderEnvelopes = try await local.receivedEnvelopeCount(
                sentBy: Set(trust.revocations.keys))
        }
        recorder.emit(.envelopes, opened, opened, "Syncing envelopes...")
        if options.requestMissingSecrets {
            try await requestMissingSecrets(
                deviceID: identity.id, missing: try await local.sessionsWithoutReceivedEnvelope(),
                open: pull.changes?.secretRequests, entry: &entry, recorder: recorder)
        }
    }

    /// Whether the pull must list every envelope row: the remote has no feed, or the store has
    /// recorded none while the remote holds some (a first pull).
    func needsEveryEnvelopeRow(_ pull: PullState) async throws -> Bool {
        guard let changes = pull.changes else { return true }
        guard changes.envelopeRows.count > 0 else { return false }
        return try await local.envelopeRowsDigest().count == 0
    }

    /// Brings the record of envelope rows (`DeviceStore.recordEnvelopeRows`) up to what the
    /// remote holds for this device, from the feed's answer (``needsEveryEnvelopeRow(_:)``
    /// decides when every row is listed instead).
    func refreshEnvelopeRows(_ changes: PullChanges, me: UUID, recorder: Recorder) async throws {
        if let rows = changes.envelopes {
            try await local.recordEnvelopeRows(
                rows, replacingSessions: Set((changes.sessions ?? []).map(\.record.id)))
        }
        let recorded = try await local.envelopeRowsDigest()
        guard recorded != changes.envelopeRows else { return }
        // Something else changed: the buckets that differ say which sessions to read again,
        // unless there is no record yet (a first pull), or most of it differs.
        guard recorded.count > 0, let feed = remote as? any PullFeedRemote else {
            return try await recordAllEnvelopeRows(me, recorder: recorder)
        }
        let buckets = SecretDigest.bucketCount(
            forPairs: max(recorded.count, changes.envelopeRows.count), rowsPerBucket: options.rowsPerDigestBucket)
        let theirs = Dictionary(
            uniqueKeysWithValues: try await feed.recipientDigest(deviceID: me, buckets: buckets).map { ($0.bucket, $0) }
        )
        let ours = Dictionary(
            uniqueKeysWithValues: try await local.envelopeRowsDigest(buckets: buckets).map { ($0.bucket, $0) })
        let differing = Set(theirs.keys).union(ours.keys).filter { theirs[$0] != ours[$0] }
        guard differing.count * 2 <= max(1, theirs.count) else {
            return try await recordAllEnvelopeRows(me, recorder: recorder)
        }
        let sessions = try await local.sessionsForEnvelopeRows(inBuckets: differing, of: buckets)
        try await local.recordEnvelopeRows(
            try await remote.fetchEnvelopes(addressedTo: me, sessions: sessions), replacingSessions: sessions)
        // A row of a session this device never heard of (it did not arrive with the sessions)
        // cannot be found by bucket: then every row is listed once.
        if try await local.envelopeRowsDigest() != changes.envelopeRows {
            try await recordAllEnvelopeRows(me, recorder: recorder)
        }
    }

    /// Lists every envelope row addressed to this device, a page at a time into the record, and
    /// forgets the rows the listing no longer has.
    func recordAllEnvelopeRows(_ me: UUID, recorder: Recorder) async throws {
        var listed = Set<UUID>()
        let pages = PageQueue<EnvelopeRecord>()
        try await pages.drain(
            producing: { page in try await remote.fetchEnvelopes(addressedTo: me, pages: page) },
            consuming: { page in
                try await local.recordEnvelopeRows(page)
                listed.formUnion(page.map(\.sessionID))
                recorder.emit(.envelopes, listed.count, 0, "Reading envelopes...")
            })
        try await local.deleteEnvelopeRows(notIn: listed)
    }

    /// Asks for the secret of every session this phone holds no envelope for: one
    /// `session_secret_requests` row per such session, never a second while one is open
    /// (coordination.md). The desktop that owns the session serves it at its next push or watch
    /// tick. Nothing is asked when nothing is missing, nor of a remote without the table.
    func requestMissingSecrets(
        deviceID: UUID, missing: Set<UUID>, open known: [SecretRequestRow]?, entry: inout PhaseReport,
        recorder: Recorder
    ) async throws {
        guard !missing.isEmpty else { return }
        let open: [SecretRequestRow]
        if let known {
            open = known
        } else {
            do {
                open = try await remote.secretRequests().listOpenSecretRequests()
            } catch let error as RemoteStoreError where error.code == .missingTable {
                return
            }
        }
        let asked = Set(open.filter { $0.requesterDeviceID == deviceID }.map(\.sessionID))
        var summary = SecretRequestSummary()
        summary.pending = missing.intersection(asked).count
        let new = missing.subtracting(asked).sorted { $0.canonicallyPrecedes($1) }
            .map { SecretRequestRow(userID: remote.userID, sessionID: $0, requesterDeviceID: deviceID) }
        if !new.isEmpty {
            let result = try await remote.secretRequests().insertSecretRequests(new)
            summary.created = result.accepted
            // A duplicate of an open request (another pull of this device asked meanwhile) is
            // what was wanted; anything else is reported.
            let (duplicates, refused) = result.rejected.reduce(into: (0, [RejectedRow]())) { split, row in
                if row.error.code == .conflict { split.0 += 1 } else { split.1.append(row) }
            }
            summary.pending += duplicates
            entry.errors += Self.issues(refused, phase: .envelopes)
        }
        recorder.report.secretRequests = summary
    }
}

/// The keys that may have sealed a version-2 envelope, resolved once per pull when first needed:
/// with verified trust the certified keys only; without, the keys of the user's own device rows
/// (a row of another user, or one listed twice, resolves to nothing).
actor SenderKeys {
    let remote: any SyncRemote
    let trust: TrustSnapshot?
    /// Every device row of the user, when the caller already has them.
    let known: [RemoteDevice]?
    private var resolved: [UUID: X25519PublicKey]?

    init(remote: any SyncRemote, trust: TrustSnapshot?, known: [RemoteDevice]?) {
        self.remote = remote
        self.trust = trust
        self.known = known
    }

    func keys() async throws -> [UUID: X25519PublicKey] {
        if let resolved { return resolved }
        var keys: [UUID: X25519PublicKey] = [:]
        if let trust {
            for id in trust.certificates.keys { keys[id] = trust.certifiedKey(of: id) }
            // A revoked device's key too: its envelopes open, so that they are told apart
            // (refused as `revokedSender`, once) from forgeries.
            for (id, revocation) in trust.revocations where keys[id] == nil { keys[id] = revocation.x25519PublicKey }
        } else {
            var seen = Set<UUID>(), repeated = Set<UUID>()
            let devices: [RemoteDevice]
            if let known { devices = known } else { devices = try await remote.listDevices() }
            for device in devices where device.userID == remote.userID {
                guard seen.insert(device.id).inserted else {
                    repeated.insert(device.id)
                    continue
                }
                if let text = device.publicKey, let key = try? X25519PublicKey(base64: text), !key.isLowOrder {
                    keys[device.id] = key
                }
            }
            for id in repeated { keys[id] = nil }
        }
        resolved = keys
        return keys
    }
}

/// Pages of a listing that may produce several at once (its ranges run together), handed one at
/// a time to a consumer in the calling task. Each producer waits until its page was consumed, so
/// no more than one page per range is held, whatever the listing's length.
struct PageQueue<Row: Sendable> {
    typealias Item = (rows: [Row], done: CheckedContinuation<Void, Error>)

    /// Runs `producing` (a listing that calls its handler with each page) and `consuming` on each
    /// page in turn. An error of either ends both; the first one is thrown.
    func drain(
        producing: @escaping @Sendable (@escaping PageHandler<Row>) async throws -> Void,
        consuming: ([Row]) async throws -> Void
    ) async throws {
        let (stream, continuation) = AsyncThrowingStream<Item, Error>.makeStream()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    try await producing { rows in
                        try await withCheckedThrowingContinuation { done in
                            if case .terminated = continuation.yield((rows, done)) {
                                done.resume(throwing: CancellationError())
                            }
                        }
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            var failure: Error?
            do {
                for try await item in stream {
                    // After a failure, each waiting producer is let go with it.
                    if let failure {
                        item.done.resume(throwing: failure)
                        continue
                    }
                    do {
                        try await consuming(item.rows)
                        item.done.resume()
                    } catch {
                        failure = error
                        item.done.resume(throwing: error)
                    }
                }
            } catch {
                if failure == nil { failure = error }
            }
            try? await group.waitForAll()
            if let failure { throw failure }
        }
    }
}
