import Foundation
import SyncModel

/// The multi-device coordination operations of coordination.md: which device drives a session,
/// push tokens, the push outbox, approval clearing and a session's runtime status.
///
/// On Supabase each atomic operation is a database function called as PostgREST RPC (the
/// project's migration `*_coordination.sql` creates them); the embedded remote runs the same
/// logic in one SQLite transaction. Every operation is scoped to the signed-in user: a session,
/// device or token of another user is refused with `permissionDenied` (42501), a value outside
/// its allowed set with `invalidValue` (22023), and a refused call changes nothing. A deployment
/// without the migration answers `missingFunction`.
///
/// Delivering what the outbox holds to APNs is a backend worker's job; nothing here marks a
/// row delivered.
public protocol CoordinationRemote: SyncRemote {
    /// Claims `sessionID` for `deviceID`; when another device held it, that device's valid
    /// `device` push tokens get the silent handoff payload.
    func claimSessionActivity(sessionID: UUID, deviceID: UUID, clientType: ClientType) async throws -> SessionClaim

    /// Registers (or re-registers, or moves to this device) a push token; a token another user
    /// holds moves here only once they invalidated it.
    @discardableResult
    func registerPushToken(_ registration: PushTokenRegistration) async throws -> PushTokenRegistered

    /// Marks one of the user's tokens invalid. Returns false when the user has no such token.
    func invalidatePushToken(_ token: String) async throws -> Bool

    /// The design's push status for one of the user's devices.
    func pushTokenStatus(deviceID: UUID) async throws -> PushTokenStatus

    /// Queues the "approval answered elsewhere" payload for every valid device token of the user
    /// except `excludingToken`, once per request and token.
    func clearApproval(requestID: String, excludingToken: String?) async throws -> ApprovalClearing

    /// Sets a session's `runtime_status` (and `runtime_status_updated_at`); returns the status as
    /// stored, with `reportedAt` set. `RemoteStoreError.permissionDenied` when the session is not
    /// the user's (or not on the remote yet).
    @discardableResult
    func setRuntimeStatus(_ status: RuntimeStatus) async throws -> RuntimeStatus

    /// The user's outbox rows, newest first, at most `limit`.
    func listOutbox(limit: Int) async throws -> [OutboxEntry]
}

/// `session_active_clients.client_type`.
public enum ClientType: String, Sendable, Codable, CaseIterable {
    case ios, desktop, web

    /// The client type a device of this kind claims sessions as.
    public init(_ deviceType: DeviceType) {
        switch deviceType {
        case .macDesktop, .winDesktop, .linuxDesktop: self = .desktop
        case .webBrowser: self = .web
        case .iosPhone, .iosTablet, .androidPhone, .androidTablet: self = .ios
        }
    }
}

/// What `claim_session_activity` answered.
public struct SessionClaim: Sendable, Hashable, Codable {
    /// Whether another device held the session until now.
    public var handedOff: Bool
    public var previousDeviceID: UUID?
    /// The previous holder's client type, as stored.
    public var previousClientType: String?
    /// How many handoff payloads were queued for the previous device.
    public var notified: Int

    /// Creates an answer.
    public init(handedOff: Bool, previousDeviceID: UUID? = nil, previousClientType: String? = nil, notified: Int = 0) {
        self.handedOff = handedOff
        self.previousDeviceID = previousDeviceID
        self.previousClientType = previousClientType
        self.notified = notified
    }

    enum CodingKeys: String, CodingKey {
        case handedOff = "handed_off", previousDeviceID = "previous_device_id"
        case previousClientType = "previous_client_type", notified
    }

    /// The function's shape: every key present, `null` where there is no previous holder.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(handedOff, forKey: .handedOff)
        try container.encode(previousDeviceID?.canonical, forKey: .previousDeviceID)
        try container.encode(previousClientType, forKey: .previousClientType)
        try container.encode(notified, forKey: .notified)
    }
}

/// `push_tokens.token_type`.
public enum PushTokenType: String, Sendable, Codable, CaseIterable {
    case device
    case liveActivity = "live_activity"
}

/// `push_tokens.environment`.

/// The arguments of `register_push_token`.
public struct PushTokenRegistration: Sendable, Hashable {
    public var deviceID: UUID
    /// The token: 1 to 512 characters of `A-Z a-z 0-9 . _ : -` (APNs tokens are hex).
    public var token: String
    public var type: PushTokenType
    /// Lowercase letters; `ios` by default.
    public var platform: String
    public var environment: PushEnvironment
    /// Live-activity tokens only (required there).
    public var activityID: String?
    /// Live-activity tokens only (required there).
    public var sessionID: UUID?
    /// A token this one replaces: the user's row for it becomes invalid.
    public var previousToken: String?

    /// Creates a registration.
    public init(
        deviceID: UUID, token: String, type: PushTokenType = .device, platform: String = "ios",
        environment: PushEnvironment = .production, activityID: String? = nil, sessionID: UUID? = nil,
        previousToken: String? = nil
    ) {
        self.deviceID = deviceID
        self.token = token
        self.type = type
        self.platform = platform
        self.environment = environment
        self.activityID = activityID
        self.sessionID = sessionID
        self.previousToken = previousToken
    }
}

extension PushTokenRegistration: CustomStringConvertible {
    /// The registration with its tokens shown only as ``PushTokenText/hint(_:)``.
    public var description: String {
        "PushTokenRegistration(device: \(deviceID.canonical), token: \(PushTokenText.hint(token)), type: \(type.rawValue), "
            + "environment: \(environment.rawValue), previous: \(previousToken.map(PushTokenText.hint) ?? "none"))"
    }
}

/// What `register_push_token` answered.
///
/// The same whatever became of the token: a token another user holds and has not given up stays
/// theirs, and the answer does not say so (it would tell anyone whether a token string is
/// registered). A token moves between users once its owner invalidated it.
public struct PushTokenRegistered: Sendable, Hashable, Codable {
    /// Whether a previous token of the user was made invalid.
    public var previousInvalidated: Bool

    /// Creates an answer.
    public init(previousInvalidated: Bool) {
        self.previousInvalidated = previousInvalidated
    }
}

/// The design's push status: `{"deviceTokenRegistered", "liveActivityTokens": [...]}`.
public struct PushTokenStatus: Sendable, Hashable, Codable {
    public struct LiveActivity: Sendable, Hashable, Codable {
        public var activityId: String
        public var sessionId: UUID
        /// As the remote wrote it (ISO 8601).
        public var registeredAt: String

        /// Creates an entry.
        public init(activityId: String, sessionId: UUID, registeredAt: String) {
            self.activityId = activityId
            self.sessionId = sessionId
            self.registeredAt = registeredAt
        }
    }

    public var deviceTokenRegistered: Bool
    public var liveActivityTokens: [LiveActivity]

    /// Creates a status.
    public init(deviceTokenRegistered: Bool, liveActivityTokens: [LiveActivity]) {
        self.deviceTokenRegistered = deviceTokenRegistered
        self.liveActivityTokens = liveActivityTokens
    }
}

/// The design's `POST /api/push/clear-approval` response: `{"success": true, "devicesNotified": N}`.
public struct ApprovalClearing: Sendable, Hashable, Codable {
    public var success: Bool
    /// How many valid device tokens (other than the excluded one) have the payload queued.
    public var devicesNotified: Int

    /// Creates a response.
    public init(success: Bool, devicesNotified: Int) {
        self.success = success
        self.devicesNotified = devicesNotified
    }
}

/// One `push_outbox` row: what a delivery worker is to send.
public struct OutboxEntry: Sendable, Hashable {
    public var id: Int64
    public var deviceID: UUID?
    /// The push token's last 6 characters after `…`, enough to tell tokens apart: a device reads
    /// no push token, not even its own, from the outbox (the push worker reads them).
    public var tokenHint: String
    /// `background`, `alert` or `liveactivity`.
    public var pushType: String
    /// 5 (background) or 10 (alert).
    public var priority: Int
    public var collapseID: String?
    /// The APNs payload, JSON text with sorted keys.
    public var payload: String
    public var createdAt: Date?
    public var deliveredAt: Date?
    public var attempts: Int
    public var lastError: String?
    /// When the row may be sent at the earliest (live-activity throttling); nil on a remote
    /// without the notifications migration, where every row may go at once.
    public var notBefore: Date?

    /// Creates an entry.
    public init(
        id: Int64, deviceID: UUID?, tokenHint: String, pushType: String, priority: Int, collapseID: String?,
        payload: String,
        createdAt: Date?, deliveredAt: Date?, attempts: Int, lastError: String?, notBefore: Date? = nil
    ) {
        self.id = id
        self.deviceID = deviceID
        self.tokenHint = tokenHint
        self.pushType = pushType
        self.priority = priority
        self.collapseID = collapseID
        self.payload = payload
        self.createdAt = createdAt
        self.deliveredAt = deliveredAt
        self.attempts = attempts
        self.lastError = lastError
        self.notBefore = notBefore
    }
}

extension OutboxEntry: CustomStringConvertible {
    /// The row with its token shown only as ``tokenHint``.
    public var description: String {
        "OutboxEntry(#\(id), device: \(deviceID?.canonical ?? "none"), token: \(tokenHint), \(pushType)/\(priority), collapse: \(collapseID ?? "none"))"
    }
}

/// Checks on the text values coordination takes, the same on both remotes.
public enum PushTokenText {
    /// Whether `token` is 1 to 512 characters of `A-Z a-z 0-9 . _ : -`.
    public static func isValid(_ token: String) -> Bool {
        let bytes = token.utf8
        return (1...512).contains(bytes.count)
            && bytes.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == 0x2E || byte == 0x5F || byte == 0x3A || byte == 0x2D
            }
    }

    /// Whether `text` is 1 to `limit` Unicode scalars (PostgreSQL's characters) without control
    /// characters (U+0000 to U+001F, U+007F to U+009F): activity ids.
    public static func isValidIdentifier(_ text: String, limit: Int = 200) -> Bool {
        (1...limit).contains(text.unicodeScalars.count)
            && !text.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    /// Whether `platform` is 1 to 20 lowercase ASCII letters.
    public static func isValidPlatform(_ platform: String) -> Bool {
        (1...20).contains(platform.utf8.count) && platform.utf8.allSatisfy { (0x61...0x7A).contains($0) }
    }

    /// `…` and the last 6 characters.
    public static func hint(_ token: String) -> String { "…" + token.suffix(6) }
}

/// Whether a device is online: its `last_seen_at` heartbeat is within ``window`` (the deployed
/// clients' 15 seconds).
public enum Presence: Sendable, Hashable {
    case online
    case lastSeen(Date)
    case neverSeen

    /// The deployed clients' window.
    public static let window: TimeInterval = 15

    /// The presence of a device last seen at `lastSeen`, as of `now`.
    public init(lastSeen: Date?, now: Date = Date()) {
        guard let lastSeen else {
            self = .neverSeen
            return
        }
        self = now.timeIntervalSince(lastSeen) <= Self.window ? .online : .lastSeen(lastSeen)
    }

    /// `online`, `last seen 5 min ago`, `never seen`.
    public func text(now: Date = Date()) -> String {
        switch self {
        case .online: return "online"
        case .neverSeen: return "never seen"
        case let .lastSeen(date):
            let seconds = max(0, Int(now.timeIntervalSince(date)))
            switch seconds {
            case ..<60: return "last seen \(seconds) s ago"
            case ..<3600: return "last seen \(seconds / 60) min ago"
            case ..<86_400: return "last seen \(seconds / 3600) h ago"
            default: return "last seen \(seconds / 86_400) d ago"
            }
        }
    }
}

extension RemoteDevice {
    /// Online or when last seen, from `last_seen_at`.
    public func presence(now: Date = Date()) -> Presence { Presence(lastSeen: lastSeenAt, now: now) }
}
