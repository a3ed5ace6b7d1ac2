import Foundation

/// A session's live status as the deployed desktops report it: `agent_coding_sessions.runtime_status`
/// with the deployed CHECKs (schema version `"1"`, a known state, `session_id` equal to the row's
/// id, a numeric `updated_at_ms`, an optional string `error_message`).
///
/// The desktop that runs the session sets it; phones receive it with the session rows. This
/// engine also writes `coding_session.current_operation` and `coding_session.todo_progress`
/// (what a live activity shows, notifications.md), always passed through ``LockScreenText``
/// first; a reader ignores either when it is malformed.
public struct RuntimeStatus: Sendable, Hashable, Codable {
    /// Progress through a session's todo list: `coding_session.todo_progress`.
    public struct TodoProgress: Sendable, Hashable, Codable {
        /// The largest count written or kept.
        public static let maxCount = 100_000

        public var completed: Int
        public var total: Int
        /// The task in progress, lock-screen text.
        public var currentTask: String?

        /// Creates progress; counts are clamped to 0...``maxCount``.
        public init(completed: Int, total: Int, currentTask: String? = nil) {
            self.completed = min(max(completed, 0), Self.maxCount)
            self.total = min(max(total, 0), Self.maxCount)
            self.currentTask = currentTask
        }
    }

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
    /// What the session is doing now ("Running tests..."), lock-screen text.
    public var currentOperation: String?
    public var todoProgress: TodoProgress?
    /// `runtime_status_updated_at`: when the remote row was last given a status.
    public var reportedAt: Date?

    /// Creates a status.
    public init(
        state: State, deviceID: String, sessionID: UUID, updatedAtMilliseconds: Int64, errorMessage: String? = nil,
        currentOperation: String? = nil, todoProgress: TodoProgress? = nil, reportedAt: Date? = nil
    ) {
        self.state = state
        self.deviceID = deviceID
        self.sessionID = sessionID
        self.updatedAtMilliseconds = updatedAtMilliseconds
        self.errorMessage = errorMessage
        self.currentOperation = currentOperation
        self.todoProgress = todoProgress
        self.reportedAt = reportedAt
    }

    /// The `runtime_status` JSON object, keys sorted.
    public var jsonText: String {
        var session: [String: Any] = ["status": state.rawValue]
        if let currentOperation { session["current_operation"] = currentOperation }
        if let todoProgress {
            var todo: [String: Any] = ["completed": todoProgress.completed, "total": todoProgress.total]
            if let task = todoProgress.currentTask { todo["current_task"] = task }
            session["todo_progress"] = todo
        }
        var object: [String: Any] = [
            "schema_version": Self.schemaVersion, "coding_session": session,
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
            errorMessage: message, currentOperation: Self.liveText(session["current_operation"]),
            todoProgress: Self.todo(session["todo_progress"]), reportedAt: reportedAt)
    }

    /// A string of at most ``LockScreenText/maxLength`` scalars without control characters, as
    /// the project's CHECK asks; nil otherwise.
    static func liveText(_ value: Any?) -> String? {
        guard let text = value as? String, text.unicodeScalars.count <= LockScreenText.maxLength,
            !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { return nil }
        return text
    }

    static func todo(_ value: Any?) -> TodoProgress? {
        guard let object = value as? [String: Any],
            let completed = object["completed"] as? NSNumber, !isBoolean(completed),
            let total = object["total"] as? NSNumber, !isBoolean(total),
            (0...Double(TodoProgress.maxCount)).contains(completed.doubleValue),
            (0...Double(TodoProgress.maxCount)).contains(total.doubleValue)
        else { return nil }
        return TodoProgress(
            completed: completed.intValue, total: total.intValue, currentTask: liveText(object["current_task"]))
    }

    /// Whether a JSONSerialization value is a JSON boolean (which also casts to NSNumber).
    static func isBoolean(_ value: Any) -> Bool {
        String(describing: type(of: value)).contains("Boolean")
    }
}
