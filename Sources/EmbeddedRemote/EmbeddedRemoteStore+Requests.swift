import Foundation
import GRDB
import RemoteContract
import RemoteRules
import SyncModel

/// What approval requests and agents' questions share on the embedded remote: opening one, its
/// alerts and clearing pushes, and the rows the pull feed reads.
extension EmbeddedRemoteStore {
    /// The table a request of `kind` (`.approval` or `.question`) is kept in.
    static func table(_ kind: AlertKind) -> String { kind == .question ? "agent_questions" : "approval_requests" }

    /// The collapse id of a request's alerts: one per token and request.
    static func alertCollapse(_ kind: AlertKind, _ id: String) -> String {
        (kind == .question ? "question-" : "approval-request-") + id
    }

    /// The collapse id of a request's clearing pushes: one per token and request.
    static func clearingCollapse(_ kind: AlertKind, _ id: String) -> String {
        (kind == .question ? "question-clear-" : "approval-") + id
    }

    /// Whether a stored request's time has come (it reads as expired while still pending).
    static func pastDue(_ row: Row) -> Bool { UInt64(row["expires_at"] as Int64) <= epochSeconds }

    /// The bytes of padded, canonical standard base64 text; `nil` when the text is not that.
    static func base64Bytes(_ text: String) -> Data? {
        guard let data = Data(base64Encoded: text), data.base64EncodedString() == text else { return nil }
        return data
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
        let asker = try String.fetchOne(
            db, sql: "SELECT requester_device_id FROM \(table(kind)) WHERE id = ?", arguments: [request])
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
                collapse: clearingCollapse(kind, request), payload: payload.json, at: now,
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
                collapse: alertCollapse(kind, request.id), payload: alert.json,
                at: now, once: kind == .question ? "question" : "approval")
        }
        return queued
    }

    /// What the rules read of sealed text (a request's body, a question's answer): its length
    /// (`nil`: not canonical base64) and whether its version byte is 1 and its generation
    /// (bytes 1-4, big-endian) is `generation` (`nil`: none to match).
    static func sealedShape(_ text: String, generation: Int64?) -> (bytes: Int?, headerMatches: Bool) {
        guard let raw = base64Bytes(text) else { return (nil, false) }
        guard raw.count >= 5, raw[raw.startIndex] == 1 else { return (raw.count, false) }
        let stated = raw.dropFirst().prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return (raw.count, Int64(stated) == generation)
    }

    /// Refuses a new request or question whose generation, expiry or sealed body
    /// ``RequestRules/refusal(_:generation:expiresIn:bodyBytes:bodyHeaderMatches:)`` refuses, in
    /// the rule's words.
    static func checkNewRequest(_ kind: RequestRules.Kind, generation: UInt32, expiresAt: UInt64, body: String) throws {
        let sealed = sealedShape(body, generation: Int64(generation))
        if let field = RequestRules.refusal(
            kind, generation: Int64(generation), expiresIn: Int64(clamping: expiresAt) - Int64(epochSeconds),
            bodyBytes: sealed.bytes, bodyHeaderMatches: sealed.headerMatches)
        {
            throw refusal(RequestRules.NewRequestRefusal(kind, field))
        }
    }

    /// Opens a new approval request (`.approval`, with the requester's `controlHash`) or question
    /// for the calling desktop's session and alerts the user's other trusted devices
    /// (``queueAlerts(_:user:request:scheme:kind:)``), or answers the same one again: a replay
    /// queues nothing and counts what was queued, and the same id with anything else is a
    /// conflict. Returns what was queued and where each device's alert went.
    func raiseRequest(
        _ db: Database, _ kind: AlertKind, id: UUID, session: UUID, requester: UUID, body: String,
        generation: UInt32, expiresAt: UInt64, controlHash: String? = nil
    ) throws -> (queued: Int, devices: [AlertDelivery]) {
        let device = try acting(db, requester, trusted: true)
        try requireSessionDesktop(db, session: session, device: device)
        try requireOwn(db, table: "agent_coding_sessions", id: session, what: "session")
        try requireOwn(db, table: "devices", id: requester, what: "device")
        let question = kind == .question
        try Self.checkNewRequest(
            question ? .question : .approval, generation: generation, expiresAt: expiresAt, body: body)
        var control: Data?
        if let controlHash {
            // The SHA-256 of the requester's control.
            guard let hash = Self.base64Bytes(controlHash), hash.count == 32 else {
                throw Self.invalid("control_hash must be canonical base64 of 32 bytes")
            }
            control = hash
        }
        let noun = question ? "question" : "request", table = Self.table(kind)
        let queued: Int
        if let existing = try Row.fetchOne(db, sql: "SELECT * FROM \(table) WHERE id = ?", arguments: [id.canonical]) {
            guard (existing["user_id"] as String) == me else { throw Self.refused("the \(noun) is not one of yours") }
            // A question has no control hash: nil on both sides.
            guard (existing["body"] as String) == body, (existing["session_id"] as String) == session.canonical,
                (existing["requester_device_id"] as String) == requester.canonical,
                (existing["generation"] as Int64) == Int64(generation),
                (existing["expires_at"] as Int64) == Int64(expiresAt), (existing["control_hash"] as Data?) == control
            else { throw RemoteStoreError(.conflict, "another \(noun) has this id", postgrestCode: .uniqueViolation) }
            queued =
                try Int.fetchOne(
                    db, sql: "SELECT count(*) FROM push_outbox WHERE user_id = ? AND collapse_id = ?",
                    arguments: [me, Self.alertCollapse(kind, id.canonical)]) ?? 0
        } else {
            let stamp = Self.now
            var arguments: StatementArguments = [
                id.canonical, me, session.canonical, requester.canonical, body, Int64(generation), stamp,
                Int64(expiresAt), stamp,
            ]
            if !question { arguments += [control] }
            try db.execute(
                sql: """
                    INSERT INTO \(table) (id, user_id, session_id, requester_device_id, body, generation, created_at,
                        expires_at, updated_at\(question ? "" : ", control_hash"))
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?\(question ? "" : ", ?"))
                    """, arguments: arguments)
            let row = try Row.fetchOne(db, sql: "SELECT * FROM \(table) WHERE id = ?", arguments: [id.canonical])
            queued =
                try row.map { try Self.queueAlerts(db, user: me, request: $0, scheme: deepLinkScheme, kind: kind) } ?? 0
        }
        return (queued, try Self.deliveries(db, user: me, alertID: id).devices)
    }

    /// The user's requests of `kind` changed since `cursor` (every pending one without one), as
    /// `decode` reads each row.
    static func changed<Record>(
        _ db: Database, _ kind: AlertKind, user: String, since cursor: String?,
        as decode: (ResponseRow) throws -> Record
    ) throws -> [Record] {
        try Row.fetchAll(
            db,
            sql: """
                SELECT * FROM \(table(kind)) WHERE user_id = ?
                AND (CASE WHEN ? IS NULL THEN status = 'pending' ELSE updated_at > ? END) ORDER BY updated_at, id
                """, arguments: [user, cursor, cursor]
        ).map { try decode(json($0)) }
    }
}
