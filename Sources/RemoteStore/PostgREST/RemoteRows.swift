import Foundation
import SyncModel

/// The remote tables' names.
enum RemoteTable {
    static let devices = "devices"
    static let repositories = "repositories"
    static let sessions = "agent_coding_sessions"
    static let secrets = "agent_coding_session_secrets"
}

/// Columns that old deployments may lack: sent only when the row has a value, so a row without
/// one neither fails on a missing column nor clears another writer's value.
enum OptionalColumns {
    static let sessions: Set<String> = ["title"]
    static let devices: Set<String> = ["capabilities"]
}

extension OwnDeviceRow {
    /// Only device-owned columns; APNs fields only when registered.
    var jsonRow: JSONRow {
        var fields: [(String, JSONValue)] = [
            ("id", .uuid(id)), ("user_id", .uuid(userID)), ("name", .string(name)),
            ("device_type", .string(deviceType.rawValue)), ("hostname", .string(hostname)),
            ("public_key", .string(publicKey)), ("is_active", .bool(isActive)),
            ("last_seen_at", .timestamp(lastSeenAt)),
        ]
        if let apns {
            fields += [
                ("apns_token", .string(apns.token)), ("apns_environment", .string(apns.environment.deviceColumnValue)),
                ("push_enabled", .bool(apns.pushEnabled)), ("apns_token_updated_at", .timestamp(apns.updatedAt)),
            ]
        }
        return JSONRow(fields: fields)
    }
}

extension RepositoryRecord {
    var jsonRow: JSONRow {
        JSONRow(fields: [
            ("id", .uuid(id)), ("user_id", .uuid(userID)), ("device_id", .uuid(deviceID)), ("name", .string(name)),
            ("local_path", .string(localPath)), ("remote_url", .string(remoteURL)),
            ("default_branch", .string(defaultBranch)),
            ("parent_repository_id", .uuid(parentRepositoryID)), ("is_worktree", .bool(isWorktree)),
            ("worktree_branch", .string(worktreeBranch)), ("status", .string(status.rawValue)),
            ("last_synced_at", .timestamp(lastSyncedAt)), ("created_at", .timestamp(createdAt)),
            ("updated_at", .timestamp(updatedAt)),
        ])
    }

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
    var jsonRow: JSONRow {
        var fields: [(String, JSONValue)] = [
            ("id", .uuid(id)), ("user_id", .uuid(userID)), ("device_id", .uuid(deviceID)),
            ("repository_id", .uuid(repositoryID)),
        ]
        if let title { fields.append(("title", .string(title))) }
        fields += [
            ("session_pid", .int(sessionPID)), ("session_started_at", .timestamp(sessionStartedAt)),
            ("session_ended_at", .timestamp(sessionEndedAt)), ("status", .string(status.rawValue)),
            ("current_branch", .string(currentBranch)), ("working_directory", .string(workingDirectory)),
            ("last_heartbeat_at", .timestamp(lastHeartbeatAt)), ("is_worktree", .bool(isWorktree)),
            ("worktree_path", .string(worktreePath)), ("created_at", .timestamp(createdAt)),
            ("updated_at", .timestamp(updatedAt)),
        ]
        return JSONRow(fields: fields)
    }

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
    var jsonRow: JSONRow {
        // encrypted_secret goes as base64 text, which every deployed reader understands, even
        // into the deployed bytea column.
        JSONRow(fields: [
            ("session_id", .uuid(sessionID)), ("device_id", .uuid(deviceID)),
            ("ephemeral_public_key", .string(ephemeralPublicKey)), ("encrypted_secret", .string(encryptedSecret)),
        ])
    }

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
    /// The columns a listing reads: what ``init(json:)`` decodes, and nothing a device may not read.
    static let listedColumns =
        "id,user_id,name,device_type,hostname,is_active,device_role,public_key,is_trusted,last_seen_at,capabilities"

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

/// Reads one row of a response, failing with a clear error naming the column (never its value).
struct RowReader {
    let row: ResponseRow
    let table: String

    init(_ row: ResponseRow, table: String) {
        self.row = row
        self.table = table
    }

    func fail(_ column: String, _ problem: String) -> RemoteStoreError {
        RemoteStoreError(.malformedResponse, "\(table).\(column) \(problem)")
    }

    func optionalString(_ column: String) throws -> String? {
        switch row[column] {
        case nil, .null: return nil
        case let .string(text): return text
        default: throw fail(column, "is not text")
        }
    }

    func string(_ column: String) throws -> String {
        guard let text = try optionalString(column) else { throw fail(column, "is missing") }
        return text
    }

    func optionalUUID(_ column: String) throws -> UUID? {
        guard let text = try optionalString(column) else { return nil }
        guard let uuid = UUID.parse(text) else { throw fail(column, "is not a UUID") }
        return uuid
    }

    func uuid(_ column: String) throws -> UUID {
        guard let uuid = try optionalUUID(column) else { throw fail(column, "is missing") }
        return uuid
    }

    func int(_ column: String) throws -> Int {
        guard let number = try optionalInt(column) else { throw fail(column, "is missing") }
        return number
    }

    func optionalInt(_ column: String) throws -> Int? {
        switch row[column] {
        case nil, .null: return nil
        case let .int(number): return number
        default: throw fail(column, "is not an integer")
        }
    }

    func bool(_ column: String, default fallback: Bool) throws -> Bool {
        switch row[column] {
        case nil, .null: return fallback
        case let .bool(flag): return flag
        default: throw fail(column, "is not a boolean")
        }
    }

    func optionalDate(_ column: String) throws -> Date? {
        guard let text = try optionalString(column) else { return nil }
        guard let date = Timestamp.parse(text) else { throw fail(column, "is not a timestamp") }
        return date
    }

    func date(_ column: String) throws -> Date {
        guard let date = try optionalDate(column) else { throw fail(column, "is missing") }
        return date
    }

    func enumValue<E: RawRepresentable>(_ column: String, default fallback: E) throws -> E where E.RawValue == String {
        guard let text = try optionalString(column) else { return fallback }
        guard let value = E(rawValue: text) else { throw fail(column, "holds an unknown value") }
        return value
    }

    /// A column read as JSON (an object, or text holding one), as `JSONSerialization` would give it.
    func json(_ column: String) -> Any? {
        row[column]?.foundationValue
    }
}
