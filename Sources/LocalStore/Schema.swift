import EnvelopeDigest
import Foundation
import GRDB
import SyncModel

/// The store's schema as named, append-only migrations.
///
/// Never edit a migration that has shipped: add a new one. A store whose database knows a
/// migration this list does not was written by a newer program and is refused, untouched.
///
/// Timestamps are REAL seconds since 2001-01-01 UTC (Foundation's reference date), which
/// round-trips a `Date` exactly; UUIDs are canonical lowercase TEXT.
enum Schema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: identity, repositories, sessions, secrets, ledger, cursors", migrate: v1)
        migrator.registerMigration("v2: change sequence, tombstones, settings", migrate: v2)
        migrator.registerMigration("v3: secret generations, envelope senders", migrate: v3)
        migrator.registerMigration("v4: session runtime status", migrate: v4)
        migrator.registerMigration("v5: ledger envelope keys", migrate: v5)
        migrator.registerMigration("v6: device trust, secret generations kept", migrate: v6)
        migrator.registerMigration("v7: ledger digest kept per session", migrate: v7)
        migrator.registerMigration("v8: ledger coverage kept, unhashed entries indexed", migrate: v8)
        migrator.registerMigration("v9: generation high-water marks, history kept, invite expectations", migrate: v9)
        migrator.registerMigration("v10: approval requests sent", migrate: v10)
        migrator.registerMigration("v11: envelope rows as the remote holds them, with their digest kept", migrate: v11)
        migrator.registerMigration("v12: id digests kept for repositories and sessions", migrate: v12)
        migrator.registerMigration("v13: trust log pin", migrate: trustLogPin)
        migrator.registerMigration("v14: agent hooks", migrate: agentHooks)
        migrator.registerMigration("v15: envelope refusals kept until the row changes", migrate: envelopeRefusals)
        return migrator
    }

    /// The sessions table's secondary indexes as the migrations left them: what a bulk load
    /// (``DeviceStore/loadingSessionsInBulk(_:)``) drops and builds again after it. A migration
    /// that changes one changes this list too, and names them with `IF EXISTS`: a store whose load
    /// was killed lacks them until its next open has migrated it.
    static let sessionIndexes: [(name: String, sql: String)] = [
        ("sessions_repository", "CREATE INDEX IF NOT EXISTS sessions_repository ON sessions (repository_id)"),
        ("sessions_updated", "CREATE INDEX IF NOT EXISTS sessions_updated ON sessions (updated_at, id)"),
        ("sessions_change_seq", "CREATE INDEX IF NOT EXISTS sessions_change_seq ON sessions (change_seq)"),
    ]

    /// Whether one of ``sessionIndexes`` is missing: a bulk load did not get to build it again
    /// (the process ended in between).
    static func sessionIndexesMissing(_ db: Database) throws -> Bool {
        let names = sessionIndexes.map { "'\($0.name)'" }.joined(separator: ", ")
        let present =
            try Int.fetchOne(
                db, sql: "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN (\(names))") ?? 0
        return present < sessionIndexes.count
    }

    /// Builds every missing one of ``sessionIndexes``.
    static func buildSessionIndexes(_ db: Database) throws {
        for index in sessionIndexes { try db.execute(sql: index.sql) }
    }
}
