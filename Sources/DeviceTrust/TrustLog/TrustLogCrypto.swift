import Foundation
import SecretCrypto

/// The append chain (trust-log.md, "Keys"): proof that the writer of an entry holds the seed of
/// the identity key in force, which the server checks with one SHA-256 and no signature.
///
/// `c = HKDF-SHA256(ikm: seed, salt: user_id (16 raw), info: "unbound-trust-log-append-v1" ||
/// 0x00 || epoch (4), L: 32)`; `anchor = H^10000(c)`, published by the entry that installs the
/// key at seq `a`; the entry at seq `a + i` carries `H^(10000 − i)(c)`.
public enum AppendChain {
    static let label = Array("unbound-trust-log-append-v1".utf8) + [0]
    /// The chain's length: no epoch holds more entries.
    public static let length = 10_000

    /// `c` for `seed` in `epoch`.
    static func start(seed: SecureBytes, userID: UUID, epoch: UInt32) -> [UInt8] {
        var info = LogWriter()
        info.raw(label)
        info.u32(epoch)
        let derived = HKDFSHA256.deriveKey(inputKeyMaterial: seed, salt: userID.rawBytes, info: info.bytes)
        return derived.withUnsafeBytes { Array($0) }
    }

    /// `H^count(value)`.
    static func iterate(_ value: [UInt8], _ count: Int) -> [UInt8] {
        var current = value
        for _ in 0..<count { current = SHA256.hash(current) }
        return current
    }

    /// The anchor a key's installing entry publishes.
    public static func anchor(seed: SecureBytes, userID: UUID, epoch: UInt32) -> [UInt8] {
        iterate(start(seed: seed, userID: userID, epoch: epoch), length)
    }

    /// The proof of the entry `steps` (1 to 9,999) after the one that installed the key.
    public static func proof(seed: SecureBytes, userID: UUID, epoch: UInt32, steps: Int) -> [UInt8] {
        precondition((1..<length).contains(steps))
        return iterate(start(seed: seed, userID: userID, epoch: epoch), length - steps)
    }

    /// Every link `H^k(c)`, k = 0 to 10,000, 32 bytes each in wiped memory: a writer that
    /// appends many entries reads its proofs from here instead of hashing up to 10,000 times each.
    static func links(seed: SecureBytes, userID: UUID, epoch: UInt32) -> SecureBytes {
        SecureBytes(count: (length + 1) * 32) { out in
            var current = start(seed: seed, userID: userID, epoch: epoch)
            for k in 0...length {
                out.baseAddress!.advanced(by: k * 32).copyMemory(from: current, byteCount: 32)
                current = SHA256.hash(current)
            }
            current.withUnsafeMutableBytes { SecureBytes.wipe($0) }
        }
    }

    /// The proof `steps` after the installing entry, from ``links(seed:userID:epoch:)``.
    static func proof(links: SecureBytes, steps: Int) -> [UInt8] {
        precondition((1..<length).contains(steps))
        return links.withUnsafeBytes { Array($0[(length - steps) * 32..<(length - steps + 1) * 32]) }
    }

    /// Whether `proof` extends the chain whose last proof is `last`.
    public static func extends(_ proof: [UInt8], last: [UInt8]) -> Bool { SHA256.hash(proof) == last }
}

/// An identity seed sealed to one device's certified X25519 key (root grants and successions):
/// RFC 9180 HPKE mode_base, suite A.2, `info = "unbound-root-seed-v1" || 0x00 || user_id ||
/// 0x00 || device_id || 0x00 || epoch (4) || seq (8) || identity_pk (32)`, empty aad; stored
/// `enc (32) || ct (48)`, 80 bytes.
public enum SealedSeed {
    static let label = Array("unbound-root-seed-v1".utf8) + [0]
    /// The stored length.
    public static let byteCount = 80

    static func info(
        userID: UUID, deviceID: UUID, epoch: UInt32, seq: UInt64, identityKey: Ed25519PublicKey
    )
        -> [UInt8]
    {
        var out = LogWriter()
        out.raw(label)
        out.identifier(userID)
        out.zero()
        out.identifier(deviceID)
        out.zero()
        out.u32(epoch)
        out.u64(seq)
        out.raw(identityKey.rawRepresentation)
        return out.bytes
    }

    /// Seals `identity`'s seed to `recipient` for the entry at (`epoch`, `seq`).
    public static func seal(
        _ identity: Ed25519PrivateKey, to recipient: X25519PublicKey, userID: UUID, deviceID: UUID, epoch: UInt32,
        seq: UInt64
    ) throws -> [UInt8] {
        try seal(identity, to: recipient, userID: userID, deviceID: deviceID, epoch: epoch, seq: seq, ephemeral: nil)
    }

    /// ``seal(_:to:userID:deviceID:epoch:seq:)`` with a given ephemeral key (vectors only).
    package static func seal(
        _ identity: Ed25519PrivateKey, to recipient: X25519PublicKey, userID: UUID, deviceID: UUID, epoch: UInt32,
        seq: UInt64, ephemeral: X25519PrivateKey?
    ) throws -> [UInt8] {
        let info = info(userID: userID, deviceID: deviceID, epoch: epoch, seq: seq, identityKey: identity.publicKey)
        var context = try HPKE.deterministicSender(
            mode: .base, to: recipient, info: info, ephemeral: ephemeral ?? X25519PrivateKey())
        return context.encapsulatedKey + (try context.seal(identity.seedRepresentation))
    }

    /// Opens a grant addressed to this device and returns the seed's key, only if its public key
    /// is `identityKey` (the key in force the grant claims to carry).
    ///
    /// - Throws: ``DeviceTrustError`` for anything else, never saying which check failed.
    public static func open(
        _ sealed: [UInt8], with key: X25519PrivateKey, userID: UUID, deviceID: UUID, epoch: UInt32, seq: UInt64,
        identityKey: Ed25519PublicKey
    ) throws(DeviceTrustError) -> Ed25519PrivateKey {
        let refused = DeviceTrustError(.malformedLogBytes, "the root grant does not open to the identity key in force")
        guard sealed.count == byteCount else { throw refused }
        do {
            let seed = try HPKE.open(
                mode: .base, encapsulatedKey: Array(sealed[0..<32]), ciphertext: Array(sealed[32...]), recipient: key,
                info: info(userID: userID, deviceID: deviceID, epoch: epoch, seq: seq, identityKey: identityKey))
            let opened = try Ed25519PrivateKey(seed: seed)
            guard opened.publicKey == identityKey else { throw refused }
            return opened
        } catch {
            throw refused
        }
    }

    /// The shape every reader checks: 80 bytes whose `enc` is a canonical X25519 key not of
    /// small order.
    static func checkShape(_ bytes: [UInt8]) throws(DeviceTrustError) -> [UInt8] {
        guard bytes.count == byteCount else {
            throw DeviceTrustError(.malformedLogBytes, "a sealed seed is not 80 bytes")
        }
        guard let enc = try? X25519PublicKey(rawRepresentation: bytes[0..<32]), enc.isCanonicalAndNotLowOrder else {
            throw DeviceTrustError(.malformedLogBytes, "a sealed seed's enc is not canonical or is of small order")
        }
        return bytes
    }
}

extension RecoveryKey {
    static let x25519Label = Array("unbound-recovery-x25519-v1".utf8)

    /// The X25519 key pair the recovery key derives for `userID` (trust-log.md, "Keys"):
    /// `rk = HKDF-SHA256(ikm: R, salt: user_id (16 raw), info: "unbound-recovery-x25519-v1",
    /// L: 32)`; its public key (`RPK`) is what roots seal backups to.
    public func agreementKey(userID: UUID) -> X25519PrivateKey {
        X25519PrivateKey(derivingFrom: bytes, salt: userID.rawBytes, info: Self.x25519Label)
    }
}

/// The identity backup bound to the log (trust-log.md, "Bytes"): stored in the row of each
/// append by a root while a recovery key is bound. HPKE mode_base, suite A.2, sealed to the
/// recovery key in force after the row's entry, `info = "unbound-identity-backup-v2" || 0x00 ||
/// user_id || 0x00 || epoch (4) || seq (8)`, plaintext `seed (32) || entry_hash (32)`; stored
/// `0x02 || enc (32) || ct (80)`, 113 bytes, 152 base64 characters.
public enum LogBackup {
    static let label = Array("unbound-identity-backup-v2".utf8) + [0]
    /// The version byte.
    public static let version: UInt8 = 2
    /// The stored length in bytes.
    public static let byteCount = 113
    /// The stored length in base64 characters.
    public static let textLength = 152

    static func info(userID: UUID, epoch: UInt32, seq: UInt64) -> [UInt8] {
        var out = LogWriter()
        out.raw(label)
        out.identifier(userID)
        out.zero()
        out.u32(epoch)
        out.u64(seq)
        return out.bytes
    }

    /// Seals `seed` (the key in force after the entry) and the entry's hash to `recoveryKey`.
    public static func seal(
        _ identity: Ed25519PrivateKey, entryHash: [UInt8], to recoveryKey: X25519PublicKey, userID: UUID,
        epoch: UInt32, seq: UInt64
    ) throws -> String {
        try seal(
            identity, entryHash: entryHash, to: recoveryKey, userID: userID, epoch: epoch, seq: seq, ephemeral: nil)
    }

    /// ``seal(_:entryHash:to:userID:epoch:seq:)`` with a given ephemeral key (vectors only).
    package static func seal(
        _ identity: Ed25519PrivateKey, entryHash: [UInt8], to recoveryKey: X25519PublicKey, userID: UUID,
        epoch: UInt32, seq: UInt64, ephemeral: X25519PrivateKey?
    ) throws -> String {
        let plaintext = identity.seedRepresentation.withUnsafeBytes { SecureBytes(copying: Array($0) + entryHash) }
        var context = try HPKE.deterministicSender(
            mode: .base, to: recoveryKey, info: info(userID: userID, epoch: epoch, seq: seq),
            ephemeral: ephemeral ?? X25519PrivateKey())
        return ByteEncoding.base64([version] + context.encapsulatedKey + (try context.seal(plaintext)))
    }

    /// Whether stored text has a backup's shape (what the server checks too).
    public static func hasShape(_ text: String) -> Bool {
        guard text.utf8.count == textLength, let bytes = try? ByteEncoding.bytes(base64: text) else { return false }
        return bytes.count == byteCount && bytes[0] == version
    }

    /// Opens a stored backup with the recovery key's private key: the seed and the entry hash it
    /// names, or `nil` when it does not open (never saying why).
    public static func open(
        _ text: String, with key: X25519PrivateKey, userID: UUID, epoch: UInt32, seq: UInt64
    ) -> (identity: Ed25519PrivateKey, entryHash: [UInt8])? {
        guard hasShape(text), let bytes = try? ByteEncoding.bytes(base64: text) else { return nil }
        guard
            let plaintext = try? HPKE.open(
                mode: .base, encapsulatedKey: Array(bytes[1..<33]), ciphertext: Array(bytes[33...]), recipient: key,
                info: info(userID: userID, epoch: epoch, seq: seq)),
            plaintext.count == 64
        else { return nil }
        let (seed, hash) = plaintext.withUnsafeBytes { (SecureBytes(copying: $0[0..<32]), Array($0[32..<64])) }
        guard let identity = try? Ed25519PrivateKey(seed: seed) else { return nil }
        return (identity, hash)
    }
}

/// A device's witness of the log head it verified, signed with its own `signing.key`:
///
/// ```
/// "unbound-trust-log-witness-v1" || 0x00 || user_id || 0x00 || device_id || 0x00 || epoch (4)
///   || seq (8) || entry_hash (32) || seen_at (8)
/// ```
/// 155 bytes.
public struct TrustLogWitness: Sendable, Hashable {
    public static let prefix = "unbound-trust-log-witness-v1"
    public static let byteCount = 155

    public var userID: UUID
    public var deviceID: UUID
    public var epoch: UInt32
    public var seq: UInt64
    public var entryHash: [UInt8]
    public var seenAt: UInt64

    public init(userID: UUID, deviceID: UUID, epoch: UInt32, seq: UInt64, entryHash: [UInt8], seenAt: UInt64) {
        self.userID = userID
        self.deviceID = deviceID
        self.epoch = epoch
        self.seq = seq
        self.entryHash = entryHash
        self.seenAt = seenAt
    }

    public func bytes() -> [UInt8] {
        var out = LogWriter(prefix: Self.prefix)
        out.identifier(userID)
        out.zero()
        out.identifier(deviceID)
        out.zero()
        out.u32(epoch)
        out.u64(seq)
        out.raw(entryHash)
        out.u64(seenAt)
        return out.bytes
    }

    /// The stored body and signature (standard base64 each).
    public func signed(by key: Ed25519PrivateKey) -> (body: String, signature: String) {
        let bytes = bytes()
        return (ByteEncoding.base64(bytes), ByteEncoding.base64(key.signature(for: bytes)))
    }

    /// Parses a stored body strictly (canonical base64 of 155 bytes).
    public static func parse(_ text: String) throws(DeviceTrustError) -> TrustLogWitness {
        let bytes = try LogText.decode(text, what: "a witness", maxBytes: byteCount)
        var reader = LogReader(bytes, "the witness")
        try reader.prefix(prefix)
        let user = try reader.identifier()
        try reader.zero()
        let device = try reader.identifier()
        try reader.zero()
        let epoch = try reader.u32()
        let seq = try reader.u64()
        let hash = try reader.take(32)
        let seen = try reader.time()
        try reader.end()
        guard seq < TrustLogEntry.maxEntries, epoch >= 1 else {
            throw DeviceTrustError(.malformedLogBytes, "the witness's position is out of range")
        }
        return TrustLogWitness(userID: user, deviceID: device, epoch: epoch, seq: seq, entryHash: hash, seenAt: seen)
    }

    /// Whether `signature` (stored text) verifies over `body` (stored text) under `key`.
    public static func verifies(body: String, signature: String, key: Ed25519PublicKey) -> Bool {
        guard let bytes = try? ByteEncoding.bytes(base64: body), let sig = try? ByteEncoding.bytes(base64: signature)
        else { return false }
        return key.isValidSignature(sig, for: bytes)
    }
}
