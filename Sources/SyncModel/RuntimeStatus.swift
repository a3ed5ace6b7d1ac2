import Foundation

/// A session's live status as the deployed desktops report it: `agent_coding_sessions.runtime_status`
/// with the deployed CHECKs (schema version `"1"`, a known state, `session_id` equal to the row's
/// id, a numeric `updated_at_ms`, an optional string `error_message`).
///
/// The desktop that runs the session sets it; phones receive it with the session rows.
public struct RuntimeStatus: Sendable, Hashable, Codable {
    /// `coding_session.status`.
    public enum State: String, Sendable, Codable, CaseIterable {
        case running, idle, waiting
        case notAvailable = "not-available"
        case error
    }

    /// The only `schema_version` there is.
    public static let schemaVersion = "1"
    /// The longest `error_message` this engine writes or keeps (characters).
    public static let maxErrorMessageLength = 1000

    public var state: State
    /// The reporting device's id, as text (the deployed CHECK only asks for a string).
    public var deviceID: String
    public var sessionID: UUID
    /// When the desktop observed the state, in milliseconds since 1970.
    public var updatedAtMilliseconds: Int64
    public var errorMessage: String?
    /// `runtime_status_updated_at`: when the remote row was last given a status.
    public var reportedAt: Date?

    /// Creates a status.
    public init(
        state: State, deviceID: String, sessionID: UUID, updatedAtMilliseconds: Int64, errorMessage: String? = nil,
        reportedAt: Date? = nil
    ) {
        self.state = state
        self.deviceID = deviceID
        self.sessionID = sessionID
        self.updatedAtMilliseconds = updatedAtMilliseconds
        self.errorMessage = errorMessage
        self.reportedAt = reportedAt
    }

    /// The `runtime_status` JSON object, keys sorted.
    public var jsonText: String {
        var object: [String: Any] = [
            "schema_version": Self.schemaVersion, "coding_session": ["status": state.rawValue],
            "device_id": deviceID, "session_id": sessionID.canonical, "updated_at_ms": updatedAtMilliseconds,
        ]
        if let errorMessage { object["error_message"] = errorMessage }
        let data =
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
            ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// Reads a `runtime_status` value (a JSON object, or its text) for the session `sessionID`;
    /// `nil` when it is absent or breaks any of the deployed CHECKs (another writer's malformed
    /// status is dropped, the session row is kept).
    public init?(json value: Any?, sessionID: UUID, reportedAt: Date?) {
        var object = value
        if let text = value as? String { object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) }
        guard let object = object as? [String: Any],
            object["schema_version"] as? String == Self.schemaVersion,
            let session = object["coding_session"] as? [String: Any],
            let stateText = session["status"] as? String, let state = State(rawValue: stateText),
            let device = object["device_id"] as? String,
            let sessionText = object["session_id"] as? String, UUID.parse(sessionText) == sessionID,
            let milliseconds = object["updated_at_ms"] as? NSNumber, !Self.isBoolean(milliseconds),
            abs(milliseconds.doubleValue) < 9.0e18
        else { return nil }
        var message: String?
        if let raw = object["error_message"] {
            guard let text = raw as? String else { return nil }
            message = String(text.prefix(Self.maxErrorMessageLength))
        }
        self.init(
            state: state, deviceID: device, sessionID: sessionID, updatedAtMilliseconds: milliseconds.int64Value,
            errorMessage: message, reportedAt: reportedAt)
    }

    /// Whether a JSONSerialization value is a JSON boolean (which also casts to NSNumber).
    static func isBoolean(_ value: Any) -> Bool {
        String(describing: type(of: value)).contains("Boolean")
    }
}
