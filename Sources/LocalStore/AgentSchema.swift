import Foundation
import GRDB

extension Schema {
    /// v14: agent hooks (docs/agent-hooks.md): the sessions an agent's hooks started, the
    /// remote work their events queue (in the order the agent fired them), and the requests a
    /// hook process asked, so another can cancel them once that process is gone.
    static func agentHooks(_ db: Database) throws {
        try db.execute(
            sql: """
                -- Every session an agent's hooks made, kept after the session is deleted: a deleted
                -- session stays deleted when the agent resumes it.
                CREATE TABLE agent_sessions (
                    session_id TEXT PRIMARY KEY NOT NULL,
                    agent TEXT NOT NULL,
                    agent_session TEXT NOT NULL,
                    needs_you_alerted INTEGER NOT NULL DEFAULT 0,
                    created_at REAL NOT NULL
                ) WITHOUT ROWID;
                -- What an event asks of the remote, done in seq order by whichever hook process
                -- drains. event_key (SHA-256 of the hook's input) lets the event's two handlers
                -- queue it once between them.
                CREATE TABLE agent_events (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    event_key TEXT NOT NULL,
                    session_id TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    detail TEXT,
                    at REAL NOT NULL,
                    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done', 'failed', 'stale')),
                    note TEXT
                );
                CREATE INDEX agent_events_key ON agent_events (event_key);
                CREATE INDEX agent_events_pending ON agent_events (state, seq);
                -- A request (an approval or a question) a hook process is waiting on: its control
                -- (what lets only this desktop cancel it) and the process, so a later event cancels it
                -- once that process is gone.
                CREATE TABLE agent_requests (
                    request_id TEXT PRIMARY KEY NOT NULL,
                    kind TEXT NOT NULL CHECK (kind IN ('approval', 'question')),
                    session_id TEXT NOT NULL,
                    owner_pid INTEGER NOT NULL,
                    owner_started TEXT,
                    control TEXT,
                    expires_at INTEGER NOT NULL,
                    created_at REAL NOT NULL
                ) WITHOUT ROWID;
                """)
    }
}
