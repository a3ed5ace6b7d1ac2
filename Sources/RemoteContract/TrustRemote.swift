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

/// The device-trust tables of trust.md, read-only since the trust log (trust-log.md, "Migration from the legacy tables"):
/// the legacy identity key, certificates and revocations a device in legacy mode still reads,
/// the pairing requests, and the device rows' activity. A deployment without the migration
/// answers `.missingTable`.
public protocol TrustRemote: SyncRemote {
    /// The user's legacy identity public key (standard base64, unverified), or `nil`.
    func fetchIdentityKey() async throws -> String?
    /// Every legacy certificate row of the user.
    func listCertificates() async throws -> [SignedStatementRow]
    /// Every legacy revocation row of the user.
    func listRevocations() async throws -> [SignedStatementRow]
    /// Inserts a pairing request.
    func insertPairingRequest(_ row: PairingRequestRow) async throws
    /// Every pairing request row of the user.
    func listPairingRequests() async throws -> [PairingRequestRow]
    /// Deletes a pairing request.
    func deletePairingRequest(id: UUID) async throws
}

/// The legacy identity backup (recovery.md, before the trust log): read only, for recovering a
/// legacy identity before its log exists.
public protocol IdentityBackupRemote: TrustRemote {
    /// The stored legacy backup (standard base64, unverified), or `nil` when the user has none.
    func fetchIdentityBackup() async throws -> String?
}

/// One row of `trust_log`: an entry and its backup, as stored (unverified).
public struct TrustLogRow: Sendable, Hashable {
    public var epoch: UInt32
    public var seq: UInt64
    /// Standard base64 of the entry.
    public var entry: String
    /// The v2 backup stored with it, or `nil`.
    public var backup: String?
    /// The server's time of the insert.
    public var createdAt: Date?

    public init(epoch: UInt32, seq: UInt64, entry: String, backup: String? = nil, createdAt: Date? = nil) {
        self.epoch = epoch
        self.seq = seq
        self.entry = entry
        self.backup = backup
        self.createdAt = createdAt
    }
}

/// One row of `trust_log_witnesses`, as stored (unverified).
public struct TrustLogWitnessRow: Sendable, Hashable {
    public var deviceID: UUID
    public var epoch: UInt32
    public var seq: UInt64
    /// Standard base64 of the 155-byte witness.
    public var body: String
    /// Standard base64 of its signature.
    public var signature: String

    public init(deviceID: UUID, epoch: UInt32, seq: UInt64, body: String, signature: String) {
        self.deviceID = deviceID
        self.epoch = epoch
        self.seq = seq
        self.body = body
        self.signature = signature
    }
}

/// An entry to append, with the backup of its row.
public struct TrustLogAppend: Sendable, Hashable {
    public var entry: String
    public var backup: String?

    public init(entry: String, backup: String?) {
        self.entry = entry
        self.backup = backup
    }
}

/// The head of the user's current epoch as the server reports it (the feeds' `trustLog`): while
/// it equals a device's pin, nothing in the log changed.
public struct TrustLogHead: Sendable, Hashable, Codable {
    /// The current epoch, or `nil` while none is (a reset pending before any log).
    public var epoch: UInt32?
    public var seq: UInt64?
    /// Lowercase hex of the head's `entry_hash`.
    public var hash: String?
    /// The highest epoch ever used (a new genesis raises it).
    public var highestEpoch: UInt32
    /// A reset that is pending, if any.
    public var pendingEpoch: UInt32?

    public init(epoch: UInt32?, seq: UInt64?, hash: String?, highestEpoch: UInt32, pendingEpoch: UInt32?) {
        self.epoch = epoch
        self.seq = seq
        self.hash = hash
        self.highestEpoch = highestEpoch
        self.pendingEpoch = pendingEpoch
    }
}

/// The trust log (trust-log.md, "The remote"): rows readable by their user, writable only through
/// the append functions, which check the chain (never a signature: every client does that).
///
/// Refusals arrive as `RemoteStoreError` with the function's SQLSTATE in `postgrestCode`:
/// `28000` (sign in again), `23505` (a log exists), `40001` (not at the head: read again),
/// `55000` (a state refusal), `42501` (another user), `22023` (anything else).
public protocol TrustLogRemote: SyncRemote {
    /// The rows of `epoch` from `seq` on, in seq order.
    func trustLogRows(epoch: UInt32, fromSeq: UInt64) async throws -> [TrustLogRow]
    /// Every epoch's genesis (seq 0), in epoch order.
    func trustLogGeneses() async throws -> [TrustLogRow]
    /// The witnesses of `epoch`.
    func trustLogWitnesses(epoch: UInt32) async throws -> [TrustLogWitnessRow]
    /// `append_trust_entries`: 1 to 8 entries at the head of the current epoch, all or nothing.
    func appendTrustEntries(epoch: UInt32, firstSeq: UInt64, _ entries: [TrustLogAppend]) async throws
    /// `start_trust_log`: epoch 1's genesis and up to 8 entries (a fresh sign-in).
    func startTrustLog(_ entries: [TrustLogAppend]) async throws
    /// `request_identity_reset`: a new epoch's genesis, pending for 72 hours, or with `accept` (an
    /// accept appended to the current epoch) in effect at once (a fresh sign-in).
    func requestIdentityReset(_ genesis: TrustLogAppend, accept: TrustLogAppend?) async throws
    /// `publish_witness`: this device's witness of the head it verified.
    func publishWitness(deviceID: UUID, body: String, signature: String) async throws
}
