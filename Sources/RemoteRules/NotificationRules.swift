import RemoteContract
import SyncModel

/// How an alert is queued for one device (docs/notifications.md, "Alert kinds" and "Quiet while
/// active"). The raw value is the word the SQL rule returns.
public enum AlertDecision: String, Sendable, Hashable, CaseIterable, Codable {
    /// The device's setting for the kind is off: nothing is queued (`off` in its deliveries).
    case off
    /// A task kind while another device is active on the session: nothing is queued.
    case suppressed
    /// An approval or a question while another device is active on the session: queued without
    /// sound, priority 5 (a blocked agent must still reach someone).
    case passive
    /// Queued as usual.
    case alert
}

/// The kinds of push the queueing operations name when they ask whether they may queue one
/// (docs/notifications.md, "Settings"). The raw value is the SQL rule's word.
public enum QueuedPushKind: String, Sendable, Hashable, CaseIterable, Codable {
    /// The silent push that hands a session over to another device: never suppressed.
    case handoff
    /// The silent push that removes a prompt a person could still act on: never suppressed.
    case clearing
    /// Any other silent push.
    case background
    /// A visible alert: its kind's own setting is for ``NotificationRules/alertDecision(kind:settings:idleElsewhere:)``.
    case alert
    /// A live-activity update.
    case liveActivity = "liveactivity"
    /// A live activity's end: never suppressed (an open activity must be able to close).
    case liveActivityEnd = "liveactivity-end"
}

/// The server's notification rules as values: what a device's settings allow, and how an alert
/// goes to it. Pure (no storage, no clock): the embedded remote calls them inside its
/// transactions; the SQL functions `private.rule_alert_decision`, `private.rule_alert_priority` and
/// `private.rule_may_queue_push` state the same rules in SQL; `testvectors/remote-rules-v1.json` holds both to the same answers.
public enum NotificationRules {
    /// How recently another device must have been active on a session, in seconds, to count as
    /// active there (its `session_active_clients.last_activity_at` at most this long ago).
    public static let activeWindowSeconds: Double = 60

    /// Whether the device's settings turn alerts of `kind` on.
    public static func isEnabled(_ kind: AlertKind, in settings: NotificationSettings) -> Bool {
        switch kind {
        case .approval: settings.alertApprovals
        case .question: settings.alertQuestions
        case .taskComplete: settings.alertTaskComplete
        case .taskFailed: settings.alertTaskFailed
        case .taskPaused: settings.alertTaskPaused
        }
    }

    /// How an alert of `kind` goes to a device with `settings`.
    ///
    /// - Parameters:
    ///   - kind: the alert's kind (its payload's `type`).
    ///   - settings: the receiving device's settings (`NotificationSettings.defaults` when it
    ///     never set any).
    ///   - idleElsewhere: seconds since another device was last active on the alert's session
    ///     (`nil`: no other device has been). Negative (a clock ahead of the server's) counts as
    ///     active now.
    public static func alertDecision(
        kind: AlertKind, settings: NotificationSettings, idleElsewhere: Double?
    ) -> AlertDecision {
        guard isEnabled(kind, in: settings) else { return .off }
        guard settings.quietWhileActive, let idleElsewhere, idleElsewhere <= activeWindowSeconds else {
            return .alert
        }
        return kind.isTaskKind ? .suppressed : .passive
    }

    /// The APNs priority of an alert queued under `decision`: 10 (at once) for `alert`, 5 (when
    /// the device's power allows; it comes without sound) for `passive`; `nil` for `off` and
    /// `suppressed`, which queue nothing. `private.rule_alert_priority` in SQL.
    public static func priority(_ decision: AlertDecision) -> Int? {
        switch decision {
        case .alert: 10
        case .passive: 5
        case .off, .suppressed: nil
        }
    }

    /// Whether a push of `kind` may be queued for a device with `settings`: the one rule every
    /// queueing operation follows.
    public static func mayQueue(_ kind: QueuedPushKind, settings: NotificationSettings) -> Bool {
        switch kind {
        case .background: settings.backgroundNotifications
        case .liveActivity: settings.liveActivities
        case .handoff, .clearing, .alert, .liveActivityEnd: true
        }
    }

    /// Whether a request (an approval request or a question) counts toward a device's badge: it
    /// is `pending`, another device asked it (not `askedByDevice`), and its time has not come
    /// (`expiresIn`, its expiry less now in whole seconds, is more than 0).
    /// `private.rule_badge_counts` in SQL.
    public static func countsTowardBadge(status: String, askedByDevice: Bool, expiresIn: Int64) -> Bool {
        status == "pending" && !askedByDevice && expiresIn > 0
    }
}
