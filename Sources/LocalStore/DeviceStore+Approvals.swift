import Foundation
import GRDB
import SyncModel

/// An approval request as the desktop made it (approvals.md): the only copy an answer is checked
/// against.
public struct SentApproval: Sendable, Hashable {
    public var requestID: UUID
    public var sessionID: UUID
    /// The sealed body, standard base64, exactly as sent.
    public var body: String
    public var generation: UInt32
    /// Unix seconds.
    public var expiresAt: UInt64
    public var createdAt: Date

    /// Creates a record.
    public init(
        requestID: UUID, sessionID: UUID, body: String, generation: UInt32, expiresAt: UInt64, createdAt: Date = Date()
    ) {
        self.requestID = requestID
        self.sessionID = sessionID
        self.body = body
        self.generation = generation
        self.expiresAt = expiresAt
        self.createdAt = createdAt
    }
}

// What a desktop keeps of the approval requests it made.
extension DeviceStore {
    /// How long a request's copy is kept after it expired: an answer can count only until
    /// `expires_at + 30` (approvals.md), so a day is ample.
    public static let sentApprovalRetention: UInt64 = 86_400

    /// Records a request before it is sent (a crash after sending must not lose the copy the
    /// answer is checked against), and forgets requests that expired more than
    /// ``sentApprovalRetention`` seconds ago.
    public func recordSentApproval(_ approval: SentApproval) async throws {
        try await mapErrors("saving an approval request") {
            try await pool.write { db in
                let now = UInt64(max(0, Date().timeIntervalSince1970))
                try db.execute(
                    sql: "DELETE FROM sent_approvals WHERE expires_at < ?",
                    arguments: [Int64(clamping: now) - Int64(Self.sentApprovalRetention)])
                try db.execute(
                    sql: """
                        INSERT INTO sent_approvals (request_id, session_id, body, generation, expires_at, created_at)
                        VALUES (?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        approval.requestID.canonical, approval.sessionID.canonical, approval.body,
                        Int64(approval.generation),
                        Int64(approval.expiresAt), approval.createdAt.epoch,
                    ])
            }
        }
    }

    /// The request as this device made it, or `nil` for one it did not make.
    public func sentApproval(requestID: UUID) async throws -> SentApproval? {
        try await mapErrors("reading an approval request") {
            try await pool.read { db in
                try Row.fetchOne(
                    db, sql: "SELECT * FROM sent_approvals WHERE request_id = ?", arguments: [requestID.canonical]
                )
                .map { row in
                    SentApproval(
                        requestID: try row.uuid("request_id"), sessionID: try row.uuid("session_id"), body: row["body"],
                        generation: UInt32(clamping: row["generation"] as Int64),
                        expiresAt: UInt64(clamping: row["expires_at"] as Int64), createdAt: row.date("created_at"))
                }
            }
        }
    }
}
