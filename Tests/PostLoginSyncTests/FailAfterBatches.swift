import Foundation
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Synchronization
import Testing

@testable import LocalStore

/// Delegates to a real remote, and drops the connection after it accepted `envelopeBatches`
/// envelope batches (the handler is where the engine records the ledger, so the ledger holds
/// exactly what the remote accepted).
struct FailAfterBatches: SecretRequestRemote, EnvelopeDigestRemote {
    let base: any CompleteRemote
    let limit: Int
    let accepted = Counter()

    let sessionLimit: Int
    let sessionsAccepted = Counter()
    /// Sessions left out of the id listing, as if they were written after it was made.
    var unlisted: Set<UUID> = []

    /// Drops the connection after `envelopeBatches` envelope batches, or `sessionBatches`
    /// session batches, were accepted.
    init(_ base: any CompleteRemote, envelopeBatches: Int, sessionBatches: Int = .max) {
        self.base = base
        limit = envelopeBatches
        sessionLimit = sessionBatches
    }

    final class Counter: Sendable {
        let value = Mutex(0)
        func next() -> Int {
            value.withLock {
                $0 += 1
                return $0
            }
        }
    }

    var userID: UUID { base.userID }
    func upsertOwnDevice(_ device: OwnDeviceRow) async throws { try await base.upsertOwnDevice(device) }
    func listDevices() async throws -> [RemoteDevice] { try await base.listDevices() }
    func upsertRepositories(
        _ rows: [RepositoryRecord], onBatchAccepted: BatchHandler<RepositoryRecord>?
    ) async throws -> BulkWriteResult {
        try await base.upsertRepositories(rows, onBatchAccepted: onBatchAccepted)
    }
    func upsertSessions(
        _ rows: [SessionRecord], onBatchAccepted: BatchHandler<SessionRecord>?
    ) async throws -> BulkWriteResult {
        try await base.upsertSessions(rows) { batch in
            try await onBatchAccepted?(batch)
            if sessionsAccepted.next() >= sessionLimit {
                throw RemoteStoreError(.network, "connection reset (simulated)")
            }
        }
    }
    func upsertEnvelopes(
        _ rows: [EnvelopeRecord], onBatchAccepted: BatchHandler<EnvelopeRecord>?
    ) async throws -> BulkWriteResult {
        try await base.upsertEnvelopes(rows) { batch in
            try await onBatchAccepted?(batch)
            if accepted.next() >= limit { throw RemoteStoreError(.network, "connection reset (simulated)") }
        }
    }
    func listEnvelopePairs() async throws -> [EnvelopePair] { try await base.listEnvelopePairs() }
    func secretDigest(ownerDeviceID: UUID, buckets: Int) async throws -> [DigestBucket] {
        try await base.secretDigest(ownerDeviceID: ownerDeviceID, buckets: buckets)
    }
    func listEnvelopeKeys(sessions: Set<UUID>, atMost: Int?) async throws -> [EnvelopeKey] {
        try await base.listEnvelopeKeys(sessions: sessions, atMost: atMost)
    }
    func deleteEnvelopes(_ scope: EnvelopeScope) async throws -> Int? { try await base.deleteEnvelopes(scope) }
    func fetchRepositories(after cursor: PullCursor?) async throws -> [Versioned<RepositoryRecord>] {
        try await base.fetchRepositories(after: cursor)
    }
    func fetchSessions(
        after cursor: PullCursor?, pages page: @escaping PageHandler<Versioned<SessionRecord>>
    ) async throws {
        try await base.fetchSessions(after: cursor, pages: page)
    }
    func listIDs(_ table: ContentTable, deviceID: UUID?) async throws -> Set<UUID> {
        let ids = try await base.listIDs(table, deviceID: deviceID)
        return table == .sessions ? ids.subtracting(unlisted) : ids
    }
    func deleteRows(_ table: ContentTable, ids: Set<UUID>) async throws -> Int? {
        try await base.deleteRows(table, ids: ids)
    }
    func fetchEnvelopes(
        addressedTo deviceID: UUID, sessions: Set<UUID>?, pages page: @escaping PageHandler<EnvelopeRecord>
    ) async throws {
        try await base.fetchEnvelopes(addressedTo: deviceID, sessions: sessions, pages: page)
    }
    func heartbeat(deviceID: UUID) async throws { try await base.heartbeat(deviceID: deviceID) }
    func listOpenSecretRequests() async throws -> [SecretRequestRow] { try await base.listOpenSecretRequests() }
    func insertSecretRequests(_ rows: [SecretRequestRow]) async throws -> BulkWriteResult {
        try await base.insertSecretRequests(rows)
    }
    func fulfilSecretRequests(ids: Set<UUID>) async throws { try await base.fulfilSecretRequests(ids: ids) }
    func metrics() -> RemoteMetrics { base.metrics() }
}
