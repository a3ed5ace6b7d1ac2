import Foundation
import SyncModel

// How the records read a row as PostgREST (or the embedded remote, or the change feed) returns
// it: shared by both remotes, so it is part of the contract.

/// The remote tables' names.
package enum RemoteTable {
    package static let devices = "devices"
    package static let repositories = "repositories"
    package static let sessions = "agent_coding_sessions"
    package static let secrets = "agent_coding_session_secrets"
}

extension RepositoryRecord {
    package init(json row: ResponseRow) throws {
        let r = RowReader(row, table: RemoteTable.repositories)
        self.init(
            id: try r.uuid("id"), userID: try r.uuid("user_id"), deviceID: try r.uuid("device_id"),
            name: try r.string("name"),
            localPath: try r.string("local_path"), remoteURL: try r.optionalString("remote_url"),
            defaultBranch: try r.optionalString("default_branch"),
            parentRepositoryID: try r.optionalUUID("parent_repository_id"),
            isWorktree: try r.bool("is_worktree", default: false),
            worktreeBranch: try r.optionalString("worktree_branch"),
            status: try r.enumValue("status", default: .active), lastSyncedAt: try r.optionalDate("last_synced_at"),
            createdAt: try r.optionalDate("created_at") ?? Date(timeIntervalSince1970: 0),
            updatedAt: try r.optionalDate("updated_at") ?? Date(timeIntervalSince1970: 0)
        )
    }
}

extension SessionRecord {
    package init(json row: ResponseRow) throws {
        let r = RowReader(row, table: RemoteTable.sessions)
        self.init(
            id: try r.uuid("id"), userID: try r.uuid("user_id"), deviceID: try r.uuid("device_id"),
            repositoryID: try r.uuid("repository_id"), title: try r.optionalString("title"),
            sessionPID: try r.optionalInt("session_pid"), sessionStartedAt: try r.date("session_started_at"),
            sessionEndedAt: try r.optionalDate("session_ended_at"), status: try r.enumValue("status", default: .active),
            currentBranch: try r.optionalString("current_branch"),
            workingDirectory: try r.optionalString("working_directory"),
            lastHeartbeatAt: try r.optionalDate("last_heartbeat_at"),
            isWorktree: try r.bool("is_worktree", default: false),
            worktreePath: try r.optionalString("worktree_path"),
            createdAt: try r.optionalDate("created_at") ?? Date(timeIntervalSince1970: 0),
            updatedAt: try r.optionalDate("updated_at") ?? Date(timeIntervalSince1970: 0)
        )
        // A malformed status (a deployment without the CHECKs) is dropped; the row is kept.
        runtimeStatus = RuntimeStatus(
            json: r.json("runtime_status"), sessionID: id,
            reportedAt: (try? r.optionalDate("runtime_status_updated_at")) ?? nil)
    }
}

extension EnvelopeRecord {
    /// The (session, recipient) pair the envelope is for.
    public var pair: EnvelopePair { EnvelopePair(sessionID: sessionID, deviceID: deviceID) }

    package init(json row: ResponseRow) throws {
        let r = RowReader(row, table: RemoteTable.secrets)
        self.init(
            sessionID: try r.uuid("session_id"), deviceID: try r.uuid("device_id"),
            ephemeralPublicKey: try r.optionalString("ephemeral_public_key") ?? "",
            encryptedSecret: try r.string("encrypted_secret"))
    }
}

extension RemoteDevice {
    package init(json row: ResponseRow) throws {
        let r = RowReader(row, table: RemoteTable.devices)
        self.init(
            id: try r.uuid("id"), userID: try r.uuid("user_id"), name: try r.string("name"),
            deviceType: (try? r.optionalString("device_type")).flatMap { $0.flatMap(DeviceType.init(rawValue:)) },
            hostname: try r.optionalString("hostname"), isActive: try r.bool("is_active", default: true),
            deviceRole: (try? r.optionalString("device_role")).flatMap { $0.flatMap(DeviceTrustRole.init(rawValue:)) },
            publicKey: try r.optionalString("public_key"), isTrusted: try r.bool("is_trusted", default: false),
            lastSeenAt: try r.optionalDate("last_seen_at"),
            envelopeVersions: EnvelopeCapability.versions(in: r.json("capabilities"))
        )
    }
}

extension OutboxEntry {
    package init(json row: ResponseRow) throws {
        let r = RowReader(row, table: "push_outbox")
        guard let id = try r.optionalInt("id").map(Int64.init) else { throw r.fail("id", "is not an integer") }
        // A remote that predates the hidden token hands the whole token; only its end is kept.
        let hint = try r.optionalString("token_hint")
        var payload = "{}"
        if let object = r.json("payload") {
            let value = (object as? String).flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) } ?? object
            guard JSONSerialization.isValidJSONObject(value),
                let data = try? JSONSerialization.data(
                    withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes])
            else {
                throw r.fail("payload", "is not a JSON object")
            }
            payload = String(decoding: data, as: UTF8.self)
        }
        self.init(
            id: id, deviceID: try r.optionalUUID("device_id"),
            tokenHint: PushTokenText.hint(try hint ?? r.string("token")),
            pushType: try r.string("push_type"),
            priority: try r.optionalInt("priority") ?? 5, collapseID: try r.optionalString("collapse_id"),
            payload: payload,
            createdAt: try r.optionalDate("created_at"), deliveredAt: try r.optionalDate("delivered_at"),
            attempts: try r.optionalInt("attempts") ?? 0, lastError: try r.optionalString("last_error"),
            notBefore: try r.optionalDate("not_before"))
    }
}

extension EnvelopePair {
    /// The pair of a row of the secrets table (its `session_id` and `device_id`).
    package init(json row: ResponseRow) throws {
        let r = RowReader(row, table: RemoteTable.secrets)
        self.init(sessionID: try r.uuid("session_id"), deviceID: try r.uuid("device_id"))
    }
}

extension EnvelopeKey {
    /// The pair and ephemeral key of a row of the secrets table.
    package init(json row: ResponseRow) throws {
        self.init(
            pair: try EnvelopePair(json: row),
            ephemeralPublicKey: try RowReader(row, table: RemoteTable.secrets).optionalString("ephemeral_public_key")
                ?? "")
    }
}

extension TrustLogRow {
    /// A row of `trust_log`.
    package init(json row: ResponseRow) throws {
        let r = RowReader(row, table: "trust_log")
        self.init(
            epoch: UInt32(clamping: try r.int("epoch")), seq: UInt64(clamping: try r.int("seq")),
            entry: try r.string("entry"), backup: try r.optionalString("backup"),
            createdAt: try r.optionalDate("created_at"))
    }
}

extension TrustLogWitnessRow {
    /// A row of `trust_log_witnesses`.
    package init(json row: ResponseRow) throws {
        let r = RowReader(row, table: "trust_log_witnesses")
        self.init(
            deviceID: try r.uuid("device_id"), epoch: UInt32(clamping: try r.int("epoch")),
            seq: UInt64(clamping: try r.int("seq")), body: try r.string("body"), signature: try r.string("signature"))
    }
}

extension PairingRequestRow {
    /// A row of `pairing_requests`.
    package init(json row: ResponseRow) throws {
        let r = RowReader(row, table: "pairing_requests")
        self.init(
            id: try r.uuid("id"), userID: try r.uuid("user_id"), inviteID: try r.string("invite_id"),
            deviceID: try r.uuid("device_id"), x25519PublicKey: try r.string("x25519_public_key"),
            ed25519PublicKey: try r.string("ed25519_public_key"), mac: try r.string("mac"),
            createdAt: try r.optionalDate("created_at"))
    }
}

extension SignedStatementRow {
    /// A row of `table`, `device_certificates` or `device_revocations`.
    package init(json row: ResponseRow, table: String) throws {
        let r = RowReader(row, table: table)
        self.init(
            deviceID: try r.uuid("device_id"), userID: try r.uuid("user_id"), body: try r.string("body"),
            signature: try r.string("signature"))
    }
}

/// Reads one row of a response, failing with a clear error naming the column (never its value).
package struct RowReader {
    let row: ResponseRow
    let table: String

    package init(_ row: ResponseRow, table: String) {
        self.row = row
        self.table = table
    }

    package func fail(_ column: String, _ problem: String) -> RemoteStoreError {
        RemoteStoreError(.malformedResponse, "\(table).\(column) \(problem)")
    }

    package func optionalString(_ column: String) throws -> String? {
        switch row[column] {
        case nil, .null: return nil
        case let .string(text): return text
        default: throw fail(column, "is not text")
        }
    }

    package func string(_ column: String) throws -> String {
        guard let text = try optionalString(column) else { throw fail(column, "is missing") }
        return text
    }

    package func optionalUUID(_ column: String) throws -> UUID? {
        guard let text = try optionalString(column) else { return nil }
        guard let uuid = UUID.parse(text) else { throw fail(column, "is not a UUID") }
        return uuid
    }

    package func uuid(_ column: String) throws -> UUID {
        guard let uuid = try optionalUUID(column) else { throw fail(column, "is missing") }
        return uuid
    }

    package func int(_ column: String) throws -> Int {
        guard let number = try optionalInt(column) else { throw fail(column, "is missing") }
        return number
    }

    package func optionalInt(_ column: String) throws -> Int? {
        switch row[column] {
        case nil, .null: return nil
        case let .int(number): return number
        default: throw fail(column, "is not an integer")
        }
    }

    package func bool(_ column: String, default fallback: Bool) throws -> Bool {
        switch row[column] {
        case nil, .null: return fallback
        case let .bool(flag): return flag
        default: throw fail(column, "is not a boolean")
        }
    }

    package func optionalDate(_ column: String) throws -> Date? {
        guard let text = try optionalString(column) else { return nil }
        guard let date = Timestamp.parse(text) else { throw fail(column, "is not a timestamp") }
        return date
    }

    package func date(_ column: String) throws -> Date {
        guard let date = try optionalDate(column) else { throw fail(column, "is missing") }
        return date
    }

    package func enumValue<E: RawRepresentable>(_ column: String, default fallback: E) throws -> E
    where E.RawValue == String {
        guard let text = try optionalString(column) else { return fallback }
        guard let value = E(rawValue: text) else { throw fail(column, "holds an unknown value") }
        return value
    }

    /// A column read as JSON (an object, or text holding one), as `JSONSerialization` would give it.
    package func json(_ column: String) -> Any? {
        row[column]?.foundationValue
    }
}
