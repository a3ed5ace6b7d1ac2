import Foundation
import SyncModel

/// The device-trust tables over PostgREST. A deployment without them answers 404 `PGRST205`
/// (or `42P01`), which arrives as `.missingTable`.
extension PostgRESTRemoteStore: TrustRemote {
    public func setDeviceActive(_ deviceID: UUID, isActive: Bool) async throws {
        let body = JSONRow(fields: [("is_active", .bool(isActive))])
        let response = try await send(
            .patch, RemoteTable.devices,
            query: [
                ("id", "eq.\(deviceID.canonical)"), ("user_id", "eq.\(userID.canonical)"),
            ], prefer: "return=representation", body: Data(body.json.utf8))
        guard try !ResponseJSON.rows(response.body, table: RemoteTable.devices).isEmpty else {
            throw RemoteStoreError(.permissionDenied, "device \(deviceID.canonical) is not one of yours on the remote")
        }
    }

    public func fetchIdentityKey() async throws -> String? {
        let response = try await send(
            .get, "user_identity_keys",
            query: [
                ("select", "public_key"), ("user_id", "eq.\(userID.canonical)"),
            ], prefer: nil, body: nil)
        let rows = try ResponseJSON.rows(response.body, table: "user_identity_keys")
        guard let row = rows.first else { return nil }
        guard rows.count == 1 else {
            throw RemoteStoreError(.malformedResponse, "user_identity_keys: more than one row for the user")
        }
        return try RowReader(row, table: "user_identity_keys").string("public_key")
    }

    public func publishIdentityKey(_ publicKey: String) async throws {
        let body = JSONRow(fields: [("user_id", .string(userID.canonical)), ("public_key", .string(publicKey))])
        _ = try await send(.post, "user_identity_keys", query: [], prefer: "return=minimal", body: Data(body.json.utf8))
    }

    public func listCertificates() async throws -> [SignedStatementRow] {
        try await listStatements("device_certificates")
    }

    public func publishCertificate(_ row: SignedStatementRow) async throws {
        try await upsertStatement("device_certificates", row)
    }

    public func deleteCertificate(deviceID: UUID) async throws {
        _ = try await deleteRequest(
            "device_certificates",
            query: [
                ("device_id", "eq.\(deviceID.canonical)"), ("user_id", "eq.\(userID.canonical)"),
            ])
    }

    public func listRevocations() async throws -> [SignedStatementRow] {
        try await listStatements("device_revocations")
    }

    public func publishRevocation(_ row: SignedStatementRow) async throws {
        try await upsertStatement("device_revocations", row)
    }

    public func insertPairingRequest(_ row: PairingRequestRow) async throws {
        let body = JSONRow(fields: [
            ("id", .uuid(row.id)), ("user_id", .uuid(row.userID)), ("invite_id", .string(row.inviteID)),
            ("device_id", .uuid(row.deviceID)),
            ("x25519_public_key", .string(row.x25519PublicKey)), ("ed25519_public_key", .string(row.ed25519PublicKey)),
            ("mac", .string(row.mac)),
        ])
        _ = try await send(.post, "pairing_requests", query: [], prefer: "return=minimal", body: Data(body.json.utf8))
    }

    public func listPairingRequests() async throws -> [PairingRequestRow] {
        try await fetchAll(
            "pairing_requests",
            query: [
                ("select", "id,user_id,invite_id,device_id,x25519_public_key,ed25519_public_key,mac,created_at"),
                ("user_id", "eq.\(userID.canonical)"),
            ], order: "id.asc", keyset: ["id"]
        ) { row in
            let r = RowReader(row, table: "pairing_requests")
            return PairingRequestRow(
                id: try r.uuid("id"), userID: try r.uuid("user_id"), inviteID: try r.string("invite_id"),
                deviceID: try r.uuid("device_id"), x25519PublicKey: try r.string("x25519_public_key"),
                ed25519PublicKey: try r.string("ed25519_public_key"), mac: try r.string("mac"),
                createdAt: try r.optionalDate("created_at"))
        }
    }

    public func deletePairingRequest(id: UUID) async throws {
        _ = try await deleteRequest(
            "pairing_requests", query: [("id", "eq.\(id.canonical)"), ("user_id", "eq.\(userID.canonical)")])
    }

    func listStatements(_ table: String) async throws -> [SignedStatementRow] {
        try await fetchAll(
            table, query: [("select", "device_id,user_id,body,signature"), ("user_id", "eq.\(userID.canonical)")],
            order: "device_id.asc", keyset: ["device_id"], atMost: configuration.maxDeviceRows
        ) { row in
            try Self.statementRow(row, table: table)
        }
    }

    /// One row of `device_certificates` or `device_revocations`.
    static func statementRow(_ row: ResponseRow, table: String) throws -> SignedStatementRow {
        let r = RowReader(row, table: table)
        return SignedStatementRow(
            deviceID: try r.uuid("device_id"), userID: try r.uuid("user_id"),
            body: try r.string("body"), signature: try r.string("signature"))
    }

    func upsertStatement(_ table: String, _ row: SignedStatementRow) async throws {
        let body = JSONRow(fields: [
            ("device_id", .uuid(row.deviceID)), ("user_id", .uuid(row.userID)), ("body", .string(row.body)),
            ("signature", .string(row.signature)),
        ])
        _ = try await send(
            .post, table, query: [("on_conflict", "device_id")], prefer: "resolution=merge-duplicates,return=minimal",
            body: Data(("[" + body.json + "]").utf8))
    }
}

extension PostgRESTRemoteStore: IdentityBackupRemote {
    public func fetchIdentityBackup() async throws -> String? {
        let response = try await send(
            .get, "identity_key_backups",
            query: [("select", "body"), ("user_id", "eq.\(userID.canonical)")], prefer: nil, body: nil)
        let rows = try ResponseJSON.rows(response.body, table: "identity_key_backups")
        guard let row = rows.first else { return nil }
        guard rows.count == 1 else {
            throw RemoteStoreError(.malformedResponse, "identity_key_backups: more than one row for the user")
        }
        return try RowReader(row, table: "identity_key_backups").string("body")
    }

    public func resetIdentity() async throws {
        _ = try await rpc("reset_identity", arguments: [:])
    }

    public func storeIdentityBackup(_ body: String) async throws {
        let row = JSONRow(fields: [("user_id", .uuid(userID)), ("body", .string(body))])
        _ = try await send(
            .post, "identity_key_backups", query: [("on_conflict", "user_id")],
            prefer: "resolution=merge-duplicates,return=minimal", body: Data(("[" + row.json + "]").utf8))
    }
}
