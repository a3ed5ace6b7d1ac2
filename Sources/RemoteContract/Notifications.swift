import Foundation
import SyncModel

/// A remote that keeps per-device notification settings (notifications.md) and applies them to
/// every push it queues.
public protocol NotificationRemote: CoordinationRemote {
    /// `deviceID`'s settings, or ``NotificationSettings/defaults`` when it never set any.
    /// `RemoteStoreError.permissionDenied` when the device is not the user's.
    func notificationSettings(deviceID: UUID) async throws -> NotificationSettings

    /// Changes the settings `change` names for `deviceID` (the others stay); turning live
    /// activities off ends the device's open activities. Returns the settings as stored.
    func setNotificationSettings(
        deviceID: UUID, _ change: NotificationSettings.Change
    ) async throws
        -> NotificationSettingsUpdated

    /// Keeps this device's claim on a session fresh while the session is on screen (every 30 s
    /// in the foreground): refreshes the claim's time only when `deviceID` holds the session;
    /// never takes it over, queues nothing. Returns whether `deviceID` holds it.
    func touchSessionActivity(sessionID: UUID, deviceID: UUID) async throws -> Bool

    /// Which device holds a session's handoff claim and when it last used it
    /// (`session_active_clients`), or `nil` when none does.
    func sessionHolder(sessionID: UUID) async throws -> SessionHolder?

    /// Where an approval's alert went, device by device (`alert_deliveries`).
    /// `RemoteStoreError.permissionDenied` for an id that is not one of the user's approvals,
    /// whether it exists or not.
    func alertDeliveries(alertID: UUID) async throws -> AlertDeliveries

    /// Raises a task alert (`task_complete`, `task_failed` or `task_paused`) about a session
    /// `deviceID` runs, for the user's other devices, coalesced as a session's own transitions
    /// are (`notify_session_event`). `.permissionDenied` when the session is not the user's on
    /// that device; `.invalidValue` for another kind.
    func notifySessionEvent(sessionID: UUID, deviceID: UUID, kind: AlertKind) async throws -> SessionEventQueued
}

/// The device that holds a session's handoff claim (`session_active_clients`).
public struct SessionHolder: Sendable, Hashable {
    public var deviceID: UUID
    /// `ios`, `desktop` or `web`.
    public var clientType: String
    public var lastActivityAt: Date?

    /// Creates a holder.
    public init(deviceID: UUID, clientType: String, lastActivityAt: Date?) {
        self.deviceID = deviceID
        self.clientType = clientType
        self.lastActivityAt = lastActivityAt
    }

    /// Decodes a row as PostgREST returns it.
    package init(json row: ResponseRow) throws {
        let r = RowReader(row, table: "session_active_clients")
        self.init(
            deviceID: try r.uuid("device_id"), clientType: try r.string("client_type"),
            lastActivityAt: try r.optionalDate("last_activity_at"))
    }
}

/// What a person allows their device's notifications to do: `notification_settings`, one row
/// per device (no row means ``defaults``).
public struct NotificationSettings: Sendable, Hashable, Codable {
    /// Live-activity updates (off: none are queued, and open activities end).
    public var liveActivities: Bool
    /// Silent background pushes (off: none, except the approval-clearing and handoff pushes).
    public var backgroundNotifications: Bool
    /// Whether a live activity may show the session's operation and task (sanitised) instead
    /// of "Working". Approval alerts never carry plaintext on the lock screen either way.
    public var showDetails: Bool
    /// Whether approval alerts break through Focus (`time-sensitive`; off: `active`).
    public var timeSensitive: Bool
    /// Alerts of each kind (off: none of that kind for the device; `off` in its deliveries).
    public var alertApprovals: Bool
    public var alertQuestions: Bool
    public var alertTaskComplete: Bool
    public var alertTaskFailed: Bool
    public var alertTaskPaused: Bool
    /// Quiet while another device is active on the session (used it in the last 60 seconds):
    /// its task alerts are not sent, approvals and questions arrive without sound.
    public var quietWhileActive: Bool

    /// A device that never set anything: everything on but details.
    public static let defaults = NotificationSettings(
        liveActivities: true, backgroundNotifications: true, showDetails: false, timeSensitive: true)

    /// Creates settings; the round-2 settings default to on.
    public init(
        liveActivities: Bool, backgroundNotifications: Bool, showDetails: Bool, timeSensitive: Bool,
        alertApprovals: Bool = true, alertQuestions: Bool = true, alertTaskComplete: Bool = true,
        alertTaskFailed: Bool = true, alertTaskPaused: Bool = true, quietWhileActive: Bool = true
    ) {
        self.liveActivities = liveActivities
        self.backgroundNotifications = backgroundNotifications
        self.showDetails = showDetails
        self.timeSensitive = timeSensitive
        self.alertApprovals = alertApprovals
        self.alertQuestions = alertQuestions
        self.alertTaskComplete = alertTaskComplete
        self.alertTaskFailed = alertTaskFailed
        self.alertTaskPaused = alertTaskPaused
        self.quietWhileActive = quietWhileActive
    }

    /// A setting by name, as `sync-cli notifications set` takes it.
    public enum Key: String, Sendable, CaseIterable, Codable {
        case liveActivities = "live-activities"
        case background
        case details
        case timeSensitive = "time-sensitive"
        case approvals
        case questions
        case complete
        case failed
        case paused
        case quietWhileActive = "quiet-while-active"

        /// The column that stores it.
        public var column: String {
            switch self {
            case .liveActivities: "enable_live_activities"
            case .background: "enable_background_notifications"
            case .details: "show_notification_details"
            case .timeSensitive: "enable_time_sensitive"
            case .approvals: "alert_approvals"
            case .questions: "alert_questions"
            case .complete: "alert_task_complete"
            case .failed: "alert_task_failed"
            case .paused: "alert_task_paused"
            case .quietWhileActive: "quiet_while_active"
            }
        }
    }

    /// Settings from a `notification_settings` row as PostgREST returns it: each ``Key``'s
    /// ``Key/column``, a missing or null one at its ``defaults``.
    package init(json row: ResponseRow) throws {
        let r = RowReader(row, table: "notification_settings")
        self = .defaults
        for key in Key.allCases { self[key] = try r.bool(key.column, default: Self.defaults[key]) }
    }

    /// The setting `key`.
    public subscript(key: Key) -> Bool {
        get {
            switch key {
            case .liveActivities: liveActivities
            case .background: backgroundNotifications
            case .details: showDetails
            case .timeSensitive: timeSensitive
            case .approvals: alertApprovals
            case .questions: alertQuestions
            case .complete: alertTaskComplete
            case .failed: alertTaskFailed
            case .paused: alertTaskPaused
            case .quietWhileActive: quietWhileActive
            }
        }
        set {
            switch key {
            case .liveActivities: liveActivities = newValue
            case .background: backgroundNotifications = newValue
            case .details: showDetails = newValue
            case .timeSensitive: timeSensitive = newValue
            case .approvals: alertApprovals = newValue
            case .questions: alertQuestions = newValue
            case .complete: alertTaskComplete = newValue
            case .failed: alertTaskFailed = newValue
            case .paused: alertTaskPaused = newValue
            case .quietWhileActive: quietWhileActive = newValue
            }
        }
    }

    /// Some settings to change; the ones left nil stay as they are.
    public struct Change: Sendable, Hashable {
        public var values: [Key: Bool]

        /// A change of the settings in `values`.
        public init(_ values: [Key: Bool] = [:]) { self.values = values }

        /// `settings` with this change applied.
        public func applied(to settings: NotificationSettings) -> NotificationSettings {
            var result = settings
            for (key, value) in values { result[key] = value }
            return result
        }
    }
}

/// The answer to ``NotificationRemote/setNotificationSettings(deviceID:_:)``.
public struct NotificationSettingsUpdated: Sendable, Hashable {
    public var settings: NotificationSettings
    /// How many open live activities got an `end` because live activities were turned off.
    public var liveActivitiesEnded: Int

    /// Creates an answer.
    public init(settings: NotificationSettings, liveActivitiesEnded: Int) {
        self.settings = settings
        self.liveActivitiesEnded = liveActivitiesEnded
    }
}

extension NotificationSettingsUpdated: Decodable {
    enum CodingKeys: String, CodingKey {
        case enableLiveActivities, enableBackgroundNotifications, showNotificationDetails, enableTimeSensitive
        case alertApprovals, alertQuestions, alertTaskComplete, alertTaskFailed, alertTaskPaused, quietWhileActive
        case liveActivitiesEnded
    }

    /// Reads `set_notification_settings`'s answer (a server before round 2 names no alert
    /// settings: they are on).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        func on(_ key: CodingKeys) throws -> Bool { try c.decodeIfPresent(Bool.self, forKey: key) ?? true }
        self.init(
            settings: NotificationSettings(
                liveActivities: try c.decode(Bool.self, forKey: .enableLiveActivities),
                backgroundNotifications: try c.decode(Bool.self, forKey: .enableBackgroundNotifications),
                showDetails: try c.decode(Bool.self, forKey: .showNotificationDetails),
                timeSensitive: try c.decode(Bool.self, forKey: .enableTimeSensitive),
                alertApprovals: try on(.alertApprovals), alertQuestions: try on(.alertQuestions),
                alertTaskComplete: try on(.alertTaskComplete), alertTaskFailed: try on(.alertTaskFailed),
                alertTaskPaused: try on(.alertTaskPaused), quietWhileActive: try on(.quietWhileActive)),
            liveActivitiesEnded: try c.decode(Int.self, forKey: .liveActivitiesEnded))
    }
}

/// A live-activity push's `aps.event`: an update of the activity's state, or its end.
public enum LiveActivityEvent: String, Sendable, Hashable, Codable, CaseIterable {
    case update, end
}

/// The live-activity rules both remotes follow (notifications.md), in one place for the
/// embedded remote and the tests.
public enum LiveActivityRules {
    /// `stale-date` is this long after `timestamp`.
    public static let staleAfter: Int64 = 300
    /// An `end`'s `dismissal-date` is this long after `timestamp`.
    public static let dismissAfter: Int64 = 900
    /// What a live activity shows as the operation when details are off.
    public static let genericOperation = "Working"
    /// What an activity shows when its session moved from the iOS device to another device.
    public static let handoffOperation = "Continued on another device"

    /// A live activity's `status` for a runtime state (not-available reads as idle).
    public static func status(_ state: RuntimeStatus.State?) -> String {
        switch state {
        case .running: "processing"
        case .waiting: "waiting_approval"
        case .error: "error"
        case .idle, .notAvailable, nil: "idle"
        }
    }
}
