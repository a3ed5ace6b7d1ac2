import Foundation
import SecretCrypto
import SyncModel

/// Which side of sync this device plays.
public enum SyncRole: String, Sendable, Codable, CaseIterable {
    /// Owns repositories, sessions and their secrets; pushes.
    case desktop
    /// Owns only its device row and key; pulls.
    case mobile
}

/// This device: what its remote `devices` row says about it, and its public key.
public struct DeviceIdentity: Sendable, Hashable {
    public var id: UUID
    /// Set at login.
    public var userID: UUID?
    public var name: String
    public var deviceType: DeviceType
    public var hostname: String?
    public var role: SyncRole
    public var publicKey: X25519PublicKey
    public var createdAt: Date

    /// Creates an identity value.
    public init(
        id: UUID, userID: UUID?, name: String, deviceType: DeviceType, hostname: String?,
        role: SyncRole, publicKey: X25519PublicKey, createdAt: Date
    ) {
        self.id = id
        self.userID = userID
        self.name = name
        self.deviceType = deviceType
        self.hostname = hostname
        self.role = role
        self.publicKey = publicKey
        self.createdAt = createdAt
    }
}

/// One envelope the remote accepted for a (session, recipient device) pair.
public struct LedgerEntry: Sendable, Hashable {
    public var sessionID: UUID
    public var recipientDeviceID: UUID
    /// `SecretCrypto/X25519PublicKey/fingerprint` of the key the envelope was sealed to.
    public var recipientKeyFingerprint: String
    public var sentAt: Date
    /// The accepted envelope's `ephemeral_public_key`, which the envelope digest hashes; `nil`
    /// for entries written before the ledger recorded it (learned from the remote later).
    public var ephemeralPublicKey: String?

    /// Creates a ledger entry.
    public init(
        sessionID: UUID, recipientDeviceID: UUID, recipientKeyFingerprint: String, sentAt: Date = Date(),
        ephemeralPublicKey: String? = nil
    ) {
        self.ephemeralPublicKey = ephemeralPublicKey
        self.sessionID = sessionID
        self.recipientDeviceID = recipientDeviceID
        self.recipientKeyFingerprint = recipientKeyFingerprint
        self.sentAt = sentAt
    }
}

/// How many of this desktop's sessions a recipient has a ledger entry for under one key.
public struct LedgerCoverage: Sendable, Hashable {
    public var recipientDeviceID: UUID
    /// The entries' ``LedgerEntry/recipientKeyFingerprint``.
    public var recipientKeyFingerprint: String
    public var sessions: Int

    /// Creates a coverage count.
    public init(recipientDeviceID: UUID, recipientKeyFingerprint: String, sessions: Int) {
        self.recipientDeviceID = recipientDeviceID
        self.recipientKeyFingerprint = recipientKeyFingerprint
        self.sessions = sessions
    }
}

/// A phone's high-water mark for one session: what it has ever stored, kept when the session is
/// deleted, so no pull can take the session back below it (docs/trust.md).
public struct GenerationMark: Sendable, Hashable {
    public var sessionID: UUID
    /// The highest generation ever stored.
    public var generation: UInt32
    /// Whether an authenticated (version-2) envelope was ever stored: version 1 is refused from then on.
    public var authenticated: Bool
    /// The first authenticated sender: later envelopes from another device are refused.
    public var senderDeviceID: UUID?

    /// Creates a mark.
    public init(sessionID: UUID, generation: UInt32, authenticated: Bool, senderDeviceID: UUID?) {
        self.sessionID = sessionID
        self.generation = generation
        self.authenticated = authenticated
        self.senderDeviceID = senderDeviceID
    }
}

/// An envelope a phone received, kept as received, with what opening it showed.
public struct ReceivedEnvelope: Sendable, Hashable {
    public var sessionID: UUID
    public var envelope: SecretEnvelope
    public var fetchedAt: Date
    /// Version 2: the sealing device, and the X25519 key it was verified against on receipt
    /// (kept so the envelope opens later without asking the remote again).
    public var senderDeviceID: UUID?
    public var senderPublicKey: X25519PublicKey?
    /// The secret's generation (1 for version 1).
    public var generation: UInt32
    /// Whether the sender was authenticated (version 2).
    public var authenticated: Bool

    /// Creates a received envelope.
    public init(
        sessionID: UUID, envelope: SecretEnvelope, fetchedAt: Date = Date(), senderDeviceID: UUID? = nil,
        senderPublicKey: X25519PublicKey? = nil, generation: UInt32 = 1, authenticated: Bool = false
    ) {
        self.sessionID = sessionID
        self.envelope = envelope
        self.fetchedAt = fetchedAt
        self.senderDeviceID = senderDeviceID
        self.senderPublicKey = senderPublicKey
        self.generation = generation
        self.authenticated = authenticated
    }
}

/// A desktop session's own secret: sealed to this device's key at rest, with its generation.
public struct OwnSealedSecret: Sendable, Hashable {
    public var envelope: SecretEnvelope
    public var generation: UInt32

    /// Creates the record.
    public init(envelope: SecretEnvelope, generation: UInt32 = 1) {
        self.envelope = envelope
        self.generation = generation
    }
}

/// Row counts, for `status` and reports.
public struct StoreCounts: Sendable, Hashable, Codable {
    public var repositories: Int
    public var sessions: Int
    public var ownSecrets: Int
    public var receivedEnvelopes: Int
    public var ledgerEntries: Int

    /// Creates a set of counts.
    public init(repositories: Int, sessions: Int, ownSecrets: Int, receivedEnvelopes: Int, ledgerEntries: Int) {
        self.repositories = repositories
        self.sessions = sessions
        self.ownSecrets = ownSecrets
        self.receivedEnvelopes = receivedEnvelopes
        self.ledgerEntries = ledgerEntries
    }
}

/// What applying a pull's rows did.
public struct AppliedRows: Sendable, Hashable {
    /// Rows inserted or updated (a row equal to the one stored is not counted).
    public var changed = 0
    /// Rows deleted because the remote no longer has them.
    public var deleted = 0

    /// Nothing applied yet.
    public init() {}
}
