/// How a live-activity event for one token is queued (docs/notifications.md, "Throttle" and
/// "End"), as a value. Pure (no storage, no clock): the embedded remote calls it inside the
/// transaction that queues the event, with what it read of the token's rows; the SQL function
/// `private.rule_live_activity_due` (and `private.rule_live_activity_priority`,
/// `private.rule_live_activity_refusal`) state the same rules, and `testvectors/remote-rules-v1.json`
/// holds both to the same answers.
public enum LiveActivityQueueing {
    /// The least time between two updates to one token, in seconds.
    public static let updateInterval: Double = 15

    /// When the event's row is due.
    public enum Due: String, Sendable, Hashable, CaseIterable {
        /// Now.
        case now
        /// When the row it replaces was due (its time kept).
        case waiting
        /// ``LiveActivityQueueing/updateInterval`` after the token's latest row was due.
        case afterPrevious = "after_previous"
    }

    /// Why an event is not queued for a token at all.
    public enum Refusal: String, Sendable, Hashable, CaseIterable {
        /// The device turned live activities off (refuses an update; an end still goes, so that
        /// its open activities close).
        case settingOff = "setting_off"
        /// The user has a trust log and it does not vouch for the device (revoked, or never
        /// certified).
        case notVouched = "not_vouched"
        /// The token's activity has an end queued already: nothing follows an end.
        case ended
    }

    /// Whether an event may be queued for a token, checked in this order before
    /// ``placement(end:waitingDueIn:previousDueIn:)``; `nil` when it may.
    /// `private.rule_live_activity_refusal` in SQL.
    ///
    /// - Parameters:
    ///   - end: the event ends the activity (else it updates it).
    ///   - settingOff: the device's `enable_live_activities` is off.
    ///   - vouched: whether the user's trust log vouches for the device; `nil` when the user has
    ///     no log (then every device of the user is vouched for).
    ///   - ended: an end was queued for the token already.
    public static func refusal(end: Bool, settingOff: Bool, vouched: Bool?, ended: Bool) -> Refusal? {
        if !end, settingOff { return .settingOff }
        if vouched == false { return .notVouched }
        return ended ? .ended : nil
    }

    /// The APNs priority of a live-activity event: 10 for an end (an activity must be able to
    /// close) and for an update to `waiting_approval` (a person is asked), 5 for other updates.
    /// `private.rule_live_activity_priority` in SQL.
    public static func priority(end: Bool, status: String?) -> Int {
        end || status == "waiting_approval" ? 10 : 5
    }

    /// Where an event goes and when it is due.
    ///
    /// - Parameters:
    ///   - end: the event ends the activity (else it updates it).
    ///   - waitingDueIn: seconds from now until the token's waiting row (not delivered, not
    ///     failed, not being sent) is due, negative once due; `nil` when none waits.
    ///   - previousDueIn: the same for the token's latest live-activity row, in any state; `nil`
    ///     when it has none.
    /// - Returns: whether the event replaces the waiting row (the newest state wins; else a row is
    ///   inserted), when its row is due, and for ``Due/afterPrevious`` how long after the latest
    ///   row (``updateInterval``): an update keeps the waiting row's time; an end is due at once,
    ///   or at the waiting row's time when that came already; a new update is due
    ///   ``updateInterval`` after the latest row, or now when that is past.
    public static func placement(
        end: Bool, waitingDueIn: Double?, previousDueIn: Double?
    ) -> (replaces: Bool, due: Due, afterPrevious: Double?) {
        if let waitingDueIn { return (true, !end || waitingDueIn <= 0 ? .waiting : .now, nil) }
        guard !end, let previousDueIn, previousDueIn + updateInterval > 0 else { return (false, .now, nil) }
        return (false, .afterPrevious, updateInterval)
    }
}
