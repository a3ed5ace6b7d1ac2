import Foundation
import GRDB

// The embedded remote's schema, v3: device trust (registered in EmbeddedRemoteStore+Migrator.swift).
extension EmbeddedRemoteStore {
    /// v3: device trust.
    static func migration03(_ db: Database) throws {
        // The same tables as the project's *_device_trust.sql; rows are checked by the
        // operations (EmbeddedRemoteStore+Trust.swift) as row-level security checks them.
        try db.execute(
            sql: """
                CREATE TABLE user_identity_keys (
                    user_id TEXT PRIMARY KEY NOT NULL,
                    public_key TEXT NOT NULL CHECK (length(public_key) BETWEEN 1 AND 100),
                    created_at TEXT NOT NULL
                );
                CREATE TABLE device_certificates (
                    device_id TEXT PRIMARY KEY NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
                    user_id TEXT NOT NULL,
                    body TEXT NOT NULL CHECK (length(body) BETWEEN 1 AND 2048),
                    signature TEXT NOT NULL CHECK (length(signature) BETWEEN 1 AND 200),
                    created_at TEXT NOT NULL
                );
                CREATE TABLE device_revocations (
                    device_id TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL,
                    body TEXT NOT NULL CHECK (length(body) BETWEEN 1 AND 2048),
                    signature TEXT NOT NULL CHECK (length(signature) BETWEEN 1 AND 200),
                    created_at TEXT NOT NULL
                );
                CREATE TABLE pairing_requests (
                    id TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL,
                    invite_id TEXT NOT NULL CHECK (length(invite_id) BETWEEN 1 AND 64),
                    device_id TEXT NOT NULL,
                    x25519_public_key TEXT NOT NULL CHECK (length(x25519_public_key) BETWEEN 1 AND 100),
                    ed25519_public_key TEXT NOT NULL CHECK (length(ed25519_public_key) BETWEEN 1 AND 100),
                    mac TEXT NOT NULL CHECK (length(mac) BETWEEN 1 AND 100),
                    created_at TEXT NOT NULL
                );
                """)
    }
}
