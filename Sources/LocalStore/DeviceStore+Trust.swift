import Foundation
import GRDB
import SecretCrypto
import SyncModel

// Device trust (trust.md): the identity key file of the trust root, the pinned identity key,
// open pairing invites, verified revocations, and every generation of a session's secret.
extension DeviceStore {
    // MARK: - Identity key (trust root only) and the pinned identity

    /// The identity key file's path (`identity.key`, only on the trust root), in the default
    /// ``FileKeyStore``.
    public var identityKeyPath: String { directory.appendingPathComponent(DeviceKeyName.identity.fileName).path }

    /// Creates the user's identity key in `identity.key` (the 32-byte seed, 0600, atomic,
    /// the same file rules as `device.key`).
    ///
    /// - Throws: ``LocalStoreError`` `.identityExists` when the file exists.
    public func createIdentityKey() async throws -> Ed25519PrivateKey {
        _ = try await requireIdentity()
        let key = Ed25519PrivateKey()
        try keys.createKey(.identity, key.seedRepresentation)
        return key
    }

    /// Stores a recovered identity key in `identity.key` (same rules as ``createIdentityKey()``);
    /// a file holding the same key is left as it is.
    ///
    /// - Throws: ``LocalStoreError`` `.identityExists` when the file holds another key.
    public func storeIdentityKey(_ key: Ed25519PrivateKey) async throws {
        _ = try await requireIdentity()
        if let existing = try await identityKey() {
            guard existing.publicKey == key.publicKey else {
                throw LocalStoreError(.identityExists, "this store already holds another identity key")
            }
            return
        }
        try keys.createKey(.identity, key.seedRepresentation)
    }

    /// The identity key, when this device is the trust root; `nil` when there is no file.
    ///
    /// - Throws: ``LocalStoreError`` for a file that exists but is too open, a symlink, the wrong
    ///   size or another user's.
    public func identityKey() async throws -> Ed25519PrivateKey? {
        try keys.key(.identity).map { try Ed25519PrivateKey(seed: $0) }
    }

    /// Removes `identity.key` (when a freshly created key could not be published).
    public func removeIdentityKey() throws {
        try? keys.removeKey(.identity)
    }

    /// The identity public key this device pinned when it joined (or created it), or `nil`.
    ///
    /// - Throws: ``LocalStoreError`` `.corrupt` when the stored value is not a key.
    public func pinnedIdentityKey() async throws -> Ed25519PublicKey? {
        guard let text = try await setting(.pinnedIdentityKey) else { return nil }
        guard let key = try? Ed25519PublicKey(base64: text) else {
            throw LocalStoreError(.corruptRow, "the pinned identity key in this store is not an Ed25519 public key")
        }
        return key
    }

    /// Pins the user's identity public key (replacing any earlier pin: only a pairing does this).
    public func pinIdentityKey(_ key: Ed25519PublicKey) async throws {
        try await setSetting(.pinnedIdentityKey, key.base64)
    }

    /// Forgets the pinned identity (`trust reset`, before a new identity is pinned).
    public func unpinIdentityKey() async throws {
        try await setSetting(.pinnedIdentityKey, nil)
    }

    // MARK: - Pairing invites (trust root)

    /// Records an open invite.
    public func createInvite(_ invite: PairingInvite) async throws {
        try await mapErrors("saving invite") {
            try await pool.write { db in
                try invite.secret.withUnsafeBytes { secret in
                    try db.execute(
                        sql: """
                            INSERT INTO pairing_invites (invite_id, secret, created_at, expires_at, device_type, device_role) VALUES (?, ?, ?, ?, ?, ?)
                            """,
                        arguments: [
                            invite.id, Data(secret), invite.createdAt.epoch, invite.expiresAt.epoch,
                            invite.deviceType?.rawValue, invite.deviceRole?.rawValue,
                        ])
                }
            }
        }
    }

    /// Every invite this store made, open or used (expired ones until ``deleteInvites(expiredBefore:)``).
    public func invites() async throws -> [PairingInvite] {
        try await mapErrors("reading invites") {
            try await pool.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM pairing_invites ORDER BY created_at").map { row in
                    let secret: Data = row["secret"]
                    return PairingInvite(
                        id: row["invite_id"], secret: SecureBytes(copying: secret), createdAt: row.date("created_at"),
                        expiresAt: row.date("expires_at"), usedAt: (row["used_at"] as Double?).map(Date.init(epoch:)),
                        usedBy: try row.optionalUUID("used_by"),
                        deviceType: (row["device_type"] as String?).flatMap(DeviceType.init(rawValue:)),
                        deviceRole: (row["device_role"] as String?).flatMap(DeviceTrustRole.init(rawValue:)))
                }
            }
        }
    }

    /// Marks an invite used by a device, once: returns `false` when it was already used.
    public func useInvite(id: String, by device: UUID, at date: Date = Date()) async throws -> Bool {
        try await mapErrors("using invite") {
            try await pool.write { db in
                try db.execute(
                    sql: "UPDATE pairing_invites SET used_at = ?, used_by = ? WHERE invite_id = ? AND used_at IS NULL",
                    arguments: [date.epoch, device.canonical, id])
                return db.changesCount == 1
            }
        }
    }

    /// Forgets invites that expired before `date` (used ones are kept until then too, so a
    /// replayed request is told "used" rather than "unknown").
    @discardableResult
    public func deleteInvites(expiredBefore date: Date) async throws -> Int {
        try await mapErrors("deleting invites") {
            try await pool.write { db in
                try db.execute(sql: "DELETE FROM pairing_invites WHERE expires_at < ?", arguments: [date.epoch])
                return db.changesCount
            }
        }
    }

    // MARK: - Revocations this device verified

    /// Remembers verified revocations (device id, its revoked X25519 key, when).
    public func recordRevocations(_ revocations: [KnownRevocation]) async throws {
        guard !revocations.isEmpty else { return }
        try await mapErrors("saving revocations") {
            try await pool.write { db in
                let now = Date().epoch
                for item in revocations {
                    try db.execute(
                        sql: """
                            INSERT INTO known_revocations
                                (device_id, x25519_public_key, revoked_at, seen_at, epoch, ed25519_public_key)
                            VALUES (?, ?, ?, ?, ?, ?)
                            ON CONFLICT (device_id) DO NOTHING
                            """,
                        arguments: [
                            item.deviceID.canonical, item.x25519PublicKey.base64, item.revokedAt.epoch, now,
                            item.epoch.map { Int64($0) }, item.ed25519PublicKey?.base64,
                        ])
                }
            }
        }
    }

    /// Every revocation this device verified.
    public func knownRevocations() async throws -> [KnownRevocation] {
        try await mapErrors("reading revocations") {
            try await pool.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM known_revocations ORDER BY device_id").map { row in
                    KnownRevocation(
                        deviceID: try row.uuid("device_id"),
                        x25519PublicKey: try X25519PublicKey(base64: row["x25519_public_key"]),
                        revokedAt: row.date("revoked_at"), epoch: (row["epoch"] as Int64?).map { UInt32($0) },
                        ed25519PublicKey: (row["ed25519_public_key"] as String?).flatMap {
                            try? Ed25519PublicKey(base64: $0)
                        })
                }
            }
        }
    }

    // MARK: - Secret generations

    /// Replaces sessions' own secrets with new generations in one transaction: the earlier
    /// generation is kept (sealed, in the history), and the sessions' ledger entries are
    /// forgotten so the next push seals the new secret to every recipient.
    public func rotateOwnSecrets(_ rotations: [(sessionID: UUID, sealed: OwnSealedSecret)]) async throws {
        guard !rotations.isEmpty else { return }
        try await mapErrors("rotating session secrets") {
            try await pool.write { db in
                for item in rotations {
                    try db.execute(
                        sql: """
                            UPDATE own_session_secrets SET ephemeral_public_key = ?, encrypted_secret = ?, generation = ? WHERE session_id = ?
                            """,
                        arguments: [
                            item.sealed.envelope.ephemeralPublicKey, item.sealed.envelope.encryptedSecret,
                            Int64(item.sealed.generation), item.sessionID.canonical,
                        ])
                    try db.execute(
                        sql: "DELETE FROM distribution_ledger WHERE session_id = ?",
                        arguments: [item.sessionID.canonical])
                }
            }
        }
    }

    /// A desktop session's own secret of one generation (the current one by default).
    ///
    /// - Throws: ``LocalStoreError`` `.notFound`.
    public func ownSealedSecret(sessionID: UUID, generation: UInt32? = nil) async throws -> OwnSealedSecret {
        let found = try await mapErrors("reading session secret") {
            try await pool.read { db -> OwnSealedSecret? in
                let rows = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT ephemeral_public_key, encrypted_secret, generation FROM own_session_secrets WHERE session_id = ?
                        UNION ALL SELECT ephemeral_public_key, encrypted_secret, generation FROM own_secret_history WHERE session_id = ?
                        """, arguments: [sessionID.canonical, sessionID.canonical])
                let all = rows.map {
                    OwnSealedSecret(
                        envelope: SecretEnvelope(
                            ephemeralPublicKey: $0["ephemeral_public_key"], encryptedSecret: $0["encrypted_secret"]),
                        generation: UInt32(clamping: $0["generation"] as Int64))
                }
                guard let generation else { return all.first }
                return all.first { $0.generation == generation }
            }
        }
        guard let found else {
            throw LocalStoreError(
                .notFound,
                "no secret\(generation.map { " of generation \($0)" } ?? "") for session \(sessionID.canonical)")
        }
        return found
    }

    /// The generations of a session's secret this store holds, newest first.
    public func secretGenerations(sessionID: UUID) async throws -> [UInt32] {
        try await mapErrors("reading secret generations") {
            try await pool.read { db in
                try Int64.fetchAll(
                    db,
                    sql: """
                        SELECT generation FROM own_session_secrets WHERE session_id = ?1
                        UNION SELECT generation FROM own_secret_history WHERE session_id = ?1
                        UNION SELECT generation FROM received_envelopes WHERE session_id = ?1
                        UNION SELECT generation FROM received_envelope_history WHERE session_id = ?1
                        ORDER BY 1 DESC
                        """, arguments: [sessionID.canonical]
                ).map { UInt32(clamping: $0) }
            }
        }
    }

    /// A received envelope of one generation (the current one by default).
    ///
    /// - Throws: ``LocalStoreError`` `.notFound`.
    public func receivedEnvelope(sessionID: UUID, generation: UInt32? = nil) async throws -> ReceivedEnvelope {
        let found = try await mapErrors("reading envelope") {
            try await pool.read { db -> ReceivedEnvelope? in
                let current = try Row.fetchOne(
                    db, sql: "SELECT * FROM received_envelopes WHERE session_id = ?", arguments: [sessionID.canonical]
                )
                .map(Self.receivedEnvelope)
                guard let generation, current?.generation != generation else { return current }
                return try Row.fetchOne(
                    db, sql: "SELECT * FROM received_envelope_history WHERE session_id = ? AND generation = ?",
                    arguments: [sessionID.canonical, Int64(generation)]
                ).map(Self.receivedEnvelope)
            }
        }
        guard let found else {
            throw LocalStoreError(
                .notFound,
                "no envelope\(generation.map { " of generation \($0)" } ?? "") for session \(sessionID.canonical)")
        }
        return found
    }
}

/// A pairing invite the trust root made: valid 10 minutes, single use.
public struct PairingInvite: Sendable, CustomStringConvertible {
    /// 16 lowercase hex digits (8 random bytes).
    public var id: String
    /// The 16-byte pairing secret `P`.
    public var secret: SecureBytes
    public var createdAt: Date
    public var expiresAt: Date
    public var usedAt: Date?
    public var usedBy: UUID?
    /// The device type the person said this invite is for: the certificate names it, and a
    /// joining device whose row says otherwise is refused. `nil`: confirmed at approval.
    public var deviceType: DeviceType?
    /// The role the certificate grants (`trusted_executor` when `nil`).
    public var deviceRole: DeviceTrustRole?

    /// Creates an invite.
    public init(
        id: String, secret: SecureBytes, createdAt: Date, expiresAt: Date, usedAt: Date? = nil, usedBy: UUID? = nil,
        deviceType: DeviceType? = nil, deviceRole: DeviceTrustRole? = nil
    ) {
        self.id = id
        self.secret = secret
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.usedAt = usedAt
        self.usedBy = usedBy
        self.deviceType = deviceType
        self.deviceRole = deviceRole
    }

    public var description: String { "PairingInvite(\(id), <redacted>)" }
}

/// A revocation this device verified.
public struct KnownRevocation: Sendable, Hashable {
    public var deviceID: UUID
    public var x25519PublicKey: X25519PublicKey
    public var revokedAt: Date
    /// The trust-log epoch it was verified in; `nil` for one verified in legacy mode.
    public var epoch: UInt32?
    /// The device's certified Ed25519 key, when it was certified.
    public var ed25519PublicKey: Ed25519PublicKey?

    /// Creates a record.
    public init(
        deviceID: UUID, x25519PublicKey: X25519PublicKey, revokedAt: Date, epoch: UInt32? = nil,
        ed25519PublicKey: Ed25519PublicKey? = nil
    ) {
        self.deviceID = deviceID
        self.x25519PublicKey = x25519PublicKey
        self.revokedAt = revokedAt
        self.epoch = epoch
        self.ed25519PublicKey = ed25519PublicKey
    }
}
