import SyncModel

/// The server's task-alert rules as values (docs/notifications.md, "Task alerts"): which session
/// change raises which kind, and how a new alert meets the one its token already has for the
/// session. The SQL states them as `private.rule_runtime_task_kind`,
/// `private.rule_status_task_kind` and `private.rule_task_alert_coalescing`;
/// `testvectors/remote-rules-v1.json` holds the two to the same answers.
public enum TaskAlertRules {
    /// How long after a token's newest alert for a session (its due time) another waits, in
    /// seconds: the same kind within it is coalesced, another kind queued after it.
    public static let coalesceWindowSeconds: Double = 60

    /// The kind a change of the session's runtime status raises: `idle` from `running` or
    /// `waiting` is task_complete, `error` from anything else task_failed. A session's first
    /// runtime status raises nothing.
    ///
    /// - Parameters:
    ///   - hadStatus: whether the session had a runtime status before this one.
    ///   - before: its status word before (`coding_session.status`; `nil`: none).
    ///   - after: its status word now (`nil`: none).
    public static func runtimeKind(hadStatus: Bool, before: String?, after: String?) -> AlertKind? {
        guard hadStatus, let after else { return nil }
        if after == RuntimeStatus.State.idle.rawValue,
            before == RuntimeStatus.State.running.rawValue || before == RuntimeStatus.State.waiting.rawValue
        {
            return .taskComplete
        }
        if after == RuntimeStatus.State.error.rawValue, before != RuntimeStatus.State.error.rawValue {
            return .taskFailed
        }
        return nil
    }

    /// The kind a change of the session's own status raises: `active` to `paused` is task_paused.
    public static func statusKind(before: String?, after: String?) -> AlertKind? {
        before == SessionStatus.active.rawValue && after == SessionStatus.paused.rawValue ? .taskPaused : nil
    }

    /// A token's newest alert for the session, as the coalescing rule reads it.
    public struct Newest: Sendable, Hashable {
        /// Its payload's `type`.
        public var kind: String?
        /// Seconds since it was due (`not_before`); negative while it is due later.
        public var age: Double
        /// Whether it still waits untried: not delivered, not failed, never attempted, not leased.
        public var waits: Bool

        /// Creates the newest alert as read.
        public init(kind: String?, age: Double, waits: Bool) {
            self.kind = kind
            self.age = age
            self.waits = waits
        }
    }

    /// What a new task alert does to a token's alerts for the session.
    public enum Coalescing: Sendable, Hashable {
        /// A new row, due now.
        case queue
        /// Nothing: the newest, within the window, is of the same kind.
        case coalesce
        /// The newest, within the window and still waiting untried, takes this alert's payload.
        case replace
        /// A new row, due this many seconds after the newest's due time.
        case queueAfterNewest(seconds: Double)

        /// The word the SQL rule returns.
        public var action: String {
            switch self {
            case .queue: "queue"
            case .coalesce: "coalesce"
            case .replace: "replace"
            case .queueAfterNewest: "queue_after"
            }
        }
    }

    /// How an alert of `kind` meets the token's newest alert for the session (`nil`: it has none).
    public static func coalescing(kind: AlertKind, newest: Newest?) -> Coalescing {
        guard let newest, newest.age < coalesceWindowSeconds else { return .queue }
        if newest.kind == kind.rawValue { return .coalesce }
        return newest.waits ? .replace : .queueAfterNewest(seconds: coalesceWindowSeconds)
    }
}
