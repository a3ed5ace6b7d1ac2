import Foundation
import SyncModel

/// Notification settings on Supabase: the table by GET (row-level security shows the user only
/// their own rows), changes through `set_notification_settings`, which checks the device is the
/// caller's and applies what turning live activities off implies.
extension PostgRESTRemoteStore: NotificationRemote {
    public func notificationSettings(deviceID: UUID) async throws -> NotificationSettings {
        let rows = try await fetchAll(
            "notification_settings",
            query: [("select", "*"), ("device_id", "eq.\(deviceID.canonical)")],
            order: "device_id.asc", atMost: 1, decode: NotificationSettings.init(json:))
        if let settings = rows.first { return settings }
        // No row: the defaults, once the device is known to be the user's.
        let owned = try await fetchAll(
            "devices",
            query: [("select", "id"), ("id", "eq.\(deviceID.canonical)"), ("user_id", "eq.\(userID.canonical)")],
            order: "id.asc", atMost: 1
        ) { _ in true }
        guard !owned.isEmpty else {
            throw RemoteStoreError(
                .permissionDenied, "the device is not one of yours", postgrestCode: .insufficientPrivilege)
        }
        return .defaults
    }

    public func setNotificationSettings(
        deviceID: UUID, _ change: NotificationSettings.Change
    ) async throws -> NotificationSettingsUpdated {
        var arguments: [String: RPCArgument] = ["device_id": .string(deviceID.canonical)]
        for (key, value) in change.values { arguments[key.column] = .bool(value) }
        return try Self.decode(
            NotificationSettingsUpdated.self,
            from: try await rpc("set_notification_settings", arguments: arguments),
            function: "set_notification_settings")
    }

    public func sessionHolder(sessionID: UUID) async throws -> SessionHolder? {
        try await fetchAll(
            "session_active_clients",
            query: [
                ("select", "device_id,client_type,last_activity_at"), ("session_id", "eq.\(sessionID.canonical)"),
                ("user_id", "eq.\(userID.canonical)"),
            ],
            order: "session_id.asc", atMost: 1, decode: SessionHolder.init(json:)
        ).first
    }

    public func touchSessionActivity(sessionID: UUID, deviceID: UUID) async throws -> Bool {
        struct Touched: Decodable { let holder: Bool }
        return try Self.decode(
            Touched.self,
            from: try await rpc(
                "touch_session_activity",
                arguments: ["session_id": .string(sessionID.canonical), "device_id": .string(deviceID.canonical)]),
            function: "touch_session_activity"
        ).holder
    }

    public func alertDeliveries(alertID: UUID) async throws -> AlertDeliveries {
        try Self.decode(
            AlertDeliveries.self,
            from: try await rpc("alert_deliveries", arguments: ["alert_id": .string(alertID.canonical)]),
            function: "alert_deliveries")
    }

    public func notifySessionEvent(
        sessionID: UUID, deviceID: UUID, kind: AlertKind
    ) async throws
        -> SessionEventQueued
    {
        guard kind.isTaskKind else {
            throw RemoteStoreError(.invalidValue, "kind must be task_complete, task_failed or task_paused")
        }
        return try Self.decode(
            SessionEventQueued.self,
            from: try await rpc(
                "notify_session_event",
                arguments: [
                    "session_id": .string(sessionID.canonical), "device_id": .string(deviceID.canonical),
                    "kind": .string(kind.rawValue),
                ]),
            function: "notify_session_event")
    }
}
