import Foundation
import GRDB
import RemoteContract
import SyncModel

/// Secret requests and the change feed on the embedded remote, with the migration's rules: a
/// request names only the user's own session and device; the feed is one read.
extension EmbeddedRemoteStore: SecretRequestRemote, ChangeFeedRemote {
    public func listOpenSecretRequests() async throws -> [SecretRequestRow] {
        return try await read("listing secret requests", gate: .registered, else: []) { db in
            return try Self.openRequests(db, user: self.me)
        }
    }

    public func insertSecretRequests(_ rows: [SecretRequestRow]) async throws -> BulkWriteResult {
        try await bulk(rows, key: { $0.id.canonical }, onBatchAccepted: nil) { db, row in
            try self.checkOwner(row.userID)
            // The asking device itself, or the session's desktop (the policy's WITH CHECK).
            let caller = try self.credentialDevice(db)
            let desktop = try String.fetchOne(
                db, sql: "SELECT device_id FROM agent_coding_sessions WHERE id = ?",
                arguments: [row.sessionID.canonical])
            guard let caller, caller == row.requesterDeviceID.canonical || caller == desktop else {
                throw Self.refused("new row violates row-level security policy for table \"session_secret_requests\"")
            }
            for (table, id) in [("agent_coding_sessions", row.sessionID), ("devices", row.requesterDeviceID)]
            where try self.isAnothers(db, table: table, id: id.canonical) {
                throw Self.refused("new row violates row-level security policy for table \"session_secret_requests\"")
            }
            try Self.insert(db, "session_secret_requests", row.jsonRow, onConflict: nil, stamped: false)
        }
    }

    public func fulfilSecretRequests(ids: Set<UUID>) async throws {
        try await write("fulfilling secret requests") { db in
            // Only the session's own desktop marks its requests served (the policy's USING).
            guard let caller = try self.callingDevice(db) else { return }
            try db.execute(
                sql: """
                    UPDATE session_secret_requests SET fulfilled_at = ? WHERE user_id = ? AND id IN (SELECT value FROM json_each(?))
                    AND (? OR session_id IN (SELECT id FROM agent_coding_sessions WHERE device_id = ?))
                    """,
                arguments: [Self.now, self.me, Self.jsonArray(ids), self.isServiceRole, caller])
        }
    }

    public func heartbeat(deviceID: UUID) async throws {
        try await write("refreshing the heartbeat") { db in
            // A device updates only its own row.
            guard try self.credentialDevice(db) == deviceID.canonical else { return }
            let now = Self.now
            try db.execute(
                sql: "UPDATE devices SET last_seen_at = ?, updated_at = ? WHERE id = ? AND user_id = ?",
                arguments: [now, now, deviceID.canonical, self.me])
        }
    }

    public func changes(since cursor: ChangeCursor?, statements: Bool) async throws -> RemoteChanges {
        return try await read("reading changes") { db in
            _ = try self.caller(db, trusted: false)
            let certified = try self.callingDevice(db) != nil
            let now = Self.now
            let devices = try Self.changedDevices(db, user: self.me, since: cursor?.since)
            var fingerprint: String?
            if statements, try db.tableExists("device_certificates"), try db.tableExists("device_revocations") {
                fingerprint = try Self.statementLines(db, user: self.me, canonical: false).joined(separator: ",")
            }
            var changes = RemoteChanges(
                devices: devices, complete: cursor == nil, secretRequests: try Self.openRequests(db, user: self.me),
                statements: fingerprint, cursor: ChangeCursor(since: now), method: .feed)
            // Approvals and questions only to a device the log certifies.
            if certified {
                changes.approvals = try Self.changed(db, .approval, user: self.me, since: cursor?.since) {
                    try ApprovalRequestRow(json: $0)
                }
                changes.questions = try Self.changed(db, .question, user: self.me, since: cursor?.since) {
                    try AgentQuestionRow(json: $0)
                }
            }
            if statements { changes.trustLog = try self.trustLogHead(db) }
            return changes
        }
    }

    /// The user's devices changed since `cursor` (every one without one): both feeds' `devices`.
    static func changedDevices(_ db: Database, user: String, since cursor: String?) throws -> [RemoteDevice] {
        try Row.fetchAll(
            db,
            sql: "SELECT * FROM devices WHERE user_id = ? AND (? IS NULL OR updated_at > ?) ORDER BY updated_at, id",
            arguments: [user, cursor, cursor]
        ).map { try RemoteDevice(json: json($0)) }
    }

    /// The user's legacy trust statements as `kind:device_id:signature` (`c`, a certificate; `r`, a
    /// revocation), sorted; `canonical`: the id as a canonical UUID, a stored id of another form refused.
    static func statementLines(_ db: Database, user: String, canonical: Bool) throws -> [String] {
        try Row.fetchAll(
            db,
            sql: """
                SELECT 'c', device_id, signature FROM device_certificates WHERE user_id = ?
                UNION ALL SELECT 'r', device_id, signature FROM device_revocations WHERE user_id = ?
                """, arguments: [user, user]
        ).map { row in
            "\(row[0] as String):\(try canonical ? uuid(row[1]).canonical : row[1] as String):\(row[2] as String)"
        }.sorted()
    }

    static func openRequests(_ db: Database, user: String) throws -> [SecretRequestRow] {
        try Row.fetchAll(
            db,
            sql:
                "SELECT * FROM session_secret_requests WHERE user_id = ? AND fulfilled_at IS NULL ORDER BY created_at, id",
            arguments: [user]
        ).map { try SecretRequestRow(json: json($0)) }
    }
}
