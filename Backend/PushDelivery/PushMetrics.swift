import Foundation
import Metrics

/// The worker's metrics (swift-metrics; whichever backend the process bootstraps).
enum PushMetrics {
    static let providerTokenMints = Counter(label: "push_provider_token_mints_total")
    static let pending = Gauge(label: "push_outbox_pending")
    static let oldestPendingAge = Gauge(label: "push_outbox_oldest_pending_seconds")
    static let requestTime = Timer(label: "push_request_duration_seconds", preferredDisplayUnit: .milliseconds)
    static let queueLag = Timer(label: "push_outbox_lag_seconds", preferredDisplayUnit: .milliseconds)

    static func request(environment: String, type: PushType, status: Int, reason: String?) {
        Counter(
            label: "push_requests_total",
            dimensions: [
                ("environment", environment), ("push_type", type.rawValue), ("status", String(status)),
                ("reason", reason.map { label(reason: $0) } ?? ""),
            ]
        ).increment()
    }

    static func transportFault(_ cause: String) {
        Counter(label: "push_transport_faults_total", dimensions: [("cause", cause)]).increment()
    }

    static func closed(_ outcome: String, reason: String) {
        Counter(label: "push_rows_closed_total", dimensions: [("outcome", outcome), ("reason", label(reason: reason))])
            .increment()
    }

    static func invalidated(reason: String) {
        Counter(label: "push_token_invalidations_total", dimensions: [("reason", label(reason: reason))]).increment()
    }

    static func retry(cause: String) {
        Counter(label: "push_retries_total", dimensions: [("cause", cause)]).increment()
    }
}

extension Timer {
    func record(duration: Duration) {
        let (seconds, attoseconds) = duration.components
        recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

/// Notifications round 2's metrics (notifications-2.md, "Metrics"). No label holds an id, a
/// token or an apns-id: `kind` is one of the alert kinds or `other`, `reason` APNs' documented
/// reason or the table's word or `other`, `event` `update` or `end`.
extension PushMetrics {
    static let approvalsExpired = Counter(label: "push_approvals_expired_total")
    static let liveActivitiesOpen = Gauge(label: "push_live_activities_open")

    /// Creates the round-2 series a scraper should find before anything happened (at zero).
    static func announce() {
        approvalsExpired.increment(by: 0)
        liveActivitiesOpen.record(0)
        _ = Timer(label: "push_alert_latency_seconds", dimensions: [("kind", "approval")])
        Counter(
            label: "push_alerts_closed_total",
            dimensions: [("kind", "approval"), ("outcome", "delivered"), ("reason", "none")]
        ).increment(by: 0)
        Counter(label: "push_live_activity_events_total", dimensions: [("event", "update")]).increment(by: 0)
    }

    /// The alert kinds a label may name.
    static let kinds: Set<String> = ["approval", "question", "task_complete", "task_failed", "task_paused"]
    /// APNs' documented reasons and the outbox's own words a label may name.
    static let reasons: Set<String> = [
        "BadCollapseId", "BadDeviceToken", "BadExpirationDate", "BadMessageId", "BadPriority", "BadTopic",
        "DeviceTokenNotForTopic", "DuplicateHeaders", "IdleTimeout", "InvalidPushType", "MissingDeviceToken",
        "MissingTopic", "PayloadEmpty", "TopicDisallowed", "BadCertificate", "BadCertificateEnvironment",
        "ExpiredProviderToken", "Forbidden", "InvalidProviderToken", "MissingProviderToken",
        "UnrelatedKeyIdInToken", "BadEnvironmentKeyInToken", "BadPath", "MethodNotAllowed", "ExpiredToken",
        "Unregistered", "PayloadTooLarge", "TooManyProviderTokenUpdates", "TooManyRequests", "InternalServerError",
        "ServiceUnavailable", "Shutdown", "PayloadNotAnObject", "none", "attempts", "expired", "our fault",
        "token invalid", "token moved", "token unknown", "token type", "environment not served", "outcome refused",
    ]

    static func label(kind: String) -> String { kinds.contains(kind) ? kind : "other" }

    /// A reason as a label: one of ``reasons`` (an APNs reason, the worker's own words,
    /// ``ClosedReason/label``), else `other`.
    static func label(reason: String) -> String { reasons.contains(reason) ? reason : "other" }

    static func alertClosed(kind: String, outcome: String, reason: String) {
        Counter(
            label: "push_alerts_closed_total",
            dimensions: [("kind", label(kind: kind)), ("outcome", outcome), ("reason", label(reason: reason))]
        ).increment()
    }

    /// What a finished attempt tells the round-2 metrics: an alert's latency from due to APNs'
    /// 200 and how it closed; a live activity's event on APNs' 200.
    static func completed(_ row: OutboxRow, _ completion: Completion) {
        switch (row.pushType, completion) {
        case (.alert, .delivered):
            let kind = label(kind: row.payloadType ?? "other")
            Timer(label: "push_alert_latency_seconds", dimensions: [("kind", kind)]).recordSeconds(
                max(0, Date().timeIntervalSince(row.dueAt)))
            alertClosed(kind: kind, outcome: "delivered", reason: "none")
        case (.alert, .dead(_, let reason, let note)):
            alertClosed(kind: row.payloadType ?? "other", outcome: "failed", reason: reason ?? note)
        case (.liveactivity, .delivered):
            let event = row.liveActivityEvent == "end" ? "end" : "update"
            Counter(label: "push_live_activity_events_total", dimensions: [("event", event)]).increment()
        default: break
        }
    }
}

extension OutboxRow {
    private var payloadObject: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(payload.utf8))) as? [String: Any]
    }

    /// An alert's kind: its payload's `type`.
    var payloadType: String? { payloadObject?["type"] as? String }

    /// A live activity's event: its payload's `aps.event`.
    var liveActivityEvent: String? { (payloadObject?["aps"] as? [String: Any])?["event"] as? String }
}
