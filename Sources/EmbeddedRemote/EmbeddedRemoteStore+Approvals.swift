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
    /// Unix seconds now.
    static var epochSeconds: UInt64 { UInt64(Date().timeIntervalSince1970) }

    /// Whether text is padded, canonical standard base64 of `bytes` (a range of lengths).
    static func isCanonicalBase64(_ text: String, bytes: ClosedRange<Int>) -> Bool {
        guard let data = Data(base64Encoded: text), bytes.contains(data.count) else { return false }
        return data.base64EncodedString() == text
    }

    /// The clearing push of coordination.md for a request (`kind` `.question`: a question) to every
    /// valid device token of the user's trusted devices (``trustedTokens(_:user:except:)``) but the
    /// asker's and `except`'s, carrying each device's new badge; once per token and request. Never
    /// suppressed by a device's settings.
    static func queueClearing(
        _ db: Database, user: String, request: String, kind: AlertKind = .approval, reason: String,
        except: String? = nil
    ) throws -> Int {
        let question = kind == .question
        let table = question ? "agent_questions" : "approval_requests"
        let asker = try String.fetchOne(
            db, sql: "SELECT requester_device_id FROM \(table) WHERE id = ?", arguments: [request])
        var queued = 0
        let now = Self.now
        // As the SQL: an approval's clearing asks `may_queue_push('clearing')`, a question's does not.
        for (device, token) in try trustedTokens(db, user: user, except: except)
        where try device != asker && (question || mayQueue(db, device: device, kind: .clearing)) {
            guard
                let payload = PushPayloads.clearing(
                    kind, request: request, reason: reason, badge: try approvalBadge(db, user: user, device: device))
            else { continue }
            queued += try enqueue(
                db, user: user, device: device, token: token, type: "background", priority: 5,
                collapse: (question ? "question-clear-" : "approval-") + request, payload: payload.json, at: now,
                once: question ? "question" : "approval")
        }
        return queued
    }

    /// The alert of a new approval request (or, with `kind` `.question`, an agent's question)
    /// for every valid device token of the user's other trusted devices (``TrustedDevices``), as
    /// ``PushPayloads/alert(_:session:scheme:request:decision:timeSensitive:badge:)`` makes it for
    /// each device's decision, settings and badge. Once per token.
    static func queueAlerts(
        _ db: Database, user: String, request row: Row, scheme: String, kind: AlertKind = .approval
    ) throws -> Int {
        let request = PushPayloads.Request(
            id: row["id"], requesterDeviceID: row["requester_device_id"], generation: row["generation"],
            expiresAt: row["expires_at"], sealed: row["body"])
        let session: String = row["session_id"]
        var queued = 0
        let now = Self.now
        for (device, token) in try trustedTokens(db, user: user, except: request.requesterDeviceID) {
            guard try mayQueue(db, device: device, kind: .alert) else { continue }
            // Each token's device decides once: off, nothing; passive (another device is active
            // on the session), no sound and priority 5.
            let decision = try alertDecision(db, device: device, kind: kind, session: session)
            guard let priority = NotificationRules.priority(decision),
                let alert = PushPayloads.alert(
                    kind, session: session, scheme: scheme, request: request, decision: decision,
                    timeSensitive: try settings(db, device: device).timeSensitive,
                    badge: try approvalBadge(db, user: user, device: device))
            else { continue }
            queued += try enqueue(
                db, user: user, device: device, token: token, type: "alert", priority: priority,
                collapse: (kind == .question ? "question-" : "approval-request-") + request.id, payload: alert.json,
                at: now, once: kind == .question ? "question" : "approval")
        }
        return queued
    }

    /// Refuses a new request or question whose generation, expiry or sealed body
    /// ``RequestRules/refusal(_:generation:expiresIn:bodyBytes:bodyHeaderMatches:)`` refuses.
    static func checkNewRequest(_ kind: RequestRules.Kind, generation: UInt32, expiresAt: UInt64, body: String) throws {
        let raw = isCanonicalBase64(body, bytes: 0...Int.max) ? Data(base64Encoded: body) : nil
        let header = raw.map { (bytes: Data) -> Bool in
            guard bytes.count >= 5, bytes[bytes.startIndex] == 1 else { return false }
            var stated: UInt32 = 0
            for byte in bytes.dropFirst().prefix(4) { stated = stated << 8 | UInt32(byte) }
            return stated == generation
        }
        let refusal = RequestRules.refusal(
            kind, generation: Int64(generation), expiresIn: Int64(clamping: expiresAt) - Int64(epochSeconds),
            bodyBytes: raw?.count, bodyHeaderMatches: header ?? false)
        // The SQL's words: thousands grouped.
        func grouped(_ n: Int64) -> String {
            n >= 1000 ? "\(n / 1000)," + String(String(n % 1000 + 1000).dropFirst()) : "\(n)"
        }
        let window = RequestRules.expiryWindow(kind)
        switch refusal {
        case nil: return
        case .generation: throw invalid("generation must be 1 to 2147483647")
        case .expiresAt:
            throw invalid(
                "expires_at must be \(grouped(window.lowerBound)) to \(grouped(window.upperBound)) seconds from now")
        case .body:
            throw invalid(
                "body must be canonical base64 of a sealed \(kind == .approval ? "request" : "question") of this generation"
            )
        }
    }

    /// Whether `control` proves the requester of a request stored with `hash` (none: anyone).
    static func controlProves(_ control: String?, hash: Data?) -> Bool {
        guard let hash else { return true }
        guard let control, isCanonicalBase64(control, bytes: 32...32), let bytes = Data(base64Encoded: control) else {
            return false
        }
        return Data(SHA256.hash(bytes)) == hash
    }

    public func requestApproval(
        sessionID: UUID, requestID: UUID, requesterDeviceID: UUID, body: String, generation: UInt32, expiresAt: UInt64,
        controlHash: String?
    ) async throws -> ApprovalRequested {
        return try await write("requesting an approval") { db in
            let device = try self.acting(db, requesterDeviceID, trusted: true)
            try self.requireSessionDesktop(db, session: sessionID, device: device)
            try self.requireOwn(db, table: "agent_coding_sessions", id: sessionID, what: "session")
            try self.requireOwn(db, table: "devices", id: requesterDeviceID, what: "device")
            try Self.checkNewRequest(.approval, generation: generation, expiresAt: expiresAt, body: body)
            var control: Data?
            if let controlHash {
                guard Self.isCanonicalBase64(controlHash, bytes: 32...32) else {
                    throw Self.invalid("control_hash must be canonical base64 of 32 bytes")
                }
                control = Data(base64Encoded: controlHash)
            }
            if let existing = try Row.fetchOne(
                db, sql: "SELECT * FROM approval_requests WHERE id = ?", arguments: [requestID.canonical])
            {
                guard (existing["user_id"] as String) == self.me else {
                    throw Self.refused("the request is not one of yours")
                }
                guard (existing["body"] as String) == body, (existing["session_id"] as String) == sessionID.canonical,
                    (existing["requester_device_id"] as String) == requesterDeviceID.canonical,
                    (existing["generation"] as Int64) == Int64(generation),
                    (existing["expires_at"] as Int64) == Int64(expiresAt),
                    (existing["control_hash"] as Data?) == control
                else {
                    throw RemoteStoreError(.conflict, "another request has this id", postgrestCode: .uniqueViolation)
                }
                let queued =
                    try Int.fetchOne(
                        db, sql: "SELECT count(*) FROM push_outbox WHERE user_id = ? AND collapse_id = ?",
                        arguments: [self.me, "approval-request-" + requestID.canonical]) ?? 0
                return ApprovalRequested(
                    requestId: requestID, expiresAt: expiresAt, devicesNotified: queued,
                    devices: try Self.deliveries(db, user: self.me, alertID: requestID).devices)
            }
            let stamp = Self.now
            try db.execute(
                sql: """
                    INSERT INTO approval_requests (id, user_id, session_id, requester_device_id, body, generation, created_at, expires_at, updated_at, control_hash)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    requestID.canonical, self.me, sessionID.canonical, requesterDeviceID.canonical, body,
                    Int64(generation),
                    stamp, Int64(expiresAt), stamp, control,
                ])
            let request = try Row.fetchOne(
                db, sql: "SELECT * FROM approval_requests WHERE id = ?", arguments: [requestID.canonical])
            let queued =
                try request.map { try Self.queueAlerts(db, user: self.me, request: $0, scheme: self.deepLinkScheme) }
                ?? 0
            return ApprovalRequested(
                requestId: requestID, expiresAt: expiresAt, devicesNotified: queued,
                devices: try Self.deliveries(db, user: self.me, alertID: requestID).devices)
        }
    }

    public func answerApproval(
        requestID: UUID, deviceID: UUID, verdict: ApprovalVerdict, decisionBody: String, decisionSignature: String
    ) async throws -> ApprovalAnswered {
        return try await write("answering an approval") { db in
            _ = try self.acting(db, deviceID, trusted: true)
            try self.requireOwn(db, table: "devices", id: deviceID, what: "device")
            // A version-2 decision (with the answering device's trust-log head): the only one taken.
            let decisionBytes = 29 + 4 * 37 + 1 + 32 + 32 + 8 + 44
            guard Self.isCanonicalBase64(decisionBody, bytes: decisionBytes...decisionBytes),
                Self.isCanonicalBase64(decisionSignature, bytes: 64...64)
            else {
                throw Self.invalid(
                    "decision_body and decision_signature must be canonical base64 of a decision and its signature")
            }
            let request = try self.requireOwned(db, table: "approval_requests", id: requestID, what: "request")
            guard (request["requester_device_id"] as String) != deviceID.canonical else {
                throw Self.invalid("the requesting device cannot answer its own request")
            }
            // Past its time a pending request reads as expired; the answer changes nothing (its
            // clearing push is expireApprovals()'s to queue).
            let transition = RequestRules.transition(
                approval: ApprovalStatus(rawValue: request["status"]) ?? .pending,
                expired: UInt64(request["expires_at"] as Int64) <= Self.epochSeconds, on: .answer(verdict))
            guard case .takes(let decided, .clearing(let reason)) = transition else {
                return ApprovalAnswered(
                    accepted: false, status: transition.words.status,
                    decidedBy: try (request["decided_by_device_id"] as String?).map { try Self.uuid($0) })
            }
            // Only a device the trust log in force certifies and does not revoke decides; a
            // refused answer writes nothing, and the question stays open for the genuine one.
            guard try TrustedDevices.of(db, user: self.me).contains(deviceID.canonical) else {
                throw Self.refused("the answering device is not certified in your trust log, or is revoked")
            }
            // The decision names the device that answers (its device_id at byte 140).
            guard let decision = Data(base64Encoded: decisionBody),
                decision[140..<176].elementsEqual(deviceID.canonical.utf8)
            else { throw Self.invalid("the decision names another device than the one answering") }
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
            let request = try self.requireOwned(db, table: "approval_requests", id: requestID, what: "request")
            guard Self.controlProves(control, hash: request["control_hash"]) else {
                throw Self.refused("only the requesting device may cancel this request")
            }
            let transition = RequestRules.transition(
                approval: ApprovalStatus(rawValue: request["status"]) ?? .pending,
                expired: UInt64(request["expires_at"] as Int64) <= Self.epochSeconds, on: .cancel)
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
            let request = try self.requireOwned(db, table: "approval_requests", id: requestID, what: "request")
            let hash: Data? = request["control_hash"]
            guard hash != nil, Self.controlProves(control, hash: hash) else {
                throw Self.refused("only the requesting device may reopen this request")
            }
            let transition = RequestRules.transition(
                approval: ApprovalStatus(rawValue: request["status"]) ?? .pending,
                expired: UInt64(request["expires_at"] as Int64) <= Self.epochSeconds,
                on: .reopen(
                    decisionMatches: (request["decision_signature"] as String?) == decisionSignature,
                    reopened: Int(request["reopened"] as Int64)))
            switch transition {
            case .takes(.pending, .alerts): break
            case .overLimit:
                throw RemoteStoreError(
                    .limitExceeded, "a request is reopened at most \(RequestRules.reopenLimit) times",
                    postgrestCode: .programLimitExceeded)
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
                arguments: [self.me, "approval-request-" + requestID.canonical, "approval-" + requestID.canonical])
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

    /// The user's approval requests changed since `cursor` (every pending one without one).
    static func changedApprovals(_ db: Database, user: String, since cursor: String?) throws -> [ApprovalRequestRow] {
        try Row.fetchAll(
            db,
            sql: """
                SELECT * FROM approval_requests WHERE user_id = ?
                AND (CASE WHEN ? IS NULL THEN status = 'pending' ELSE updated_at > ? END) ORDER BY updated_at, id
                """, arguments: [user, cursor, cursor]
        ).map { try ApprovalRequestRow(json: Self.json($0)) }
    }
}
