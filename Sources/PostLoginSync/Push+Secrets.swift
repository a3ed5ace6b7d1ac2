import EnvelopeDigest
import Foundation
import LocalStore
import Logging
import RemoteStore
import SecretCrypto
import SyncModel
import Synchronization

// The push's secrets phase: the recipients, revocations, the ledger reconciled with the
// remote, and the sealing pipeline that seals exactly the pairs that are missing.
extension SyncEngine {
    /// Seals the secrets of the sessions in `sealable` (those whose rows are on the remote)
    /// for every recipient that lacks them.
    func pushSecrets(
        identity: DeviceIdentity, key: X25519PrivateKey, trust: TrustSnapshot?, sealable: Set<UUID>,
        entry: inout PhaseReport, recorder: Recorder
    ) async throws {
        let devices = try await remote.listDevices()
        if let trust {
            try await applyRevocations(trust, identity: identity, entry: &entry, recorder: recorder)
        }
        let decisions = RecipientPolicy.decide(
            devices, userID: remote.userID, selfID: identity.id, options: options.recipients,
            trust: trust, selfKey: identity.publicKey)
        recorder.report.recipients = decisions.map(\.decision)
        let finished = await finishRevocations(
            decisions.compactMap { $0.issue?.code == .revokedDevice ? $0.decision.deviceID : nil })
        entry.errors += decisions.compactMap(\.issue).filter {
            !($0.code == .revokedDevice && finished.contains($0.rowID ?? ""))
        }
        if trust != nil {
            let standings = decisions.compactMap(\.decision.trust)
            recorder.report.trust?.verified = standings.filter { $0 == .verified }.count
            recorder.report.trust?.unverified = standings.filter { $0 == .unverified }.count
            recorder.report.trust?.revoked = standings.filter { $0 == .revoked }.count
            recorder.report.trust?.keyMismatch = decisions.filter { $0.issue?.code == .keyMismatch }.count
        }
        let recipients = decisions.compactMap(\.recipient)
        let recipientIDs = Set(recipients.map(\.deviceID))
        let writesV2 = options.envelopeVersions.contains(2)
        // This desktop's own row no longer lists what it reads (another client rewrote
        // capabilities): advertise again at the next run.
        if let me = devices.first(where: { $0.id == identity.id }),
            !Set(options.envelopeVersions).isSubset(of: me.envelopeVersions)
        {
            try await local.setSetting(.advertisedVersions, nil)
        }
        let ownIDs = try await local.ownSessionIDs().intersection(sealable)
        // First the ledger is made to say what the remote holds; from then on it alone decides.
        var stale = try await reconcileLedger(
            owner: identity.id, own: ownIDs, recipients: recipientIDs,
            expected: ownIDs.count * recipients.count, recorder: recorder)
        let coverage = try await local.ledgerCoverage()

        // Envelopes of this desktop's sessions for devices that no longer qualify go.
        let gone = Set(coverage.map(\.recipientDeviceID)).subtracting(recipientIDs)
        if !gone.isEmpty {
            stale.formUnion(
                try await local.ledger(recipients: gone).filter { ownIDs.contains($0.sessionID) }
                    .map { EnvelopePair(sessionID: $0.sessionID, deviceID: $0.recipientDeviceID) })
        }
        if !stale.isEmpty {
            entry.deleted = try await remote.deleteEnvelopes(pairs: Array(stale)) ?? stale.count
            try await local.deleteLedgerEntries(pairs: stale.map { ($0.sessionID, $0.deviceID) })
        }

        // Exactly the pairs whose ledger entry is missing or names another key than the
        // recipient's, and those a device asked for (it holds none it can open, whatever the
        // ledger says). Counted first from the ledger's coverage, without reading the entries.
        let requested = try await openRequests(own: ownIDs, recipients: recipientIDs, recorder: recorder)
        let marks = Dictionary(
            recipients.map { ($0.deviceID, $0.ledgerMark(version: $0.version(writingVersion2: writesV2))) },
            uniquingKeysWith: { first, _ in first })
        let covered = Dictionary(
            coverage.filter { marks[$0.recipientDeviceID] == $0.recipientKeyFingerprint }.map {
                ($0.recipientDeviceID, $0.sessions)
            },
            uniquingKeysWith: +)
        let partial = recipients.filter { (covered[$0.deviceID] ?? 0) < ownIDs.count }
        var needed = partial.reduce(0) { $0 + ownIDs.count - (covered[$1.deviceID] ?? 0) }
        if !requested.isEmpty {
            // A requested pair the ledger already covers is sealed again too.
            let held = try await local.ledger(sessions: Set(requested.keys.map(\.sessionID)))
            needed +=
                held.filter {
                    requested[EnvelopePair(sessionID: $0.sessionID, deviceID: $0.recipientDeviceID)] != nil
                        && marks[$0.recipientDeviceID] == $0.recipientKeyFingerprint
                }.count
        }
        entry.sent = needed
        entry.skipped = ownIDs.count * recipients.count - needed
        guard needed > 0 else { return }

        let total = needed
        let done = Counter()
        let progress = recorder.progress
        let served = Mutex(Set<EnvelopePair>())
        let local = self.local
        let remote = self.remote
        let ledgerFirst = options.ledgerBeforeAcceptance
        let record: @Sendable ([EnvelopeRecord]) async throws -> Void = { batch in
            let now = Date()
            try await local.recordDistributions(
                batch.map {
                    LedgerEntry(
                        sessionID: $0.sessionID, recipientDeviceID: $0.deviceID,
                        recipientKeyFingerprint: marks[$0.deviceID] ?? "", sentAt: now,
                        ephemeralPublicKey: $0.ephemeralPublicKey)
                })
        }
        let handler: BatchHandler<EnvelopeRecord> = { batch in
            if !ledgerFirst { try await record(batch) }
            if !requested.isEmpty {
                let pairs = batch.map { EnvelopePair(sessionID: $0.sessionID, deviceID: $0.deviceID) }.filter {
                    requested[$0] != nil
                }
                served.withLock { $0.formUnion(pairs) }
            }
            let completed = done.add(batch.count)
            progress?(SyncProgress(phase: .secrets, completed: completed, total: total))
        }
        let uploadConcurrency = options.uploadConcurrency
        let uploadPartRows = options.uploadPartRows
        // A pipeline: a chunk uploads (in `uploadConcurrency` streams) while the next is read and
        // sealed, so the crypto hides behind the network and the database. One chunk uploading
        // and one sealing at most: memory stays flat however many sessions there are.
        let results = try await withThrowingTaskGroup(of: BulkWriteResult.self) { group in
            var results: [BulkWriteResult] = []
            var uploading = 0
            var reader = SealWorkReader(
                local: local, sessions: ownIDs, partial: partial, all: recipients, marks: marks,
                requested: requested, chunkPairs: options.sealChunk)
            while let chunk = try await reader.next() {
                let (sealed, problems) = try await seal(chunk, key: key, sender: identity.id, writesV2: writesV2)
                recorder.report.envelopesSealed += sealed.count
                entry.errors += problems
                entry.failed += problems.count
                if uploading > 0, let result = try await group.next() {
                    results.append(result)
                    uploading -= 1
                }
                if ledgerFirst { try await record(sealed) }
                group.addTask {
                    let parts = try await self.inParallel(
                        sealed, workers: uploadConcurrency, minimumSlice: uploadPartRows
                    ) { part in
                        try await remote.upsertEnvelopes(part, onBatchAccepted: handler)
                    }
                    return BulkWriteResult(
                        accepted: parts.map(\.accepted).reduce(0, +), rejected: parts.flatMap(\.rejected))
                }
                uploading += 1
            }
            for try await result in group { results.append(result) }
            return results
        }
        for result in results {
            entry.applied += result.accepted
            entry.failed += result.rejected.count
            entry.errors += Self.issues(result.rejected, phase: .secrets)
        }
        // Requests whose envelope the remote accepted are fulfilled; the others stay open and
        // are served at the next push.
        let fulfilled = Set(served.withLock { $0 }.flatMap { requested[$0] ?? [] })
        if !fulfilled.isEmpty {
            try await remote.secretRequests().fulfilSecretRequests(ids: fulfilled)
            recorder.report.secretRequests?.fulfilled = fulfilled.count
        }
    }

    /// Reads the sealing work from the store in chunks of about ``SyncOptions/sealChunk`` pairs,
    /// a page of sessions at a time: each session's own secret with the `partial` recipients
    /// whose ledger entry is missing or names another key, and the recipients that asked for it.
    /// When every recipient is covered, only the requested sessions are read.
    struct SealWorkReader {
        let local: DeviceStore
        /// The sessions this push may seal; the store may hold newer ones.
        let sessions: Set<UUID>
        let partial: [Recipient]
        let marks: [UUID: String]
        let chunkPairs: Int
        /// Recipients that asked, by session.
        var requested: [UUID: [Recipient]]
        var after: UUID?
        var finished = false

        init(
            local: DeviceStore, sessions: Set<UUID>, partial: [Recipient], all: [Recipient], marks: [UUID: String],
            requested: [EnvelopePair: [UUID]], chunkPairs: Int
        ) {
            self.local = local
            self.sessions = sessions
            self.partial = partial
            self.marks = marks
            self.chunkPairs = max(1, chunkPairs)
            let byID = Dictionary(all.map { ($0.deviceID, $0) }, uniquingKeysWith: { first, _ in first })
            var bySession: [UUID: [Recipient]] = [:]
            for pair in requested.keys {
                if let recipient = byID[pair.deviceID] { bySession[pair.sessionID, default: []].append(recipient) }
            }
            self.requested = bySession
        }

        /// The next chunk, or `nil` when the work is done.
        mutating func next() async throws -> [SealWork]? {
            var chunk: [SealWork] = []
            var pairs = 0
            while !finished && pairs < chunkPairs {
                try Task.checkCancellation()
                var page: [(sessionID: UUID, sealed: OwnSealedSecret)]
                if partial.isEmpty {
                    // Only requested sessions: read them by id, in id order, a page at a time.
                    let ids = requested.keys.filter { after == nil || $0.canonical > after!.canonical }
                        .sorted { $0.canonicallyPrecedes($1) }.prefix(chunkPairs)
                    page = try await local.ownSealedSecrets(sessions: Set(ids)).map {
                        (sessionID: $0.key, sealed: $0.value)
                    }
                    .sorted { $0.sessionID.canonicallyPrecedes($1.sessionID) }
                    if ids.count < chunkPairs { finished = true }
                    after = ids.last ?? after
                } else {
                    page = try await local.ownSealedSecrets(
                        after: after, limit: max(1, (chunkPairs - pairs) / partial.count))
                    if page.isEmpty { finished = true }
                    after = page.last?.sessionID ?? after
                    page.removeAll { !sessions.contains($0.sessionID) }
                }
                guard !page.isEmpty else { continue }
                var ledger: [UUID: [UUID: String]] = [:]
                if !partial.isEmpty {
                    // Only the partial recipients' entries: after a new device, one entry a session
                    // instead of one per recipient (40,000 entries a page at size L).
                    for item in try await local.ledger(
                        recipients: Set(partial.map(\.deviceID)), sessions: Set(page.map(\.sessionID)))
                    {
                        ledger[item.sessionID, default: [:]][item.recipientDeviceID] = item.recipientKeyFingerprint
                    }
                }
                for (session, own) in page {
                    var missing = partial.filter { ledger[session]?[$0.deviceID] != marks[$0.deviceID] }
                    for recipient in requested[session] ?? []
                    where !missing.contains(where: { $0.deviceID == recipient.deviceID }) {
                        missing.append(recipient)
                    }
                    guard !missing.isEmpty else { continue }
                    chunk.append(SealWork(session: session, own: own, recipients: missing))
                    pairs += missing.count
                }
            }
            return chunk.isEmpty ? nil : chunk
        }
    }

    /// The open secret requests for this desktop's sessions (coordination.md), by pair: each
    /// from a device that qualifies is served; each from one that does not is counted in the
    /// report (with the device) and left open, not an error: the recipient policy decided.
    /// Nothing when the remote has no requests table.
    func openRequests(own: Set<UUID>, recipients: Set<UUID>, recorder: Recorder) async throws -> [EnvelopePair: [UUID]]
    {
        let open: [SecretRequestRow]
        do {
            open = try await remote.secretRequests().listOpenSecretRequests().filter { own.contains($0.sessionID) }
        } catch let error as RemoteStoreError where error.code == .missingTable {
            return [:]
        }
        var summary = SecretRequestSummary()
        summary.open = open.count
        var served: [EnvelopePair: [UUID]] = [:]
        for request in open {
            if recipients.contains(request.requesterDeviceID) {
                served[EnvelopePair(sessionID: request.sessionID, deviceID: request.requesterDeviceID), default: []]
                    .append(request.id)
            } else {
                summary.refused += 1
                if !summary.refusedDevices.contains(request.requesterDeviceID) {
                    summary.refusedDevices.append(request.requesterDeviceID)
                }
            }
        }
        if !open.isEmpty { recorder.report.secretRequests = summary }
        return served
    }

    /// Honours verified revocations (trust.md): deletes the envelopes this desktop addressed to
    /// revoked devices and rotates the secret of every session that is not ended and that a
    /// revoked device had received (the ledger knows which): a fresh secret, generation + 1,
    /// sealed at rest; the earlier generation stays in the store. The sessions' ledger entries
    /// go with the rotation, so the rest of the push seals the new secret to every recipient.
    /// Devices a verified revocation names whose row is still active: a revocation interrupted
    /// after it was appended (`trust revoke` killed before it tidied up). Finishes it as
    /// ``DeviceTrustManager/revoke(_:keepRecoveryKey:now:)`` would: every envelope addressed to
    /// the device goes, and its row becomes inactive. They receive nothing either way; this keeps
    /// them from being reported at every push. Returns the ids (canonical) finished.
    func finishRevocations(_ devices: [UUID]) async -> Set<String> {
        guard !devices.isEmpty, let tables = try? remote.trustTables() else { return [] }
        var finished = Set<String>()
        for id in devices {
            do {
                _ = try await remote.deleteEnvelopes(recipients: [id])
                try await tables.setDeviceActive(id, isActive: false)
                finished.insert(id.canonical)
                logger?.notice("revocations: finished the interrupted revocation of device \(id.canonical)")
            } catch {
                logger?.warning("revocations: could not finish the revocation of device \(id.canonical): \(error)")
            }
        }
        return finished
    }

    func applyRevocations(
        _ trust: TrustSnapshot, identity: DeviceIdentity, entry: inout PhaseReport, recorder: Recorder
    ) async throws {
        let revoked = Set(trust.revocations.keys)
        guard !revoked.isEmpty else { return }
        // Only the revoked devices' entries: a revocation stays known for good, so this runs at every push.
        let hit = try await local.ledger(recipients: revoked)
        guard !hit.isEmpty else { return }
        let recipients = Set(hit.map(\.recipientDeviceID))
        entry.deleted += try await remote.deleteEnvelopes(recipients: recipients) ?? 0
        let touched = Set(hit.map(\.sessionID))
        let active = Set(try await local.sessions().filter { touched.contains($0.id) && $0.status != .ended }.map(\.id))
        let own = try await local.ownSealedSecrets()
        var rotations: [(sessionID: UUID, sealed: OwnSealedSecret)] = []
        for session in active.sorted(by: { $0.canonicallyPrecedes($1) }) {
            guard let current = own[session] else { continue }
            let envelope = try SecretEnvelope.seal(
                SessionSecret(), for: identity.publicKey, sessionID: SessionID(session))
            rotations.append((session, OwnSealedSecret(envelope: envelope, generation: current.generation + 1)))
        }
        try await local.rotateOwnSecrets(rotations)
        try await local.deleteLedgerEntries(recipients: recipients)
        recorder.report.trust?.sessionsRotated = rotations.count
        logger?.notice(
            "revocations: \(recipients.count) revoked devices had envelopes; \(rotations.count) session secrets rotated"
        )
    }

    /// Makes the ledger of this desktop's sessions say what the remote holds, so that from then
    /// on the ledger alone decides what to seal: entries whose row the remote lost, or whose row
    /// another writer replaced, are forgotten (sealed again); entries older than the ledger's
    /// key column adopt the remote's key. Returns the remote's rows of this desktop's sessions
    /// for devices that are not recipients, to delete.
    ///
    /// By digest when the remote has one: the ledger's digest (kept per session by the store)
    /// is compared with the remote's in one request, and only the buckets that differ are
    /// listed. Without a digest function, every pair is listed (a replaced row goes unnoticed then).
    func reconcileLedger(
        owner: UUID, own: Set<UUID>, recipients: Set<UUID>, expected: Int,
        recorder: Recorder
    ) async throws -> Set<EnvelopePair> {
        let buckets = SecretDigest.bucketCount(forPairs: expected, rowsPerBucket: options.rowsPerDigestBucket)
        // The remote computes its digest while the ledger's is read: at 1,000,000 pairs each
        // side takes about half a second.
        async let asked = remote.secretDigest(ownerDeviceID: owner, buckets: buckets)
        // Sessions with entries that recorded no key cannot be hashed: their buckets are listed.
        let unhashed = try await local.sessionsWithUnhashedLedgerEntries()
        let localDigest = try await local.ledgerDigest(buckets: buckets)
        let remoteDigest: [DigestBucket]
        do {
            remoteDigest = try await asked
        } catch let error as RemoteStoreError where error.code == .missingFunction {
            logger?.notice("the remote has no envelope digest; listing every envelope pair")
            let listed = try await remote.listEnvelopePairs()
            recorder.report.reconciliation = Reconciliation(method: .listing, rowsListed: listed.count)
            let present = Set(listed.filter { own.contains($0.sessionID) })
            let lost = try await local.ledger().filter { own.contains($0.sessionID) }
                .map { EnvelopePair(sessionID: $0.sessionID, deviceID: $0.recipientDeviceID) }.filter {
                    !present.contains($0)
                }
            try await local.deleteLedgerEntries(pairs: lost.map { ($0.sessionID, $0.deviceID) })
            return present.filter { !recipients.contains($0.deviceID) }
        }
        var differing = Set(unhashed.map { SecretDigest.bucket(of: $0, buckets: buckets) })
        let remoteByBucket = Dictionary(remoteDigest.map { ($0.bucket, $0) }, uniquingKeysWith: { first, _ in first })
        for bucket in Set(localDigest.keys).union(remoteByBucket.keys)
        where localDigest[bucket] != remoteByBucket[bucket] {
            differing.insert(bucket)
        }
        let sessions: Set<UUID> =
            differing.isEmpty ? [] : own.filter { differing.contains(SecretDigest.bucket(of: $0, buckets: buckets)) }
        // The digests counted the rows of these buckets: a listing that passes the larger count
        // (by a margin for writes between the digest and the listing) is a server that never
        // ends, refused at once rather than after the client's general limits.
        let counted = differing.reduce(0) { $0 + max(remoteByBucket[$1]?.pairs ?? 0, localDigest[$1]?.pairs ?? 0) }
        let listed =
            sessions.isEmpty
            ? [] : try await remote.listEnvelopeKeys(sessions: sessions, atMost: counted + max(256, counted / 8))
        recorder.report.reconciliation = Reconciliation(
            method: .digest, buckets: buckets, bucketsListed: differing.count, rowsListed: listed.count)
        guard !sessions.isEmpty else { return [] }

        let held = Dictionary(listed.map { ($0.pair, $0.ephemeralPublicKey) }, uniquingKeysWith: { first, _ in first })
        var forgotten: [(sessionID: UUID, recipientDeviceID: UUID)] = []
        var adopted: [(sessionID: UUID, recipientDeviceID: UUID, ephemeralPublicKey: String)] = []
        for entry in try await local.ledger(sessions: sessions) {
            switch (
                entry.ephemeralPublicKey,
                held[EnvelopePair(sessionID: entry.sessionID, deviceID: entry.recipientDeviceID)]
            ) {
            case (_, nil):
                forgotten.append((entry.sessionID, entry.recipientDeviceID))
            case (nil, let theirs?):
                adopted.append((entry.sessionID, entry.recipientDeviceID, theirs))
            case (let mine?, let theirs?) where mine != theirs:
                forgotten.append((entry.sessionID, entry.recipientDeviceID))
            default:
                break
            }
        }
        if !forgotten.isEmpty { try await local.deleteLedgerEntries(pairs: forgotten) }
        if !adopted.isEmpty { try await local.adoptLedgerKeys(adopted) }
        return Set(listed.map(\.pair).filter { !recipients.contains($0.deviceID) })
    }

    /// One session's own secret and the recipients it must be sealed to.
    struct SealWork: Sendable {
        let session: UUID
        let own: OwnSealedSecret
        let recipients: [Recipient]
    }

    /// Opens each session's own secret once and seals it for its recipients (version 2,
    /// authenticated by this desktop's key, to those that read it; version 1 to the rest),
    /// spread over ``SyncOptions/cryptoConcurrency`` tasks.
    func seal(
        _ work: [SealWork], key: X25519PrivateKey, sender: UUID, writesV2: Bool
    ) async throws -> ([EnvelopeRecord], [SyncIssue]) {
        let parts = try await inParallel(work) { part in
            var sealed: [EnvelopeRecord] = []
            var problems: [SyncIssue] = []
            // DH(this desktop's key, each recipient's key), once per recipient for this task's
            // part of the push; wiped when the task ends, never stored.
            var exchanges = RecipientExchanges()
            for item in part {
                try Task.checkCancellation()
                let sessionID = SessionID(item.session)
                let secret: SessionSecret
                do {
                    secret = try item.own.envelope.open(sessionID: sessionID, using: key)
                } catch {
                    problems.append(
                        SyncIssue(
                            phase: .secrets, code: .secretUnreadable, rowID: item.session.canonical,
                            message: "this session's own secret cannot be opened with the device key"))
                    continue
                }
                for recipient in item.recipients {
                    do {
                        let envelope =
                            recipient.version(writingVersion2: writesV2) == 2
                            ? try SecretEnvelope.sealV2(
                                secret, for: recipient.publicKey, recipientDeviceID: recipient.deviceID,
                                sessionID: sessionID,
                                sender: key, senderDeviceID: sender, generation: item.own.generation,
                                exchanges: &exchanges)
                            : try SecretEnvelope.seal(secret, for: recipient.publicKey, sessionID: sessionID)
                        sealed.append(
                            EnvelopeRecord(
                                sessionID: item.session, deviceID: recipient.deviceID,
                                ephemeralPublicKey: envelope.ephemeralPublicKey,
                                encryptedSecret: envelope.encryptedSecret))
                    } catch {
                        problems.append(
                            SyncIssue(
                                phase: .secrets, code: .sealFailed,
                                rowID: "\(item.session.canonical)/\(recipient.deviceID.canonical)",
                                message: "\(error)"))
                    }
                }
            }
            return (sealed, problems)
        }
        return (parts.flatMap(\.0), parts.flatMap(\.1))
    }
}
