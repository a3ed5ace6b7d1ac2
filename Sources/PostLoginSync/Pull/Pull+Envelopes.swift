import EnvelopeDigest
import Foundation
import LocalStore
import Logging
import RemoteStore
import SecretCrypto
import SyncModel
import Synchronization

// Pull, the envelopes phase: rows that differ from what the store holds, opened and checked,
// then stored; secrets the phone lacks asked for.
extension SyncEngine {
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

    /// The envelopes phase: brings the store's record of the envelope rows addressed to this
    /// device up to date, then opens and checks every recorded row that differs from the envelope
    /// stored for its session, a chunk at a time.
    ///
    /// With the feed, the rows of the sessions it listed come with it, and the digest of every row
    /// says whether anything else changed; only then are the buckets that differ read (or, with
    /// nothing recorded yet, every row). Without a feed, every row is listed.
    ///
    /// A row that opens and that ``EnvelopeAcceptance`` lets through is stored; one that does not
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
        // Outside the user's trust log nothing is accepted; the report's trust note says why.
        if pull.unpaired { return }
        let identity = pull.identity
        let trust = pull.trust
        var batches = EnvelopeBatches(
            engine: self, identity: identity,
            senders: SenderKeys(remote: remote, trust: trust, known: pull.since == nil ? pull.changes?.devices : nil),
            rules: EnvelopeAcceptance(
                trust: trust, requireAuthenticated: options.requireAuthenticated, window: options.generationWindow),
            recorder: recorder)
        // Every row listed (a first pull, a remote without the feed): each page is recorded,
        // opened and stored as it arrives, while the next pages are fetched.
        var evaluated = Set<UUID>()
        if try await needsEveryEnvelopeRow(pull) {
            try await batches.run(&entry) { emit in
                try await PageQueue<EnvelopeRecord>().drain(
                    producing: { page in try await remote.fetchEnvelopes(addressedTo: identity.id, pages: page) },
                    consuming: { page in
                        evaluated.formUnion(page.map(\.sessionID))
                        try await emit(page)
                    })
            }
            // Everything listed is recorded before the rows the listing did not have go.
            try await local.deleteEnvelopeRows(notIn: evaluated)
        } else if let changes = pull.changes {
            try await refreshEnvelopeRows(changes, me: identity.id, recorder: recorder)
        }
        // Then every recorded row that differs from what is stored, a chunk at a time (rows
        // evaluated just now are not checked twice).
        try await batches.run(&entry) { emit in
            var after: UUID?
            while true {
                let chunk = try await local.pendingEnvelopeRows(after: after, limit: options.openChunk)
                guard let last = chunk.last else { break }
                after = last.sessionID
                let rest = chunk.filter { !evaluated.contains($0.sessionID) }
                if !rest.isEmpty { try await emit(rest) }
            }
        }
        // An envelope the remote no longer addresses here is deleted (its history keeps it).
        entry.deleted = try await local.deleteReceivedEnvelopesWithoutRows()
        if let trust {
            // A sender revoked since: what it sealed stays readable, but the revoked device knows
            // the secret. Counted at every pull while such an envelope is held.
            recorder.report.trust?.revokedSenderEnvelopes = try await local.receivedEnvelopeCount(
                sentBy: Set(trust.revocations.keys))
        }
        recorder.emit(.envelopes, batches.opened, batches.opened)
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
        guard recorded.count > 0 else {
            return try await recordAllEnvelopeRows(me, recorder: recorder)
        }
        let buckets = SecretDigest.bucketCount(
            forPairs: max(recorded.count, changes.envelopeRows.count), rowsPerBucket: options.rowsPerDigestBucket)
        let theirs = Dictionary(
            uniqueKeysWithValues: try await remote.recipientDigest(deviceID: me, buckets: buckets).map {
                ($0.bucket, $0)
            }
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
                recorder.emit(.envelopes, listed.count, 0, action: "Reading")
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
                open = try await remote.listOpenSecretRequests()
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
