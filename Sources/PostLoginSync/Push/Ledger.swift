import EnvelopeDigest
import Foundation
import LocalStore
import Logging
import RemoteStore
import SecretCrypto
import SyncModel
import Synchronization

// The push's ledger: made to say what the remote holds, and revocations honoured in it.
extension SyncEngine {
    /// Honours verified revocations (trust.md): deletes the envelopes this desktop addressed to
    /// revoked devices and rotates the secret of every session that is not ended and that a
    /// revoked device had received (the ledger knows which): a fresh secret, generation + 1,
    /// sealed at rest; the earlier generation stays in the store. The sessions' ledger entries
    /// go with the rotation, so the rest of the push seals the new secret to every recipient.
    func applyRevocations(
        _ trust: TrustSnapshot, identity: DeviceIdentity, entry: inout PhaseReport, recorder: Recorder
    ) async throws {
        let revoked = Set(trust.revocations.keys)
        guard !revoked.isEmpty else { return }
        // Only the revoked devices' entries: a revocation stays known for good, so this runs at every push.
        let hit = try await local.ledger(recipients: revoked)
        guard !hit.isEmpty else { return }
        let recipients = Set(hit.map(\.recipientDeviceID))
        entry.deleted += try await remote.deleteEnvelopes(.recipients(recipients)) ?? 0
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
            return try await reconcileByListing(own: own, recipients: recipients, recorder: recorder)
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

    /// ``reconcileLedger(owner:own:recipients:expected:recorder:)`` on a remote without a
    /// digest: every pair is listed, and the ledger forgets the pairs the remote lost (a row
    /// another writer replaced goes unnoticed then).
    func reconcileByListing(own: Set<UUID>, recipients: Set<UUID>, recorder: Recorder) async throws -> Set<EnvelopePair>
    {
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
}
