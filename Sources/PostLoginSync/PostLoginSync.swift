import Foundation
import Synchronization
import LocalStore
import Logging
import RemoteStore
import SecretCrypto
import SyncModel

/// Errors that stop a sync before it starts (anything later is recorded in the report).
public struct SyncError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// The store has no user yet: log in first.
        case notLoggedIn
        /// The store belongs to another user than the remote is signed in as.
        case userMismatch
        /// A push was asked of a phone, or a pull of a desktop.
        case wrongRole
    }

    public let code: Code
    public let message: String
    public var description: String { message }
}

/// How a sync runs.
public struct SyncOptions: Sendable {
    /// Which devices receive envelopes.
    public var recipients = RecipientOptions()
    /// Concurrent sealing or opening tasks (all cores by default).
    public var cryptoConcurrency = ProcessInfo.processInfo.activeProcessorCount
    /// Envelopes sealed per chunk before they are sent.
    public var sealChunk = 4_000
    /// Envelope uploads in flight at once.
    public var uploadConcurrency = 2
    /// How long to wait for another sync of the same store.
    public var leaseTimeout: Duration = .seconds(30)
    /// Seconds a pull cursor is moved back, so rows committed late by a concurrent writer with
    /// an earlier `updated_at` are still seen (re-reading a few rows is harmless).
    public var cursorOverlap: TimeInterval = 2

    /// Creates the default options.
    public init() {}
}

/// Post-login sync: a desktop pushes, a phone pulls (sync.md).
///
/// Push: own device row, then repositories and sessions changed since the last accepted push,
/// remote deletions of what was deleted here, then envelopes for exactly the (session,
/// recipient) pairs that are missing remotely or were sealed to an older key, sealed on all
/// cores; envelopes of devices that no longer qualify are deleted. Pull: own device row, then
/// repositories and sessions changed since the cursor plus an id listing to find deletions,
/// then the envelopes addressed to this device, checked but never stored opened.
///
/// Every step records its failures in the report and the sync goes on ("Continue Anyway"); a
/// second sync of the same store waits for the lease or fails naming the holder.
public struct PostLoginSync: Sendable {
    public let local: LocalStore
    public let remote: any RemoteStore
    public let options: SyncOptions
    let logger: Logger?

    /// Creates the engine.
    ///
    /// - Parameters:
    ///   - local: This device's store.
    ///   - remote: The remote, signed in as the store's user.
    ///   - options: Policy and tuning.
    ///   - logger: Where to log progress (never secrets); nothing is logged without one.
    public init(local: LocalStore, remote: any RemoteStore, options: SyncOptions = SyncOptions(), logger: Logger? = nil) {
        self.local = local
        self.remote = remote
        self.options = options
        self.logger = logger
    }

    /// Pushes on a desktop, pulls on a phone.
    public func sync(progress: ProgressHandler? = nil) async throws -> SyncReport {
        let identity = try await local.requireIdentity()
        return identity.role == .desktop ? try await push(progress: progress) : try await pull(progress: progress)
    }

    // MARK: - Running phases

    /// Accumulates a report while phases run.
    final class Recorder: @unchecked Sendable {
        // @unchecked: only ever used from the one task running the sync, never concurrently.
        var report: SyncReport
        let remote: any RemoteStore
        let progress: ProgressHandler?
        let logger: Logger?

        init(direction: String, deviceID: UUID, remote: any RemoteStore, progress: ProgressHandler?, logger: Logger?) {
            report = SyncReport(direction: direction, deviceID: deviceID, startedAt: Date(), finishedAt: Date(), durationSeconds: 0,
                                outcome: .success, phases: [])
            self.remote = remote
            self.progress = progress
            self.logger = logger
        }

        /// Runs one phase; an error that escapes it fails the phase, not the sync.
        func phase(_ phase: SyncPhase, _ body: (inout PhaseReport) async throws -> Void) async throws {
            var entry = PhaseReport(phase: phase)
            let before = remote.metrics()
            let start = ContinuousClock.now
            emit(phase, 0, 0, "Syncing \(phase.rawValue)...")
            do {
                try await body(&entry)
                if entry.failed > 0 || !entry.errors.isEmpty { entry.status = "partial" }
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                entry.status = "failed"
                entry.errors.append(SyncIssue(phase: phase, code: Self.code(of: error), message: "\(error)"))
            }
            let delta = remote.metrics().since(before)
            entry.requests = delta.requests
            entry.bytesSent = delta.bytesSent
            entry.bytesReceived = delta.bytesReceived
            entry.retries = delta.retries
            entry.durationSeconds = (ContinuousClock.now - start).seconds
            logger?.info("\(phase.rawValue): \(entry.status), applied \(entry.applied), failed \(entry.failed), \(entry.requests) requests")
            report.phases.append(entry)
        }

        func emit(_ phase: SyncPhase, _ completed: Int, _ total: Int, _ message: String) {
            progress?(SyncProgress(phase: phase, completed: completed, total: total, message: message))
        }

        static func code(of error: Error) -> String {
            if let error = error as? RemoteStoreError { return error.code.description }
            if let error = error as? LocalStoreError { return error.code.description }
            if let error = error as? CryptoError { return "\(error)".split(separator: ":").first.map(String.init) ?? "crypto" }
            return "error"
        }

        func finish(local: LocalStore) async -> SyncReport {
            report.finishedAt = Date()
            report.durationSeconds = report.finishedAt.timeIntervalSince(report.startedAt)
            let metrics = report.phases
            report.requests = metrics.map(\.requests).reduce(0, +)
            report.bytesSent = metrics.map(\.bytesSent).reduce(0, +)
            report.bytesReceived = metrics.map(\.bytesReceived).reduce(0, +)
            report.retries = metrics.map(\.retries).reduce(0, +)
            let failed = report.phases.filter { $0.status == "failed" }.count
            if !report.phases.isEmpty && failed == report.phases.count {
                report.outcome = .failure
            } else if failed > 0 || !report.errors.isEmpty {
                report.outcome = .partial
            } else {
                report.outcome = .success
            }
            try? await local.saveLastReport(report.json(pretty: false), finishedAt: report.finishedAt)
            return report
        }
    }

    func prepare(role: SyncRole, purpose: String) async throws -> (DeviceIdentity, UUID, SyncLease) {
        let lease = try await local.acquireSyncLease(purpose: purpose, timeout: options.leaseTimeout)
        do {
            let identity = try await local.requireIdentity()
            guard identity.role == role else {
                throw SyncError(code: .wrongRole, message: "this store is a \(identity.role.rawValue); it \(identity.role == .desktop ? "pushes" : "pulls")")
            }
            guard let user = identity.userID else {
                throw SyncError(code: .notLoggedIn, message: "this store is not logged in; run `sync-cli login` first")
            }
            guard user == remote.userID else {
                throw SyncError(code: .userMismatch, message: "this store belongs to user \(user.canonical), but the remote is signed in as \(remote.userID.canonical)")
            }
            return (identity, user, lease)
        } catch {
            lease.release()
            throw error
        }
    }

    func ownDeviceRow(_ identity: DeviceIdentity, user: UUID) async throws -> OwnDeviceRow {
        var row = OwnDeviceRow(id: identity.id, userID: user, name: identity.name, deviceType: identity.deviceType,
                               hostname: identity.hostname, publicKey: identity.publicKey.base64)
        if let token = try await local.setting("apns.token"), let environment = try await local.setting("apns.environment") {
            row.apns = APNsRegistration(token: token, environment: environment,
                                        pushEnabled: (try await local.setting("apns.push_enabled")) == "true")
        }
        return row
    }

    static func issues(_ rejected: [RejectedRow], phase: SyncPhase) -> [SyncIssue] {
        rejected.map { SyncIssue(phase: phase, code: $0.error.code.description, rowID: $0.key, message: $0.error.description) }
    }

    // MARK: - Push

    /// Pushes this desktop's device row, repositories, sessions and envelopes.
    ///
    /// - Parameter progress: Receives progress events.
    /// - Returns: The report (also saved as the store's last report).
    /// - Throws: ``SyncError``, `LocalStoreError` (`.storeBusy`, key file problems) before
    ///   anything is sent; `CancellationError`.
    public func push(progress: ProgressHandler? = nil) async throws -> SyncReport {
        let (identity, user, lease) = try await prepare(role: .desktop, purpose: "push")
        defer { lease.release() }
        let key = try await local.deviceKey()
        let recorder = Recorder(direction: "push", deviceID: identity.id, remote: remote, progress: progress, logger: logger)

        try await recorder.phase(.device) { entry in
            entry.sent = 1
            try await remote.upsertOwnDevice(try await ownDeviceRow(identity, user: user))
            entry.applied = 1
        }
        try await recorder.phase(.repositories) { entry in
            let pending = try await local.pendingRemoteDeletions()
            if !pending.repositories.isEmpty {
                entry.deleted = try await remote.deleteRepositories(ids: pending.repositories) ?? pending.repositories.count
                try await local.clearPendingRemoteDeletions(repositories: pending.repositories, sessions: [])
            }
            try await pushRows(.repositories, entry: &entry, recorder: recorder,
                               changed: { try await local.repositories(changedAfter: $0) },
                               send: { rows, handler in try await remote.upsertRepositories(rows, onBatchAccepted: handler) },
                               stamp: { $0.updatedAt = $1 })
        }
        try await recorder.phase(.sessions) { entry in
            let pending = try await local.pendingRemoteDeletions()
            if !pending.sessions.isEmpty {
                entry.deleted = try await remote.deleteSessions(ids: pending.sessions) ?? pending.sessions.count
                try await local.clearPendingRemoteDeletions(repositories: [], sessions: pending.sessions)
            }
            try await pushRows(.sessions, entry: &entry, recorder: recorder,
                               changed: { try await local.sessions(changedAfter: $0) },
                               send: { rows, handler in try await remote.upsertSessions(rows, onBatchAccepted: handler) },
                               stamp: { $0.updatedAt = $1 })
        }
        try await recorder.phase(.secrets) { entry in
            try await pushSecrets(identity: identity, key: key, entry: &entry, recorder: recorder)
        }
        return await recorder.finish(local: local)
    }

    /// Sends the rows written since the last accepted push; advances the push mark only when
    /// every row was accepted, so refused rows are retried next time.
    func pushRows<Row: Sendable>(
        _ phase: SyncPhase, entry: inout PhaseReport, recorder: Recorder,
        changed: (Int64) async throws -> (rows: [Row], through: Int64),
        send: ([Row], BatchHandler<Row>?) async throws -> BulkWriteResult,
        stamp: (inout Row, Date) -> Void
    ) async throws {
        let markKey = "push.\(phase.rawValue).through"
        let mark = Int64(try await local.setting(markKey) ?? "0") ?? 0
        var (rows, through) = try await changed(mark)
        // Deployed tables have no updated_at trigger: stamp the send time so pulls see the change.
        let now = Date()
        for index in rows.indices { stamp(&rows[index], now) }
        entry.sent = rows.count
        guard !rows.isEmpty else { return }
        let total = rows.count
        let done = Counter()
        let progress = recorder.progress
        let result = try await send(rows) { batch in
            let completed = done.add(batch.count)
            progress?(SyncProgress(phase: phase, completed: completed, total: total, message: "Syncing \(phase.rawValue)..."))
        }
        entry.applied = result.accepted
        entry.failed = result.rejected.count
        entry.errors += Self.issues(result.rejected, phase: phase)
        if result.rejected.isEmpty { try await local.setSetting(markKey, String(through)) }
    }

    func pushSecrets(identity: DeviceIdentity, key: X25519PrivateKey, entry: inout PhaseReport, recorder: Recorder) async throws {
        let devices = try await remote.listDevices()
        let decisions = RecipientPolicy.decide(devices, userID: remote.userID, selfID: identity.id, options: options.recipients)
        recorder.report.recipients = decisions.map(\.decision)
        entry.errors += decisions.compactMap(\.issue)
        let recipients = decisions.compactMap(\.recipient)
        let recipientIDs = Set(recipients.map(\.deviceID))

        // The remote listing and the local reads overlap: one waits on the network, the other on disk.
        async let listing = remote.listEnvelopePairs()
        async let secrets = local.ownSealedSecrets()
        async let entries = local.ledger()
        let remotePairs = Set(try await listing)
        let ownSecrets = try await secrets
        var ledger: [EnvelopePair: String] = [:]
        let ledgerEntries = try await entries
        ledger.reserveCapacity(ledgerEntries.count)
        for item in ledgerEntries {
            ledger[EnvelopePair(sessionID: item.sessionID, deviceID: item.recipientDeviceID)] = item.recipientKeyFingerprint
        }

        // Envelopes of this desktop's sessions for devices that no longer qualify go.
        let stale = remotePairs.filter { ownSecrets[$0.sessionID] != nil && !recipientIDs.contains($0.deviceID) }
        if !stale.isEmpty {
            entry.deleted = try await remote.deleteEnvelopes(pairs: Array(stale)) ?? stale.count
            try await local.deleteLedgerEntries(pairs: stale.map { ($0.sessionID, $0.deviceID) })
        }

        // Exactly the pairs missing remotely or sealed to a key the recipient no longer has.
        var work: [(session: UUID, envelope: SecretEnvelope, recipients: [Recipient])] = []
        var needed = 0
        for (session, envelope) in ownSecrets {
            let missing = recipients.filter { recipient in
                let pair = EnvelopePair(sessionID: session, deviceID: recipient.deviceID)
                return !remotePairs.contains(pair) || ledger[pair] != recipient.fingerprint
            }
            if !missing.isEmpty {
                work.append((session, envelope, missing))
                needed += missing.count
            }
        }
        entry.sent = needed
        entry.skipped = ownSecrets.count * recipients.count - needed
        guard needed > 0 else { return }

        let total = needed
        let fingerprints = Dictionary(recipients.map { ($0.deviceID, $0.fingerprint) }, uniquingKeysWith: { first, _ in first })
        let done = Counter()
        let progress = recorder.progress
        var chunkStart = 0
        while chunkStart < work.count {
            var chunkEnd = chunkStart
            var pairs = 0
            while chunkEnd < work.count && (pairs == 0 || pairs + work[chunkEnd].recipients.count <= options.sealChunk) {
                pairs += work[chunkEnd].recipients.count
                chunkEnd += 1
            }
            let (sealed, problems) = try await seal(Array(work[chunkStart..<chunkEnd]), key: key)
            chunkStart = chunkEnd
            recorder.report.envelopesSealed += sealed.count
            entry.errors += problems
            entry.failed += problems.count
            let local = self.local
            let remote = self.remote
            let handler: BatchHandler<EnvelopeRecord> = { batch in
                let now = Date()
                try await local.recordDistributions(batch.map {
                    LedgerEntry(sessionID: $0.sessionID, recipientDeviceID: $0.deviceID,
                                recipientKeyFingerprint: fingerprints[$0.deviceID] ?? "", sentAt: now)
                })
                let completed = done.add(batch.count)
                progress?(SyncProgress(phase: .secrets, completed: completed, total: total, message: "Syncing secrets..."))
            }
            // Two uploads in flight: the remote works on one batch while the next travels.
            let parts = try await inParallel(sealed, workers: options.uploadConcurrency) { part in
                try await remote.upsertEnvelopes(part, onBatchAccepted: handler)
            }
            let result = BulkWriteResult(accepted: parts.map(\.accepted).reduce(0, +), rejected: parts.flatMap(\.rejected))
            entry.applied += result.accepted
            entry.failed += result.rejected.count
            entry.errors += Self.issues(result.rejected, phase: .secrets)
        }
    }

    /// Opens each session's own secret once and seals it for its recipients, spread over
    /// ``SyncOptions/cryptoConcurrency`` tasks.
    func seal(_ work: [(session: UUID, envelope: SecretEnvelope, recipients: [Recipient])], key: X25519PrivateKey) async throws
        -> ([EnvelopeRecord], [SyncIssue]) {
        let parts = try await inParallel(work) { part in
            var sealed: [EnvelopeRecord] = []
            var problems: [SyncIssue] = []
            for item in part {
                try Task.checkCancellation()
                let sessionID = SessionID(item.session)
                let secret: SessionSecret
                do {
                    secret = try item.envelope.open(sessionID: sessionID, using: key)
                } catch {
                    problems.append(SyncIssue(phase: .secrets, code: "secretUnreadable", rowID: item.session.canonical,
                                              message: "this session's own secret cannot be opened with the device key"))
                    continue
                }
                for recipient in item.recipients {
                    do {
                        let envelope = try SecretEnvelope.seal(secret, for: recipient.publicKey, sessionID: sessionID)
                        sealed.append(EnvelopeRecord(sessionID: item.session, deviceID: recipient.deviceID,
                                                     ephemeralPublicKey: envelope.ephemeralPublicKey, encryptedSecret: envelope.encryptedSecret))
                    } catch {
                        problems.append(SyncIssue(phase: .secrets, code: "sealFailed", rowID: "\(item.session.canonical)/\(recipient.deviceID.canonical)",
                                                  message: "\(error)"))
                    }
                }
            }
            return (sealed, problems)
        }
        return (parts.flatMap(\.0), parts.flatMap(\.1))
    }

    /// Runs `body` over ``SyncOptions/cryptoConcurrency`` slices of `items` at once, in a
    /// bounded task group; returns the slices' results in no particular order.
    func inParallel<Item: Sendable, Result: Sendable>(
        _ items: [Item], workers: Int? = nil, _ body: @escaping @Sendable ([Item]) async throws -> Result
    ) async throws -> [Result] {
        guard !items.isEmpty else { return [] }
        let workers = max(1, min(workers ?? options.cryptoConcurrency, items.count))
        let slice = (items.count + workers - 1) / workers
        return try await withThrowingTaskGroup(of: Result.self) { group in
            for start in stride(from: 0, to: items.count, by: slice) {
                let part = Array(items[start..<min(start + slice, items.count)])
                group.addTask { try await body(part) }
            }
            var results: [Result] = []
            for try await result in group { results.append(result) }
            return results
        }
    }

    // MARK: - Pull

    /// Pulls into this phone's store: its device row, repositories, sessions and envelopes.
    ///
    /// - Parameter progress: Receives progress events.
    /// - Returns: The report (also saved as the store's last report).
    /// - Throws: ``SyncError`` or `LocalStoreError` before anything is fetched; `CancellationError`.
    public func pull(progress: ProgressHandler? = nil) async throws -> SyncReport {
        let (identity, user, lease) = try await prepare(role: .mobile, purpose: "pull")
        defer { lease.release() }
        let recorder = Recorder(direction: "pull", deviceID: identity.id, remote: remote, progress: progress, logger: logger)

        try await recorder.phase(.device) { entry in
            entry.sent = 1
            try await remote.upsertOwnDevice(try await ownDeviceRow(identity, user: user))
            entry.applied = 1
        }
        try await recorder.phase(.repositories) { entry in
            let cursor = try await local.cursor(for: .repositories)
            let changed = try await remote.fetchRepositories(after: cursor)
            let ids = try await remote.listRepositoryIDs(deviceID: nil)
            let before = Set(try await local.repositories().map(\.id))
            try await local.applyRepositories(changed.map(\.record), retaining: ids)
            entry.applied = changed.count
            entry.deleted = before.subtracting(ids).count
            try await advance(.repositories, to: changed.last.map { ($0.updatedAt, $0.record.id) })
            recorder.emit(.repositories, changed.count, changed.count, "Syncing repositories...")
        }
        try await recorder.phase(.sessions) { entry in
            let cursor = try await local.cursor(for: .sessions)
            let changed = try await remote.fetchSessions(after: cursor)
            let ids = try await remote.listSessionIDs(deviceID: nil)
            let repositories = Set(try await local.repositories().map(\.id))
            let before = Set(try await local.sessions().map(\.id))
            // A session whose repository did not arrive cannot be kept (foreign key); report it.
            let (keep, orphans) = changed.reduce(into: ([SessionRecord](), [SessionRecord]())) { result, item in
                if repositories.contains(item.record.repositoryID) { result.0.append(item.record) } else { result.1.append(item.record) }
            }
            try await local.applySessions(keep, retaining: ids)
            entry.applied = keep.count
            entry.skipped = orphans.count
            entry.errors += orphans.map {
                SyncIssue(phase: .sessions, code: "missingRepository", rowID: $0.id.canonical,
                          message: "session skipped: its repository \($0.repositoryID.canonical) is not available")
            }
            entry.deleted = before.subtracting(ids).count
            // Orphans are retried next pull: do not move the cursor past them.
            if orphans.isEmpty { try await advance(.sessions, to: changed.last.map { ($0.updatedAt, $0.record.id) }) }
            recorder.emit(.sessions, changed.count, changed.count, "Syncing sessions...")
        }
        try await recorder.phase(.envelopes) { entry in
            try await pullEnvelopes(identity: identity, entry: &entry, recorder: recorder)
        }
        return await recorder.finish(local: local)
    }

    /// Moves a pull cursor to just before the last row seen (by ``SyncOptions/cursorOverlap``).
    func advance(_ table: CursorTable, to last: (updatedAt: String, id: UUID)?) async throws {
        guard let last else { return }
        if let date = Timestamp.parse(last.updatedAt), options.cursorOverlap > 0 {
            let earlier = Timestamp.format(date.addingTimeInterval(-options.cursorOverlap))
            try await local.setCursor(PullCursor(updatedAt: earlier, id: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))), for: table)
        } else {
            try await local.setCursor(PullCursor(updatedAt: last.updatedAt, id: last.id), for: table)
        }
    }

    /// Fetches the envelopes addressed to this device and keeps only those that open: an
    /// envelope that does not is reported and never stored (a junk row must not displace a
    /// good envelope kept from an earlier pull, nor sit in the store looking like a secret).
    func pullEnvelopes(identity: DeviceIdentity, entry: inout PhaseReport, recorder: Recorder) async throws {
        let fetched = try await remote.fetchEnvelopes(addressedTo: identity.id)
        let sessions = Set(try await local.sessions().map(\.id))
        let kept = fetched.filter { sessions.contains($0.sessionID) }
        entry.skipped = fetched.count - kept.count
        var existing: [UUID: SecretEnvelope] = [:]
        for item in try await local.receivedEnvelopes() { existing[item.sessionID] = item.envelope }
        let fresh = kept.filter {
            existing[$0.sessionID] != SecretEnvelope(ephemeralPublicKey: $0.ephemeralPublicKey, encryptedSecret: $0.encryptedSecret)
        }

        // Open every new envelope first; the plaintext is dropped at once, never stored.
        var failures: Set<UUID> = []
        if !fresh.isEmpty {
            let key = try await local.deviceKey()
            failures = Set(try await inParallel(fresh) { part in
                var failed: [UUID] = []
                for item in part {
                    try Task.checkCancellation()
                    let envelope = SecretEnvelope(ephemeralPublicKey: item.ephemeralPublicKey, encryptedSecret: item.encryptedSecret)
                    if (try? envelope.open(sessionID: SessionID(item.sessionID), using: key)) == nil { failed.append(item.sessionID) }
                }
                return failed
            }.flatMap { $0 })
        }
        let good = fresh.filter { !failures.contains($0.sessionID) }
        let now = Date()
        try await local.upsertReceivedEnvelopes(good.map {
            ReceivedEnvelope(sessionID: $0.sessionID, envelope: SecretEnvelope(ephemeralPublicKey: $0.ephemeralPublicKey, encryptedSecret: $0.encryptedSecret), fetchedAt: now)
        })
        entry.deleted = try await local.deleteReceivedEnvelopes(notIn: Set(kept.map(\.sessionID)))
        entry.applied = good.count
        recorder.report.envelopesOpened += good.count
        entry.failed = failures.count
        entry.errors += failures.sorted { $0.canonical < $1.canonical }.map {
            SyncIssue(phase: .envelopes, code: "envelopeUnreadable", rowID: $0.canonical,
                      message: "the envelope for this session cannot be opened with this device's key; it was not stored")
        }
        recorder.emit(.envelopes, fresh.count, fresh.count, "Syncing envelopes...")
    }
}

/// A thread-safe running total for progress from batch handlers.
final class Counter: Sendable {
    private let value = Mutex(0)
    func add(_ amount: Int) -> Int { value.withLock { $0 += amount; return $0 } }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}
