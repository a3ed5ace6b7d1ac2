import Foundation
import GRDB
import RemoteContract
import SyncModel

/// The legacy device-trust tables on the embedded remote, read-only since the trust log (as the
/// migration makes them); pairing requests, which a device inserts in its own name; and the raw writes
/// an operator could make, for tests that stage a legacy user or an attack.
extension EmbeddedRemoteStore: TrustRemote {
    public func fetchIdentityKey() async throws -> String? {
        return try await read("reading the identity key", gate: .registered, else: nil) { db in
            return try String.fetchOne(
                db, sql: "SELECT public_key FROM user_identity_keys WHERE user_id = ?", arguments: [self.me])
        }
    }

    public func listCertificates() async throws -> [SignedStatementRow] {
        try await listStatements("device_certificates")
    }

    public func listRevocations() async throws -> [SignedStatementRow] {
        try await listStatements("device_revocations")
    }

    public func insertPairingRequest(_ row: PairingRequestRow) async throws {
        try checkOwner(row.userID)
        try await write("inserting a pairing request") { db in
            // A device asks to be paired in its own name.
            guard try self.credentialDevice(db) == row.deviceID.canonical else { throw Self.rowSecurity }
            try self.checkExisting(db, table: "devices", id: row.deviceID.canonical)
            try Self.insert(db, "pairing_requests", row.jsonRow, onConflict: nil, stamped: false)
        }
    }

    public func listPairingRequests() async throws -> [PairingRequestRow] {
        return try await read("listing pairing requests") { db in
            // A device the log certifies (a root settling joiners) reads them all; any other
            // registered device reads only its own.
            guard let caller = try self.credentialDevice(db) else { return [] }
            let all = try self.callingDevice(db) != nil
            return try Row.fetchAll(
                db, sql: "SELECT * FROM pairing_requests WHERE user_id = ? AND (? OR device_id = ?) ORDER BY id",
                arguments: [self.me, all, caller]
            )
            .map { try PairingRequestRow(json: Self.json($0)) }
        }
    }

    public func deletePairingRequest(id: UUID) async throws {
        try await write("deleting a pairing request") { db in
            // The policy's USING: a certified device deletes any, another only its own.
            guard let caller = try self.credentialDevice(db) else { return }
            let all = try self.callingDevice(db) != nil
            try db.execute(
                sql: "DELETE FROM pairing_requests WHERE id = ? AND user_id = ? AND (? OR device_id = ?)",
                arguments: [id.canonical, self.me, all, caller])
        }
    }

    func listStatements(_ table: String) async throws -> [SignedStatementRow] {
        return try await read("listing \(table)", gate: .registered, else: []) { db in
            return try Row.fetchAll(
                db,
                sql: "SELECT device_id, user_id, body, signature FROM \(table) WHERE user_id = ? ORDER BY device_id",
                arguments: [self.me]
            ).map { try SignedStatementRow(json: Self.json($0), table: table) }
        }
    }

}

/// The legacy identity backup on the embedded remote: read only.
extension EmbeddedRemoteStore: IdentityBackupRemote {
    public func fetchIdentityBackup() async throws -> String? {
        return try await read("reading the identity backup", gate: .registered, else: nil) { db in
            return try String.fetchOne(
                db, sql: "SELECT body FROM identity_key_backups WHERE user_id = ?", arguments: [self.me])
        }
    }
}
