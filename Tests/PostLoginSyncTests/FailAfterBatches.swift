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
/// exactly what the remote accepted). It has no pull feed, as a deployment without one answers
/// (`.missingFunction`), so that a pull reads the tables, and polls for changes.
struct FailAfterBatches: CompleteRemote {
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

    static let noFeed = RemoteStoreError(.missingFunction, "no pull feed (FailAfterBatches pages through the tables)")

    // The rest of CompleteRemote, forwarded.
    func fetchIdentityKey() async throws -> String? { try await base.fetchIdentityKey() }
    func listCertificates() async throws -> [SignedStatementRow] { try await base.listCertificates() }
    func listRevocations() async throws -> [SignedStatementRow] { try await base.listRevocations() }
    func insertPairingRequest(_ row: PairingRequestRow) async throws { try await base.insertPairingRequest(row) }
    func listPairingRequests() async throws -> [PairingRequestRow] { try await base.listPairingRequests() }
    func deletePairingRequest(id: UUID) async throws { try await base.deletePairingRequest(id: id) }
    func fetchIdentityBackup() async throws -> String? { try await base.fetchIdentityBackup() }
    func trustLogRows(epoch: UInt32, fromSeq: UInt64) async throws -> [TrustLogRow] {
        try await base.trustLogRows(epoch: epoch, fromSeq: fromSeq)
    }
    func trustLogGeneses() async throws -> [TrustLogRow] { try await base.trustLogGeneses() }
    func trustLogWitnesses(epoch: UInt32) async throws -> [TrustLogWitnessRow] {
        try await base.trustLogWitnesses(epoch: epoch)
    }
    func appendTrustEntries(epoch: UInt32, firstSeq: UInt64, _ entries: [TrustLogAppend]) async throws {
        try await base.appendTrustEntries(epoch: epoch, firstSeq: firstSeq, entries)
    }
    func startTrustLog(_ entries: [TrustLogAppend]) async throws { try await base.startTrustLog(entries) }
    func requestIdentityReset(_ genesis: TrustLogAppend, accept: TrustLogAppend?) async throws {
        try await base.requestIdentityReset(genesis, accept: accept)
    }
    func publishWitness(deviceID: UUID, body: String, signature: String) async throws {
        try await base.publishWitness(deviceID: deviceID, body: body, signature: signature)
    }
    func changes(since cursor: ChangeCursor?, statements: Bool) async throws -> RemoteChanges {
        try await pollChanges(statements: statements)
    }
    func pullChanges(for deviceID: UUID, since cursor: ChangeCursor?, rowLimit: Int) async throws -> PullChanges {
        throw Self.noFeed
    }
    func recipientDigest(deviceID: UUID, buckets: Int) async throws -> [DigestBucket] { throw Self.noFeed }
    func claimSessionActivity(sessionID: UUID, deviceID: UUID, clientType: ClientType) async throws -> SessionClaim {
        try await base.claimSessionActivity(sessionID: sessionID, deviceID: deviceID, clientType: clientType)
    }
    func registerPushToken(_ registration: PushTokenRegistration) async throws -> PushTokenRegistered {
        try await base.registerPushToken(registration)
    }
    func invalidatePushToken(_ token: String) async throws -> Bool { try await base.invalidatePushToken(token) }
    func pushTokenStatus(deviceID: UUID) async throws -> PushTokenStatus {
        try await base.pushTokenStatus(deviceID: deviceID)
    }
    func clearApproval(requestID: String, excludingToken: String?) async throws -> ApprovalClearing {
        try await base.clearApproval(requestID: requestID, excludingToken: excludingToken)
    }
    func setRuntimeStatus(_ status: RuntimeStatus) async throws -> RuntimeStatus {
        try await base.setRuntimeStatus(status)
    }
    func listOutbox(limit: Int) async throws -> [OutboxEntry] { try await base.listOutbox(limit: limit) }
    func requestApproval(
        sessionID: UUID, requestID: UUID, requesterDeviceID: UUID, body: String, generation: UInt32, expiresAt: UInt64,
        controlHash: String?
    ) async throws -> ApprovalRequested {
        try await base.requestApproval(
            sessionID: sessionID, requestID: requestID, requesterDeviceID: requesterDeviceID, body: body,
            generation: generation, expiresAt: expiresAt, controlHash: controlHash)
    }
    func answerApproval(
        requestID: UUID, deviceID: UUID, verdict: ApprovalVerdict, decisionBody: String, decisionSignature: String
    ) async throws -> ApprovalAnswered {
        try await base.answerApproval(
            requestID: requestID, deviceID: deviceID, verdict: verdict, decisionBody: decisionBody,
            decisionSignature: decisionSignature)
    }
    func cancelApproval(requestID: UUID, control: String?) async throws -> ApprovalCancelled {
        try await base.cancelApproval(requestID: requestID, control: control)
    }
    func reopenApproval(requestID: UUID, decisionSignature: String, control: String) async throws -> ApprovalReopened {
        try await base.reopenApproval(requestID: requestID, decisionSignature: decisionSignature, control: control)
    }
    func approvalRequest(id: UUID) async throws -> ApprovalRequestRow? { try await base.approvalRequest(id: id) }
    func approvalRequests(status: ApprovalStatus?) async throws -> [ApprovalRequestRow] {
        try await base.approvalRequests(status: status)
    }
    func notificationSettings(deviceID: UUID) async throws -> NotificationSettings {
        try await base.notificationSettings(deviceID: deviceID)
    }
    func setNotificationSettings(
        deviceID: UUID, _ change: NotificationSettings.Change
    ) async throws -> NotificationSettingsUpdated {
        try await base.setNotificationSettings(deviceID: deviceID, change)
    }
    func touchSessionActivity(sessionID: UUID, deviceID: UUID) async throws -> Bool {
        try await base.touchSessionActivity(sessionID: sessionID, deviceID: deviceID)
    }
    func sessionHolder(sessionID: UUID) async throws -> SessionHolder? {
        try await base.sessionHolder(sessionID: sessionID)
    }
    func alertDeliveries(alertID: UUID) async throws -> AlertDeliveries {
        try await base.alertDeliveries(alertID: alertID)
    }
    func notifySessionEvent(sessionID: UUID, deviceID: UUID, kind: AlertKind) async throws -> SessionEventQueued {
        try await base.notifySessionEvent(sessionID: sessionID, deviceID: deviceID, kind: kind)
    }
    func askQuestion(
        sessionID: UUID, questionID: UUID, requesterDeviceID: UUID, body: String, generation: UInt32,
        expiresAt: UInt64
    ) async throws -> QuestionAsked {
        try await base.askQuestion(
            sessionID: sessionID, questionID: questionID, requesterDeviceID: requesterDeviceID, body: body,
            generation: generation, expiresAt: expiresAt)
    }
    func closeQuestion(questionID: UUID, status: QuestionStatus) async throws -> QuestionClosed {
        try await base.closeQuestion(questionID: questionID, status: status)
    }
    func agentQuestion(id: UUID) async throws -> AgentQuestionRow? { try await base.agentQuestion(id: id) }
    func agentQuestions(atMost: Int) async throws -> [AgentQuestionRow] {
        try await base.agentQuestions(atMost: atMost)
    }
    func answerQuestion(questionID: UUID, deviceID: UUID, answer: String) async throws -> QuestionAnswered {
        try await base.answerQuestion(questionID: questionID, deviceID: deviceID, answer: answer)
    }
    func questionAnswers(questionID: UUID) async throws -> [QuestionAnswerRow] {
        try await base.questionAnswers(questionID: questionID)
    }
}
