import Foundation
import GRDB
import RemoteStore
import SyncModel

/// The device-trust tables on the embedded remote, with the migration's row-level rules: a
/// user reads and writes only their own rows, a certificate, revocation or pairing request names
/// only one of the user's own devices (or an id nobody has), the identity key is insert-only,
/// and revocations are never deleted.
extension EmbeddedRemoteStore: TrustRemote {
    public func setDeviceActive(_ deviceID: UUID, isActive: Bool) async throws {
        let me = self.me
        try await write("updating a device") { db in
            try db.execute(
                sql: "UPDATE devices SET is_active = ?, updated_at = ? WHERE id = ? AND user_id = ?",
                arguments: [isActive, Self.now, deviceID.canonical, me])
            if db.changesCount == 0 {
                throw Self.refused("device \(deviceID.canonical) is not one of yours on the remote")
            }
        }
    }

    public func fetchIdentityKey() async throws -> String? {
        let me = self.me
        return try await read("reading the identity key") { db in
            try String.fetchOne(db, sql: "SELECT public_key FROM user_identity_keys WHERE user_id = ?", arguments: [me])
        }
    }

    public func publishIdentityKey(_ publicKey: String) async throws {
        let me = self.me
        try await write("publishing the identity key") { db in
            try db.execute(
                sql: "INSERT INTO user_identity_keys (user_id, public_key, created_at) VALUES (?, ?, ?)",
                arguments: [me, publicKey, Self.now])
        }
    }

    public func listCertificates() async throws -> [SignedStatementRow] {
        try await listStatements("device_certificates")
    }

    public func publishCertificate(_ row: SignedStatementRow) async throws {
        try await upsertStatement("device_certificates", row)
    }

    public func deleteCertificate(deviceID: UUID) async throws {
        let me = self.me
        try await write("deleting a certificate") { db in
            try db.execute(
                sql: "DELETE FROM device_certificates WHERE device_id = ? AND user_id = ?",
                arguments: [deviceID.canonical, me])
        }
    }

    public func listRevocations() async throws -> [SignedStatementRow] {
        try await listStatements("device_revocations")
    }

    public func publishRevocation(_ row: SignedStatementRow) async throws {
        try await upsertStatement("device_revocations", row)
    }

    public func insertPairingRequest(_ row: PairingRequestRow) async throws {
        try checkOwner(row.userID)
        let me = self.me
        try await write("inserting a pairing request") { db in
            try self.requireNotAnothers(db, device: row.deviceID)
            try db.execute(
                sql: """
                    INSERT INTO pairing_requests (id, user_id, invite_id, device_id, x25519_public_key, ed25519_public_key, mac, created_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    row.id.canonical, me, row.inviteID, row.deviceID.canonical, row.x25519PublicKey,
                    row.ed25519PublicKey,
                    row.mac, Self.now,
                ])
        }
    }

    public func listPairingRequests() async throws -> [PairingRequestRow] {
        let me = self.me
        return try await read("listing pairing requests") { db in
            try Row.fetchAll(db, sql: "SELECT * FROM pairing_requests WHERE user_id = ? ORDER BY id", arguments: [me])
                .map { row in
                    PairingRequestRow(
                        id: try Self.uuid(row["id"]), userID: try Self.uuid(row["user_id"]), inviteID: row["invite_id"],
                        deviceID: try Self.uuid(row["device_id"]), x25519PublicKey: row["x25519_public_key"],
                        ed25519PublicKey: row["ed25519_public_key"], mac: row["mac"],
                        createdAt: (row["created_at"] as String?).flatMap(Timestamp.parse))
                }
        }
    }

    public func deletePairingRequest(id: UUID) async throws {
        let me = self.me
        try await write("deleting a pairing request") { db in
            try db.execute(
                sql: "DELETE FROM pairing_requests WHERE id = ? AND user_id = ?", arguments: [id.canonical, me])
        }
    }

    /// Refuses a device id that belongs to another user (an unknown id passes).
    func requireNotAnothers(_ db: Database, device: UUID) throws {
        if let owner = try String.fetchOne(
            db, sql: "SELECT user_id FROM devices WHERE id = ?", arguments: [device.canonical]), owner != me
        {
            throw Self.refused("new row violates row-level security policy")
        }
    }

    func listStatements(_ table: String) async throws -> [SignedStatementRow] {
        let me = self.me
        return try await read("listing \(table)") { db in
            try Row.fetchAll(
                db,
                sql: "SELECT device_id, user_id, body, signature FROM \(table) WHERE user_id = ? ORDER BY device_id",
                arguments: [me]
            ).map { row in
                SignedStatementRow(
                    deviceID: try Self.uuid(row["device_id"]), userID: try Self.uuid(row["user_id"]),
                    body: row["body"], signature: row["signature"])
            }
        }
    }

    func upsertStatement(_ table: String, _ row: SignedStatementRow) async throws {
        try checkOwner(row.userID)
        let me = self.me
        try await write("writing \(table)") { db in
            try self.requireNotAnothers(db, device: row.deviceID)
            if let owner = try String.fetchOne(
                db, sql: "SELECT user_id FROM \(table) WHERE device_id = ?", arguments: [row.deviceID.canonical]),
                owner != me
            {
                throw Self.refused("new row violates row-level security policy")
            }
            try db.execute(
                sql: """
                    INSERT INTO \(table) (device_id, user_id, body, signature, created_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (device_id) DO UPDATE SET body = excluded.body, signature = excluded.signature
                    """, arguments: [row.deviceID.canonical, me, row.body, row.signature, Self.now])
        }
    }
}

/// The identity backup on the embedded remote: one row per user, read, inserted and replaced
/// only by that user, never deleted (as the migration's policies allow).
extension EmbeddedRemoteStore: IdentityBackupRemote {
    public func fetchIdentityBackup() async throws -> String? {
        let me = self.me
        return try await read("reading the identity backup") { db in
            try String.fetchOne(db, sql: "SELECT body FROM identity_key_backups WHERE user_id = ?", arguments: [me])
        }
    }

    public func resetIdentity() async throws {
        let me = self.me
        try await write("resetting the identity") { db in
            for table in ["device_certificates", "device_revocations", "pairing_requests", "identity_key_backups"] {
                try db.execute(sql: "DELETE FROM \(table) WHERE user_id = ?", arguments: [me])
            }
            try db.execute(sql: "DELETE FROM user_identity_keys WHERE user_id = ?", arguments: [me])
        }
    }

    public func storeIdentityBackup(_ body: String) async throws {
        let me = self.me
        try await write("storing the identity backup") { db in
            let now = Self.now
            try db.execute(
                sql: """
                    INSERT INTO identity_key_backups (user_id, body, created_at, updated_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (user_id) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at
                    """, arguments: [me, body, now, now])
        }
    }
}
