import Foundation
import GRDB
import RemoteContract
import RemoteRules
import SyncModel

/// Notification settings and live activities on the embedded remote: the rules of the project's
/// `*_notifications.sql`, run inside the transaction of the operation that queues a push.
extension EmbeddedRemoteStore: NotificationRemote {
    static func settings(_ db: Database, device: String) throws -> NotificationSettings {
        try Row.fetchOne(db, sql: "SELECT * FROM notification_settings WHERE device_id = ?", arguments: [device])
            .map { try NotificationSettings(json: json($0)) } ?? .defaults
    }

    /// Decides, once when queueing, how an alert of `kind` about `session` goes to `device`
    /// (`private.alert_decision`): `NotificationRules` over the device's settings and the
    /// session's latest activity by another device.
    static func alertDecision(
        _ db: Database, device: String, kind: AlertKind, session: String
    ) throws -> AlertDecision {
        let latest = try String.fetchOne(
            db,
            sql: "SELECT max(last_activity_at) FROM session_active_clients WHERE session_id = ? AND device_id <> ?",
            arguments: [session, device]
        ).flatMap(Timestamp.parse)
        return NotificationRules.alertDecision(
            kind: kind, settings: try settings(db, device: device),
            idleElsewhere: latest.map { Date().timeIntervalSince($0) })
    }

    /// Whether a push of `kind` may be queued for `device` (`private.may_queue_push`).
    static func mayQueue(_ db: Database, device: String, kind: QueuedPushKind) throws -> Bool {
        NotificationRules.mayQueue(kind, settings: try settings(db, device: device))
    }

    /// Writes one push for one token to `push_outbox`, due at `due` (by default when created). With
    /// `once`, a collapse family (`approval`, `question`) whose unique index keeps a token's first
    /// row of a collapse id. Returns the rows written: 0 when `once` kept an earlier one.
    @discardableResult
    static func enqueue(
        _ db: Database, user: String, device: String, token: String, type: String, priority: Int,
        collapse: String?, payload: String, at created: String, due: String? = nil, once family: String? = nil
    ) throws -> Int {
        let conflict = family.map { "ON CONFLICT (token, collapse_id) WHERE collapse_id LIKE '\($0)-%' DO NOTHING" }
        try db.execute(
            sql: """
                INSERT INTO push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload, created_at, not_before)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) \(conflict ?? "")
                """, arguments: [user, device, token, type, priority, collapse, payload, created, due ?? created])
        return db.changesCount
    }

    /// The user's valid device tokens, by token, of every device the trust log in force certifies
    /// (``TrustedDevices``) but `except`: who the pushes about requests and tasks go to.
    static func trustedTokens(
        _ db: Database, user: String, except: String?
    ) throws -> [(device: String, token: String)] {
        let trusted = try TrustedDevices.of(db, user: user)
        return try Row.fetchAll(
            db,
            sql: """
                SELECT device_id, token FROM push_tokens
                WHERE user_id = ? AND token_type = 'device' AND is_valid AND device_id IS NOT ? ORDER BY token
                """, arguments: [user, except]
        ).map { row -> (device: String, token: String) in (row["device_id"], row["token"]) }
            .filter { trusted.contains($0.device) }
    }

    /// Queues a silent push of kind `background` for one token if the device allows it.
    static func queueBackground(
        _ db: Database, user: String, device: String, token: String, collapse: String?, payload: PushPayload
    ) throws -> Bool {
        guard try mayQueue(db, device: device, kind: .background) else { return false }
        try enqueue(
            db, user: user, device: device, token: token, type: "background", priority: 5, collapse: collapse,
            payload: payload.json, at: Self.now)
        return true
    }

    /// `rule_badge_counts(status, asked_by_device, expires_in)` in this file's SQL, as in the
    /// project's: ``NotificationRules/countsTowardBadge(status:askedByDevice:expiresIn:)``.
    static let badgeCounts = DatabaseFunction("rule_badge_counts", argumentCount: 3, pure: true) { values in
        guard let status = String.fromDatabaseValue(values[0]), let asked = Bool.fromDatabaseValue(values[1]),
            let expiresIn = Int64.fromDatabaseValue(values[2])
        else { return false }
        return NotificationRules.countsTowardBadge(status: status, askedByDevice: asked, expiresIn: expiresIn)
    }

    /// The device's badge: how many of the user's approval requests and questions count toward
    /// it (``badgeCounts``).
    static func approvalBadge(_ db: Database, user: String, device: String) throws -> Int {
        try Int.fetchOne(
            db,
            sql: """
                SELECT (SELECT count(*) FROM approval_requests
                        WHERE user_id = ?1 AND rule_badge_counts(status, requester_device_id = ?2, expires_at - ?3))
                     + (SELECT count(*) FROM agent_questions
                        WHERE user_id = ?1 AND rule_badge_counts(status, requester_device_id = ?2, expires_at - ?3))
                """, arguments: [user, device, Int64(epochSeconds)]) ?? 0
    }

    // MARK: - Live activities

    /// A live-activity payload for `device` from `session` (a row of agent_coding_sessions), as
    /// ``PushPayloads/liveActivity(at:event:status:operation:showDetails:runtimeOperation:todo:startedAt:)``
    /// makes it now.
    static func liveActivityPayload(
        _ db: Database, session: Row, device: String, event: LiveActivityEvent, status: String, operation: String?
    ) throws -> PushPayload {
        let runtime = try (session["runtime_status"] as String?).flatMap {
            RuntimeStatus(json: $0, sessionID: try uuid(session["id"]), reportedAt: nil)
        }
        let started = (session["session_started_at"] as String?).flatMap(Timestamp.parse)
        return PushPayloads.liveActivity(
            at: Int64(epochSeconds), event: event, status: status, operation: operation,
            showDetails: try settings(db, device: device).showDetails, runtimeOperation: runtime?.currentOperation,
            todo: runtime?.todoProgress, startedAt: started.map { Int64($0.timeIntervalSince1970.rounded(.down)) })
    }

    /// Whether `token` still has an activity open (no `end` queued for it).
    static func liveActivityOpen(_ db: Database, token: String) throws -> Bool {
        try
            !(Bool.fetchOne(
                db,
                sql: """
                    SELECT EXISTS (SELECT 1 FROM push_outbox WHERE token = ? AND push_type = 'liveactivity'
                                   AND json_extract(payload, '$.aps.event') = ?)
                    """, arguments: [token, LiveActivityEvent.end.rawValue]) ?? false)
    }

    /// Queues one live-activity event for one token of a device unless
    /// ``LiveActivityQueueing/refusal(end:settingOff:vouched:ended:)`` refuses it (`vouched`: the
    /// devices the trust log vouches for, ``vouchedDevices(_:user:)``; nil before the user has a
    /// log), throttled (``LiveActivityQueueing``): an event replaces the token's waiting row (not
    /// delivered, not failed) or is inserted. Returns whether a row was inserted or replaced.
    static func queueLiveActivity(
        _ db: Database, user: String, device: String, token: String, event: LiveActivityEvent, payload: PushPayload,
        priority: Int, vouched: Set<String>?
    ) throws -> Bool {
        let refusal = LiveActivityQueueing.refusal(
            end: event == .end, settingOff: try !mayQueue(db, device: device, kind: .liveActivity),
            vouched: vouched.map { $0.contains(device) }, ended: try !liveActivityOpen(db, token: token))
        guard refusal == nil else { return false }
        let now = Date()
        let waiting = try Row.fetchOne(
            db,
            sql: """
                SELECT id, not_before FROM push_outbox WHERE token = ? AND push_type = 'liveactivity'
                AND delivered_at IS NULL AND failed_at IS NULL ORDER BY id DESC LIMIT 1
                """, arguments: [token])
        let waitingDue = (waiting?["not_before"] as String?).flatMap(Timestamp.parse)
        let previousDue = try String.fetchOne(
            db, sql: "SELECT max(not_before) FROM push_outbox WHERE token = ? AND push_type = 'liveactivity'",
            arguments: [token]
        ).flatMap(Timestamp.parse)
        // A waiting row counts by its presence (its time is never missing: enqueue writes one).
        let placed = LiveActivityQueueing.placement(
            end: event == .end, waitingDueIn: waiting.map { _ in (waitingDue ?? now).timeIntervalSince(now) },
            previousDueIn: previousDue.map { $0.timeIntervalSince(now) })
        let notBefore: String? =
            switch placed.due {
            case .now: Timestamp.format(now)
            case .waiting: waiting?["not_before"]
            // (Never without both: the rule says after_previous only with a latest row and its seconds.)
            case .afterPrevious: previousDue.flatMap { due in placed.afterPrevious.map { Timestamp.format(due + $0) } }
            }
        if placed.replaces, let waiting {
            try db.execute(
                sql: "UPDATE push_outbox SET payload = ?, priority = ?, not_before = ? WHERE id = ?",
                arguments: [payload.json, priority, notBefore, waiting["id"] as Int64])
            return true
        }
        try enqueue(
            db, user: user, device: device, token: token, type: "liveactivity", priority: priority, collapse: nil,
            payload: payload.json, at: Timestamp.format(now), due: notBefore)
        return true
    }

    /// Ends every open live activity of `device` (for one session, or all), showing `status`
    /// (by default the session's) and `operation`; none when `vouched` leaves the device out.
    @discardableResult
    static func endLiveActivities(
        _ db: Database, user: String, device: String, session onlySession: String?, status: String?,
        operation: String?, vouched: Set<String>?
    ) throws -> Int {
        let tokens = try Row.fetchAll(
            db,
            sql: """
                SELECT token, session_id FROM push_tokens
                WHERE user_id = ? AND device_id = ? AND token_type = 'live_activity' AND is_valid AND (? IS NULL OR session_id = ?)
                ORDER BY token
                """, arguments: [user, device, onlySession, onlySession])
        var ended = 0
        for token in tokens {
            let tokenText: String = token["token"]
            guard try liveActivityOpen(db, token: tokenText),
                let session = try Row.fetchOne(
                    db, sql: "SELECT * FROM agent_coding_sessions WHERE id = ?",
                    arguments: [token["session_id"] as String])
            else { continue }
            let shown =
                try status ?? LiveActivityRules.status(runtimeState(session))
            let payload = try liveActivityPayload(
                db, session: session, device: device, event: .end, status: shown, operation: operation)
            if try queueLiveActivity(
                db, user: user, device: device, token: tokenText, event: .end, payload: payload,
                priority: LiveActivityQueueing.priority(end: true, status: nil), vouched: vouched)
            {
                ended += 1
            }
        }
        return ended
    }

    static func runtimeState(_ session: Row) throws -> RuntimeStatus.State? {
        let id = try uuid(session["id"])
        return (session["runtime_status"] as String?).flatMap {
            RuntimeStatus(json: $0, sessionID: id, reportedAt: nil)
        }?.state
    }

    /// A session's runtime status changed: each open activity for it gets an update (throttled),
    /// and a device's activities for its other sessions end (one active session per device).
    static func runtimeStatusChanged(_ db: Database, user: String, session sessionID: String) throws {
        guard
            let session = try Row.fetchOne(
                db, sql: "SELECT * FROM agent_coding_sessions WHERE id = ?", arguments: [sessionID])
        else { return }
        let status = LiveActivityRules.status(try runtimeState(session))
        let vouched = try vouchedDevices(db, user: user)
        let tokens = try Row.fetchAll(
            db,
            sql: """
                SELECT device_id, token FROM push_tokens
                WHERE session_id = ? AND user_id = ? AND token_type = 'live_activity' AND is_valid ORDER BY token
                """, arguments: [sessionID, user])
        for token in tokens {
            let device: String = token["device_id"]
            let tokenText: String = token["token"]
            guard try liveActivityOpen(db, token: tokenText), try mayQueue(db, device: device, kind: .liveActivity)
            else { continue }
            let payload = try liveActivityPayload(
                db, session: session, device: device, event: .update, status: status, operation: nil)
            _ = try queueLiveActivity(
                db, user: user, device: device, token: tokenText, event: .update, payload: payload,
                priority: LiveActivityQueueing.priority(end: false, status: status), vouched: vouched)
            let others = try String.fetchAll(
                db,
                sql: """
                    SELECT DISTINCT session_id FROM push_tokens
                    WHERE user_id = ? AND device_id = ? AND token_type = 'live_activity' AND is_valid AND session_id <> ?
                    ORDER BY session_id
                    """, arguments: [user, device, sessionID])
            for other in others {
                try endLiveActivities(
                    db, user: user, device: device, session: other, status: nil, operation: nil, vouched: vouched)
            }
        }
    }

    /// A session ended: every activity for it gets `end` with `completed`.
    static func sessionEnded(_ db: Database, user: String, session sessionID: String) throws {
        let devices = try String.fetchAll(
            db,
            sql: """
                SELECT DISTINCT device_id FROM push_tokens
                WHERE session_id = ? AND user_id = ? AND token_type = 'live_activity' AND is_valid ORDER BY device_id
                """, arguments: [sessionID, user])
        let vouched = try vouchedDevices(db, user: user)
        for device in devices {
            try endLiveActivities(
                db, user: user, device: device, session: sessionID, status: "completed", operation: nil,
                vouched: vouched)
        }
    }

    // MARK: - Settings

    public func notificationSettings(deviceID: UUID) async throws -> NotificationSettings {
        try await read("reading notification settings") { db in
            _ = try self.caller(db, trusted: false)
            try self.requireOwn(db, table: "devices", id: deviceID, what: "device")
            return try Self.settings(db, device: deviceID.canonical)
        }
    }

    public func setNotificationSettings(
        deviceID: UUID, _ change: NotificationSettings.Change
    ) async throws -> NotificationSettingsUpdated {
        return try await write("setting notification settings") { db in
            _ = try self.acting(db, deviceID, trusted: false)
            try self.requireOwn(db, table: "devices", id: deviceID, what: "device")
            let device = deviceID.canonical
            let before = try Self.settings(db, device: device)
            let after = change.applied(to: before)
            let columns = NotificationSettings.Key.allCases.map(\.column)
            try db.execute(
                sql: """
                    INSERT INTO notification_settings (device_id, user_id, \(columns.joined(separator: ", ")), updated_at)
                    VALUES (?, ?, \(columns.map { _ in "?" }.joined(separator: ", ")), ?)
                    ON CONFLICT (device_id) DO UPDATE SET
                        \((columns + ["updated_at"]).map { "\($0) = excluded.\($0)" }.joined(separator: ", "))
                    """,
                arguments: StatementArguments(
                    [device, self.me] as [any DatabaseValueConvertible]
                        + NotificationSettings.Key.allCases.map { after[$0] } + [Self.now]))
            var ended = 0
            if before.liveActivities, !after.liveActivities {
                ended = try Self.endLiveActivities(
                    db, user: self.me, device: device, session: nil, status: nil, operation: nil,
                    vouched: Self.vouchedDevices(db, user: self.me))
            }
            return NotificationSettingsUpdated(settings: after, liveActivitiesEnded: ended)
        }
    }

    public func touchSessionActivity(sessionID: UUID, deviceID: UUID) async throws -> Bool {
        return try await write("touching session activity") { db in
            let device = try self.acting(db, deviceID, trusted: true)
            try self.requireOwn(db, table: "agent_coding_sessions", id: sessionID, what: "session")
            try self.requireSessionDesktop(db, session: sessionID, device: device)
            let now = Self.now
            try db.execute(
                sql: """
                    UPDATE session_active_clients SET last_activity_at = ?, updated_at = ?
                    WHERE session_id = ? AND device_id = ? AND user_id = ?
                    """, arguments: [now, now, sessionID.canonical, deviceID.canonical, self.me])
            return db.changesCount > 0
        }
    }

    public func sessionHolder(sessionID: UUID) async throws -> SessionHolder? {
        return try await read("reading a session's holder", gate: .registered, else: nil) { db in
            return try Row.fetchOne(
                db,
                sql: """
                    SELECT device_id, client_type, last_activity_at FROM session_active_clients
                    WHERE session_id = ? AND user_id = ?
                    """, arguments: [sessionID.canonical, self.me]
            ).map { try SessionHolder(json: Self.json($0)) }
        }
    }

    public func alertDeliveries(alertID: UUID) async throws -> AlertDeliveries {
        return try await read("reading alert deliveries") { db in
            try self.requireAsker(db, alertID)
            return try Self.deliveries(db, user: self.me, alertID: alertID)
        }
    }

    /// `alert_deliveries` for `user`, in `db`'s transaction (also `request_approval`'s answer).
    static func deliveries(_ db: Database, user me: String, alertID: UUID) throws -> AlertDeliveries {
        var kind = AlertKind.approval
        var found = try Row.fetchOne(
            db, sql: "SELECT * FROM approval_requests WHERE id = ? AND user_id = ?", arguments: [alertID.canonical, me])
        if found == nil {
            kind = .question
            found = try Row.fetchOne(
                db, sql: "SELECT * FROM agent_questions WHERE id = ? AND user_id = ?",
                arguments: [alertID.canonical, me])
        }
        guard let request = found else {
            throw RemoteStoreError(
                .permissionDenied, "not an approval or question of yours", postgrestCode: .insufficientPrivilege)
        }
        let requester: String = request["requester_device_id"]
        let session: String = request["session_id"]
        let created: String = request["created_at"]
        let best = try outboxOutcomes(db, user: me, kind: kind, alertID: alertID)
        var devices: [AlertDelivery] = []
        for device in try Row.fetchAll(
            db,
            sql: """
                SELECT id, name, device_type FROM devices d WHERE user_id = ? AND id <> ?
                AND (EXISTS (SELECT 1 FROM push_tokens t WHERE t.device_id = d.id AND t.user_id = d.user_id
                             AND t.token_type = 'device') OR id IN (SELECT value FROM json_each(?)))
                ORDER BY name, id
                """,
            arguments: [
                me, requester,
                String(decoding: try JSONEncoder().encode(Array(best.keys)), as: UTF8.self),
            ])
        {
            let id: String = device["id"]
            var entry: AlertDelivery
            if let found = best[id] {
                entry = found
            } else {
                entry = try unqueued(db, device: id, user: me, kind: kind, session: session, created: created)
            }
            entry.deviceName = device["name"]
            entry.deviceType = device["device_type"]
            devices.append(entry)
        }
        if let date = Timestamp.parse(created), date < Date().addingTimeInterval(-7 * 86_400) { devices = [] }
        return AlertDeliveries(
            alertID: alertID, kind: kind.rawValue, isFinal: !devices.contains { !$0.outcome.isFinal },
            devices: devices)
    }

    /// The outcome of each device's rows of this alert in the outbox: the row that speaks for it
    /// (``DeliveryRules/speaks(_:over:)``).
    static func outboxOutcomes(
        _ db: Database, user me: String, kind: AlertKind, alertID: UUID
    ) throws -> [String: AlertDelivery] {
        var best: [String: (DeliveryRules.Candidate, AlertDelivery)] = [:]
        for row in try Row.fetchAll(
            db, sql: "SELECT * FROM push_outbox WHERE user_id = ? AND collapse_id = ?",
            arguments: [me, (kind == .question ? "question-" : "approval-request-") + alertID.canonical])
        {
            guard let device = row["device_id"] as String?, let id = UUID.parse(device) else { continue }
            let (outcome, reason) = DeliveryRules.outcome(
                delivered: (row["delivered_at"] as String?) != nil, failed: (row["failed_at"] as String?) != nil,
                lastError: row["last_error"], attempts: row["attempts"])
            let updated = (row["delivered_at"] ?? row["failed_at"] ?? row["created_at"] as String?).flatMap(
                Timestamp.parse)
            let candidate = DeliveryRules.Candidate(
                outcome: outcome, updatedAt: updated?.timeIntervalSince1970 ?? 0, id: row["id"])
            if let current = best[device], !DeliveryRules.speaks(candidate, over: current.0) { continue }
            best[device] = (
                candidate,
                AlertDelivery(
                    deviceID: id, deviceName: "", outcome: outcome, reason: reason, apnsReason: row["last_reason"],
                    attempts: row["attempts"], updatedAt: updated)
            )
        }
        return best.mapValues(\.1)
    }

    /// Why a device with no row of this alert in the outbox was not reached (``DeliveryRules``).
    static func unqueued(
        _ db: Database, device id: String, user me: String, kind: AlertKind, session: String, created: String
    ) throws -> AlertDelivery {
        func exists(_ condition: String, _ arguments: StatementArguments) throws -> Bool {
            try Bool.fetchOne(
                db,
                sql: """
                    SELECT EXISTS (SELECT 1 FROM push_tokens WHERE device_id = ? AND user_id = ? AND token_type = 'device'
                                   AND is_valid \(condition))
                    """, arguments: [id, me] + arguments) ?? false
        }
        let (outcome, reason) = DeliveryRules.unreached(
            settingOff: try Self.alertDecision(db, device: id, kind: kind, session: session) == .off,
            registeredLater: try exists("AND created_at > ?", [created]), validToken: try exists("", []),
            trusted: try TrustedDevices.of(db, user: me).contains(id))
        return AlertDelivery(deviceID: try uuid(id), deviceName: "", outcome: outcome, reason: reason)
    }
}
