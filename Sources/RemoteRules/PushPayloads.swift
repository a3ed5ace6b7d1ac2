import RemoteContract
import SyncModel

/// What the server writes in a push (notifications-2.md, "Payloads"; coordination.md;
/// docs/notifications.md), as functions of what it read: a visible alert, a live-activity event,
/// and the silent pushes that clear a request's prompt or tell a device its session moved. The
/// SQL's `private.rule_alert_payload`, `private.rule_live_activity_payload`,
/// `private.rule_clearing_payload` and `private.rule_handoff_payload` answer the same for the same
/// arguments (`testvectors/remote-rules-v1.json`, groups AlertPayload, LiveActivityPayload and
/// SilentPayload).
public enum PushPayloads {
    /// The largest payload APNs takes, measured compactly (as the worker sends it).
    public static let maximumBytes = 4_096
    /// How many bytes an alert's badge may add to the `0` it is measured with (up to seven digits).
    public static let badgeAllowance = 6

    /// The fields an approval request's or a question's alert carries of it.
    public struct Request: Sendable, Hashable {
        /// The request's (or question's) id, canonical text.
        public var id: String
        /// The asking device's id, canonical text.
        public var requesterDeviceID: String
        public var generation: Int64
        /// Unix seconds.
        public var expiresAt: Int64
        /// The sealed body, base64 as stored.
        public var sealed: String

        /// A request's fields as the alert carries them.
        public init(id: String, requesterDeviceID: String, generation: Int64, expiresAt: Int64, sealed: String) {
            (self.id, self.requesterDeviceID, self.generation) = (id, requesterDeviceID, generation)
            (self.expiresAt, self.sealed) = (expiresAt, sealed)
        }
    }

    /// An alert kind's generic text and the keys of the app's strings for it.
    public static func text(_ kind: AlertKind) -> PushPayload.APS.Alert {
        let (title, body, titleKey, bodyKey) =
            switch kind {
            case .approval:
                ("Approval needed", "An agent session is waiting for you", "approval.title", "approval.body.generic")
            case .question:
                (
                    "Your agent has a question", "An agent session is waiting for your answer", "question.title",
                    "question.body.generic"
                )
            case .taskComplete:
                ("Task complete", "An agent session finished working", "complete.title", "complete.body.generic")
            case .taskFailed:
                ("Task failed", "An agent session stopped with an error", "error.title", "error.body.generic")
            case .taskPaused:
                ("Task paused", "An agent session is paused; open it to continue", "paused.title", "paused.body")
            }
        return .init(
            title: title, body: body, titleLocKey: "notification." + titleKey, locKey: "notification." + bodyKey)
    }

    /// The alert of `kind` about `session` for one device, or `nil` when the device's `decision`
    /// queues nothing (``NotificationRules/priority(_:)``), or an approval or question comes
    /// without its `request`.
    ///
    /// A task kind's alert is the same for every device that gets one: `active`, with sound, no
    /// badge. An approval's or question's carries the request, the device's `badge`, and
    /// `time-sensitive` (`active` when the device turned `timeSensitive` off), or `passive` and no
    /// sound when the decision is passive. Its `sealed` body is left out when the payload, measured
    /// compactly with a badge of `0` and `time-sensitive`, leaves less than ``badgeAllowance``
    /// bytes below ``maximumBytes``.
    public static func alert(
        _ kind: AlertKind, session: String, scheme: String, request: Request?, decision: AlertDecision,
        timeSensitive: Bool, badge: Int
    ) -> PushPayload? {
        guard NotificationRules.priority(decision) != nil else { return nil }
        let link = "\(scheme)://session/\(session)"
        guard !kind.isTaskKind else {
            return PushPayload(
                aps: .init(
                    alert: text(kind), sound: "default", category: "SESSION_STATUS", threadID: session,
                    interruptionLevel: "active", mutableContent: 1),
                type: kind.rawValue, sessionId: session, deepLink: link)
        }
        guard let request else { return nil }
        var payload = PushPayload(
            aps: .init(
                alert: text(kind), sound: "default",
                category: kind == .question ? "AGENT_QUESTION" : "APPROVAL_REQUEST", threadID: session,
                interruptionLevel: "time-sensitive", mutableContent: 1, badge: 0),
            type: kind.rawValue, requestId: request.id, sessionId: session,
            deepLink: "\(link)/\(kind.rawValue)/\(request.id)", requesterDeviceId: request.requesterDeviceID,
            generation: request.generation, expiresAt: request.expiresAt, sealed: request.sealed)
        if payload.json.utf8.count + badgeAllowance > maximumBytes { payload.sealed = nil }
        payload.aps.badge = badge
        if decision == .passive {
            (payload.aps.interruptionLevel, payload.aps.sound) = ("passive", nil)
        } else {
            payload.aps.interruptionLevel = timeSensitive ? "time-sensitive" : "active"
        }
        return payload
    }

    /// A live-activity event at `stamp` (Unix seconds) for a session started at `startedAt`
    /// (`nil`: now), showing `status` and `operation` (`nil`: the session's `runtimeOperation`
    /// with details on, else `LiveActivityRules.genericOperation`) and the session's `todo`
    /// (its current task only with details on). It goes stale `LiveActivityRules.staleAfter`
    /// seconds later; an `end` is dismissed `LiveActivityRules.dismissAfter` seconds later.
    public static func liveActivity(
        at stamp: Int64, event: LiveActivityEvent, status: String, operation: String?, showDetails: Bool,
        runtimeOperation: String?, todo: RuntimeStatus.TodoProgress?, startedAt: Int64?
    ) -> PushPayload {
        let generic = LiveActivityRules.genericOperation
        let state = PushPayload.APS.ContentState(
            status: status,
            currentOperation: operation ?? (showDetails ? runtimeOperation ?? generic : generic),
            elapsedSeconds: max(0, stamp - (startedAt ?? stamp)),
            todoProgress: todo.map {
                .init(completed: $0.completed, total: $0.total, currentTask: showDetails ? $0.currentTask ?? "" : "")
            })
        return PushPayload(
            aps: .init(
                timestamp: stamp, event: event.rawValue, contentState: state,
                staleDate: stamp + LiveActivityRules.staleAfter,
                dismissalDate: event == .end ? stamp + LiveActivityRules.dismissAfter : nil))
    }

    /// The silent push that takes a request's prompt off a device: `content-available`, the
    /// device's new `badge`, the request's id (`clearApprovalId` for an approval,
    /// `clearQuestionId` for a question) and the `reason` it closed. `nil` for a kind that is not
    /// a request.
    public static func clearing(_ kind: AlertKind, request: String, reason: String, badge: Int) -> PushPayload? {
        switch kind {
        case .approval: PushPayload(aps: .silent(badge: badge), clearApprovalId: request, reason: reason)
        case .question: PushPayload(aps: .silent(badge: badge), clearQuestionId: request, reason: reason)
        case .taskComplete, .taskFailed, .taskPaused: nil
        }
    }

    /// The silent push that tells a device another client (`clientType`: `ios`, `desktop`, `web`)
    /// took `session` from it.
    public static func handoff(session: String, to clientType: String) -> PushPayload {
        PushPayload(aps: .silent(), type: "session_handoff", sessionId: session, handedOffTo: clientType)
    }
}
