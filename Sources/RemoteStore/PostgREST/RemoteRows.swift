import Foundation
import SyncModel

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
}

extension RemoteDevice {
    /// The columns a listing reads: what ``init(json:)`` decodes, and nothing a device may not read.
    static let listedColumns =
        "id,user_id,name,device_type,hostname,is_active,device_role,public_key,is_trusted,last_seen_at,capabilities"
}
