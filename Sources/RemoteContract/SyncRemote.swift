import Foundation
import SyncModel
import Synchronization

/// The remote, in domain words: what post-login sync needs from Supabase (or the embedded
/// default), and nothing about how it is spoken.
///
/// This is what every remote does: devices, repositories, sessions and envelopes, in 15
/// requirements. Each later feature is a protocol of its own: the envelope digest
/// (``EnvelopeDigestRemote``), device trust (``TrustRemote``, ``TrustLogRemote``), secret requests
/// (``SecretRequestRemote``), a change feed (``ChangeFeedRemote``), the pull feed
/// (``PullFeedRemote``), coordination (``CoordinationRemote``), approvals, notifications and
/// questions. ``CompleteRemote`` is them all, what both remotes are and what the engine's
/// façades take: nothing is discovered by a cast. A feature that is not deployed is said one
/// way, by the server: a PostgREST deployment without its migration answers `.missingTable` or
/// `.missingFunction`, said once in the report.
///
/// Every implementation is scoped to one signed-in user, as row-level security scopes a
/// Supabase user: it never reads or writes another user's rows. Every UUID it sends or returns
/// is canonical lowercase.
///
/// Bulk writes accept any number of rows. An implementation batches them, and when a batch is
/// refused for something in its rows it narrows the batch down to the rows at fault; those come
/// back in ``BulkWriteResult/rejected`` and the rest are written. Failures that no row caused
/// (the remote is unreachable, the session expired beyond refresh) are thrown.
public protocol SyncRemote: Sendable {
    /// The user every call is scoped to.
    var userID: UUID { get }

    /// Inserts or updates this device's own row, sending only the columns a device owns
    /// (never trust fields such as `is_trusted`).
    func upsertOwnDevice(_ device: OwnDeviceRow) async throws

    /// Every device row of the user.
    func listDevices() async throws -> [RemoteDevice]

    /// Inserts or updates repositories by id.
    func upsertRepositories(
        _ rows: [RepositoryRecord], onBatchAccepted: BatchHandler<RepositoryRecord>?
    ) async throws -> BulkWriteResult

    /// Inserts or updates sessions by id (their repositories must exist).
    func upsertSessions(
        _ rows: [SessionRecord], onBatchAccepted: BatchHandler<SessionRecord>?
    ) async throws -> BulkWriteResult

    /// Inserts or updates envelopes by `(session_id, device_id)`.
    func upsertEnvelopes(
        _ rows: [EnvelopeRecord], onBatchAccepted: BatchHandler<EnvelopeRecord>?
    ) async throws -> BulkWriteResult

    /// Every `(session_id, device_id)` pair that has an envelope, over the user's sessions.
    func listEnvelopePairs() async throws -> [EnvelopePair]

    /// Deletes the envelope rows `scope` names. Returns how many were deleted, when known.
    @discardableResult
    func deleteEnvelopes(_ scope: EnvelopeScope) async throws -> Int?

    /// Repositories ordered by `(updated_at, id)`: all, or only those after `cursor`.
    func fetchRepositories(after cursor: PullCursor?) async throws -> [Versioned<RepositoryRecord>]

    /// The ids of every repository or session, optionally only one device's.
    func listIDs(_ table: ContentTable, deviceID: UUID?) async throws -> Set<UUID>

    /// Deletes repositories (their sessions and envelopes cascade) or sessions (their envelopes
    /// cascade). Returns how many were deleted, when known.
    @discardableResult
    func deleteRows(_ table: ContentTable, ids: Set<UUID>) async throws -> Int?

    /// The envelopes addressed to one device (of `sessions` only, when given), a page at a
    /// time: `page` gets each page as it arrives, so that the caller never holds them all (a
    /// listing that fans out may call it for several pages at once).
    func fetchEnvelopes(
        addressedTo deviceID: UUID, sessions: Set<UUID>?, pages page: @escaping PageHandler<EnvelopeRecord>
    ) async throws

    /// Sessions ordered by `(updated_at, id)`, all or only those after `cursor`, a page at a
    /// time as ``fetchEnvelopes(addressedTo:sessions:pages:)``: after a cursor each page is in
    /// `(updated_at, id)` order, the pages not necessarily; without one (every session) the
    /// order is the remote's choice.
    func fetchSessions(
        after cursor: PullCursor?, pages page: @escaping PageHandler<Versioned<SessionRecord>>
    ) async throws

    /// Refreshes this device's heartbeat (`last_seen_at`, coordination.md "Presence") and
    /// nothing else.
    func heartbeat(deviceID: UUID) async throws

    /// Requests made, bytes moved and retries so far.
    func metrics() -> RemoteMetrics
}

/// Called after the remote accepted a batch, with that batch's rows (for the distribution
/// ledger, which must only record what the remote holds, and for progress).
public typealias BatchHandler<Row> = @Sendable ([Row]) async throws -> Void

/// Called with each page of a listing that is read a page at a time.
public typealias PageHandler<Row> = @Sendable ([Row]) async throws -> Void

/// What a bulk write did.
public struct BulkWriteResult: Sendable, Hashable {
    /// Rows the remote accepted (after de-duplication by conflict key).
    public var accepted: Int
    /// Rows the remote refused, each with why; the other rows were written.
    public var rejected: [RejectedRow]

    /// Creates a result.
    public init(accepted: Int = 0, rejected: [RejectedRow] = []) {
        self.accepted = accepted
        self.rejected = rejected
    }
}

/// A row the remote refused.
public struct RejectedRow: Sendable, Hashable {
    /// The row's key (its id, or `session_id/device_id`); never row contents.
    public var key: String
    /// Why.
    public var error: RemoteStoreError

    /// Creates a rejected row.
    public init(key: String, error: RemoteStoreError) {
        self.key = key
        self.error = error
    }
}

/// A record with the exact `updated_at` text the remote returned, for pull cursors.
public struct Versioned<Record: Sendable & Hashable>: Sendable, Hashable {
    public var record: Record
    public var updatedAt: String

    /// Creates a versioned record.
    public init(record: Record, updatedAt: String) {
        self.record = record
        self.updatedAt = updatedAt
    }
}

/// One `(session_id, device_id)` pair of `agent_coding_session_secrets`.
public struct EnvelopePair: Sendable, Hashable {
    public var sessionID: UUID
    public var deviceID: UUID

    /// Creates a pair.
    public init(sessionID: UUID, deviceID: UUID) {
        self.sessionID = sessionID
        self.deviceID = deviceID
    }

    /// `session_id/device_id`, for reports.
    public var key: String { "\(sessionID.canonical)/\(deviceID.canonical)" }
}

/// One envelope row's pair and `ephemeral_public_key`.
public struct EnvelopeKey: Sendable, Hashable {
    public var pair: EnvelopePair
    public var ephemeralPublicKey: String

    /// Creates a row.
    public init(pair: EnvelopePair, ephemeralPublicKey: String) {
        self.pair = pair
        self.ephemeralPublicKey = ephemeralPublicKey
    }
}

/// Which envelope rows a delete names.
public enum EnvelopeScope: Sendable, Hashable {
    /// Every envelope addressed to these devices.
    case recipients(Set<UUID>)
    /// Every envelope of these sessions.
    case sessions(Set<UUID>)
    /// These rows.
    case pairs([EnvelopePair])
}

/// The tables whose rows are listed and deleted by id: `repositories` and
/// `agent_coding_sessions`.
public enum ContentTable: String, Sendable, Hashable {
    case repositories
    case sessions
}

/// A remote that digests the envelope rows, so a push compares its ledger with the remote in
/// one request and lists only the buckets that differ (docs/sync.md). A remote without it is
/// reconciled by ``SyncRemote/listEnvelopePairs()``; a PostgREST deployment without the
/// function answers `.missingFunction`, which means the same.
public protocol EnvelopeDigestRemote: SyncRemote {
    /// The digest of the user's envelope rows whose session belongs to `ownerDeviceID`, one entry
    /// per non-empty bucket (`SecretDigest`); `buckets` a power of two up to 65,536. One
    /// request whatever the size.
    ///
    /// - Throws: `RemoteStoreError` `.missingFunction` when the deployment has no digest (then
    ///   list the pairs instead), `.invalidValue` for a bad bucket count.
    func secretDigest(ownerDeviceID: UUID, buckets: Int) async throws -> [DigestBucket]

    /// The envelope rows of these sessions, with each row's `ephemeral_public_key` (what the
    /// digest hashes), for the buckets whose digests differ.
    ///
    /// - Parameters:
    ///   - sessions: The sessions whose rows to list.
    ///   - atMost: How many rows the caller knows there can be (the digest counted them): a
    ///     listing that passes it is abandoned at once (`.listingDidNotEnd`) instead of paging
    ///     on; `nil` bounds it only by the client's general limits.
    func listEnvelopeKeys(sessions: Set<UUID>, atMost: Int?) async throws -> [EnvelopeKey]
}

/// The columns of `devices` that the device itself owns, the only ones its upsert sends.
///
/// Trust fields (`is_trusted`, `device_role`, `is_primary_trust_root`, `verified_at`,
/// `has_seen_trust_prompt`) belong to the trust flow; a deployed daemon that sent
/// `is_trusted: false` reset trust at every login.
public struct OwnDeviceRow: Sendable, Hashable {
    public var id: UUID
    public var userID: UUID
    public var name: String
    public var deviceType: DeviceType
    public var hostname: String?
    /// Standard base64 of the 32-byte X25519 public key.
    public var publicKey: String
    public var isActive: Bool
    public var lastSeenAt: Date
    /// iOS push registration; sent only when present, so a device without it never clears it.
    public var apns: APNsRegistration?
    /// The envelope versions this device reads, advertised as
    /// `capabilities.session_secret_envelopes`; `nil` leaves `capabilities` as it is. The key
    /// is merged into the column: keys other clients keep there are never erased.
    public var envelopeVersions: [Int]?

    /// Creates the row.
    public init(
        id: UUID, userID: UUID, name: String, deviceType: DeviceType, hostname: String?, publicKey: String,
        isActive: Bool = true, lastSeenAt: Date = Date(), apns: APNsRegistration? = nil, envelopeVersions: [Int]? = nil
    ) {
        self.envelopeVersions = envelopeVersions
        self.id = id
        self.userID = userID
        self.name = name
        self.deviceType = deviceType
        self.hostname = hostname
        self.publicKey = publicKey
        self.isActive = isActive
        self.lastSeenAt = lastSeenAt
        self.apns = apns
    }
}

/// An iOS device's push registration.
public struct APNsRegistration: Sendable, Hashable {
    public var token: String
    /// Written to `apns_environment` as `sandbox` or `production`.
    public var environment: PushEnvironment
    public var pushEnabled: Bool
    public var updatedAt: Date

    /// Creates a registration.
    public init(token: String, environment: PushEnvironment, pushEnabled: Bool, updatedAt: Date = Date()) {
        self.token = token
        self.environment = environment
        self.pushEnabled = pushEnabled
        self.updatedAt = updatedAt
    }
}

/// A `devices` row as read.
public struct RemoteDevice: Sendable, Hashable {
    public var id: UUID
    public var userID: UUID
    public var name: String
    /// `nil` when the remote holds a value this program does not know.
    public var deviceType: DeviceType?
    public var hostname: String?
    public var isActive: Bool
    /// `nil` when absent or unknown.
    public var deviceRole: DeviceTrustRole?
    /// As stored: standard base64, or `nil`. Not validated here.
    public var publicKey: String?
    public var isTrusted: Bool
    public var lastSeenAt: Date?
    /// The envelope versions the device advertises (`capabilities.session_secret_envelopes`);
    /// `[1]` when it advertises none, as every deployed client reads version 1.
    public var envelopeVersions: Set<Int>

    /// Creates a device row.
    public init(
        id: UUID, userID: UUID, name: String, deviceType: DeviceType?, hostname: String? = nil,
        isActive: Bool = true, deviceRole: DeviceTrustRole? = .trustedExecutor, publicKey: String?,
        isTrusted: Bool = false, lastSeenAt: Date? = nil, envelopeVersions: Set<Int> = [1]
    ) {
        self.envelopeVersions = envelopeVersions
        self.id = id
        self.userID = userID
        self.name = name
        self.deviceType = deviceType
        self.hostname = hostname
        self.isActive = isActive
        self.deviceRole = deviceRole
        self.publicKey = publicKey
        self.isTrusted = isTrusted
        self.lastSeenAt = lastSeenAt
    }
}

/// The `capabilities` key under which a device lists the envelope versions it reads.
public enum EnvelopeCapability {
    public static let key = "session_secret_envelopes"

    /// The versions a `capabilities` value (a JSON object, or its text) lists; `[1]` when none.
    public static func versions(in capabilities: Any?) -> Set<Int> {
        var object = capabilities
        if let text = capabilities as? String { object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) }
        guard let list = (object as? [String: Any])?[key] as? [Any] else { return [1] }
        let versions = Set(list.compactMap { ($0 as? Int) ?? (($0 as? NSNumber)?.intValue) }.filter { $0 > 0 })
        return versions.isEmpty ? [1] : versions
    }

    /// `existing` (a JSON object's text, or nil) with this device's versions set under ``key``;
    /// every other key is kept.
    public static func merged(_ existing: String?, versions: [Int]) -> String {
        var object =
            existing.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] } ?? [:]
        object[key] = versions
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}

/// The requests made by one task and the tasks it starts, beside a store's totals: a sync
/// phase's share even while another phase's requests run at the same time.
///
/// ```swift
/// let tally = MetricsTally()
/// try await MetricsTally.$current.withValue(tally) { _ = try await remote.fetchEnvelopes(addressedTo: me) }
/// print(tally.metrics.requests)
/// ```
public final class MetricsTally: Sendable {
    /// The tally the current task's requests are added to, if any.
    @TaskLocal public static var current: MetricsTally?

    let counters = Mutex(RemoteMetrics())

    /// Creates a zeroed tally.
    public init() {}

    /// What has been counted so far.
    public var metrics: RemoteMetrics { counters.withLock { $0 } }

    /// Adds to the counters of the store and, when there is one, of the current task's tally.
    package static func record(_ change: (inout RemoteMetrics) -> Void, in store: borrowing Mutex<RemoteMetrics>) {
        store.withLock { change(&$0) }
        current?.counters.withLock { change(&$0) }
    }
}

/// Counters for reports and benchmarks.
public struct RemoteMetrics: Sendable, Hashable, Codable {
    /// Requests attempted, answered or not.
    public var requests = 0
    /// Bytes of request bodies the server answered: a request that got no answer counts none.
    public var bytesSent = 0
    /// Bytes of answers' bodies.
    public var bytesReceived = 0
    /// Attempts repeated after a failure.
    public var retries = 0

    /// Creates zeroed counters.
    public init() {}

    /// Adds `other`'s counts to these.
    public mutating func add(_ other: RemoteMetrics) {
        requests += other.requests
        bytesSent += other.bytesSent
        bytesReceived += other.bytesReceived
        retries += other.retries
    }

    /// The difference `self - earlier`, for one phase's share.
    public func since(_ earlier: RemoteMetrics) -> RemoteMetrics {
        var delta = RemoteMetrics()
        delta.requests = requests - earlier.requests
        delta.bytesSent = bytesSent - earlier.bytesSent
        delta.bytesReceived = bytesReceived - earlier.bytesReceived
        delta.retries = retries - earlier.retries
        return delta
    }
}

/// Every capability a remote can have: what the PostgREST client and the embedded remote both
/// are (a PostgREST deployment may still lack a migration's tables or functions).
public typealias CompleteRemote = EnvelopeDigestRemote & TrustRemote & TrustLogRemote & IdentityBackupRemote
    & SecretRequestRemote & ChangeFeedRemote & PullFeedRemote & CoordinationRemote & ApprovalRemote & NotificationRemote
    & QuestionRemote

extension SyncRemote {
    /// Every envelope addressed to one device (of `sessions` only, when given), in session order.
    public func fetchEnvelopes(addressedTo deviceID: UUID, sessions: Set<UUID>? = nil) async throws -> [EnvelopeRecord]
    {
        let rows = Mutex<[EnvelopeRecord]>([])
        try await fetchEnvelopes(addressedTo: deviceID, sessions: sessions) { page in
            rows.withLock { $0 += page }
        }
        return rows.withLock { $0 }.sorted { $0.sessionID.canonicallyPrecedes($1.sessionID) }
    }

    /// Every envelope addressed to one device, a page at a time.
    public func fetchEnvelopes(
        addressedTo deviceID: UUID, pages page: @escaping PageHandler<EnvelopeRecord>
    ) async throws {
        try await fetchEnvelopes(addressedTo: deviceID, sessions: nil, pages: page)
    }

    /// Sessions ordered by `(updated_at, id)`: all, or only those after `cursor`.
    public func fetchSessions(after cursor: PullCursor?) async throws -> [Versioned<SessionRecord>] {
        let rows = Mutex<[Versioned<SessionRecord>]>([])
        try await fetchSessions(after: cursor) { page in rows.withLock { $0 += page } }
        return rows.withLock { $0 }.sorted {
            let (left, right) = (
                Timestamp.parse($0.updatedAt) ?? .distantPast, Timestamp.parse($1.updatedAt) ?? .distantPast
            )
            return left != right ? left < right : $0.record.id.canonicallyPrecedes($1.record.id)
        }
    }
}
