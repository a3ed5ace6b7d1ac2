import Foundation
import GRDB
import SecretCrypto
import SyncModel

// Pull cursors, the last report, row counts and key-value settings.
extension DeviceStore {
    // MARK: - Cursors and report

    /// The pull cursor for `table`, if a pull got that far.
    public func cursor(for table: CursorTable) async throws -> PullCursor? {
        try await mapErrors("reading cursor") {
            try await pool.read { db in
                guard
                    let row = try Row.fetchOne(
                        db, sql: "SELECT updated_at, last_id FROM pull_cursors WHERE table_name = ?",
                        arguments: [table.rawValue])
                else { return nil }
                return PullCursor(updatedAt: row["updated_at"], id: try row.uuid("last_id"))
            }
        }
    }

    /// Saves (or, with `nil`, clears) the pull cursor for `table`.
    public func setCursor(_ cursor: PullCursor?, for table: CursorTable) async throws {
        try await mapErrors("saving cursor") {
            try await pool.write { db in
                if let cursor {
                    try db.execute(
                        sql: """
                            INSERT INTO pull_cursors (table_name, updated_at, last_id) VALUES (?, ?, ?)
                            ON CONFLICT (table_name) DO UPDATE SET updated_at = excluded.updated_at, last_id = excluded.last_id
                            """, arguments: [table.rawValue, cursor.updatedAt, cursor.id.canonical])
                } else {
                    try db.execute(sql: "DELETE FROM pull_cursors WHERE table_name = ?", arguments: [table.rawValue])
                }
            }
        }
    }

    /// Saves the last sync report (JSON text; it must hold no secret material).
    public func saveLastReport(_ json: String, finishedAt: Date = Date()) async throws {
        try await mapErrors("saving report") {
            try await pool.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO last_sync_report (singleton, finished_at, report) VALUES (1, ?, ?)
                        ON CONFLICT (singleton) DO UPDATE SET finished_at = excluded.finished_at, report = excluded.report
                        """, arguments: [finishedAt.epoch, json])
            }
        }
    }

    /// The last sync report's JSON text and when it finished.
    public func lastReport() async throws -> (json: String, finishedAt: Date)? {
        try await mapErrors("reading report") {
            try await pool.read { db in
                try Row.fetchOne(db, sql: "SELECT report, finished_at FROM last_sync_report").map {
                    ($0["report"], $0.date("finished_at"))
                }
            }
        }
    }

    /// Row counts of every content table.
    public func counts() async throws -> StoreCounts {
        try await mapErrors("counting rows") {
            try await pool.read { db in
                func count(_ table: String) throws -> Int {
                    try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table)") ?? 0
                }
                return StoreCounts(
                    repositories: try count("repositories"), sessions: try count("sessions"),
                    ownSecrets: try count("own_session_secrets"), receivedEnvelopes: try count("received_envelopes"),
                    ledgerEntries: try count("distribution_ledger")
                )
            }
        }
    }

    // MARK: - Settings

    /// A stored setting (remote URL, sync bookkeeping); never a secret. A stored text its type
    /// cannot read is `nil`, as if it were unset.
    public func setting<Value>(_ setting: StoreSetting<Value>) async throws -> Value? {
        try await mapErrors("reading setting") {
            try await pool.read { db in
                try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = ?", arguments: [setting.key])
                    .flatMap(Value.init(settingText:))
            }
        }
    }

    /// Stores (or, with `nil`, removes) a setting.
    public func setSetting<Value>(_ setting: StoreSetting<Value>, _ value: Value?) async throws {
        try await mapErrors("saving setting") {
            try await pool.write { db in
                if let value {
                    try db.execute(
                        sql:
                            "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        arguments: [setting.key, value.settingText])
                } else {
                    try db.execute(sql: "DELETE FROM settings WHERE key = ?", arguments: [setting.key])
                }
            }
        }
    }
}
