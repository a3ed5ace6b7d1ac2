import Foundation
import GRDB
import SecretCrypto
import SyncModel

// The generic row operations every table above is built on.
extension DeviceStore {
    // MARK: - Generic bulk operations

    func upsert<R: LocalRow>(_ rows: [R], progress: (@Sendable (Int) -> Void)?) async throws {
        try await mapErrors("writing \(R.table)") {
            try await pool.write { db in try Self.upsert(rows, in: db, progress: progress) }
        }
    }

    static func upsert<R: LocalRow>(_ rows: [R], in db: Database, progress: (@Sendable (Int) -> Void)?) throws {
        let sequence = try nextChangeSequence(db)
        let statement = try db.cachedStatement(sql: R.upsertSQL)
        for (index, row) in rows.enumerated() {
            try statement.execute(arguments: StatementArguments(row.values + [sequence]))
            if (index + 1) % 1000 == 0 { progress?(index + 1) }
        }
        progress?(rows.count)
    }

    /// Takes the next change sequence number for the current transaction.
    static func nextChangeSequence(_ db: Database) throws -> Int64 {
        try db.execute(sql: "UPDATE change_counter SET value = value + 1")
        return try Int64.fetchOne(db, sql: "SELECT value FROM change_counter") ?? 0
    }

    /// Applies rows a pull read: deletes the rows not in `retaining` (when given), inserts new
    /// rows and updates those that differ; a row equal to the one stored is not written. One
    /// transaction.
    func apply<R: LocalRow>(_ rows: [R], retaining: Set<UUID>?) async throws -> AppliedRows {
        try await apply(R.self, Self.arguments(rows), retaining: retaining)
    }

    /// Each row's values as bound to ``LocalRow/applySQL`` but for the change sequence: made by
    /// the caller, not on the store's writer.
    static func arguments<R: LocalRow>(_ rows: [R]) -> [StatementArguments] {
        rows.map { StatementArguments($0.values) }
    }

    /// ``apply(_:retaining:)`` of rows whose values are made (``arguments(_:)``).
    func apply<R: LocalRow>(
        _ type: R.Type, _ rows: [StatementArguments], retaining: Set<UUID>?
    ) async throws -> AppliedRows {
        try await mapErrors("applying \(R.table)") {
            try await bulkWrite { db in
                var applied = AppliedRows()
                if let retaining {
                    try db.execute(
                        sql: "DELETE FROM \(R.table) WHERE id NOT IN (SELECT value FROM json_each(?))",
                        arguments: [jsonArray(retaining)])
                    applied.deleted = db.changesCount
                }
                guard !rows.isEmpty else { return applied }
                let sequence: StatementArguments = [try Self.nextChangeSequence(db)]
                let statement = try db.cachedStatement(sql: R.applySQL)
                for row in rows {
                    try statement.execute(arguments: row + sequence)
                    applied.changed += db.changesCount
                }
                return applied
            }
        }
    }

    /// Runs `updates` in one write transaction: what a pull writes, a page at a time.
    func bulkWrite<T: Sendable>(_ updates: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await pool.write(updates)
    }

    func fetch<R: LocalRow>(_ type: R.Type, changedSince since: Date?) async throws -> [R] {
        try await mapErrors("reading \(R.table)") {
            try await pool.read { db in
                if let since {
                    return try Row.fetchAll(
                        db, sql: "\(R.selectSQL) WHERE updated_at > ? ORDER BY updated_at, id", arguments: [since.epoch]
                    ).map(R.init(row:))
                }
                return try Row.fetchAll(db, sql: "\(R.selectSQL) ORDER BY updated_at, id").map(R.init(row:))
            }
        }
    }

    func fetchOne<R: LocalRow>(_ type: R.Type, id: UUID) async throws -> R? {
        try await mapErrors("reading \(R.table)") {
            try await pool.read { db in
                try Row.fetchOne(db, sql: "\(R.selectSQL) WHERE id = ?", arguments: [id.canonical]).map(R.init(row:))
            }
        }
    }

    func deleteRows<R: LocalRow>(_ type: R.Type, notIn ids: Set<UUID>) async throws -> Int {
        try await mapErrors("deleting \(R.table)") {
            try await pool.write { db in
                try db.execute(
                    sql: "DELETE FROM \(R.table) WHERE id NOT IN (SELECT value FROM json_each(?))",
                    arguments: [jsonArray(ids)])
                return db.changesCount
            }
        }
    }

    func deleteRows<R: LocalRow>(_ type: R.Type, ids: Set<UUID>) async throws -> Int {
        try await mapErrors("deleting \(R.table)") {
            try await pool.write { db in
                try db.execute(
                    sql: "DELETE FROM \(R.table) WHERE id IN (SELECT value FROM json_each(?))",
                    arguments: [jsonArray(ids)])
                return db.changesCount
            }
        }
    }
}
