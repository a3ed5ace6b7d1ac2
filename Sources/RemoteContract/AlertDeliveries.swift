import Foundation
import SyncModel

/// What became of an alert for one device (notifications-2.md, "Nothing silently lost").
public enum DeliveryOutcome: String, Sendable, Hashable, Codable, CaseIterable {
    /// Queued, not tried yet.
    case queued
    /// Tried at least once: in flight or waiting to retry.
    case sent
    /// APNs answered 200.
    case delivered
    /// Given up: the token was invalid, the alert expired, the attempts ran out.
    case failed
    /// Closed when it was claimed, never sent (the token moved, became invalid, …).
    case dropped
    /// No row: the device has no valid token, or registered one after the alert.
    case unreachable
    /// No row: the device's setting for the kind is off.
    case off

    /// Whether the outcome may still change.
    public var isFinal: Bool { self != .queued && self != .sent }
}

/// One device's entry of ``AlertDeliveries``.
public struct AlertDelivery: Sendable, Hashable, Codable {
    public var deviceID: UUID
    public var deviceName: String
    public var deviceType: String?
    public var outcome: DeliveryOutcome
    /// The table's word (`token invalid`, `registered later`, `setting off`, …) or `nil`.
    public var reason: String?
    /// APNs' own reason (`Unregistered`, …) or `nil`.
    public var apnsReason: String?
    /// The outbox row's attempts, `nil` without a row.
    public var attempts: Int?
    /// When the row last changed (delivered, failed or created), `nil` without a row.
    public var updatedAt: Date?

    enum CodingKeys: String, CodingKey {
        case deviceID = "deviceId", deviceName, deviceType, outcome, reason, apnsReason, attempts, updatedAt
    }

    /// Creates an entry.
    public init(
        deviceID: UUID, deviceName: String, deviceType: String? = nil, outcome: DeliveryOutcome, reason: String? = nil,
        apnsReason: String? = nil, attempts: Int? = nil, updatedAt: Date? = nil
    ) {
        self.deviceID = deviceID
        self.deviceName = deviceName
        self.deviceType = deviceType
        self.outcome = outcome
        self.reason = reason
        self.apnsReason = apnsReason
        self.attempts = attempts
        self.updatedAt = updatedAt
    }

    /// Reads an entry of `alert_deliveries`' answer (`updatedAt` as the database writes a
    /// `timestamptz`).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            deviceID: try c.decode(UUID.self, forKey: .deviceID),
            deviceName: try c.decode(String.self, forKey: .deviceName),
            deviceType: try c.decodeIfPresent(String.self, forKey: .deviceType),
            outcome: try c.decode(DeliveryOutcome.self, forKey: .outcome),
            reason: try c.decodeIfPresent(String.self, forKey: .reason),
            apnsReason: try c.decodeIfPresent(String.self, forKey: .apnsReason),
            attempts: try c.decodeIfPresent(Int.self, forKey: .attempts),
            updatedAt: try c.decodeIfPresent(String.self, forKey: .updatedAt).flatMap(Timestamp.parse))
    }
}

/// Where an approval's or a question's alert went, device by device
/// (`alert_deliveries(alert_id)`).
public struct AlertDeliveries: Sendable, Hashable, Codable {
    public var alertID: UUID
    /// `approval` or `question`.
    public var kind: String
    /// Whether no entry can change any more (none is `queued` or `sent`).
    public var isFinal: Bool
    /// One entry per device of the user but the asker's, by name then id.
    public var devices: [AlertDelivery]

    enum CodingKeys: String, CodingKey {
        case alertID = "alertId", kind, isFinal = "final", devices
    }

    /// Creates an answer.
    public init(alertID: UUID, kind: String, isFinal: Bool, devices: [AlertDelivery]) {
        self.alertID = alertID
        self.kind = kind
        self.isFinal = isFinal
        self.devices = devices
    }

    /// Whether some device can be reached by push now (an entry is queued, sent or delivered).
    public var reachesSomeone: Bool { devices.contains { [.queued, .sent, .delivered].contains($0.outcome) } }

    /// One line for a person: `delivered to phone; failed: tablet (token invalid); not reachable:
    /// laptop (token invalid)`. The groups in this order: delivered to, sent to, queued for,
    /// failed:, dropped:, not reachable:, off:; a name two entries share is followed by its id's
    /// first 8 characters in brackets; the last four groups give each name's reason.
    public var summary: String {
        guard !devices.isEmpty else { return "no device has a push token" }
        let shared = Dictionary(grouping: devices, by: \.deviceName).filter { $0.value.count > 1 }.keys
        func name(_ entry: AlertDelivery, withReason: Bool) -> String {
            var text = entry.deviceName
            if shared.contains(entry.deviceName) { text += " [\(entry.deviceID.canonical.prefix(8))]" }
            if withReason, let reason = entry.reason ?? entry.apnsReason { text += " (\(reason))" }
            return text
        }
        let groups: [(DeliveryOutcome, String, Bool)] = [
            (.delivered, "delivered to", false), (.sent, "sent to", false), (.queued, "queued for", false),
            (.failed, "failed:", true), (.dropped, "dropped:", true), (.unreachable, "not reachable:", true),
            (.off, "off:", true),
        ]
        return groups.compactMap { outcome, label, withReason in
            let names = devices.filter { $0.outcome == outcome }.map { name($0, withReason: withReason) }
            return names.isEmpty ? nil : label + " " + names.joined(separator: ", ")
        }.joined(separator: "; ")
    }
}

/// What `notify_session_event` (or a session's own transition) did, in device tokens: queued
/// (or a waiting alert of another kind replaced), coalesced (the same kind went to that token
/// within the minute), suppressed (another device is active on the session) and off (the
/// device's setting for the kind is off).
public struct SessionEventQueued: Sendable, Hashable, Codable {
    public var queued: Int
    public var coalesced: Int
    public var suppressed: Int
    public var off: Int

    /// Creates counts.
    public init(queued: Int, coalesced: Int, suppressed: Int, off: Int) {
        self.queued = queued
        self.coalesced = coalesced
        self.suppressed = suppressed
        self.off = off
    }
}
