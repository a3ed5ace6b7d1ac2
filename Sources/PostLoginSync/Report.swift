import Foundation

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
    public var phase: SyncPhase
    public var completed: Int
    public var total: Int
    public var message: String

    /// Creates an event.
    public init(phase: SyncPhase, completed: Int, total: Int, message: String) {
        self.phase = phase
        self.completed = completed
        self.total = total
        self.message = message
    }
}

/// Called with progress events; must return quickly.
public typealias ProgressHandler = @Sendable (SyncProgress) -> Void

/// One recorded problem: typed, with the row it concerns, never with secret material.
public struct SyncIssue: Sendable, Hashable, Codable, CustomStringConvertible {
    public var phase: SyncPhase
    /// A stable code (`conflict`, `foreignKeyViolation`, `invalidPublicKey`, `envelopeUnreadable`, `network`, ...).
    public var code: String
    /// The row or device concerned, when there is one.
    public var rowID: String?
    public var message: String

    /// Creates an issue.
    public init(phase: SyncPhase, code: String, rowID: String? = nil, message: String) {
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
public struct PhaseReport: Sendable, Codable, Hashable {
    public var phase: SyncPhase
    /// `ok`, `partial` (some rows failed), `failed` (the phase could not run) or `skipped`.
    public var status = "ok"
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
}

/// The typed result of a push or pull.
public struct SyncReport: Sendable, Codable, Hashable {
    /// `push` or `pull`.
    public var direction: String
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

    /// Every recorded problem, phase by phase.
    public var errors: [SyncIssue] { phases.flatMap(\.errors) }

    /// The report as JSON (sorted keys, ISO 8601 dates).
    public func json(pretty: Bool = true) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Decodes a report saved with ``json(pretty:)``.
    public static func decode(_ json: String) -> SyncReport? {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try? decoder.decode(SyncReport.self, from: Data(json.utf8))
    }
}
