import Foundation
import GRDB
import SyncModel

// A pull reports a refused envelope once (docs/sync.md, "Envelopes"): the refusal is kept on its
// recorded row until the row changes. The row is still checked at every pull (the trust that
// refused it may change) and is stored once it passes; while it is refused and unchanged, a pull
// counts it without failing again, and `secrets show` says why the secret is missing.

extension Schema {
    /// v15: a recorded envelope row's refusal, its code and message, cleared when the row changes.
    static func envelopeRefusals(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE envelope_rows ADD COLUMN refusal_code TEXT;
                ALTER TABLE envelope_rows ADD COLUMN refusal_message TEXT;
                """)
    }
}

/// Why a pull refused a recorded envelope row: the report's issue code and message (never secret
/// material).
public struct EnvelopeRefusal: Sendable, Hashable {
    /// The issue code (`uncertifiedSender`, `downgradeRefused`, ...).
    public var code: String
    /// What the pull said, with what to do.
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }
}

extension DeviceStore {
    /// The refusals kept for these sessions' recorded rows that are still refused (not stored
    /// or settled since).
    public func envelopeRefusals(sessions: Set<UUID>) async throws -> [UUID: EnvelopeRefusal] {
        guard !sessions.isEmpty else { return [:] }
        return try await mapErrors("reading envelope refusals") {
            try await pool.read { db in
                var result: [UUID: EnvelopeRefusal] = [:]
                for row in try Row.fetchAll(
                    db,
                    sql: """
                        SELECT session_id, refusal_code, refusal_message FROM envelope_rows
                        WHERE refusal_code IS NOT NULL AND encrypted_secret IS NOT NULL AND session_id IN (SELECT value FROM json_each(?))
                        """, arguments: [jsonArray(sessions)])
                {
                    result[try row.uuid(0)] = EnvelopeRefusal(code: row[1], message: row[2] ?? "")
                }
                return result
            }
        }
    }

    /// The refusals kept for `rows` whose recorded row is that very row (its hash): a row the
    /// remote changed since is a new one, not yet refused.
    public func envelopeRefusals(matching rows: [EnvelopeRecord]) async throws -> [UUID: EnvelopeRefusal] {
        guard !rows.isEmpty else { return [:] }
        let hashes = try await rowHashes(rows)
        return try await mapErrors("reading envelope refusals") {
            try await pool.read { db in
                var result: [UUID: EnvelopeRefusal] = [:]
                for row in try Row.fetchAll(
                    db,
                    sql: """
                        SELECT session_id, row_h1, row_h2, refusal_code, refusal_message FROM envelope_rows
                        WHERE refusal_code IS NOT NULL AND session_id IN (SELECT value FROM json_each(?))
                        """, arguments: [jsonArray(Set(hashes.keys))])
                {
                    let session = try row.uuid(0)
                    if let hash = hashes[session], hash.0 == row[1] as Int64, hash.1 == row[2] as Int64 {
                        result[session] = EnvelopeRefusal(code: row[3], message: row[4] ?? "")
                    }
                }
                return result
            }
        }
    }

    /// Keeps each refusal on its session's recorded row (a row not recorded keeps nothing).
    public func recordEnvelopeRefusals(_ refusals: [UUID: EnvelopeRefusal]) async throws {
        guard !refusals.isEmpty else { return }
        try await mapErrors("recording envelope refusals") {
            try await pool.write { db in
                let statement = try db.cachedStatement(
                    sql: "UPDATE envelope_rows SET refusal_code = ?, refusal_message = ? WHERE session_id = ?")
                for (session, refusal) in refusals {
                    try statement.execute(arguments: [refusal.code, refusal.message, session.canonical])
                }
            }
        }
    }
}
