import Foundation
import SyncModel

/// A certificate or revocation row: `device_certificates` / `device_revocations`.
///
/// `body` and `signature` are stored text, unverified: the server can write anything here, and
/// only the client's check against the pinned identity key gives them meaning.
public struct SignedStatementRow: Sendable, Hashable {
    public var deviceID: UUID
    public var userID: UUID
    /// Standard base64 of the statement's bytes.
    public var body: String
    /// Standard base64 of the 64-byte signature.
    public var signature: String

    /// Creates a row.
    public init(deviceID: UUID, userID: UUID, body: String, signature: String) {
        self.deviceID = deviceID
        self.userID = userID
        self.body = body
        self.signature = signature
    }
}

/// A `pairing_requests` row: a new device asking the trust root for a certificate.
public struct PairingRequestRow: Sendable, Hashable {
    public var id: UUID
    public var userID: UUID
    /// The invite's id, 16 lowercase hex digits (as stored: unverified).
    public var inviteID: String
    public var deviceID: UUID
    /// Standard base64 of the device's X25519 key (as stored: unverified).
    public var x25519PublicKey: String
    /// Standard base64 of the device's Ed25519 key (as stored: unverified).
    public var ed25519PublicKey: String
    /// Standard base64 of the 32-byte MAC (as stored: unverified).
    public var mac: String
    public var createdAt: Date?

    /// Creates a row.
    public init(
        id: UUID = UUID(), userID: UUID, inviteID: String, deviceID: UUID, x25519PublicKey: String,
        ed25519PublicKey: String, mac: String, createdAt: Date? = nil
    ) {
        self.id = id
        self.userID = userID
        self.inviteID = inviteID
        self.deviceID = deviceID
        self.x25519PublicKey = x25519PublicKey
        self.ed25519PublicKey = ed25519PublicKey
        self.mac = mac
        self.createdAt = createdAt
    }
}

/// The device-trust tables of trust.md: the identity key, certificates, revocations and pairing
/// requests. A remote without them does not conform (and a deployment without the migration
/// answers `.missingTable`): verified trust is then unavailable and sync runs in trust mode `any`.
public protocol TrustRemote: SyncRemote {
    /// The user's published identity public key (standard base64, unverified), or `nil`.
    func fetchIdentityKey() async throws -> String?
    /// Publishes the identity public key; `.conflict` when the user already has one (never replaced).
    func publishIdentityKey(_ publicKey: String) async throws
    /// Every certificate row of the user.
    func listCertificates() async throws -> [SignedStatementRow]
    /// Inserts or replaces a device's certificate row.
    func publishCertificate(_ row: SignedStatementRow) async throws
    /// Deletes a device's certificate row.
    func deleteCertificate(deviceID: UUID) async throws
    /// Every revocation row of the user.
    func listRevocations() async throws -> [SignedStatementRow]
    /// Inserts or replaces a device's revocation row.
    func publishRevocation(_ row: SignedStatementRow) async throws
    /// Inserts a pairing request.
    func insertPairingRequest(_ row: PairingRequestRow) async throws
    /// Every pairing request row of the user.
    func listPairingRequests() async throws -> [PairingRequestRow]
    /// Deletes a pairing request.
    func deletePairingRequest(id: UUID) async throws
    /// Marks one of the user's devices active or inactive (a revocation marks the revoked device
    /// inactive).
    func setDeviceActive(_ deviceID: UUID, isActive: Bool) async throws
}

extension RemoteStoreError {
    /// What an operation that needs the device-trust tables meets on a remote without them.
    public static let trustUnavailable = RemoteStoreError(
        .missingTable, "this remote has no device-trust tables (verified trust needs the device_trust migration)")
}

/// A remote that keeps the user's encrypted identity backup (recovery.md): one row per user,
/// which the user may read, insert and replace but never delete. The body is ciphertext the
/// server cannot open; every reader checks it.
public protocol IdentityBackupRemote: TrustRemote {
    /// The stored backup (standard base64, unverified), or `nil` when the user has none.
    func fetchIdentityBackup() async throws -> String?
    /// Stores the backup, replacing the user's previous one.
    func storeIdentityBackup(_ body: String) async throws
    /// Removes the user's identity key, certificates, revocations, pairing requests and backup
    /// (`trust reset`): the user may then publish a new identity.
    func resetIdentity() async throws
}
