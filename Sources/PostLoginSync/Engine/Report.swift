import Foundation
import LocalStore
import RemoteStore
import SyncModel

/// The steps of a sync, in order.
public enum SyncPhase: String, Sendable, Codable, CaseIterable {
    /// This device's own row.
    case device
    /// Repositories (pushed, or pulled into the local store).
    case repositories
    /// Sessions.
    case sessions
    /// Desktop: sealing envelopes for recipients and sending them.
    case secrets
    /// Phone: receiving the envelopes addressed to this device.
    case envelopes
}

/// A progress event: how far one phase has got.
public struct SyncProgress: Sendable, Hashable {
    /// The phase the event is about.
    public var phase: SyncPhase
    /// Rows (or envelopes) this phase has done so far.
    public var completed: Int
    /// Rows (or envelopes) the phase has to do in all; 0 while it is not known (a pull learns
    /// it only as it reads).
    public var total: Int
    /// One line for a person, with the counts: "Syncing sessions: 120 of 500", "Syncing
    /// envelopes: 40 so far", "Syncing secrets..." before any. Never an id or a row's content.
    public var message: String

    /// Creates an event with its own message.
    public init(phase: SyncPhase, completed: Int, total: Int, message: String) {
        self.phase = phase
        self.completed = completed
        self.total = total
        self.message = message
    }

    /// Creates an event whose message says the counts, as the engine reports them.
    ///
    /// - Parameters:
    ///   - phase: The phase the event is about.
    ///   - completed: Rows (or envelopes) done so far.
    ///   - total: Rows (or envelopes) in all; 0 when not known.
    ///   - action: The message's first word: "Syncing", or "Reading" while a phase only lists
    ///     what it will work on.
    public init(phase: SyncPhase, completed: Int, total: Int, action: String = "Syncing") {
        let message =
            total > 0
            ? "\(action) \(phase.rawValue): \(completed) of \(total)"
            : completed > 0 ? "\(action) \(phase.rawValue): \(completed) so far" : "\(action) \(phase.rawValue)..."
        self.init(phase: phase, completed: completed, total: total, message: message)
    }
}

/// Called with progress events; must return quickly.
public typealias ProgressHandler = @Sendable (SyncProgress) -> Void

/// One recorded problem: typed, with the row it concerns, never with secret material.
public struct SyncIssue: Sendable, Hashable, Codable, CustomStringConvertible {
    /// What kind of problem: a stable name, the same in reports, JSON and logs.
    ///
    /// Engine problems have their own codes below; a failure reported by a store carries that
    /// store's error code (``init(remote:)``, ``init(local:)``), never text parsed out of a
    /// description.
    public struct Code: Sendable, Hashable, Codable, CustomStringConvertible, ExpressibleByStringLiteral {
        public let rawValue: String
        public var description: String { rawValue }

        public init(rawValue: String) { self.rawValue = rawValue }
        public init(stringLiteral value: String) { rawValue = value }
        public init(from decoder: Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
        public func encode(to encoder: Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }

        /// A remote failure, named by `RemoteStoreError.Code` (`network`, `conflict`, ...).
        public init(remote code: RemoteStoreError.Code) { rawValue = code.description }
        /// A local store failure, named by `LocalStoreError.Code`.
        public init(local code: LocalStoreError.Code) { rawValue = code.description }

        /// A device's `public_key` is not the base64 of a usable X25519 key; it was skipped.
        public static let invalidPublicKey: Code = "invalidPublicKey"
        /// A listed device belongs to another user than the one signed in (possible attack).
        public static let foreignDevice: Code = "foreignDevice"
        /// The remote listed one device id more than once (possible attack).
        public static let duplicateDevice: Code = "duplicateDevice"
        /// An envelope addressed to this device does not open with its key; it was not stored.
        public static let envelopeUnreadable: Code = "envelopeUnreadable"
        /// A version-2 envelope names a sender that is not one of the user's devices; not stored.
        public static let unknownSender: Code = "unknownSender"
        /// A desktop's own sealed secret does not open with its key.
        public static let secretUnreadable: Code = "secretUnreadable"
        /// Sealing for one recipient failed.
        public static let sealFailed: Code = "sealFailed"
        /// A pulled session's repository is not available; the session was skipped.
        public static let missingRepository: Code = "missingRepository"
        /// A cryptographic operation failed.
        public static let crypto: Code = "crypto"
        /// A certificate or revocation row does not verify under the pinned identity key (bad
        /// signature, another user or device, trailing bytes, another signer); it was ignored.
        public static let invalidStatement: Code = "invalidStatement"
        /// A device row's key differs from its certificate's (possible attack); never sealed to.
        public static let keyMismatch: Code = "keyMismatch"
        /// A verified revocation names this device; it receives nothing.
        public static let revokedDevice: Code = "revokedDevice"
        /// A version-2 envelope's sender has no valid certificate; it was not stored.
        public static let uncertifiedSender: Code = "uncertifiedSender"
        /// A version-1 envelope (no sender) was refused because authenticated envelopes are required.
        public static let unauthenticatedEnvelope: Code = "unauthenticatedEnvelope"
        /// An envelope of an older generation than the one this device holds was refused (a rollback).
        public static let staleGeneration: Code = "staleGeneration"
        /// A version-2 envelope sealed by a device other than the one that owns the session (or
        /// than the session's first authenticated sender); it was not stored.
        public static let wrongSender: Code = "wrongSender"
        /// An envelope whose generation jumps further above the highest one seen than
        /// ``SyncOptions/generationWindow`` allows; it was not stored.
        public static let generationJump: Code = "generationJump"
        /// A version-1 envelope where only version 2 is accepted (an authenticated envelope was
        /// stored for the session before, or its owner is a certified device); it was not stored.
        public static let downgradeRefused: Code = "downgradeRefused"
        /// In verified mode, a version-1 envelope carrying another secret than the one stored for
        /// its session (version 1 names no sender, so it cannot replace a secret); not stored.
        public static let unauthenticatedReplacement: Code = "unauthenticatedReplacement"
        /// A certified device whose row names another device type than its certificate (possible
        /// attack); never sealed to.
        public static let certificateMismatch: Code = "certificateMismatch"
        /// The remote has no device-trust tables: verified trust needs the migration (said once per store).
        public static let trustUnavailable: Code = "trustUnavailable"
        /// The trust log does not verify, differs from what was seen, or ends early: nothing is
        /// sealed or accepted until it is resolved (trust-log.md).
        public static let trustLogInvalid: Code = "trustLogInvalid"
        public static let trustLogForked: Code = "trustLogForked"
        public static let trustLogTruncated: Code = "trustLogTruncated"
        /// No trust root has vouched for this desktop's view of the log within the bound.
        public static let trustLogStale: Code = "trustLogStale"
        /// The user has no trust log yet: this device verifies the legacy trust rows (legacy mode).
        public static let trustLogMissing: Code = "trustLogMissing"
        /// The account's identity was reset: this device must be paired again.
        public static let identityReset: Code = "identityReset"
        /// A reset of the user's identity is pending: it takes effect at the date given unless a
        /// root vetoes it.
        public static let resetPending: Code = "resetPending"
        /// An envelope sealed by a device the log revokes: refused, once, and counted (not a failure).
        public static let revokedSender: Code = "revokedSender"
        /// A witness row that does not count (garbage, another epoch, an unknown or revoked device).
        public static let invalidWitness: Code = "invalidWitness"
        /// This device's clock is more than 600 s behind the log's head: check it.
        public static let trustLogClock: Code = "trustLogClock"
        /// A device this device remembers as revoked is certified by the log with the same keys:
        /// it stays untrusted here; revoke it again from a root.
        public static let revocationMissingFromLog: Code = "revocationMissingFromLog"
        /// A root grant for this device does not open to the key in force: it does not act as a root.
        public static let rootGrantInvalid: Code = "rootGrantInvalid"
        /// A pending reset of the identity was vetoed: by this root's sync (said on the root), or
        /// by a root, of a reset this desktop asked for (said once on it).
        public static let resetVetoed: Code = "resetVetoed"
        /// A root could not do what a root's sync does (veto a reset, migrate): said why.
        public static let rootDuty: Code = "rootDuty"
        /// The log binds a new recovery key this device kept and never showed (a lost answer, a
        /// process ended before it printed): `trust recovery-key show` prints it.
        public static let recoveryKeyNotShown: Code = "recoveryKeyNotShown"
        /// Any other failure.
        public static let error: Code = "error"
    }

    public var phase: SyncPhase
    public var code: Code
    /// The row or device concerned, when there is one.
    public var rowID: String?
    public var message: String

    /// Creates an issue.
    public init(phase: SyncPhase, code: Code, rowID: String? = nil, message: String) {
        self.phase = phase
        self.code = code
        self.rowID = rowID
        self.message = message
    }

    public var description: String {
        "\(phase.rawValue): \(code)\(rowID.map { " [\($0)]" } ?? ""): \(message)"
    }
}

/// What one phase did.
///
/// | counter | push (desktop) | pull (phone) |
/// |---|---|---|
/// | `sent` | device: 1; repositories, sessions: rows changed since the last accepted push; secrets: envelopes that had to be sealed (missing remotely or sealed to an old key) | device: 1; else 0 |
/// | `applied` | rows (or envelopes) the remote accepted | device: 1; repositories, sessions: changed rows written locally; envelopes: new envelopes that opened and were stored |
/// | `skipped` | secrets: pairs already in place (sessions x recipients - sent) | sessions: rows whose repository is missing; envelopes: rows for sessions this phone does not have |
/// | `failed` | rows the remote refused; envelopes that could not be sealed | envelopes that did not open (never stored) |
/// | `deleted` | rows deleted remotely (removed here; envelopes of devices that stopped qualifying) | rows deleted locally because they disappeared remotely |
/// | `requests`, `bytesSent`, `bytesReceived`, `retries` | HTTP traffic of this phase: requests attempted; bodies of requests the server answered (nothing reached a dead server); answers | the same |
public struct PhaseReport: Sendable, Codable, Hashable {
    /// How a phase ended.
    public enum Status: String, Sendable, Codable, Hashable {
        /// Everything it had to do was done.
        case ok
        /// Some rows failed or were refused; the rest was done.
        case partial
        /// The phase could not run.
        case failed
        /// The phase did not run.
        case skipped
    }

    public var phase: SyncPhase
    public var status = Status.ok
    /// See the table above.
    public var sent = 0
    public var applied = 0
    public var skipped = 0
    public var failed = 0
    public var deleted = 0
    public var durationSeconds = 0.0
    public var requests = 0
    public var bytesSent = 0
    public var bytesReceived = 0
    public var retries = 0
    public var errors: [SyncIssue] = []

    /// Creates an empty phase report.
    public init(phase: SyncPhase) {
        self.phase = phase
    }
}

/// Whether a sync did everything, some of it, or nothing.
public enum SyncOutcome: String, Sendable, Codable {
    case success
    /// Some phases or rows failed; the rest was done.
    case partial
    /// Every phase failed.
    case failure
}

/// Which way a sync went.
public enum SyncDirection: String, Sendable, Codable, Hashable {
    /// A desktop sent its rows and envelopes.
    case push
    /// A phone received them.
    case pull
}

/// Why a device does or does not receive envelopes.
public struct DeviceDecision: Sendable, Hashable, Codable {
    public var deviceID: UUID
    public var name: String
    public var deviceType: String?
    public var receives: Bool
    /// Why not, when it does not.
    public var reason: String?
    /// The fingerprint of the key envelopes are sealed to, when it receives.
    public var keyFingerprint: String?
    /// The envelope versions the device advertises.
    public var envelopeVersions: [Int]? = nil
    /// The device's standing when this device has a pinned identity (trust.md); `nil` before.
    public var trust: DeviceTrustStatus? = nil
}

/// What device trust decided in one sync (trust.md).
public struct TrustSummary: Sendable, Codable, Hashable {
    /// The trust mode in force.
    public var mode: TrustMode
    /// The pinned identity key's fingerprint, when there is one.
    public var identityFingerprint: String?
    /// Push: devices with a valid certificate that matches their row.
    public var verified = 0
    /// Push: devices without a valid certificate (in `verified` mode they receive nothing).
    public var unverified = 0
    /// Push: devices a verified revocation names.
    public var revoked = 0
    /// Push: devices whose row key differs from their certificate (possible attack).
    public var keyMismatch = 0
    /// Certificate or revocation rows that did not verify and were ignored.
    public var invalidStatements = 0
    /// Push: sessions whose secret was rotated after a revocation.
    public var sessionsRotated = 0
    /// Pull: version-1 envelopes kept but marked unauthenticated.
    public var unauthenticatedEnvelopes = 0
    /// Pull: envelopes refused by trust (uncertified sender, or unauthenticated when required).
    public var rejectedEnvelopes = 0
    /// Pull: envelopes this device holds that were sealed by a device revoked since (the
    /// secret stays readable; the revoked device knows it).
    public var revokedSenderEnvelopes = 0
    /// A one-time notice (the remote has no device-trust tables).
    public var note: String?
    /// Requests made to load and check the trust records before the phases (counted in the
    /// report's `requests` too).
    public var requests = 0
    /// The trust log's verified head (`epoch`, `seq` and the first 8 bytes of its hash, hex),
    /// when this device verified one.
    public var head: String?
    /// Trust-log entries verified by this sync (0 when the head was unchanged).
    public var entriesVerified = 0
    /// Trust-log rows (entries, geneses, witnesses) this sync read from the remote: 0 when the
    /// pull feed said the head was unchanged.
    public var entriesRead = 0
    /// Pull: envelopes refused because their sender is revoked (each once; not a failure).
    public var revokedSenders = 0
    /// What verifying the trust reported without failing (a pending reset, ignored witnesses,
    /// a clock behind the log, legacy mode): never a failure of the sync.
    public var reports: [SyncIssue] = []

    /// Creates a summary.
    public init(mode: TrustMode, identityFingerprint: String? = nil) {
        self.mode = mode
        self.identityFingerprint = identityFingerprint
    }

    /// Decodes a summary; a field a report written by an older version lacks keeps its default,
    /// so the store's last report still reads after an upgrade.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        mode = try c.decode(TrustMode.self, forKey: .mode)
        identityFingerprint = try c.decodeIfPresent(String.self, forKey: .identityFingerprint)
        func count(_ key: CodingKeys) throws -> Int { try c.decodeIfPresent(Int.self, forKey: key) ?? 0 }
        verified = try count(.verified)
        unverified = try count(.unverified)
        revoked = try count(.revoked)
        keyMismatch = try count(.keyMismatch)
        invalidStatements = try count(.invalidStatements)
        sessionsRotated = try count(.sessionsRotated)
        unauthenticatedEnvelopes = try count(.unauthenticatedEnvelopes)
        rejectedEnvelopes = try count(.rejectedEnvelopes)
        revokedSenderEnvelopes = try count(.revokedSenderEnvelopes)
        note = try c.decodeIfPresent(String.self, forKey: .note)
        requests = try count(.requests)
        head = try c.decodeIfPresent(String.self, forKey: .head)
        entriesVerified = try count(.entriesVerified)
        entriesRead = try count(.entriesRead)
        revokedSenders = try count(.revokedSenders)
        reports = try c.decodeIfPresent([SyncIssue].self, forKey: .reports) ?? []
    }
}

/// How a push learned which envelope rows the remote holds (sync.md, "Reconciliation that scales").
public struct Reconciliation: Sendable, Codable, Hashable {
    /// How the remote's envelope rows were learnt.
    public enum Method: String, Sendable, Codable, Hashable {
        /// One digest request, then only the buckets that differ.
        case digest
        /// Every pair listed: the remote has no digest function.
        case listing
    }

    public var method: Method
    /// Buckets of the digest (0 for a listing).
    public var buckets = 0
    /// Buckets whose digests differed, so their rows were listed.
    public var bucketsListed = 0
    /// Envelope rows listed.
    public var rowsListed = 0

    /// Creates a record.
    public init(method: Method, buckets: Int = 0, bucketsListed: Int = 0, rowsListed: Int = 0) {
        self.method = method
        self.buckets = buckets
        self.bucketsListed = bucketsListed
        self.rowsListed = rowsListed
    }
}

/// What a sync did with on-demand secret requests (coordination.md).
public struct SecretRequestSummary: Sendable, Codable, Hashable {
    /// Push: open requests for this desktop's sessions.
    public var open = 0
    /// Push: requests whose envelope was sealed and accepted, now marked fulfilled.
    public var fulfilled = 0
    /// Push: requests from devices that do not qualify, answered with nothing and left open.
    public var refused = 0
    /// Push: the devices whose requests were refused.
    public var refusedDevices: [UUID] = []
    /// Pull: sessions without an envelope for this device that it asked for now.
    public var created = 0
    /// Pull: such sessions already asked for (an open request exists).
    public var pending = 0

    /// Creates an empty summary.
    public init() {}
}

/// The typed result of a push or pull.
public struct SyncReport: Sendable, Codable, Hashable {
    public var direction: SyncDirection
    public var deviceID: UUID
    public var startedAt: Date
    public var finishedAt: Date
    public var durationSeconds: Double
    public var outcome: SyncOutcome
    public var phases: [PhaseReport]
    public var envelopesSealed = 0
    public var envelopesOpened = 0
    public var requests = 0
    public var bytesSent = 0
    public var bytesReceived = 0
    public var retries = 0
    /// Desktop: every device of the user and whether it receives envelopes.
    public var recipients: [DeviceDecision] = []
    /// Desktop: how the secrets step learned which envelopes the remote holds.
    public var reconciliation: Reconciliation?
    /// Device trust: the mode and what it decided.
    public var trust: TrustSummary?
    /// On-demand secret requests: served and refused (push), asked (pull); `nil` when the
    /// remote has no requests table or there was nothing to ask.
    public var secretRequests: SecretRequestSummary?

    /// Every recorded problem, phase by phase.
    public var errors: [SyncIssue] { phases.flatMap(\.errors) }

    /// The report as JSON in the project's one style (`JSONStyle`: sorted camelCase keys with
    /// `Id`, lowercase UUIDs, RFC 3339 UTC dates).
    public func json(pretty: Bool = true) -> String {
        (try? JSONStyle.text(self, pretty: pretty)) ?? "{}"
    }

    /// Decodes a report saved with ``json(pretty:)`` (or, before `JSONStyle`, with `ID` keys).
    public static func decode(_ json: String) -> SyncReport? {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        // The style's `deviceId` is the Swift `deviceID`: the report's types name no key `…Id`.
        decoder.keyDecodingStrategy = .custom { path in
            DecodedKey(path.last?.stringValue.replacing(/([a-z0-9])Id(?=$|[A-Z])/) { "\($0.1)ID" } ?? "")
        }
        return try? decoder.decode(SyncReport.self, from: Data(json.utf8))
    }

    struct DecodedKey: CodingKey {
        let stringValue: String
        init(_ value: String) { stringValue = value }
        init?(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }
}
