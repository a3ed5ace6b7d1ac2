import SyncModel

extension TaskAlertRules {
    /// Why a desktop's report of a session event (`notify_session_event`) is refused, in the
    /// words of `private.notify_session_event`.
    public enum EventRefusal: String, Sendable, Hashable, CaseIterable, RuleRefusal {
        /// The reporting device is not the caller's.
        case notYourDevice = "not_your_device"
        /// The session is not the caller's, or another device runs it.
        case notSessionOnDevice = "not_session_on_device"
        /// The kind is not a task kind.
        case kind

        /// What the refusal says.
        public var message: String {
            switch self {
            case .notYourDevice: "the device is not one of yours"
            case .notSessionOnDevice: "the session is not one of yours on this device"
            case .kind: "kind must be task_complete, task_failed or task_paused"
            }
        }

        /// 22023 (invalid parameter value) for the kind, else 42501.
        public var sqlState: String { self == .kind ? "22023" : "42501" }
    }

    /// Why a session event is refused, in this order, or `nil`: its task alerts are queued.
    ///
    /// - Parameters:
    ///   - deviceMine: the reporting device is the caller's.
    ///   - sessionOnDevice: the session is the caller's and that device runs it.
    ///   - kind: the event's kind word (`nil`: none); only a task kind is reported.
    public static func eventRefusal(deviceMine: Bool, sessionOnDevice: Bool, kind: String?) -> EventRefusal? {
        if !deviceMine { return .notYourDevice }
        if !sessionOnDevice { return .notSessionOnDevice }
        return kind.flatMap(AlertKind.init(rawValue:))?.isTaskKind == true ? nil : .kind
    }
}
