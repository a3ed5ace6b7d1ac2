import DeviceTrust
import Foundation
import LocalStore
import RemoteStore
import SecretCrypto
import SyncModel

/// Who receives session secrets (trust.md).
public enum TrustMode: String, Sendable, Codable, CaseIterable {
    /// sync.md's policy: every qualifying active device of the user.
    case any
    /// Also requires the server-side `is_trusted` flag (the old `--require-trusted`).
    case flagged
    /// A recipient must be certified by the verified trust log (or, in legacy mode, hold a
    /// certificate that verifies under the pinned identity key), for its user, device id and row
    /// key, and not be revoked.
    case verified
}

/// A device's standing under the verified trust.
public enum DeviceTrustStatus: String, Sendable, Codable, Hashable {
    /// Certified with the device row's key, and not revoked.
    case verified
    /// Not certified.
    case unverified
    /// Revoked (by the log, or in this device's memory).
    case revoked
    /// Its row's key differs from its certificate's (possible attack).
    case keyMismatch = "key-mismatch"
    /// Its row names another device type than its certificate (possible attack: the row is the
    /// server's, the certificate the user's).
    case certificateMismatch = "certificate-mismatch"
}

/// Where a verified trust came from.
public enum TrustSource: Sendable, Hashable {
    /// The trust log, verified and pinned at this head.
    case log(TrustLogPosition)
    /// Legacy read-only mode: the legacy rows, verified under the pinned legacy key (before the
    /// user's log exists).
    case legacy
}

/// A position in the trust log: an epoch, a seq and the entry's hash.
public struct TrustLogPosition: Sendable, Hashable, Codable, CustomStringConvertible {
    public var epoch: UInt32
    public var seq: UInt64
    public var hash: [UInt8]

    public init(epoch: UInt32, seq: UInt64, hash: [UInt8]) {
        self.epoch = epoch
        self.seq = seq
        self.hash = hash
    }

    /// The first 8 bytes of the hash, hex: what two people compare across their devices.
    public var shortHash: String { hash.prefix(8).map { String(format: "%02x", $0) }.joined() }

    /// `epoch E, seq S, 0123456789abcdef`.
    public var description: String { "epoch \(epoch), seq \(seq), \(shortHash)" }

    enum CodingKeys: String, CodingKey { case epoch, seq, hash, shortHash }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        epoch = try container.decode(UInt32.self, forKey: .epoch)
        seq = try container.decode(UInt64.self, forKey: .seq)
        hash = try ByteEncoding.bytes(hex: try container.decode(String.self, forKey: .hash))
    }

    /// `{"epoch", "seq", "hash" (hex), "shortHash" (its first 8 bytes)}`.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(epoch, forKey: .epoch)
        try container.encode(seq, forKey: .seq)
        try container.encode(ByteEncoding.hex(hash), forKey: .hash)
        try container.encode(shortHash, forKey: .shortHash)
    }
}

/// A reset of the user's identity that is pending: a genesis of a later epoch, in effect at
/// `deadline` unless a root of the current epoch vetoes it before then.
public struct PendingReset: Sendable, Hashable, Codable {
    public var epoch: UInt32
    public var hash: [UInt8]
    /// Unix seconds: the genesis's `created_at` + 72 hours, the moment vetoes end (the
    /// server takes no append to the current epoch from then on). Devices allow 600 s more for
    /// clocks before they call the reset in effect (docs/trust-log.md).
    public var deadline: UInt64

    enum CodingKeys: String, CodingKey { case epoch, hash, deadline }

    public init(epoch: UInt32, hash: [UInt8], deadline: UInt64) {
        self.epoch = epoch
        self.hash = hash
        self.deadline = deadline
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        epoch = try container.decode(UInt32.self, forKey: .epoch)
        hash = try ByteEncoding.bytes(hex: try container.decode(String.self, forKey: .hash))
        deadline = try container.decode(UInt64.self, forKey: .deadline)
    }

    /// `{"epoch", "hash" (hex), "deadline" (Unix seconds)}`.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(epoch, forKey: .epoch)
        try container.encode(ByteEncoding.hex(hash), forKey: .hash)
        try container.encode(deadline, forKey: .deadline)
    }
}

/// The user's device trust as this device verified it, fail closed: the identity key in force,
/// every certified device, every revoked one (the log's, and those this device remembers), the
/// roots, and what was reported on the way.
public struct TrustSnapshot: Sendable {
    /// The identity key in force (legacy mode: the pinned legacy key).
    public let identityKey: Ed25519PublicKey
    /// Certified devices that are not revoked, by id.
    public let certificates: [UUID: DeviceCertificate]
    /// Revoked devices, by id: the log's, and those this device remembers.
    public let revocations: [UUID: KnownRevocation]
    /// What was reported (ignored rows, pending resets, warnings); none is a verification failure.
    public let problems: [SyncIssue]
    /// The roots (devices that hold the identity key in force).
    public let roots: Set<UUID>
    /// Where it came from.
    public let source: TrustSource
    /// The verified log's state (`nil` in legacy mode).
    let log: TrustLogState?
    /// Certified devices this device keeps untrusted (a revocation it remembers from legacy mode
    /// or an earlier epoch that the log lacks).
    let untrusted: Set<UUID>
    /// Trust-log entries this load verified (0 when the head was unchanged).
    let verifiedEntries: Int
    /// Rows this load read from the remote log (0 when the feed said the head was unchanged).
    let readEntries: Int
    /// Resets of the verified epoch that are pending (a root's sync vetoes each).
    public let pendingResets: [PendingReset]

    /// The identity key's fingerprint.
    public var fingerprint: IdentityFingerprint { IdentityFingerprint(identityKey) }

    /// The verified head, in log mode.
    public var head: TrustLogPosition? {
        guard case .log(let position) = source else { return nil }
        return position
    }

    init(
        identityKey: Ed25519PublicKey, certificates: [UUID: DeviceCertificate], revocations: [UUID: KnownRevocation],
        problems: [SyncIssue], roots: Set<UUID>, source: TrustSource, log: TrustLogState?, untrusted: Set<UUID>,
        verifiedEntries: Int = 0, readEntries: Int = 0, pendingResets: [PendingReset] = []
    ) {
        self.verifiedEntries = verifiedEntries
        self.readEntries = readEntries
        self.pendingResets = pendingResets
        self.identityKey = identityKey
        self.certificates = certificates
        self.revocations = revocations
        self.problems = problems
        self.roots = roots
        self.source = source
        self.log = log
        self.untrusted = untrusted
    }

    /// A device row's standing: its certificate must name the row's key, and the row must name
    /// the certificate's device type (a device writes its own type, so a genuine row always
    /// does). The row's role is not compared: the certificate's decides.
    public func status(of device: RemoteDevice) -> DeviceTrustStatus {
        if revocations[device.id] != nil || untrusted.contains(device.id) { return .revoked }
        guard let certificate = certificates[device.id] else { return .unverified }
        guard let text = device.publicKey, let key = try? X25519PublicKey(base64: text),
            key == certificate.x25519PublicKey
        else {
            return .keyMismatch
        }
        guard device.deviceType?.rawValue == certificate.deviceType else { return .certificateMismatch }
        return .verified
    }

    /// The certified X25519 key of a device that is certified and not revoked.
    public func certifiedKey(of deviceID: UUID) -> X25519PublicKey? {
        guard revocations[deviceID] == nil, !untrusted.contains(deviceID) else { return nil }
        return certificates[deviceID]?.x25519PublicKey
    }

    /// Whether `deviceID` is certified and not revoked.
    public func isTrusted(_ deviceID: UUID) -> Bool { certifiedKey(of: deviceID) != nil }

    /// Loads the verified trust: brings the trust log up to date from the pin and verifies what
    /// is new (or, before the user's log exists, verifies the legacy rows under the pinned key);
    /// `nil` when this device has pinned nothing (trust mode `any`).
    ///
    /// - Parameters:
    ///   - local: This device's store (the pin, the memory of revocations).
    ///   - remote: The remote holding the log.
    ///   - phase: The phase the load's failures are reported in.
    ///   - options: The clock (`SyncOptions.now`).
    ///   - reported: The log's head as a feed reported it: when it is the pinned head and no
    ///     reset is pending, nothing is read or verified.
    /// - Throws: ``SyncError`` `.trustLogInvalid`, `.trustLogForked`, `.trustLogTruncated`,
    ///   `.identityReset`, `.identityChanged`: fail closed, nothing may be sealed or accepted;
    ///   remote and local errors.
    public static func load(
        local: DeviceStore, remote: any CompleteRemote, phase: SyncPhase = .secrets,
        options: SyncOptions = SyncOptions(),
        reported: TrustLogHead?? = .none
    ) async throws -> TrustSnapshot? {
        var sync = TrustLogSync(local: local, remote: remote, phase: phase, now: options.now())
        return try await sync.load(reported: reported)
    }
}

extension TrustLogState {
    /// The devices the state certifies and does not revoke, as certificates.
    var trustedCertificates: [UUID: DeviceCertificate] {
        var result: [UUID: DeviceCertificate] = [:]
        for (id, device) in devices where device.isTrusted {
            result[id] = device.certificate(userID: userID)
        }
        return result
    }

    /// The devices the state revokes, as remembered revocations.
    var revocations: [UUID: KnownRevocation] {
        var result: [UUID: KnownRevocation] = [:]
        for (id, device) in devices where device.isRevoked {
            result[id] = KnownRevocation(
                deviceID: id, x25519PublicKey: device.x25519,
                revokedAt: Date(timeIntervalSince1970: TimeInterval(device.revokedAt ?? 0)), epoch: epoch,
                ed25519PublicKey: device.ed25519)
        }
        return result
    }

    /// The head as a position.
    var position: TrustLogPosition { TrustLogPosition(epoch: epoch, seq: headSeq, hash: Array(headHash)) }

    /// The state as the pin stores it: its JSON with the SHA-256 of those bytes beside it, so
    /// that a damaged pin (a byte of a key changed on disk) is found, never trusted and never a
    /// trap (``decoded(_:)``).
    func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let state = try encoder.encode(self)
        return try encoder.encode(CheckedPin(state: state, sha256: ByteEncoding.hex(SHA256.hash(state))))
    }

    /// A state the pin stored. A pin written before the check existed (the state's JSON alone) is
    /// read as it is and checked from its next save on.
    ///
    /// - Throws: `LocalStoreError` `.corruptRow` when the check does not match, the JSON does not
    ///   read, or a key in it is not a key (the identity key, a device's or the recovery key).
    static func decoded(_ data: Data) throws -> TrustLogState {
        let state: TrustLogState
        do {
            if let checked = try? JSONDecoder().decode(CheckedPin.self, from: data) {
                guard ByteEncoding.hex(SHA256.hash(checked.state)) == checked.sha256 else {
                    throw LocalStoreError(.corruptRow, "its checksum does not match")
                }
                state = try JSONDecoder().decode(TrustLogState.self, from: checked.state)
            } else {
                state = try JSONDecoder().decode(TrustLogState.self, from: data)
            }
        } catch let error as LocalStoreError {
            throw LocalStoreError(.corruptRow, "the trust log pinned in this store is damaged: \(error.message)")
        } catch DecodingError.dataCorrupted(let context) where context.underlyingError is CryptoError {
            throw LocalStoreError(
                .corruptRow, "the trust log pinned in this store is damaged: a key in it is malformed")
        } catch {
            throw LocalStoreError(.corruptRow, "the trust log pinned in this store is damaged: it does not read")
        }
        return state
    }
}

/// The pin's stored form: the state's JSON bytes (base64) and their SHA-256 (hex).
struct CheckedPin: Codable {
    var state: Data
    var sha256: String
}
