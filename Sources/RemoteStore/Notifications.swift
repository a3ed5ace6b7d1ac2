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

    /// A device that never set anything: everything on but details.
    public static let defaults = NotificationSettings(
        liveActivities: true, backgroundNotifications: true, showDetails: false, timeSensitive: true)

    /// Creates settings.
    public init(liveActivities: Bool, backgroundNotifications: Bool, showDetails: Bool, timeSensitive: Bool) {
        self.liveActivities = liveActivities
        self.backgroundNotifications = backgroundNotifications
        self.showDetails = showDetails
        self.timeSensitive = timeSensitive
    }

    /// A setting by name, as `sync-cli notifications set` takes it.
    public enum Key: String, Sendable, CaseIterable, Codable {
        case liveActivities = "live-activities"
        case background
        case details
        case timeSensitive = "time-sensitive"

        /// The column that stores it.
        public var column: String {
            switch self {
            case .liveActivities: "enable_live_activities"
            case .background: "enable_background_notifications"
            case .details: "show_notification_details"
            case .timeSensitive: "enable_time_sensitive"
            }
        }
    }

    /// The setting `key`.
    public subscript(key: Key) -> Bool {
        get {
            switch key {
            case .liveActivities: liveActivities
            case .background: backgroundNotifications
            case .details: showDetails
            case .timeSensitive: timeSensitive
            }
        }
        set {
            switch key {
            case .liveActivities: liveActivities = newValue
            case .background: backgroundNotifications = newValue
            case .details: showDetails = newValue
            case .timeSensitive: timeSensitive = newValue
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
        case liveActivitiesEnded
    }

    /// Reads `set_notification_settings`'s answer.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            settings: NotificationSettings(
                liveActivities: try c.decode(Bool.self, forKey: .enableLiveActivities),
                backgroundNotifications: try c.decode(Bool.self, forKey: .enableBackgroundNotifications),
                showDetails: try c.decode(Bool.self, forKey: .showNotificationDetails),
                timeSensitive: try c.decode(Bool.self, forKey: .enableTimeSensitive)),
            liveActivitiesEnded: try c.decode(Int.self, forKey: .liveActivitiesEnded))
    }
}

/// The live-activity rules both remotes follow (notifications.md), in one place for the
/// embedded remote and the tests.
public enum LiveActivityRules {
    /// The least time between two updates to one token.
    public static let updateInterval: TimeInterval = 15
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
