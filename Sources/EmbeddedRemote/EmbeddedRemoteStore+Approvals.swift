import Foundation
import GRDB
import RemoteContract
import RemoteRules
import SecretCrypto
import SyncModel

/// Approvals on the embedded remote: the rules of the project's `*_approvals.sql`, each operation
/// one SQLite transaction (SQLite's single writer is the row lock: two answers at once end with
/// one decision).
extension EmbeddedRemoteStore: ApprovalRemote {
    /// What ``RequestRules/control(_:transition:hashKept:controlBytes:digestMatches:)`` decides a `call` with
    /// `control` on the caller's request `id` (every column; `nil`: none of the caller's), whose
    /// transition the call's `event` makes: the request, or the refusal thrown.
    func controlled(
        _ db: Database, _ call: RequestRules.ControlCall, id: UUID, control: String?,
        event: (Row) -> RequestRules.ApprovalEvent
    ) throws -> (request: Row, transition: RequestRules.Transition<ApprovalStatus>) {
        let request = try Row.fetchOne(
            db, sql: "SELECT * FROM approval_requests WHERE id = ? AND user_id = ?", arguments: [id.canonical, me])
        let transition = request.map {
            RequestRules.transition(
                approval: ApprovalStatus(rawValue: $0["status"]) ?? .pending, expired: Self.pastDue($0), on: event($0))
        }
        let hash: Data? = request?["control_hash"]
        let bytes = control.flatMap(Self.base64Bytes)
        let refusal = RequestRules.control(
            call, transition: transition, hashKept: hash != nil, controlBytes: bytes?.count,
            digestMatches: bytes.map { Data(SHA256.hash($0)) == hash } ?? false)
        guard let request, let transition, refusal == nil else { throw Self.refusal(refusal ?? .notYourRequest) }
        return (request, transition)
    }

    public func requestApproval(
        sessionID: UUID, requestID: UUID, requesterDeviceID: UUID, body: String, generation: UInt32, expiresAt: UInt64,
        controlHash: String?
    ) async throws -> ApprovalRequested {
        return try await write("requesting an approval") { db in
            let opened = try self.raiseRequest(
                db, .approval, id: requestID, session: sessionID, requester: requesterDeviceID, body: body,
                generation: generation, expiresAt: expiresAt, controlHash: controlHash)
            return ApprovalRequested(
                requestId: requestID, expiresAt: expiresAt, devicesNotified: opened.queued, devices: opened.devices)
        }
    }

    public func answerApproval(
        requestID: UUID, deviceID: UUID, verdict: ApprovalVerdict, decisionBody: String, decisionSignature: String
    ) async throws -> ApprovalAnswered {
        return try await write("answering an approval") { db in
            _ = try self.acting(db, deviceID, trusted: true)
            let device = deviceID.canonical
            let request = try Row.fetchOne(
                db, sql: "SELECT * FROM approval_requests WHERE id = ? AND user_id = ?",
                arguments: [requestID.canonical, self.me])
            // Past its time a pending request reads as expired; the answer changes nothing (its
            // clearing push is expireApprovals()'s to queue).
            let transition = request.map {
                RequestRules.transition(
                    approval: ApprovalStatus(rawValue: $0["status"]) ?? .pending, expired: Self.pastDue($0),
                    on: .answer(verdict))
            }
            let decision = Self.base64Bytes(decisionBody)
            let refusal = AnswerRules.approvalAnswer(
                requestedBy: request?["requester_device_id"], device: device,
                mine: try Self.owner(db, table: "devices", id: device) == self.me, verdict: verdict.rawValue,
                decisionBytes: decision?.count, signatureBytes: Self.base64Bytes(decisionSignature)?.count,
                decides: transition?.takes ?? false,
                certified: try TrustedDevices.of(db, user: self.me).contains(device),
                namesDevice: decision.map {
                    $0.count == AnswerRules.decisionBytes
                        && $0[AnswerRules.decisionDevice].elementsEqual(device.utf8)
                } ?? false)
            // The rule refuses when the caller has no request of that id: past here there is a row.
            guard let request, let transition, refusal == nil else {
                throw Self.refusal(refusal ?? .notYourRequest)
            }
            guard case .takes(let decided, .clearing(let reason)) = transition else {
                return ApprovalAnswered(
                    accepted: false, status: transition.words.status,
                    decidedBy: try (request["decided_by_device_id"] as String?).map { try Self.uuid($0) })
            }
            let stamp = Self.now
            try db.execute(
                sql: """
                    UPDATE approval_requests SET status = ?, decided_by_device_id = ?, decided_at = ?, decision_body = ?,
                        decision_signature = ?, updated_at = ? WHERE id = ?
                    """,
                arguments: [
                    decided.rawValue, deviceID.canonical, stamp, decisionBody, decisionSignature, stamp,
                    requestID.canonical,
                ])
            let queued = try Self.queueClearing(
                db, user: self.me, request: requestID.canonical, reason: reason, except: deviceID.canonical)
            return ApprovalAnswered(accepted: true, status: decided, decidedBy: deviceID, devicesNotified: queued)
        }
    }

    public func cancelApproval(requestID: UUID, control: String?) async throws -> ApprovalCancelled {
        return try await write("cancelling an approval") { db in
            try self.requireAsker(db, requestID)
            let (request, transition) = try self.controlled(db, .cancel, id: requestID, control: control) { _ in .cancel
            }
            guard case .takes(let cancelled, .clearing(let reason)) = transition else {
                return ApprovalCancelled(cancelled: false, status: transition.words.status, devicesNotified: 0)
            }
            try db.execute(
                sql: "UPDATE approval_requests SET status = ?, updated_at = ? WHERE id = ?",
                arguments: [cancelled.rawValue, Self.now, requestID.canonical])
            let queued = try Self.queueClearing(
                db, user: self.me, request: requestID.canonical, reason: reason,
                except: request["requester_device_id"] as String)
            return ApprovalCancelled(cancelled: true, status: cancelled, devicesNotified: queued)
        }
    }

    public func reopenApproval(
        requestID: UUID, decisionSignature: String, control: String
    ) async throws -> ApprovalReopened {
        return try await write("reopening an approval") { db in
            try self.requireAsker(db, requestID)
            let transition = try self.controlled(db, .reopen, id: requestID, control: control) {
                .reopen(
                    decisionMatches: ($0["decision_signature"] as String?) == decisionSignature,
                    reopened: Int($0["reopened"] as Int64))
            }.transition
            switch transition {
            case .takes(.pending, .alerts): break
            default: return ApprovalReopened(reopened: false, status: transition.words.status, devicesNotified: 0)
            }
            try db.execute(
                sql: """
                    UPDATE approval_requests SET status = 'pending', decided_by_device_id = NULL, decided_at = NULL,
                        decision_body = NULL, decision_signature = NULL, reopened = reopened + 1, updated_at = ?
                    WHERE id = ?
                    """, arguments: [Self.now, requestID.canonical])
            try db.execute(
                sql: "DELETE FROM push_outbox WHERE user_id = ? AND collapse_id IN (?, ?)",
                arguments: [
                    self.me, Self.alertCollapse(.approval, requestID.canonical),
                    Self.clearingCollapse(.approval, requestID.canonical),
                ])
            let reopened = try Row.fetchOne(
                db, sql: "SELECT * FROM approval_requests WHERE id = ?", arguments: [requestID.canonical])
            let queued =
                try reopened.map { try Self.queueAlerts(db, user: self.me, request: $0, scheme: self.deepLinkScheme) }
                ?? 0
            return ApprovalReopened(reopened: true, status: .pending, devicesNotified: queued)
        }
    }

    /// Every pending request past its time (of every user in this file) becomes expired, with its
    /// clearing pushes: what the delivery worker runs on each pass. Returns how many.
    public func expireApprovals() async throws -> Int {
        try await write("expiring approvals") { db in
            // The pending rows past their time (the index's question); the rule says what each becomes.
            let rows = try Row.fetchAll(
                db, sql: "SELECT id, user_id FROM approval_requests WHERE status = 'pending' AND expires_at <= ?",
                arguments: [Int64(Self.epochSeconds)])
            var expired = 0
            for row in rows {
                guard
                    case .takes(let status, .clearing(let reason)) = RequestRules.transition(
                        approval: .pending, expired: true, on: .expire)
                else { continue }
                let id = try Self.uuid(row["id"])
                try db.execute(
                    sql: "UPDATE approval_requests SET status = ?, updated_at = ? WHERE id = ?",
                    arguments: [status.rawValue, Self.now, id.canonical])
                _ = try Self.queueClearing(db, user: row["user_id"], request: id.canonical, reason: reason)
                expired += 1
            }
            try Self.expireQuestions(db)
            return expired
        }
    }

    public func approvalRequest(id: UUID) async throws -> ApprovalRequestRow? {
        return try await read("reading an approval", gate: .certified, else: nil) { db in
            return try Row.fetchOne(
                db, sql: "SELECT * FROM approval_requests WHERE id = ? AND user_id = ?",
                arguments: [id.canonical, self.me]
            )
            .map { try ApprovalRequestRow(json: Self.json($0)) }
        }
    }

    public func approvalRequests(status: ApprovalStatus?) async throws -> [ApprovalRequestRow] {
        return try await read("listing approvals", gate: .certified, else: []) { db in
            return try Row.fetchAll(
                db,
                sql:
                    "SELECT * FROM approval_requests WHERE user_id = ? AND (? IS NULL OR status = ?) ORDER BY created_at DESC, id",
                arguments: [self.me, status?.rawValue, status?.rawValue]
            ).map { try ApprovalRequestRow(json: Self.json($0)) }
        }
    }
}
