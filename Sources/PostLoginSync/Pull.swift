import Foundation
import LocalStore
import Logging
import RemoteStore
import SecretCrypto
import Synchronization
import SyncModel

// Pull (phone): own device row, repositories and sessions changed since the cursor plus an id
// listing to find deletions, then the envelopes addressed to this device.
extension PostLoginSync {

    /// Pulls into this phone's store: its device row, repositories, sessions and envelopes.
    ///
    /// - Parameter progress: Receives progress events.
    /// - Returns: The report (also saved as the store's last report).
    /// - Throws: ``SyncError`` or `LocalStoreError` before anything is fetched; `CancellationError`.
    public func pull(progress: ProgressHandler? = nil) async throws -> SyncReport {
        let (identity, user, lease) = try await prepare(role: .mobile, purpose: "pull")
        defer { lease.release() }
        return try await pull(identity: identity, user: user, progress: progress)
    }

    /// The pull itself, with the store lease held by the caller.
    func pull(identity: DeviceIdentity, user: UUID, progress: ProgressHandler?) async throws -> SyncReport {
        let before = remote.metrics()
        let trust = try await trustContext(phase: .envelopes, selfID: identity.id)
        let recorder = Recorder(direction: "pull", deviceID: identity.id, progress: progress, logger: logger)
        recorder.report.trust = trust.summary
        recorder.report.trust?.requests = remote.metrics().since(before).requests

        try await recorder.phase(.device) { entry in
            entry.sent = 1
            try await upsertOwnDevice(identity, user: user, revoked: trust.snapshot?.revocations[identity.id] != nil)
            entry.applied = 1
        }
        // The envelopes are fetched and the new ones opened while the repositories and sessions
        // are fetched and applied (the sessions' SQLite transaction alone runs on one core for
        // seconds at 100,000 sessions); the envelopes phase then keeps those of sessions held.
        let envelopeTally = MetricsTally()
        let verified = trust.mode == .verified ? trust.snapshot : nil
        return try await withThrowingTaskGroup(of: OpenedEnvelopes.self) { group in
            group.addTask {
                try await MetricsTally.$current.withValue(envelopeTally) {
                    try await self.fetchAndOpenEnvelopes(identity: identity, trust: verified)
                }
            }
            try await pullRows(recorder: recorder)
            try await recorder.phase(.envelopes, counting: envelopeTally) { entry in
                guard let opened = try await group.next() else { throw CancellationError() }
                try await pullEnvelopes(opened, identity: identity, trust: verified, entry: &entry, recorder: recorder)
            }
            return await recorder.finish(local: local)
        }
    }

    /// The repositories and sessions phases of a pull.
    func pullRows(recorder: Recorder) async throws {
        try await recorder.phase(.repositories) { entry in
            // The changed rows and the id listing are fetched at once.
            let cursor = try await local.cursor(for: .repositories)
            async let listed = remote.listRepositoryIDs(deviceID: nil)
            let changed = try await remote.fetchRepositories(after: cursor)
            let ids = try await listed
            let before = try await local.repositoryIDs()
            try await local.applyRepositories(changed.map(\.record), retaining: ids)
            entry.applied = changed.count
            entry.deleted = before.subtracting(ids).count
            try await advance(.repositories, to: changed.last.map { ($0.updatedAt, $0.record.id) })
            recorder.emit(.repositories, changed.count, changed.count, "Syncing repositories...")
        }
        try await recorder.phase(.sessions) { entry in
            let cursor = try await local.cursor(for: .sessions)
            async let listed = remote.listSessionIDs(deviceID: nil)
            let changed = try await remote.fetchSessions(after: cursor)
            let ids = try await listed
            let repositories = try await local.repositoryIDs()
            let before = try await local.sessionIDs()
            // A session whose repository did not arrive cannot be kept (foreign key); report it.
            let (keep, orphans) = changed.reduce(into: ([SessionRecord](), [SessionRecord]())) { result, item in
                if repositories.contains(item.record.repositoryID) { result.0.append(item.record) } else { result.1.append(item.record) }
            }
            try await local.applySessions(keep, retaining: ids)
            entry.applied = keep.count
            entry.skipped = orphans.count
            entry.errors += orphans.map {
                SyncIssue(phase: .sessions, code: .missingRepository, rowID: $0.id.canonical,
                          message: "session skipped: its repository \($0.repositoryID.canonical) is not available")
            }
            entry.deleted = before.subtracting(ids).count
            // Orphans are retried next pull: do not move the cursor past them.
            if orphans.isEmpty { try await advance(.sessions, to: changed.last.map { ($0.updatedAt, $0.record.id) }) }
            recorder.emit(.sessions, changed.count, changed.count, "Syncing sessions...")
        }
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

    /// The envelopes addressed to this device as fetched, what the store held when they were,
    /// and the outcome of opening each one it did not already hold.
    struct OpenedEnvelopes: Sendable {
        var fetched: [EnvelopeRecord]
        var held: [UUID: ReceivedEnvelope]
        var outcomes: [UUID: Result<ReceivedEnvelope, CryptoError>]
    }

    /// Fetches the envelopes addressed to this device and opens every one the store does not
    /// already hold; the plaintext is dropped at once, never stored. Touches neither the report
    /// nor the store's rows: it runs while the sessions are applied.
    func fetchAndOpenEnvelopes(identity: DeviceIdentity, trust: TrustSnapshot?) async throws -> OpenedEnvelopes {
        let fetched = try await remote.fetchEnvelopes(addressedTo: identity.id)
        var held: [UUID: ReceivedEnvelope] = [:]
        for item in try await local.receivedEnvelopes() { held[item.sessionID] = item }
        let fresh = fetched.filter {
            held[$0.sessionID]?.envelope != SecretEnvelope(ephemeralPublicKey: $0.ephemeralPublicKey, encryptedSecret: $0.encryptedSecret)
        }
        return OpenedEnvelopes(fetched: fetched, held: held,
                               outcomes: try await open(fresh, identity: identity, trust: trust, held: held))
    }

    /// Opens `envelopes`, each against what the store held for its session (`held`).
    ///
    /// With verified trust (`trust` given), a version-2 envelope's sender is resolved only to its
    /// certified key; without it, among the user's own devices (a row of another user, or one
    /// listed twice, resolves to nothing).
    func open(_ envelopes: [EnvelopeRecord], identity: DeviceIdentity, trust: TrustSnapshot?,
              held: [UUID: ReceivedEnvelope]) async throws -> [UUID: Result<ReceivedEnvelope, CryptoError>] {
        guard !envelopes.isEmpty else { return [:] }
        var senderKeys: [UUID: X25519PublicKey] = [:]
        if let trust {
            for id in trust.certificates.keys { senderKeys[id] = trust.certifiedKey(of: id) }
        } else if envelopes.contains(where: { $0.ephemeralPublicKey.hasPrefix(SecretEnvelope.version2Prefix) }) {
            var seen = Set<UUID>(), repeated = Set<UUID>()
            for device in try await remote.listDevices() where device.userID == remote.userID {
                guard seen.insert(device.id).inserted else { repeated.insert(device.id); continue }
                if let text = device.publicKey, let key = try? X25519PublicKey(base64: text), !key.isLowOrder { senderKeys[device.id] = key }
            }
            for id in repeated { senderKeys[id] = nil }
        }

        var outcomes: [UUID: Result<ReceivedEnvelope, CryptoError>] = [:]
        let key = try await local.deviceKey()
        let me = identity.id
        let resolved = senderKeys
        let now = Date()
        for (session, outcome) in try await inParallel(envelopes, { part in
            var results: [(UUID, Result<ReceivedEnvelope, CryptoError>)] = []
            // Each sender's static exchange once per part: one X25519 an envelope, not two.
            var exchanges = SenderExchanges()
            for item in part {
                try Task.checkCancellation()
                let envelope = SecretEnvelope(ephemeralPublicKey: item.ephemeralPublicKey, encryptedSecret: item.encryptedSecret)
                do {
                    let opened = try envelope.open(sessionID: SessionID(item.sessionID), recipientDeviceID: me, using: key,
                                                   senderKey: { resolved[$0] }, exchanges: &exchanges)
                    // A version-1 envelope carries no generation: "1 unless the store knows
                    // better". Replacing a held envelope with another secret is the next
                    // generation (a rotation sealed as v1), so the held one is kept as history.
                    var generation = opened.generation
                    if !opened.authenticated, let before = held[item.sessionID],
                       let old = try? before.envelope.open(sessionID: SessionID(item.sessionID), recipientDeviceID: me, using: key,
                                                           senderKey: { $0 == before.senderDeviceID ? before.senderPublicKey : nil },
                                                           exchanges: &exchanges) {
                        generation = old.secret == opened.secret ? before.generation : before.generation &+ 1
                    }
                    results.append((item.sessionID, .success(ReceivedEnvelope(
                        sessionID: item.sessionID, envelope: envelope, fetchedAt: now, senderDeviceID: opened.senderDeviceID,
                        senderPublicKey: opened.senderDeviceID.flatMap { resolved[$0] }, generation: generation,
                        authenticated: opened.authenticated))))
                } catch let error as CryptoError {
                    results.append((item.sessionID, .failure(error)))
                } catch {
                    results.append((item.sessionID, .failure(.authenticationFailure)))
                }
            }
            return results
        }).joined() {
            outcomes[session] = outcome
        }
        return outcomes
    }

    /// Keeps, of the envelopes fetched and opened, those of sessions the store holds and that
    /// opened: an envelope that does not open is reported and never stored (a junk row must not
    /// displace a good envelope kept from an earlier pull, nor sit in the store looking like a
    /// secret).
    ///
    /// With verified trust (`trust` given), a sender without a valid certificate is refused
    /// (`uncertifiedSender`); a version-1 envelope, which names no sender, is kept marked
    /// unauthenticated, or refused with ``SyncOptions/requireAuthenticated``. An envelope of an
    /// older generation than the one held is refused (a rollback), whatever the mode.
    func pullEnvelopes(_ opened: OpenedEnvelopes, identity: DeviceIdentity, trust: TrustSnapshot?, entry: inout PhaseReport,
                       recorder: Recorder) async throws {
        if let trust { entry.errors += trust.problems }
        let sessions = try await local.sessionIDs()
        let kept = opened.fetched.filter { sessions.contains($0.sessionID) }
        let listed = Set(kept.map(\.sessionID))
        entry.skipped = opened.fetched.count - kept.count
        // Applying the sessions deleted the envelopes of the sessions it deleted. A session
        // deleted and written again in that one transaction (it changed on the remote between
        // the id listing and the rows) lost the envelope it held: its envelope is opened again.
        let stillHeld = try await local.receivedEnvelopeSessionIDs()
        let held = opened.held.filter { stillHeld.contains($0.key) }
        var outcomes = opened.outcomes.filter { listed.contains($0.key) }
        let lost = kept.filter { opened.held[$0.sessionID] != nil && held[$0.sessionID] == nil && opened.outcomes[$0.sessionID] == nil }
        for (session, outcome) in try await open(lost, identity: identity, trust: trust, held: [:]) { outcomes[session] = outcome }

        var good: [ReceivedEnvelope] = []
        var refusals: [SyncIssue] = []
        for item in outcomes.values.compactMap({ try? $0.get() }).sorted(by: { $0.sessionID.canonicallyPrecedes($1.sessionID) }) {
            if let held = held[item.sessionID]?.generation, item.generation < held {
                refusals.append(SyncIssue(phase: .envelopes, code: .staleGeneration, rowID: item.sessionID.canonical,
                                          message: "the envelope for this session is of generation \(item.generation), older than the \(held) held; it was not stored"))
            } else if !item.authenticated && options.requireAuthenticated {
                recorder.report.trust?.rejectedEnvelopes += 1
                refusals.append(SyncIssue(phase: .envelopes, code: .unauthenticatedEnvelope, rowID: item.sessionID.canonical,
                                          message: "the envelope for this session is version 1 (no sender) and authenticated envelopes are required; it was not stored"))
            } else {
                if !item.authenticated { recorder.report.trust?.unauthenticatedEnvelopes += 1 }
                good.append(item)
            }
        }
        let failures = outcomes.compactMap { session, outcome -> (UUID, CryptoError)? in
            if case let .failure(error) = outcome { return (session, error) }
            return nil
        }.sorted { $0.0.canonicallyPrecedes($1.0) }
        try await local.upsertReceivedEnvelopes(good)
        // What the store holds beyond the listing is what it held before it (`stillHeld`): the
        // envelopes just stored are all listed. Nothing to delete costs no statement.
        entry.deleted = stillHeld.isSubset(of: listed) ? 0 : try await local.deleteReceivedEnvelopes(notIn: listed)
        entry.applied = good.count
        recorder.report.envelopesOpened += good.count
        entry.failed = failures.count + refusals.count
        entry.errors += refusals
        entry.errors += failures.map { session, error in
            if error == .unknownSender && trust != nil {
                recorder.report.trust?.rejectedEnvelopes += 1
                return SyncIssue(phase: .envelopes, code: .uncertifiedSender, rowID: session.canonical,
                                 message: "the envelope for this session was sealed by a device without a valid certificate; it was not stored")
            }
            return error == .unknownSender
                ? SyncIssue(phase: .envelopes, code: .unknownSender, rowID: session.canonical,
                            message: "the envelope for this session names a sender that is not one of the user's devices; it was not stored")
                : SyncIssue(phase: .envelopes, code: .envelopeUnreadable, rowID: session.canonical,
                            message: "the envelope for this session cannot be opened with this device's key; it was not stored")
        }
        recorder.emit(.envelopes, outcomes.count, outcomes.count, "Syncing envelopes...")
        if options.requestMissingSecrets {
            // What the store holds now: the envelopes kept from before or stored just now, for
            // sessions the remote still addresses to this device.
            let holding = Set(held.keys).union(good.map(\.sessionID)).intersection(listed)
            try await requestMissingSecrets(deviceID: identity.id, missing: sessions.subtracting(holding), entry: &entry, recorder: recorder)
        }
    }

    /// Asks for the secret of every session this phone holds no envelope for: one
    /// `session_secret_requests` row per such session, never a second while one is open
    /// (coordination.md). The desktop that owns the session serves it at its next push or watch
    /// tick. Nothing is asked when nothing is missing, nor of a remote without the table.
    func requestMissingSecrets(deviceID: UUID, missing: Set<UUID>, entry: inout PhaseReport, recorder: Recorder) async throws {
        guard !missing.isEmpty else { return }
        let open: [SecretRequestRow]
        do {
            open = try await remote.listOpenSecretRequests()
        } catch let error as RemoteStoreError where error.code == .missingTable {
            return
        }
        let asked = Set(open.filter { $0.requesterDeviceID == deviceID }.map(\.sessionID))
        var summary = SecretRequestSummary()
        summary.pending = missing.intersection(asked).count
        let new = missing.subtracting(asked).sorted { $0.canonicallyPrecedes($1) }
            .map { SecretRequestRow(userID: remote.userID, sessionID: $0, requesterDeviceID: deviceID) }
        if !new.isEmpty {
            let result = try await remote.insertSecretRequests(new)
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
