import Foundation
import SyncModel

/// A `session_secret_requests` row (coordination.md, "On-demand secret requests"): a device
/// asking the desktop that owns a session for an envelope it lacks.
public struct SecretRequestRow: Sendable, Hashable {
    public var id: UUID
    public var userID: UUID
    public var sessionID: UUID
    /// The device that asked (and would receive the envelope).
    public var requesterDeviceID: UUID
    public var createdAt: Date?
    /// When the owning desktop sealed the envelope; `nil` while open.
    public var fulfilledAt: Date?

    /// Creates a row.
    public init(
        id: UUID = UUID(), userID: UUID, sessionID: UUID, requesterDeviceID: UUID, createdAt: Date? = nil,
        fulfilledAt: Date? = nil
    ) {
        self.id = id
        self.userID = userID
        self.sessionID = sessionID
        self.requesterDeviceID = requesterDeviceID
        self.createdAt = createdAt
        self.fulfilledAt = fulfilledAt
    }

    /// Decodes a row as PostgREST (or the change feed) returns it.
    package init(json row: ResponseRow) throws {
        let r = RowReader(row, table: "session_secret_requests")
        self.init(
            id: try r.uuid("id"), userID: try r.uuid("user_id"), sessionID: try r.uuid("session_id"),
            requesterDeviceID: try r.uuid("requester_device_id"), createdAt: try r.optionalDate("created_at"),
            fulfilledAt: try r.optionalDate("fulfilled_at"))
    }
}

/// Where a change feed left off: the remote's clock when it last answered, as it wrote it.
public struct ChangeCursor: Sendable, Hashable, Codable {
    /// A timestamp in the remote's text form.
    public var since: String

    /// Creates a cursor.
    public init(since: String) { self.since = since }
}

/// What changed on the remote since a cursor: the change feed a watching device polls
/// (sync.md, "Watch mode").
///
/// The shape is that of a realtime subscription's accumulated events, so a Supabase Realtime
/// implementation could fill it from `postgres_changes` on `devices`,
/// `session_secret_requests`, `device_certificates` and `device_revocations` instead of polling.
public struct RemoteChanges: Sendable {
    /// Device rows of the user changed since the cursor; every row when ``complete``.
    public var devices: [RemoteDevice]
    /// Whether ``devices`` is every device of the user (first call, or a remote without a feed).
    public var complete: Bool
    /// The user's open secret requests (all of them, not only new ones).
    public var secretRequests: [SecretRequestRow]
    /// The user's approval requests changed since the cursor (every pending one on a first
    /// call); empty from a remote or feed without approvals.
    public var approvals: [ApprovalRequestRow] = []
    /// The user's agents' questions changed since the cursor (every pending one on a first
    /// call); empty from a remote or feed without them.
    public var questions: [AgentQuestionRow] = []
    /// A fingerprint of every legacy certificate and revocation row: when it changes, a device in
    /// legacy mode reloads trust. `nil` when not asked for or when the remote has no trust tables.
    public var statements: String?
    /// The head of the trust log's current epoch (when asked for, from a remote with a feed).
    public var trustLog: TrustLogHead?
    /// Where to continue; `nil` when the remote gave none (ask for everything next time).
    public var cursor: ChangeCursor?
    /// How a remote answered a change-feed question.
    public enum Method: String, Sendable, Codable, Hashable {
        /// One request to the remote's change feed.
        case feed
        /// A request per table: the remote has no feed.
        case polling
    }

    /// How the remote answered.
    public var method: Method

    /// Creates a set of changes.
    public init(
        devices: [RemoteDevice], complete: Bool, secretRequests: [SecretRequestRow], statements: String?,
        cursor: ChangeCursor?, method: Method
    ) {
        self.devices = devices
        self.complete = complete
        self.secretRequests = secretRequests
        self.statements = statements
        self.cursor = cursor
        self.method = method
    }
}

/// On-demand secret requests (coordination.md): a device asking the desktop that owns a session
/// for an envelope it lacks. A deployment without the migration answers `.missingTable`.
public protocol SecretRequestRemote: SyncRemote {
    /// The user's open secret requests (`fulfilled_at` null), oldest first.
    func listOpenSecretRequests() async throws -> [SecretRequestRow]
    /// Inserts requests; a duplicate of an open one is refused (`.conflict`) in ``BulkWriteResult/rejected``.
    func insertSecretRequests(_ rows: [SecretRequestRow]) async throws -> BulkWriteResult
    /// Marks requests fulfilled now.
    func fulfilSecretRequests(ids: Set<UUID>) async throws
}

/// A change feed (sync.md, "Watch mode"): what changed since a cursor, in one request. A
/// deployment without its function is polled table by table
/// (``SecretRequestRemote/pollChanges(statements:)``).
public protocol ChangeFeedRemote: SyncRemote {
    /// What changed since `cursor` (everything when `nil`). `statements` asks for the trust
    /// statements' fingerprint too.
    func changes(since cursor: ChangeCursor?, statements: Bool) async throws -> RemoteChanges
}

extension SecretRequestRemote where Self: TrustRemote {
    /// What a change feed answers, by polling each table: every device row, the open requests
    /// (none on a deployment without their table) and, when asked, the trust statements'
    /// fingerprint (`nil` without the trust tables). Two to four requests: what a PostgREST
    /// deployment without the change feed's function is asked instead.
    public func pollChanges(statements: Bool) async throws -> RemoteChanges {
        let devices = try await listDevices()
        var requests: [SecretRequestRow] = []
        do { requests = try await listOpenSecretRequests() } catch let error as RemoteStoreError
            where error.code == .missingTable
        {}
        var fingerprint: String?
        if statements {
            do {
                let rows =
                    try await listCertificates().map { "c:\($0.deviceID.canonical):\($0.signature)" }
                    + listRevocations().map { "r:\($0.deviceID.canonical):\($0.signature)" }
                fingerprint = rows.sorted().joined(separator: ",")
            } catch let error as RemoteStoreError where error.code == .missingTable {}
        }
        return RemoteChanges(
            devices: devices, complete: true, secretRequests: requests, statements: fingerprint, cursor: nil,
            method: .polling)
    }
}
