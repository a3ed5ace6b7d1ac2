import Foundation
import GRDB
import SyncModel

/// Remote work an agent's event asks for, queued in the order the agent fired it
/// (docs/agent-hooks.md, "Each event").
public struct AgentJournalEntry: Sendable, Hashable {
    /// What to do on the remote.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A prompt: runtime status `running`, the handoff claim taken by this desktop.
        case running
        /// A finished turn: runtime status `idle` (the remote raises `task_complete`).
        case idle
        /// A failed turn: runtime status `error` with the error type (the remote raises `task_failed`).
        case error
        /// The agent waits for the person: one alert until the next prompt.
        case needsYou = "needs_you"
        /// The session ended: runtime status `not-available`.
        case ended
    }

    /// Where an entry stands.
    public enum State: String, Sendable, Hashable {
        case pending, done, failed, stale
    }

    public var seq: Int64
    public var sessionID: UUID
    public var kind: Kind
    /// The error type of an `error`; nothing else is kept.
    public var detail: String?
    /// When the hook process that queued it started.
    public var at: Date
    public var state: State
    /// Why an entry failed or went stale, in this client's words.
    public var note: String?
}

/// A request a hook process asked and waits on (an approval or a question).
public struct AgentRequestRecord: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        case approval, question
    }

    public var requestID: UUID
    public var kind: Kind
    public var sessionID: UUID
    /// The waiting process.
    public var ownerPID: Int32
    /// When that process started (Linux: `/proc/PID/stat` field 22), so a reused pid is not taken
    /// for it; `nil` where unknown.
    public var ownerStarted: String?
    /// The request's control (base64 of 32 random bytes): what lets this desktop cancel it.
    public var control: String?
    /// Unix seconds.
    public var expiresAt: UInt64
    public var createdAt: Date

    /// Creates a record.
    public init(
        requestID: UUID, kind: Kind, sessionID: UUID, ownerPID: Int32, ownerStarted: String?, control: String?,
        expiresAt: UInt64, createdAt: Date = Date()
    ) {
        self.requestID = requestID
        self.kind = kind
        self.sessionID = sessionID
        self.ownerPID = ownerPID
        self.ownerStarted = ownerStarted
        self.control = control
        self.expiresAt = expiresAt
        self.createdAt = createdAt
    }
}

// What a desktop keeps of the agents whose hooks drive it.
extension DeviceStore {
    /// Records that an agent's hooks made `sessionID` (idempotent).
    public func recordAgentSession(_ sessionID: UUID, agent: String, agentSession: String) async throws {
        try await mapErrors("recording an agent session") {
            try await pool.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO agent_sessions (session_id, agent, agent_session, created_at) VALUES (?, ?, ?, ?)
                        ON CONFLICT (session_id) DO NOTHING
                        """, arguments: [sessionID.canonical, agent, agentSession, Date().epoch])
            }
        }
    }

    /// Whether an agent's hooks made `sessionID` (a made session missing from the store was deleted).
    public func isAgentSession(_ sessionID: UUID) async throws -> Bool {
        try await mapErrors("reading agent sessions") {
            try await pool.read { db in
                try Bool.fetchOne(
                    db, sql: "SELECT EXISTS (SELECT 1 FROM agent_sessions WHERE session_id = ?)",
                    arguments: [sessionID.canonical]) ?? false
            }
        }
    }

    /// Whether the session's "needs you" alert went out since its last prompt.
    public func isAgentNeedsYouAlerted(_ sessionID: UUID) async throws -> Bool {
        try await mapErrors("reading an agent alert") {
            try await pool.read { db in
                try Bool.fetchOne(
                    db, sql: "SELECT needs_you_alerted FROM agent_sessions WHERE session_id = ?",
                    arguments: [sessionID.canonical]) ?? false
            }
        }
    }

    /// Sets whether the session's "needs you" alert went out since its last prompt.
    ///
    /// - Returns: The value before.
    @discardableResult
    public func setAgentNeedsYouAlerted(_ sessionID: UUID, _ alerted: Bool) async throws -> Bool {
        try await mapErrors("recording an agent alert") {
            try await pool.write { db in
                let before =
                    try Bool.fetchOne(
                        db, sql: "SELECT needs_you_alerted FROM agent_sessions WHERE session_id = ?",
                        arguments: [sessionID.canonical]) ?? false
                try db.execute(
                    sql: "UPDATE agent_sessions SET needs_you_alerted = ? WHERE session_id = ?",
                    arguments: [alerted, sessionID.canonical])
                return before
            }
        }
    }

    /// Queues an event's remote work. With `unlessSince`, only when no entry with the same `key`
    /// was queued since then (the event's other handler may have queued it).
    ///
    /// - Returns: Whether it was queued now.
    @discardableResult
    public func queueAgentEvent(
        key: String, sessionID: UUID, kind: AgentJournalEntry.Kind, detail: String? = nil, at: Date = Date(),
        unlessSince: Date? = nil
    ) async throws -> Bool {
        try await mapErrors("queueing an agent event") {
            try await pool.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO agent_events (event_key, session_id, kind, detail, at)
                        SELECT ?, ?, ?, ?, ? WHERE ? IS NULL
                            OR NOT EXISTS (SELECT 1 FROM agent_events WHERE event_key = ? AND at >= ?)
                        """,
                    arguments: [
                        key, sessionID.canonical, kind.rawValue, detail, at.epoch, unlessSince?.epoch, key,
                        unlessSince?.epoch,
                    ])
                return db.changesCount > 0
            }
        }
    }

    /// Whether an entry with `key` was queued since `date`.
    public func hasAgentEvent(key: String, since date: Date) async throws -> Bool {
        try await mapErrors("reading agent events") {
            try await pool.read { db in
                try Bool.fetchOne(
                    db, sql: "SELECT EXISTS (SELECT 1 FROM agent_events WHERE event_key = ? AND at >= ?)",
                    arguments: [key, date.epoch]) ?? false
            }
        }
    }

    /// The pending entries, oldest first.
    public func pendingAgentEvents(limit: Int = 500) async throws -> [AgentJournalEntry] {
        try await agentEvents(where: "state = 'pending' ORDER BY seq", limit: limit)
    }

    /// The newest entries, newest first (`agent status`).
    public func recentAgentEvents(limit: Int = 10) async throws -> [AgentJournalEntry] {
        try await agentEvents(where: "1 ORDER BY seq DESC", limit: limit)
    }

    func agentEvents(where clause: String, limit: Int) async throws -> [AgentJournalEntry] {
        try await mapErrors("reading agent events") {
            try await pool.read { db in
                try Row.fetchAll(
                    db, sql: "SELECT * FROM agent_events WHERE \(clause) LIMIT ?", arguments: [max(1, limit)]
                ).map { row in
                    guard let kind = AgentJournalEntry.Kind(rawValue: row["kind"]),
                        let state = AgentJournalEntry.State(rawValue: row["state"])
                    else { throw LocalStoreError(.corruptRow, "agent_events: an unknown kind or state") }
                    return AgentJournalEntry(
                        seq: row["seq"], sessionID: try row.uuid("session_id"), kind: kind, detail: row["detail"],
                        at: row.date("at"), state: state, note: row["note"])
                }
            }
        }
    }

    /// Settles an entry; entries settled over a week ago are forgotten.
    public func settleAgentEvent(_ seq: Int64, state: AgentJournalEntry.State, note: String? = nil) async throws {
        try await mapErrors("settling an agent event") {
            try await pool.write { db in
                try db.execute(
                    sql: "UPDATE agent_events SET state = ?, note = ? WHERE seq = ?",
                    arguments: [state.rawValue, note, seq])
                try db.execute(
                    sql: "DELETE FROM agent_events WHERE state <> 'pending' AND at < ?",
                    arguments: [Date().epoch - 7 * 86_400])
            }
        }
    }

    /// Records a request a hook process is about to send (before it is sent: a process killed
    /// right after sending leaves what a later event needs to cancel it).
    public func recordAgentRequest(_ record: AgentRequestRecord) async throws {
        try await mapErrors("recording an agent request") {
            try await pool.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO agent_requests (request_id, kind, session_id, owner_pid, owner_started, control, expires_at, created_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        record.requestID.canonical, record.kind.rawValue, record.sessionID.canonical,
                        Int64(record.ownerPID), record.ownerStarted, record.control, Int64(clamping: record.expiresAt),
                        record.createdAt.epoch,
                    ])
            }
        }
    }

    /// Every request a hook process recorded and did not remove.
    public func agentRequests() async throws -> [AgentRequestRecord] {
        try await mapErrors("reading agent requests") {
            try await pool.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM agent_requests ORDER BY created_at").map { row in
                    guard let kind = AgentRequestRecord.Kind(rawValue: row["kind"]) else {
                        throw LocalStoreError(.corruptRow, "agent_requests: an unknown kind")
                    }
                    return AgentRequestRecord(
                        requestID: try row.uuid("request_id"), kind: kind, sessionID: try row.uuid("session_id"),
                        ownerPID: Int32(clamping: row["owner_pid"] as Int64), ownerStarted: row["owner_started"],
                        control: row["control"], expiresAt: UInt64(clamping: row["expires_at"] as Int64),
                        createdAt: row.date("created_at"))
                }
            }
        }
    }

    /// Forgets a request (it ended, or was cancelled).
    public func removeAgentRequest(_ requestID: UUID) async throws {
        try await mapErrors("removing an agent request") {
            try await pool.write { db in
                try db.execute(sql: "DELETE FROM agent_requests WHERE request_id = ?", arguments: [requestID.canonical])
            }
        }
    }
}

extension StoreSetting where Value == Int64 {
    /// When a prompt was last submitted at this desk (Unix milliseconds), by any agent's hooks.
    public static let agentDeskPromptAt = StoreSetting("agent.desk_prompt_at")
    /// How many seconds after a prompt at the desk a permission is asked there, not on the phone.
    public static let agentDeskActive = StoreSetting("agent.desk_active")
    /// Seconds the phone has when the person is away (`always`, or a phone holds the session).
    public static let agentAwayWait = StoreSetting("agent.away_wait")
    /// Seconds the phone has under `auto` when no phone holds the session.
    public static let agentAutoWait = StoreSetting("agent.auto_wait")
}

extension StoreSetting where Value == String {
    /// The away rule of agent hooks: `auto`, `always` or `never`.
    public static let agentAway = StoreSetting("agent.away")
}

extension StoreSetting where Value == Bool {
    /// Whether a permission whose detail does not fit may go to the phone cut and marked.
    public static let agentAllowTruncated = StoreSetting("agent.allow_truncated")
}
