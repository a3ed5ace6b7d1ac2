import Foundation
import GRDB
import RemoteContract
import RemoteRules
import SyncModel

/// Coordination on the embedded remote: the same rules as the project's database functions,
/// each operation one SQLite transaction (SQLite runs one writer at a time, which gives the
/// functions' row-lock ordering: two devices claiming a session end with one holder and one
/// handoff).
extension EmbeddedRemoteStore: CoordinationRemote {
    static func refused(_ message: String) -> RemoteStoreError {
        RemoteStoreError(.permissionDenied, message, postgrestCode: .insufficientPrivilege)
    }

    /// PostgreSQL's refusal of a row a policy's `WITH CHECK` or `USING` does not admit.
    static var rowSecurity: RemoteStoreError { refused("new row violates row-level security policy") }

    static func invalid(_ message: String) -> RemoteStoreError {
        RemoteStoreError(.invalidValue, message, postgrestCode: .invalidParameterValue)
    }

    /// The `user_id` of the row `id` of `table` (`nil`: no such row): what every ownership check reads.
    static func owner(_ db: Database, table: String, id: String) throws -> String? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT user_id FROM \(table) WHERE id = ?"), arguments: [id])
    }

    /// Whether the row `id` of `table` exists and is another user's (RLS `USING` hides it).
    func isAnothers(_ db: Database, table: String, id: String) throws -> Bool {
        try Self.owner(db, table: table, id: id).map { $0 != me } ?? false
    }

    /// Refuses a session or device that is not the caller's (or does not exist).
    func requireOwn(_ db: Database, table: String, id: UUID, what: String) throws {
        guard try Self.owner(db, table: table, id: id.canonical) == me else {
            throw Self.refused("the \(what) is not one of yours")
        }
    }

    public func claimSessionActivity(
        sessionID: UUID, deviceID: UUID, clientType: ClientType
    ) async throws -> SessionClaim {
        return try await write("claiming session activity") { db in
            _ = try self.acting(db, deviceID, trusted: true)
            try self.requireOwn(db, table: "agent_coding_sessions", id: sessionID, what: "session")
            try self.requireOwn(db, table: "devices", id: deviceID, what: "device")
            let now = Self.now
            let token = try String.fetchOne(
                db,
                sql: """
                    SELECT token FROM push_tokens WHERE device_id = ? AND user_id = ? AND token_type = 'device' AND is_valid
                    ORDER BY updated_at DESC LIMIT 1
                    """, arguments: [deviceID.canonical, self.me])
            let previous = try Row.fetchOne(
                db, sql: "SELECT device_id, client_type FROM session_active_clients WHERE session_id = ?",
                arguments: [sessionID.canonical])
            guard let previous else {
                try db.execute(
                    sql: """
                        INSERT INTO session_active_clients (session_id, user_id, client_type, device_id, push_token, last_activity_at, created_at, updated_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        sessionID.canonical, self.me, clientType.rawValue, deviceID.canonical, token, now, now, now,
                    ])
                return SessionClaim(handedOff: false)
            }
            try db.execute(
                sql: """
                    UPDATE session_active_clients SET client_type = ?, device_id = ?, push_token = ?, last_activity_at = ?, updated_at = ?
                    WHERE session_id = ?
                    """, arguments: [clientType.rawValue, deviceID.canonical, token, now, now, sessionID.canonical])
            let previousDevice: String = previous["device_id"]
            guard previousDevice != deviceID.canonical else { return SessionClaim(handedOff: false) }
            // Leaving an iOS device: its live activities for the session end.
            if (previous["client_type"] as String) == ClientType.ios.rawValue {
                try Self.endLiveActivities(
                    db, user: self.me, device: previousDevice, session: sessionID.canonical, status: nil,
                    operation: LiveActivityRules.handoffOperation, vouched: Self.vouchedDevices(db, user: self.me))
            }
            let payload = PushPayloads.handoff(session: sessionID.canonical, to: clientType.rawValue).json
            // The handoff push is never suppressed (notifications.md).
            var notified = 0
            for token in try String.fetchAll(
                db,
                sql: """
                    SELECT token FROM push_tokens WHERE user_id = ? AND device_id = ? AND token_type = 'device' AND is_valid
                    ORDER BY token
                    """, arguments: [self.me, previousDevice])
            {
                notified += try Self.enqueue(
                    db, user: self.me, device: previousDevice, token: token, type: "background", priority: 5,
                    collapse: "handoff-" + sessionID.canonical, payload: payload, at: now)
            }
            return SessionClaim(
                handedOff: true, previousDeviceID: UUID.parse(previousDevice),
                previousClientType: previous["client_type"], notified: notified)
        }
    }

    public func registerPushToken(_ registration: PushTokenRegistration) async throws -> PushTokenRegistered {
        let r = registration
        return try await write("registering a push token") { db in
            // The device's proof first, then the arguments, as `public.register_push_token` has them.
            let device = try self.acting(db, r.deviceID, trusted: false).canonical
            try Self.refuse(
                PushTokenRules.refusal(
                    token: r.token, type: r.type.rawValue, platform: r.platform, environment: r.environment.rawValue,
                    activityID: r.activityID, hasSession: r.sessionID != nil, previous: r.previousToken))
            try self.requireOwn(db, table: "devices", id: r.deviceID, what: "device")
            if let session = r.sessionID {
                try self.requireOwn(db, table: "agent_coding_sessions", id: session, what: "session")
            }
            let now = Self.now
            var invalidated = 0
            if let previous = r.previousToken, previous != r.token {
                try db.execute(
                    sql:
                        "UPDATE push_tokens SET is_valid = 0, updated_at = ? WHERE token = ? AND user_id = ? AND device_id = ? AND is_valid",
                    arguments: [now, previous, self.me, device])
                invalidated = db.changesCount
            }
            let existing = try Row.fetchOne(
                db, sql: "SELECT id, user_id, device_id, is_valid FROM push_tokens WHERE token = ?",
                arguments: [r.token])
            let holder: PushTokenRules.Holder =
                switch (existing?["user_id"] as String?, existing?["device_id"] as String?) {
                case (nil, _): .none
                case (_, device): .thisDevice
                case (self.me, _): .anotherDevice
                default: .anotherUser
                }
            guard PushTokenRules.placement(heldBy: holder, valid: existing?["is_valid"] ?? false) == .register else {
                return PushTokenRegistered(previousInvalidated: invalidated > 0)
            }
            let id = try existing.map { try Self.uuid($0["id"]) } ?? UUID()
            try db.execute(
                sql: """
                    INSERT INTO push_tokens (id, user_id, device_id, token, token_type, activity_id, session_id, platform, environment, is_valid, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)
                    ON CONFLICT (token) DO UPDATE SET user_id = excluded.user_id, device_id = excluded.device_id, token_type = excluded.token_type,
                        activity_id = excluded.activity_id, session_id = excluded.session_id, platform = excluded.platform,
                        environment = excluded.environment, is_valid = 1, updated_at = excluded.updated_at
                    """,
                arguments: [
                    id.canonical, self.me, r.deviceID.canonical, r.token, r.type.rawValue, r.activityID,
                    r.sessionID?.canonical,
                    r.platform, r.environment.rawValue, now, now,
                ])
            return PushTokenRegistered(previousInvalidated: invalidated > 0)
        }
    }

    public func invalidatePushToken(_ token: String) async throws -> Bool {
        return try await write("invalidating a push token") { db in
            let device = try self.caller(db, trusted: false).canonical
            if let owner = try String.fetchOne(
                db, sql: "SELECT device_id FROM push_tokens WHERE token = ?", arguments: [token]), owner != device
            {
                return false // another device's: left alone, with the answer an unknown token gets
            }
            try db.execute(
                sql: "UPDATE push_tokens SET is_valid = 0, updated_at = ? WHERE token = ? AND user_id = ?",
                arguments: [Self.now, token, self.me])
            return db.changesCount > 0
        }
    }

    public func pushTokenStatus(deviceID: UUID) async throws -> PushTokenStatus {
        return try await read("reading push token status") { db in
            _ = try self.acting(db, deviceID, trusted: false)
            try self.requireOwn(db, table: "devices", id: deviceID, what: "device")
            let registered =
                try Bool.fetchOne(
                    db,
                    sql: """
                        SELECT EXISTS (SELECT 1 FROM push_tokens WHERE user_id = ? AND device_id = ? AND token_type = 'device' AND is_valid)
                        """, arguments: [self.me, deviceID.canonical]) ?? false
            let live = try Row.fetchAll(
                db,
                sql: """
                    SELECT activity_id, session_id, updated_at FROM push_tokens
                    WHERE user_id = ? AND device_id = ? AND token_type = 'live_activity' AND is_valid ORDER BY updated_at, id
                    """, arguments: [self.me, deviceID.canonical]
            ).map { row in
                PushTokenStatus.LiveActivity(
                    activityId: row["activity_id"], sessionId: try Self.uuid(row["session_id"]),
                    registeredAt: row["updated_at"])
            }
            return PushTokenStatus(deviceTokenRegistered: registered, liveActivityTokens: live)
        }
    }

    public func clearApproval(requestID: String, excludingToken: String?) async throws -> ApprovalClearing {
        guard UUID(uuidString: requestID)?.canonical == requestID else {
            throw Self.invalid("request_id must be a canonical lowercase UUID")
        }
        return try await write("clearing an approval") { db in
            _ = try self.caller(db, trusted: true)
            // Clearings go only to devices the log vouches for, when the user has a log.
            let trusted = try Self.vouchedDevices(db, user: self.me)
            // An approval request is cleared by its answer or its cancellation, never by this call.
            if let id = UUID(uuidString: requestID),
                try Bool.fetchOne(
                    db, sql: "SELECT EXISTS (SELECT 1 FROM approval_requests WHERE id = ?)", arguments: [id.canonical])
                    == true
            {
                throw Self.refused("an approval request is cleared by its answer or its cancellation")
            }
            let tokens = try Row.fetchAll(
                db,
                sql: """
                    SELECT device_id, token FROM push_tokens
                    WHERE user_id = ? AND token_type = 'device' AND is_valid AND token IS NOT ? ORDER BY device_id, token
                    """, arguments: [self.me, excludingToken])
            // Each device's badge is counted as approval_requests has it; a token excluded is
            // the answering device's, which keeps its own.
            var devicesNotified = 0
            for row in tokens where trusted?.contains(row["device_id"]) ?? true {
                let device: String = row["device_id"]
                guard
                    let payload = PushPayloads.clearing(
                        .approval, request: requestID, reason: "approved_on_other_device",
                        badge: try Self.approvalBadge(db, user: self.me, device: device))
                else { continue }
                try Self.enqueue(
                    db, user: self.me, device: device, token: row["token"], type: "background", priority: 5,
                    collapse: Self.clearingCollapse(.approval, requestID), payload: payload.json, at: Self.now,
                    once: "approval")
                devicesNotified += 1
            }
            // What was queued for a device the log does not vouch for (a revoked or never-paired one) goes.
            if let trusted {
                let waiting = try Row.fetchAll(
                    db,
                    sql:
                        "SELECT id, device_id FROM push_outbox WHERE user_id = ? AND collapse_id = ? AND delivered_at IS NULL",
                    arguments: [self.me, "approval-" + requestID])
                for row in waiting where !trusted.contains(row["device_id"] as String? ?? "") {
                    try db.execute(sql: "DELETE FROM push_outbox WHERE id = ?", arguments: [row["id"] as Int64])
                }
            }
            return ApprovalClearing(success: true, devicesNotified: devicesNotified)
        }
    }

    public func setRuntimeStatus(_ status: RuntimeStatus) async throws -> RuntimeStatus {
        let scheme = deepLinkScheme
        return try await write("setting runtime status") { db in
            // Only the session's desktop writes its status (the sessions' write policy).
            let caller = try self.credentialDevice(db)
            let now = Self.now
            let before = try String.fetchOne(
                db, sql: "SELECT runtime_status FROM agent_coding_sessions WHERE id = ? AND user_id = ?",
                arguments: [status.sessionID.canonical, self.me])
            try db.execute(
                sql: """
                    UPDATE agent_coding_sessions SET runtime_status = ?, runtime_status_updated_at = ?, updated_at = ?
                    WHERE id = ? AND user_id = ? AND device_id = ?
                    """, arguments: [status.jsonText, now, now, status.sessionID.canonical, self.me, caller])
            guard db.changesCount > 0 else {
                throw Self.refused(
                    "session \(status.sessionID.canonical) is not one of yours on the remote (push it first)")
            }
            if before != status.jsonText {
                try Self.runtimeStatusChanged(db, user: self.me, session: status.sessionID.canonical)
                if let kind = Self.taskKind(runtimeBefore: before, after: status.jsonText) {
                    _ = try Self.queueTaskAlerts(
                        db, user: self.me, session: status.sessionID.canonical, kind: kind, scheme: scheme)
                }
            }
            var stored = status
            stored.reportedAt = Timestamp.parse(now)
            return stored
        }
    }

    public func listOutbox(limit: Int) async throws -> [OutboxEntry] {
        return try await read("listing the push outbox", gate: .certified, else: []) { db in
            return try Row.fetchAll(
                db,
                sql: """
                    SELECT id, device_id, substr(token, -6) AS token_hint, push_type, priority, collapse_id, payload,
                        created_at, delivered_at, attempts, last_error, not_before
                    FROM push_outbox WHERE user_id = ? ORDER BY id DESC LIMIT ?
                    """, arguments: [self.me, max(0, min(limit, 10_000))]
            ).map { try OutboxEntry(json: Self.json($0)) }
        }
    }
}
