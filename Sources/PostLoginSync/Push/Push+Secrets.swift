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
        entry.errors += decisions.compactMap(\.issue)
        if trust != nil {
            let standings = decisions.compactMap(\.decision.trust)
            recorder.report.trust?.verified = standings.filter { $0 == .verified }.count
            recorder.report.trust?.unverified = standings.filter { $0 == .unverified }.count
            recorder.report.trust?.revoked = standings.filter { $0 == .revoked }.count
            recorder.report.trust?.keyMismatch = decisions.filter { $0.issue?.code == .keyMismatch }.count
        }
        let recipients = decisions.compactMap(\.recipient)
        // This desktop's own row no longer lists what it reads (another client rewrote
        // capabilities): advertise again at the next run.
        if let me = devices.first(where: { $0.id == identity.id }),
            !Set(options.envelopeVersions).isSubset(of: me.envelopeVersions)
        {
            try await local.setSetting(.advertisedVersions, nil)
        }
        let plan = try await planSealing(
            identity: identity, recipients: recipients, revoked: Set(trust?.revocations.keys.map { $0 } ?? []),
            sealable: sealable, entry: &entry, recorder: recorder)
        entry.sent = plan.needed
        entry.skipped = plan.own.count * recipients.count - plan.needed
        guard plan.needed > 0 else { return }
        try await sealAndUpload(plan, identity: identity, key: key, entry: &entry, recorder: recorder)
    }

    /// What a push seals: exactly the pairs whose ledger entry is missing or names another key
    /// than the recipient's, and those a device asked for.
    struct SealPlan: Sendable {
        /// This desktop's sessions the push may seal.
        var own: Set<UUID>
        var recipients: [Recipient]
        /// Recipients the ledger does not cover for every session.
        var partial: [Recipient]
        /// Each recipient's ledger mark (its key and envelope version).
        var marks: [UUID: String]
        /// Open requests served by this push: their ids, by pair.
        var requested: [EnvelopePair: [UUID]]
        var writesV2: Bool
        /// Pairs to seal.
        var needed: Int
    }

    /// Makes the ledger say what the remote holds, deletes the envelopes of devices that no
    /// longer qualify, and counts the pairs to seal from the ledger's coverage, without reading
    /// the entries.
    func planSealing(
        identity: DeviceIdentity, recipients: [Recipient], revoked: Set<UUID>, sealable: Set<UUID>,
        entry: inout PhaseReport, recorder: Recorder
    ) async throws -> SealPlan {
        let recipientIDs = Set(recipients.map(\.deviceID))
        let writesV2 = options.envelopeVersions.contains(2)
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
            entry.deleted += try await remote.deleteEnvelopes(.pairs(Array(stale))) ?? stale.count
            try await local.deleteLedgerEntries(pairs: stale.map { ($0.sessionID, $0.deviceID) })
        }

        // A device that asked holds none it can open, whatever the ledger says.
        let requested = try await openRequests(
            own: ownIDs, recipients: recipientIDs, revoked: revoked, recorder: recorder)
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
        return SealPlan(
            own: ownIDs, recipients: recipients, partial: partial, marks: marks, requested: requested,
            writesV2: writesV2, needed: needed)
    }

    /// Seals and uploads what `plan` names through a ``Pipeline``: a chunk uploads (in
    /// ``SyncOptions/uploadConcurrency`` streams) while the next is sealed (on every core) and the
    /// one after is read, so the crypto hides behind the network and the database, and memory
    /// stays flat however many sessions there are. The ledger records each batch the remote
    /// accepted; requests whose envelope the remote accepted are fulfilled.
    func sealAndUpload(
        _ plan: SealPlan, identity: DeviceIdentity, key: X25519PrivateKey, entry: inout PhaseReport,
        recorder: Recorder
    ) async throws {
        let total = plan.needed
        let done = Counter()
        let progress = recorder.progress
        let served = Mutex(Set<EnvelopePair>())
        let (local, remote, marks, requested) = (self.local, self.remote, plan.marks, plan.requested)
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
        let (uploadConcurrency, uploadPartRows) = (options.uploadConcurrency, options.uploadPartRows)
        let pipeline = Pipeline<[SealWork], ([EnvelopeRecord], [SyncIssue]), [EnvelopeRecord], BulkWriteResult>(
            transform: { [self] work in try await seal(work, key: key, sender: identity.id, writesV2: plan.writesV2) },
            write: { [self] sealed in
                let parts = try await inParallel(sealed, workers: uploadConcurrency, minimumSlice: uploadPartRows) {
                    try await remote.upsertEnvelopes($0, onBatchAccepted: handler)
                }
                return BulkWriteResult(
                    accepted: parts.map(\.accepted).reduce(0, +), rejected: parts.flatMap(\.rejected))
            })
        var reader = SealWorkReader(
            local: local, sessions: plan.own, partial: plan.partial, all: plan.recipients, marks: marks,
            requested: requested, chunkPairs: options.sealChunk)
        try await pipeline.run(
            reading: { emit in while let chunk = try await reader.next() { try await emit(chunk) } },
            check: { sealed, problems in
                recorder.report.envelopesSealed += sealed.count
                entry.errors += problems
                entry.failed += problems.count
                if ledgerFirst { try await record(sealed) }
                return sealed
            },
            written: { result in
                entry.applied += result.accepted
                entry.failed += result.rejected.count
                entry.errors += Self.issues(result.rejected, phase: .secrets)
            })
        // Requests whose envelope the remote accepted are fulfilled; the others stay open and
        // are served at the next push.
        let fulfilled = Set(served.withLock { $0 }.flatMap { requested[$0] ?? [] })
        if !fulfilled.isEmpty {
            try await remote.fulfilSecretRequests(ids: fulfilled)
            recorder.report.secretRequests?.fulfilled = fulfilled.count
        }
    }

    /// The open secret requests for this desktop's sessions (coordination.md), by pair: each
    /// from a device that qualifies is served; each from one that does not is counted in the
    /// report (with the device) and left open, not an error: the recipient policy decided, and
    /// the device may qualify later. One from a device the verified log revoked never will: it
    /// is counted once and closed (marked fulfilled, the one way a desktop closes a request), so
    /// no later push or watch refuses it again. Nothing when the remote has no requests table.
    func openRequests(
        own: Set<UUID>, recipients: Set<UUID>, revoked: Set<UUID>, recorder: Recorder
    ) async throws -> [EnvelopePair: [UUID]] {
        let open: [SecretRequestRow]
        do {
            open = try await remote.listOpenSecretRequests().filter { own.contains($0.sessionID) }
        } catch let error as RemoteStoreError where error.code == .missingTable {
            return [:]
        }
        var summary = SecretRequestSummary()
        summary.open = open.count
        var served: [EnvelopePair: [UUID]] = [:]
        var settled: Set<UUID> = []
        for request in open {
            if recipients.contains(request.requesterDeviceID) {
                served[EnvelopePair(sessionID: request.sessionID, deviceID: request.requesterDeviceID), default: []]
                    .append(request.id)
            } else {
                if revoked.contains(request.requesterDeviceID) { settled.insert(request.id) }
                summary.refused += 1
                if !summary.refusedDevices.contains(request.requesterDeviceID) {
                    summary.refusedDevices.append(request.requesterDeviceID)
                }
            }
        }
        if !settled.isEmpty {
            do {
                try await remote.fulfilSecretRequests(ids: settled)
            } catch {
                // Closing is housekeeping: the next push tries again, and nothing is sealed for them.
                logger?.warning("secret requests of revoked devices not closed: \(error)")
            }
        }
        if !open.isEmpty { recorder.report.secretRequests = summary }
        return served
    }
}
