import Foundation
import GRDB
import SecretCrypto
import SyncModel

// This device's identity and its X25519 key file.
extension DeviceStore {
    // MARK: - Identity and key

    /// This device's identity, or `nil` before ``createIdentity(name:deviceType:hostname:role:id:)``.
    public func identity() async throws -> DeviceIdentity? {
        try await mapErrors("reading identity") {
            try await pool.read { db in
                guard let row = try Row.fetchOne(db, sql: "SELECT * FROM device_identity") else { return nil }
                return try DeviceIdentity(
                    id: row.uuid("id"), userID: row.optionalUUID("user_id"), name: row["name"],
                    deviceType: row.enumValue("device_type"), hostname: row["hostname"], role: row.enumValue("role"),
                    publicKey: X25519PublicKey(base64: row["public_key"]), createdAt: row.date("created_at")
                )
            }
        }
    }

    /// The identity, or an error saying to run `init`.
    ///
    /// - Throws: ``LocalStoreError`` `.identityMissing`.
    public func requireIdentity() async throws -> DeviceIdentity {
        guard let identity = try await identity() else {
            throw LocalStoreError(.identityMissing, "this store has no device identity; run `sync-cli init` first")
        }
        return identity
    }

    /// Creates this device's identity and key pair; the private key goes to `device.key` (0600).
    ///
    /// - Throws: ``LocalStoreError`` `.identityExists` when either already exists.
    @discardableResult
    public func createIdentity(
        name: String, deviceType: DeviceType, hostname: String? = nil, role: SyncRole, id: UUID = UUID()
    ) async throws -> DeviceIdentity {
        if try await identity() != nil {
            throw LocalStoreError(.identityExists, "this store already has a device identity")
        }
        let key = X25519PrivateKey()
        try keys.createKey(.encryption, key.rawRepresentation)
        let identity = DeviceIdentity(
            id: id, userID: nil, name: name, deviceType: deviceType, hostname: hostname,
            role: role, publicKey: key.publicKey, createdAt: Date())
        do {
            try await mapErrors("saving identity") {
                try await pool.write { db in
                    try db.execute(
                        sql: """
                            INSERT INTO device_identity (singleton, id, user_id, name, device_type, hostname, role, public_key, created_at)
                            VALUES (1, ?, NULL, ?, ?, ?, ?, ?, ?)
                            """,
                        arguments: [
                            id.canonical, name, deviceType.rawValue, hostname, role.rawValue, key.publicKey.base64,
                            identity.createdAt.epoch,
                        ])
                }
            }
        } catch {
            // No identity row means the key we just wrote belongs to nobody: remove it.
            try? keys.removeKey(.encryption)
            throw error
        }
        return identity
    }

    /// Records the user this device belongs to (at login).
    public func setUserID(_ userID: UUID) async throws {
        try await mapErrors("saving user id") {
            try await pool.write { db in
                try db.execute(sql: "UPDATE device_identity SET user_id = ?", arguments: [userID.canonical])
                if db.changesCount == 0 {
                    throw LocalStoreError(
                        .identityMissing, "this store has no device identity; run `sync-cli init` first")
                }
            }
        }
    }

    /// Loads the device's private key, checking the file's permissions and that it matches the
    /// identity's public key.
    ///
    /// - Throws: ``LocalStoreError`` `.keyFileMissing`, `.keyFileTooOpen`, `.keyFileMalformed`,
    ///   `.keyMismatch`, `.identityMissing`.
    public func deviceKey() async throws -> X25519PrivateKey {
        let identity = try await requireIdentity()
        guard let bytes = try keys.key(.encryption) else {
            throw LocalStoreError(
                .keyFileMissing, "no device key at \(keys.location(of: .encryption)); run `sync-cli init` first")
        }
        let key = try X25519PrivateKey(rawRepresentation: bytes)
        guard key.publicKey == identity.publicKey else {
            throw LocalStoreError(
                .keyMismatch, "\(keys.location(of: .encryption)) does not match this store's device identity")
        }
        return key
    }

    /// The signing key file's path, in the default ``FileKeyStore``.
    public var signingKeyPath: String { directory.appendingPathComponent(DeviceKeyName.signing.fileName).path }

    /// This device's Ed25519 signing key (`signing.key`: the 32-byte seed, 0600, the same file
    /// rules as `device.key`), created atomically on first use: a store made before signing keys
    /// existed gains one the first time it is asked, and nothing else about it changes.
    ///
    /// - Throws: ``LocalStoreError`` `.keyFileTooOpen`, `.keyFileMalformed`, `.io`, `.identityMissing`.
    public func signingKey() async throws -> Ed25519PrivateKey {
        _ = try await requireIdentity()
        if let seed = try keys.key(.signing) { return try Ed25519PrivateKey(seed: seed) }
        let fresh = Ed25519PrivateKey()
        do {
            try keys.createKey(.signing, fresh.seedRepresentation)
            return fresh
        } catch let error as LocalStoreError where error.code == .identityExists {
            // Another process created it first: use theirs.
            guard let seed = try keys.key(.signing) else { throw error }
            return try Ed25519PrivateKey(seed: seed)
        }
    }

    /// This device's credential (`credential.key`: 32 random bytes, 0600, the same file rules
    /// as `device.key`), created atomically on first use: a store made before credentials
    /// existed gains one the first time it is asked, and registers it at its next call to the
    /// remote. The remote acts for the device whose credential a request carries.
    ///
    /// - Throws: ``LocalStoreError`` `.keyFileTooOpen`, `.keyFileMalformed`, `.io`, `.identityMissing`.
    public func deviceCredential() async throws -> DeviceCredential {
        let identity = try await requireIdentity()
        func credential(_ bytes: SecureBytes) throws -> DeviceCredential {
            try bytes.withUnsafeBytes { try DeviceCredential(deviceID: identity.id, bytes: $0) }
        }
        if let bytes = try keys.key(.credential) { return try credential(bytes) }
        let fresh = SecureBytes(randomCount: DeviceCredential.byteCount)
        do {
            try keys.createKey(.credential, fresh)
            return try credential(fresh)
        } catch let error as LocalStoreError where error.code == .identityExists {
            // Another process created it first: use theirs.
            guard let bytes = try keys.key(.credential) else { throw error }
            return try credential(bytes)
        }
    }
}
