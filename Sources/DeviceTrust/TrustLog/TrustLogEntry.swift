import Foundation
import SecretCrypto

/// The kinds of trust-log entry (trust-log.md, "Bytes").
public enum TrustLogEntryType: UInt8, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// The first entry of an epoch: the identity key, its append anchor, the recovery key and the
    /// author's certificate.
    case genesis = 0x01
    /// A device certificate (trust.md's body, byte for byte).
    case certify = 0x02
    /// A device revocation (trust.md's body, byte for byte).
    case revoke = 0x03
    /// A new identity key, with revocations and the new seed granted to the remaining roots.
    case succession = 0x04
    /// The identity seed sealed to a device that becomes a root.
    case rootGrant = 0x05
    /// A veto or an acceptance of a reset (a new epoch's genesis).
    case resetAnswer = 0x06

    public var description: String {
        switch self {
        case .genesis: "genesis"
        case .certify: "certify"
        case .revoke: "revoke"
        case .succession: "succession"
        case .rootGrant: "root grant"
        case .resetAnswer: "reset answer"
        }
    }

    /// Whether the entry carries a second signature (the author's, or the successor's).
    var hasSecondSignature: Bool { self == .genesis || self == .succession }
}

/// One entry of a user's trust log, as signed:
///
/// ```
/// tbs   = "unbound-trust-log-v1" || 0x00 || user_id (36) || 0x00 || epoch (4) || seq (8)
///      || prev (32) || type (1) || created_at (8) || author_device_id (36) || 0x00
///      || append_proof (32) || len16(body)
/// entry = tbs || sig_identity (64) [|| sig_second (64): genesis and succession only]
/// entry_hash = SHA-256("unbound-trust-log-hash-v1" || 0x00 || entry)
/// ```
/// `tbs` without the body is 182 bytes. `sig_identity` is under the identity key in force before
/// the entry (a genesis: its own), over ``signatureInput(role:)`` with role `identity`; a
/// genesis's second signature is its author's (role `author`, under the certificate's Ed25519
/// key), a succession's is the new key's (role `successor`).
public struct TrustLogEntry: Sendable, Hashable {
    public static let prefix = "unbound-trust-log-v1"
    static let signaturePrefix = Array("unbound-trust-log-sig-v1".utf8) + [0]
    static let hashPrefix = Array("unbound-trust-log-hash-v1".utf8) + [0]
    /// The largest body.
    public static let maxBodyBytes = 4_096
    /// `tbs` without its body.
    public static let headerBytes = 182
    /// The largest entry: a body of 4,096 bytes and two signatures.
    public static let maxEntryBytes = headerBytes + maxBodyBytes + 128
    /// Every epoch holds fewer entries than this.
    public static let maxEntries: UInt64 = 10_000
    /// From this seq on only revocations, successions, reset answers and an author's own
    /// certify or root grant are appended (recovery and key rotation always fit).
    public static let reserveStart: UInt64 = 9_000

    public var userID: UUID
    public var epoch: UInt32
    public var seq: UInt64
    /// `entry_hash` of the entry at `seq − 1`; 32 zero bytes at seq 0.
    public var prev: [UInt8]
    public var type: TrustLogEntryType
    /// Unix seconds, chosen by the writer: at least its predecessor's.
    public var createdAt: UInt64
    /// The device that wrote it.
    public var author: UUID
    /// The preimage of the last proof (32 zero bytes at seq 0).
    public var appendProof: [UInt8]
    /// The body's bytes.
    public var body: [UInt8]
    /// The signature by the identity key in force before the entry.
    public var identitySignature: [UInt8]
    /// The author's (genesis) or successor's (succession) signature; empty for the other types.
    public var secondSignature: [UInt8]

    /// Creates an entry (unsigned until both signatures are set).
    public init(
        userID: UUID, epoch: UInt32, seq: UInt64, prev: [UInt8], type: TrustLogEntryType, createdAt: UInt64,
        author: UUID, appendProof: [UInt8], body: [UInt8], identitySignature: [UInt8] = [],
        secondSignature: [UInt8] = []
    ) {
        self.userID = userID
        self.epoch = epoch
        self.seq = seq
        self.prev = prev
        self.type = type
        self.createdAt = createdAt
        self.author = author
        self.appendProof = appendProof
        self.body = body
        self.identitySignature = identitySignature
        self.secondSignature = secondSignature
    }

    /// The bytes the signatures cover.
    public func tbs() -> [UInt8] {
        Self.tbs(
            userID: userID, epoch: epoch, seq: seq, prev: prev, type: type.rawValue, createdAt: createdAt,
            author: author, appendProof: appendProof, body: body)
    }

    static func tbs(
        userID: UUID, epoch: UInt32, seq: UInt64, prev: [UInt8], type: UInt8, createdAt: UInt64, author: UUID,
        appendProof: [UInt8], body: [UInt8]
    ) -> [UInt8] {
        var out = LogWriter(prefix: prefix)
        out.identifier(userID)
        out.zero()
        out.u32(epoch)
        out.u64(seq)
        out.raw(prev)
        out.u8(type)
        out.u64(createdAt)
        out.identifier(author)
        out.zero()
        out.raw(appendProof)
        out.len16(body)
        return out.bytes
    }

    /// The role a signature is made in.
    public enum SignatureRole: String, Sendable {
        /// The identity key in force before the entry.
        case identity
        /// A genesis's author, under its certificate's Ed25519 key.
        case author
        /// A succession's new identity key.
        case successor
    }

    /// `"unbound-trust-log-sig-v1" || 0x00 || role || 0x00 || tbs`.
    public func signatureInput(role: SignatureRole) -> [UInt8] {
        Self.signaturePrefix + Array(role.rawValue.utf8) + [0] + tbs()
    }

    /// Signs the entry: `identity` (the key in force before it, or a genesis's own) and, for a
    /// genesis or a succession, `second` (the author's signing key, or the new identity key).
    public mutating func sign(identity: Ed25519PrivateKey, second: Ed25519PrivateKey? = nil) {
        identitySignature = identity.signature(for: signatureInput(role: .identity))
        switch type {
        case .genesis: secondSignature = second?.signature(for: signatureInput(role: .author)) ?? []
        case .succession: secondSignature = second?.signature(for: signatureInput(role: .successor)) ?? []
        default: secondSignature = []
        }
    }

    /// The entry's bytes.
    public func bytes() -> [UInt8] { tbs() + identitySignature + secondSignature }

    /// `entry_hash`.
    public var hash: [UInt8] { Self.hash(of: bytes()) }

    /// `SHA-256("unbound-trust-log-hash-v1" || 0x00 || entry)`.
    public static func hash(of entry: [UInt8]) -> [UInt8] { SHA256.hash(hashPrefix + entry) }

    /// The stored text (standard base64).
    public var text: String { ByteEncoding.base64(bytes()) }

    /// Parses an entry's bytes strictly: the layout of its type (an unknown type is read with one
    /// signature, so that its refusal is a header error at its position, never a skip).
    ///
    /// The body is not parsed here: ``TrustLogBody/parse(_:of:userID:)`` does that.
    public static func parse(_ bytes: [UInt8]) throws(DeviceTrustError) -> (entry: TrustLogEntry, knownType: UInt8) {
        var reader = LogReader(bytes, "the entry")
        try reader.prefix(prefix)
        let user = try reader.identifier()
        try reader.zero()
        let epoch = try reader.u32()
        guard epoch >= 1 else { throw DeviceTrustError(.malformedLogBytes, "the entry's epoch is 0") }
        let seq = try reader.u64()
        guard seq < maxEntries else { throw DeviceTrustError(.malformedLogBytes, "the entry's seq is 10,000 or more") }
        let prev = try reader.take(32)
        let rawType = try reader.u8()
        let created = try reader.time()
        let author = try reader.identifier()
        try reader.zero()
        let proof = try reader.take(32)
        let body = try reader.len16()
        guard (1...maxBodyBytes).contains(body.count) else {
            throw DeviceTrustError(.malformedLogBytes, "the entry's body is empty or over 4,096 bytes")
        }
        let type = TrustLogEntryType(rawValue: rawType)
        let first = try reader.take(64)
        let second = type?.hasSecondSignature == true ? try reader.take(64) : []
        try reader.end()
        return (
            TrustLogEntry(
                userID: user, epoch: epoch, seq: seq, prev: prev, type: type ?? .certify, createdAt: created,
                author: author, appendProof: proof, body: body, identitySignature: first, secondSignature: second),
            rawType
        )
    }
}

/// A trust-log entry parsed whole: its bytes, hash and body.
public struct ParsedLogEntry: Sendable, Hashable {
    public let entry: TrustLogEntry
    /// The type byte as read (an unknown one is refused when the entry is verified).
    public let typeByte: UInt8
    public let hash: [UInt8]
    /// The parsed body, or the reason it does not parse.
    public let body: Result<TrustLogBody, DeviceTrustError>

    /// Parses stored text (canonical base64): the entry, its hash and its body.
    ///
    /// - Throws: ``DeviceTrustError`` for text that is not canonical base64 of an allowed
    ///   length, or bytes that are not an entry.
    public init(text: String) throws(DeviceTrustError) {
        try self.init(bytes: LogText.decode(text, what: "an entry", maxBytes: TrustLogEntry.maxEntryBytes))
    }

    /// Parses an entry's bytes.
    public init(bytes: [UInt8]) throws(DeviceTrustError) {
        let (entry, typeByte) = try TrustLogEntry.parse(bytes)
        self.entry = entry
        self.typeByte = typeByte
        hash = TrustLogEntry.hash(of: bytes)
        if TrustLogEntryType(rawValue: typeByte) == nil {
            body = .failure(DeviceTrustError(.malformedLogBytes, "unknown entry type"))
        } else {
            do {
                body = .success(try TrustLogBody.parse(entry.body, of: entry.type, userID: entry.userID))
            } catch {
                body = .failure(error)
            }
        }
    }

    /// An entry made here (its bytes already known to be well formed).
    public init(_ entry: TrustLogEntry, body: TrustLogBody) {
        self.entry = entry
        typeByte = entry.type.rawValue
        hash = entry.hash
        self.body = .success(body)
    }

    /// Whether the type byte names a known type.
    public var hasKnownType: Bool { TrustLogEntryType(rawValue: typeByte) != nil }
}
