import Foundation
import SyncModel

// The rows a client sends, as the JSON the remote's tables take: written once, for the PostgREST
// client's bodies and for the embedded remote's columns.

/// A JSON value for request bodies, written by hand so that key order, `null` versus an absent
/// key, and number formatting are exactly what is meant.
package enum RowValue: Sendable, Hashable {
    case string(String)
    case int(Int)
    case bool(Bool)
    case null
    /// JSON text produced by JSONSerialization (an object or array), written as it is.
    case json(String)

    package static func string(_ value: String?) -> RowValue { value.map(RowValue.string) ?? .null }
    package static func int(_ value: Int?) -> RowValue { value.map(RowValue.int) ?? .null }
    package static func uuid(_ value: UUID?) -> RowValue { value.map { .string($0.canonical) } ?? .null }
    package static func timestamp(_ value: Date?) -> RowValue { value.map { .string(Timestamp.format($0)) } ?? .null }
}

/// One row to send: its fields in order. A field that is absent is not a key at all (the
/// column keeps its value); a field set to `.null` clears the column.
package struct JSONRow: Sendable {
    package var fields: [(String, RowValue)]

    package init(fields: [(String, RowValue)]) {
        self.fields = fields
    }

    /// The key names, which decide which rows may share a request.
    package var signature: String { fields.map(\.0).joined(separator: ",") }

    /// The row as JSON text.
    package func write(into out: inout String) {
        out.append("{")
        for (index, (name, value)) in fields.enumerated() {
            if index > 0 { out.append(",") }
            RowJSONWriter.string(name, into: &out)
            out.append(":")
            switch value {
            case let .string(text): RowJSONWriter.string(text, into: &out)
            case let .int(number): out.append(String(number))
            case let .bool(flag): out.append(flag ? "true" : "false")
            case .null: out.append("null")
            case let .json(text): out.append(text)
            }
        }
        out.append("}")
    }

    package var json: String {
        var out = ""
        write(into: &out)
        return out
    }
}

package enum RowJSONWriter {
    /// Writes `text` as a JSON string (RFC 8259 escapes).
    package static func string(_ text: String, into out: inout String) {
        out.append("\"")
        // Most values (ids, base64, timestamps) need no escape: appended whole, not scalar by
        // scalar (the per-scalar path was 8% of a first push's client time).
        if !text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            out.append(text)
            out.append("\"")
            return
        }
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out.append("\\\"")
            case "\\": out.append("\\\\")
            case "\n": out.append("\\n")
            case "\r": out.append("\\r")
            case "\t": out.append("\\t")
            case _ where scalar.value < 0x20:
                out.append(String(format: "\\u%04x", scalar.value))
            default: out.unicodeScalars.append(scalar)
            }
        }
        out.append("\"")
    }
}

extension OwnDeviceRow {
    /// Only device-owned columns; APNs fields only when registered.
    package var jsonRow: JSONRow {
        var fields: [(String, RowValue)] = [
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
    package var jsonRow: JSONRow {
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
    package var jsonRow: JSONRow {
        var fields: [(String, RowValue)] = [
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
    package var jsonRow: JSONRow {
        // encrypted_secret goes as base64 text, which every deployed reader understands, even
        // into the deployed bytea column.
        JSONRow(fields: [
            ("session_id", .uuid(sessionID)), ("device_id", .uuid(deviceID)),
            ("ephemeral_public_key", .string(ephemeralPublicKey)), ("encrypted_secret", .string(encryptedSecret)),
        ])
    }
}

extension PairingRequestRow {
    /// The columns a device writes; the remote stamps `created_at`.
    package var jsonRow: JSONRow {
        JSONRow(fields: [
            ("id", .uuid(id)), ("user_id", .uuid(userID)), ("invite_id", .string(inviteID)),
            ("device_id", .uuid(deviceID)), ("x25519_public_key", .string(x25519PublicKey)),
            ("ed25519_public_key", .string(ed25519PublicKey)), ("mac", .string(mac)),
        ])
    }
}

extension SecretRequestRow {
    /// The columns a device writes; the remote stamps `created_at`.
    package var jsonRow: JSONRow {
        JSONRow(fields: [
            ("id", .uuid(id)), ("user_id", .uuid(userID)), ("session_id", .uuid(sessionID)),
            ("requester_device_id", .uuid(requesterDeviceID)),
        ])
    }
}
