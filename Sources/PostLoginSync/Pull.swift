import Foundation
import LocalStore
import Logging
import RemoteStore
import SecretCrypto
import SyncModel
import Synchronization

// Pull (phone): own device row, repositories and sessions changed since the cursor plus an id
// listing to find deletions, then the envelopes addressed to this device.
extension SyncEngine {

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
        let recorder = Recorder(direction: .pull, deviceID: identity.id, progress: progress, logger: logger)
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
                if repositories.contains(item.record.repositoryID) {
                    result.0.append(item.record)
                } else {
                    result.1.append(item.record)
                }
            }
            try await local.applySessions(keep, retaining: ids)
            entry.applied = keep.count
            entry.skipped = orphans.count
            entry.errors += orphans.map {
                SyncIssue(
                    phase: .sessions, code: .missingRepository, rowID: $0.id.canonical,
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
            try await local.setCursor(
                PullCursor(updatedAt: earlier, id: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))),
                for: table)
        } else {
            try await local.setCursor(PullCursor(updatedAt: last.updatedAt, id: last.id), for: table)
        }
    }

    /// The envelopes addressed to this device as fetched, what the store held when they were,
    /// its generation marks, and the outcome of opening each one it did not already hold.
    struct OpenedEnvelopes: Sendable {
        var fetched: [EnvelopeRecord]
        var held: [UUID: ReceivedEnvelope]
        var marks: [UUID: GenerationMark]
        var outcomes: [UUID: Result<OpenedEnvelope, CryptoError>]
    }

    /// An envelope that opened, as it would be stored.
    struct OpenedEnvelope: Sendable {
        var received: ReceivedEnvelope
        /// A version-1 envelope whose secret differs from the last one stored for its session
        /// (held now, or kept in the history when the session was deleted).
        var changesSecret: Bool
    }

    /// Fetches the envelopes addressed to this device and opens every one the store does not
    /// already hold; the plaintext is dropped at once, never stored. Touches neither the report
    /// nor the store's rows: it runs while the sessions are applied.
    func fetchAndOpenEnvelopes(identity: DeviceIdentity, trust: TrustSnapshot?) async throws -> OpenedEnvelopes {
        let fetched = try await remote.fetchEnvelopes(addressedTo: identity.id)
        var held: [UUID: ReceivedEnvelope] = [:]
        for item in try await local.receivedEnvelopes() { held[item.sessionID] = item }
        let marks = try await local.generationMarks()
        let fresh = fetched.filter {
            held[$0.sessionID]?.envelope
                != SecretEnvelope(ephemeralPublicKey: $0.ephemeralPublicKey, encryptedSecret: $0.encryptedSecret)
        }
        return OpenedEnvelopes(
            fetched: fetched, held: held, marks: marks,
            outcomes: try await open(fresh, identity: identity, trust: trust, held: held, marks: marks))
    }

    /// Opens `envelopes`, each against the last envelope stored for its session: the one held
    /// (`held`), or for a session deleted since, the one its history kept at its mark.
    ///
    /// With verified trust (`trust` given), a version-2 envelope's sender is resolved only to its
    /// certified key; without it, among the user's own devices (a row of another user, or one
    /// listed twice, resolves to nothing).
    func open(
        _ envelopes: [EnvelopeRecord], identity: DeviceIdentity, trust: TrustSnapshot?,
        held: [UUID: ReceivedEnvelope], marks: [UUID: GenerationMark]
    ) async throws -> [UUID: Result<OpenedEnvelope, CryptoError>] {
        guard !envelopes.isEmpty else { return [:] }
        var senderKeys: [UUID: X25519PublicKey] = [:]
        if let trust {
            for id in trust.certificates.keys { senderKeys[id] = trust.certifiedKey(of: id) }
        } else if envelopes.contains(where: { $0.ephemeralPublicKey.hasPrefix(SecretEnvelope.version2Prefix) }) {
            var seen = Set<UUID>(), repeated = Set<UUID>()
            for device in try await remote.listDevices() where device.userID == remote.userID {
                guard seen.insert(device.id).inserted else {
                    repeated.insert(device.id)
                    continue
                }
                if let text = device.publicKey, let key = try? X25519PublicKey(base64: text), !key.isLowOrder {
                    senderKeys[device.id] = key
                }
            }
            for id in repeated { senderKeys[id] = nil }
        }
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
                for item in part {
                    try Task.checkCancellation()
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

    /// Keeps, of the envelopes fetched and opened, those of sessions the store holds, that
    /// opened and that ``refusal(of:_:)`` lets through: an envelope that does not open is
    /// reported and never stored (a junk row must not displace a good envelope kept from an
    /// earlier pull, nor sit in the store looking like a secret).
    ///
    /// With verified trust (`trust` given), a sender without a valid certificate is refused
    /// (`uncertifiedSender`); a version-1 envelope, which names no sender, is kept marked
    /// unauthenticated while the session's owner is not certified, or refused with
    /// ``SyncOptions/requireAuthenticated``.
    func pullEnvelopes(
        _ opened: OpenedEnvelopes, identity: DeviceIdentity, trust: TrustSnapshot?, entry: inout PhaseReport,
        recorder: Recorder
    ) async throws {
        if let trust { entry.errors += trust.problems }
        let owners = try await local.sessionOwners()
        let sessions = Set(owners.keys)
        let kept = opened.fetched.filter { sessions.contains($0.sessionID) }
        let listed = Set(kept.map(\.sessionID))
        entry.skipped = opened.fetched.count - kept.count
        // Applying the sessions deleted the envelopes of the sessions it deleted. A session
        // deleted and written again in that one transaction (it changed on the remote between
        // the id listing and the rows) lost the envelope it held: its envelope is opened again.
        let stillHeld = try await local.receivedEnvelopeSessionIDs()
        let held = opened.held.filter { stillHeld.contains($0.key) }
        var outcomes = opened.outcomes.filter { listed.contains($0.key) }
        let lost = kept.filter {
            opened.held[$0.sessionID] != nil && held[$0.sessionID] == nil && opened.outcomes[$0.sessionID] == nil
        }
        for (session, outcome) in try await open(lost, identity: identity, trust: trust, held: [:], marks: opened.marks)
        {
            outcomes[session] = outcome
        }

        var good: [ReceivedEnvelope] = []
        var refusals: [SyncIssue] = []
        for item in outcomes.values.compactMap({ try? $0.get() }).sorted(by: {
            $0.received.sessionID.canonicallyPrecedes($1.received.sessionID)
        }) {
            let session = item.received.sessionID
            let owner = owners[session]
            let context = EnvelopeContext(
                mark: opened.marks[session], owner: owner,
                ownerCertified: trust.map { trust in
                    owner.map { trust.certificates[$0] != nil || trust.revocations[$0] != nil } ?? false
                } ?? false,
                verified: trust != nil, requireAuthenticated: options.requireAuthenticated,
                window: options.generationWindow)
            if let (code, message) = Self.refusal(of: item, context) {
                recorder.report.trust?.rejectedEnvelopes += 1
                refusals.append(SyncIssue(phase: .envelopes, code: code, rowID: session.canonical, message: message))
            } else {
                if !item.received.authenticated { recorder.report.trust?.unauthenticatedEnvelopes += 1 }
                good.append(item.received)
            }
        }
        if let trust {
            // A sender revoked since: what it sealed stays readable, but the revoked device knows
            // the secret. Counted at every pull while such an envelope is held.
            let revoked = held.values.filter { $0.senderDeviceID.map { trust.revocations[$0] != nil } ?? false }
            recorder.report.trust?.revokedSenderEnvelopes = revoked.count
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
                    message: "the envelope for this session cannot be opened with this device's key; it was not stored")
        }
        recorder.emit(.envelopes, outcomes.count, outcomes.count, "Syncing envelopes...")
        if options.requestMissingSecrets {
            // What the store holds now: the envelopes kept from before or stored just now, for
            // sessions the remote still addresses to this device.
            let holding = Set(held.keys).union(good.map(\.sessionID)).intersection(listed)
            try await requestMissingSecrets(
                deviceID: identity.id, missing: sessions.subtracting(holding), entry: &entry, recorder: recorder)
        }
    }

    /// Asks for the secret of every session this phone holds no envelope for: one
    /// `session_secret_requests` row per such session, never a second while one is open
    /// (coordination.md). The desktop that owns the session serves it at its next push or watch
    /// tick. Nothing is asked when nothing is missing, nor of a remote without the table.
    func requestMissingSecrets(
        deviceID: UUID, missing: Set<UUID>, entry: inout PhaseReport, recorder: Recorder
    ) async throws {
        guard !missing.isEmpty else { return }
        let open: [SecretRequestRow]
        do {
            open = try await remote.secretRequests().listOpenSecretRequests()
        } catch let error as RemoteStoreError where error.code == .missingTable {
            return
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
