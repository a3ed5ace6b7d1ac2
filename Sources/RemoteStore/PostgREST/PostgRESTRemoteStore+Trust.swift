import Foundation
import SyncModel

/// The device-trust tables over PostgREST. A deployment without them answers 404 `PGRST205`
/// (or `42P01`), which arrives as `.missingTable`.
extension PostgRESTRemoteStore: TrustRemote {
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

    public func listCertificates() async throws -> [SignedStatementRow] {
        try await listStatements("device_certificates")
    }

    public func listRevocations() async throws -> [SignedStatementRow] {
        try await listStatements("device_revocations")
    }

    public func insertPairingRequest(_ row: PairingRequestRow) async throws {
        _ = try await send(
            .post, "pairing_requests", query: [], prefer: "return=minimal", body: Data(row.jsonRow.json.utf8))
    }

    public func listPairingRequests() async throws -> [PairingRequestRow] {
        try await fetchAll(
            "pairing_requests",
            query: [
                ("select", "id,user_id,invite_id,device_id,x25519_public_key,ed25519_public_key,mac,created_at"),
                ("user_id", "eq.\(userID.canonical)"),
            ], order: "id.asc", keyset: ["id"], decode: PairingRequestRow.init(json:))
    }

    public func deletePairingRequest(id: UUID) async throws {
        _ = try await deleteRequest(
            "pairing_requests", query: [("id", "eq.\(id.canonical)"), ("user_id", "eq.\(userID.canonical)")])
    }

    func listStatements(_ table: String) async throws -> [SignedStatementRow] {
        try await fetchAll(
            table, query: [("select", "device_id,user_id,body,signature"), ("user_id", "eq.\(userID.canonical)")],
            order: "device_id.asc", keyset: ["device_id"], atMost: configuration.maxDeviceRows
        ) { try SignedStatementRow(json: $0, table: table) }
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

}

/// The trust log over PostgREST: reads page by `order=epoch.asc,seq.asc`, writes go through the
/// migration's functions (never the table).
extension PostgRESTRemoteStore: TrustLogRemote {
    public func trustLogRows(epoch: UInt32, fromSeq: UInt64) async throws -> [TrustLogRow] {
        try await fetchAll(
            "trust_log",
            query: [
                ("select", "epoch,seq,entry,backup,created_at"), ("user_id", "eq.\(userID.canonical)"),
                ("epoch", "eq.\(epoch)"), ("seq", "gte.\(fromSeq)"),
            ], order: "epoch.asc,seq.asc", keyset: ["epoch", "seq"], decode: TrustLogRow.init(json:))
    }

    public func trustLogGeneses() async throws -> [TrustLogRow] {
        try await fetchAll(
            "trust_log",
            query: [
                ("select", "epoch,seq,entry,backup,created_at"), ("user_id", "eq.\(userID.canonical)"),
                ("seq", "eq.0"),
            ], order: "epoch.asc,seq.asc", keyset: ["epoch", "seq"], decode: TrustLogRow.init(json:))
    }

    public func trustLogWitnesses(epoch: UInt32) async throws -> [TrustLogWitnessRow] {
        try await fetchAll(
            "trust_log_witnesses",
            query: [
                ("select", "device_id,epoch,seq,body,signature"), ("user_id", "eq.\(userID.canonical)"),
                ("epoch", "eq.\(epoch)"),
            ], order: "device_id.asc,seq.asc", keyset: ["device_id", "seq"], decode: TrustLogWitnessRow.init(json:))
    }

    public func appendTrustEntries(epoch: UInt32, firstSeq: UInt64, _ entries: [TrustLogAppend]) async throws {
        _ = try await rpc(
            "append_trust_entries",
            arguments: [
                "epoch": .int(Int(epoch)), "first_seq": .int(Int(firstSeq)), "entries": .strings(entries.map(\.entry)),
                "backups": .strings(entries.map(\.backup)),
            ])
    }

    public func startTrustLog(_ entries: [TrustLogAppend]) async throws {
        _ = try await rpc(
            "start_trust_log",
            arguments: ["entries": .strings(entries.map(\.entry)), "backups": .strings(entries.map(\.backup))])
    }

    public func requestIdentityReset(_ genesis: TrustLogAppend, accept: TrustLogAppend?) async throws {
        _ = try await rpc(
            "request_identity_reset",
            arguments: [
                "entry": .string(genesis.entry), "backup": .string(genesis.backup),
                "accept": .string(accept?.entry), "accept_backup": .string(accept?.backup),
            ])
    }

    public func publishWitness(deviceID: UUID, body: String, signature: String) async throws {
        _ = try await rpc(
            "publish_witness",
            arguments: [
                "device_id": .string(deviceID.canonical), "body": .string(body), "signature": .string(signature),
            ])
    }
}

extension TrustLogHead {
    /// The feeds' `trustLog` member: absent or `null` before any log.
    init?(feed value: ResponseValue?, table: String) throws {
        switch value {
        case nil, .null?: return nil
        case .json(let text)?:
            guard let head = try? JSONDecoder().decode(TrustLogHead.self, from: Data(text.utf8)) else {
                throw RemoteStoreError(.malformedResponse, "\(table): trustLog is not a head")
            }
            self = head
        default: throw RemoteStoreError(.malformedResponse, "\(table): trustLog is not a head")
        }
    }
}
