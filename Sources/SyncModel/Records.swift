import Foundation

/// The remote `device_type` enum.
public enum DeviceType: String, Sendable, Codable, CaseIterable {
    case macDesktop = "mac-desktop"
    case winDesktop = "win-desktop"
    case linuxDesktop = "linux-desktop"
    case iosTablet = "ios-tablet"
    case iosPhone = "ios-phone"
    case androidTablet = "android-tablet"
    case androidPhone = "android-phone"
    case webBrowser = "web-browser"

    /// Whether this kind of device runs sessions (and so pushes).
    public var isDesktop: Bool { [.macDesktop, .winDesktop, .linuxDesktop].contains(self) }
}

/// The remote `device_role` enum (managed by the trust flow, never sent by sync).
public enum DeviceTrustRole: String, Sendable, Codable, CaseIterable {
    case trustRoot = "trust_root"
    case trustedExecutor = "trusted_executor"
    case temporaryViewer = "temporary_viewer"
}

/// The APNs environment a push token belongs to: `development` (Apple's sandbox) or `production`.
public enum PushEnvironment: String, Sendable, Codable, CaseIterable {
    case development, production

    /// The value the deployed `devices.apns_environment` column uses (`sandbox`, `production`).
    public var deviceColumnValue: String { self == .development ? "sandbox" : "production" }
}

/// The remote `repository_status` enum.
public enum RepositoryStatus: String, Sendable, Codable, CaseIterable {
    case active, archived
}

/// The remote `coding_session_status` enum.
public enum SessionStatus: String, Sendable, Codable, CaseIterable {
    case active, paused, ended
}

/// A row of `repositories`: a checkout on one desktop.
///
/// Unique on `(deviceID, localPath)`, locally as remotely: two desktops may have the same path.
public struct RepositoryRecord: Sendable, Hashable, Codable {
    public var id: UUID
    public var userID: UUID
    public var deviceID: UUID
    public var name: String
    public var localPath: String
    /// The git remote, always without credentials (``RemoteURL/redacted(_:)``): a token in a
    /// remote URL would otherwise be stored, printed and copied to every phone.
    public var remoteURL: String? {
        didSet {
            if let remoteURL, RemoteURL.redacted(remoteURL) != remoteURL {
                self.remoteURL = RemoteURL.redacted(remoteURL)
            }
        }
    }
    public var defaultBranch: String?
    public var parentRepositoryID: UUID?
    public var isWorktree: Bool
    public var worktreeBranch: String?
    public var status: RepositoryStatus
    public var lastSyncedAt: Date?
    public var createdAt: Date
    public var updatedAt: Date

    /// Creates a repository row.
    public init(
        id: UUID = UUID(), userID: UUID, deviceID: UUID, name: String, localPath: String,
        remoteURL: String? = nil, defaultBranch: String? = nil, parentRepositoryID: UUID? = nil,
        isWorktree: Bool = false, worktreeBranch: String? = nil, status: RepositoryStatus = .active,
        lastSyncedAt: Date? = nil, createdAt: Date = Date(), updatedAt: Date = Date()
    ) {
        self.id = id
        self.userID = userID
        self.deviceID = deviceID
        self.name = name
        self.localPath = localPath
        self.remoteURL = remoteURL.map(RemoteURL.redacted)
        self.defaultBranch = defaultBranch
        self.parentRepositoryID = parentRepositoryID
        self.isWorktree = isWorktree
        self.worktreeBranch = worktreeBranch
        self.status = status
        self.lastSyncedAt = lastSyncedAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A row of `agent_coding_sessions`.
public struct SessionRecord: Sendable, Hashable, Codable {
    public var id: UUID
    public var userID: UUID
    public var deviceID: UUID
    public var repositoryID: UUID
    public var title: String?
    public var sessionPID: Int?
    public var sessionStartedAt: Date
    public var sessionEndedAt: Date?
    public var status: SessionStatus
    public var currentBranch: String?
    public var workingDirectory: String?
    public var lastHeartbeatAt: Date?
    public var isWorktree: Bool
    public var worktreePath: String?
    public var createdAt: Date
    public var updatedAt: Date
    /// The live status the session's desktop last reported (`runtime_status`); set by
    /// ``RuntimeStatus`` updates, never by a push, which leaves the remote column alone.
    public var runtimeStatus: RuntimeStatus?

    /// Creates a session row.
    public init(
        id: UUID = UUID(), userID: UUID, deviceID: UUID, repositoryID: UUID, title: String? = nil,
        sessionPID: Int? = nil, sessionStartedAt: Date = Date(), sessionEndedAt: Date? = nil,
        status: SessionStatus = .active, currentBranch: String? = nil, workingDirectory: String? = nil,
        lastHeartbeatAt: Date? = nil, isWorktree: Bool = false, worktreePath: String? = nil,
        createdAt: Date = Date(), updatedAt: Date = Date(), runtimeStatus: RuntimeStatus? = nil
    ) {
        self.runtimeStatus = runtimeStatus
        self.id = id
        self.userID = userID
        self.deviceID = deviceID
        self.repositoryID = repositoryID
        self.title = title
        self.sessionPID = sessionPID
        self.sessionStartedAt = sessionStartedAt
        self.sessionEndedAt = sessionEndedAt
        self.status = status
        self.currentBranch = currentBranch
        self.workingDirectory = workingDirectory
        self.lastHeartbeatAt = lastHeartbeatAt
        self.isWorktree = isWorktree
        self.worktreePath = worktreePath
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A session secret sealed to one device, as stored (`agent_coding_session_secrets` without
/// its server-generated id).
public struct EnvelopeRecord: Sendable, Hashable, Codable {
    public var sessionID: UUID
    /// The recipient device.
    public var deviceID: UUID
    /// Standard base64 of the 32-byte ephemeral public key.
    public var ephemeralPublicKey: String
    /// As stored or received: base64, or a bytea `\x` form.
    public var encryptedSecret: String

    /// Creates an envelope row.
    public init(sessionID: UUID, deviceID: UUID, ephemeralPublicKey: String, encryptedSecret: String) {
        self.sessionID = sessionID
        self.deviceID = deviceID
        self.ephemeralPublicKey = ephemeralPublicKey
        self.encryptedSecret = encryptedSecret
    }
}

/// A position in a table ordered by `(updated_at, id)`: rows after it are "changed since".
///
/// `updatedAt` is kept as the exact text the remote returned, so a filter built from it matches
/// to the microsecond (a `Date` would round).
public struct PullCursor: Sendable, Hashable, Codable {
    public var updatedAt: String
    public var id: UUID

    /// Creates a cursor.
    public init(updatedAt: String, id: UUID) {
        self.updatedAt = updatedAt
        self.id = id
    }
}

/// The digest a push compares instead of listing every envelope pair (sync.md, "Reconciliation
/// that scales"): the user's envelope rows of one owner device's sessions, in buckets by session.
///
/// ```
/// bucket(session_id) = (first two bytes of MD5(lowercase session_id text), big-endian) mod buckets
/// row_hash           = MD5(session_id || ':' || device_id || ':' || ephemeral_public_key)
/// h1, h2             = XOR over the bucket's rows of row_hash bytes 0-7 and 8-15, as signed int8
/// ```
///
/// MD5 is a checksum here, not a defence: the digest only tells the pusher which buckets to list.
public struct DigestBucket: Sendable, Hashable, Codable {
    public var bucket: Int
    public var pairs: Int
    public var h1: Int64
    public var h2: Int64

    /// Creates a bucket's digest.
    public init(bucket: Int, pairs: Int = 0, h1: Int64 = 0, h2: Int64 = 0) {
        self.bucket = bucket
        self.pairs = pairs
        self.h1 = h1
        self.h2 = h2
    }
}

/// The digest of a whole set of rows, compared instead of listing them (the pull feed,
/// docs/sync.md): how many there are, and the XOR over them of a row hash's bytes 0-7 and 8-15
/// as signed int8. The hash is MD5 of the lowercase id for repositories and sessions, and the
/// envelope `row_hash` of ``DigestBucket`` for envelope rows. Equal on both sides, the sets are
/// the same (MD5 is a checksum here, not a defence: a difference only says what to re-read).
public struct RowSetDigest: Sendable, Hashable, Codable {
    public var count: Int
    public var h1: Int64
    public var h2: Int64

    /// Creates a digest; the empty set by default.
    public init(count: Int = 0, h1: Int64 = 0, h2: Int64 = 0) {
        self.count = count
        self.h1 = h1
        self.h2 = h2
    }

    /// Adds (or, XOR being its own inverse, with `removing`, takes out) one row's hash.
    public mutating func add(_ hash: (Int64, Int64), removing: Bool = false) {
        count += removing ? -1 : 1
        h1 ^= hash.0
        h2 ^= hash.1
    }
}
