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
                ("reason", reason ?? ""),
            ]
        ).increment()
    }

    static func transportFault(_ cause: String) {
        Counter(label: "push_transport_faults_total", dimensions: [("cause", cause)]).increment()
    }

    static func closed(_ outcome: String, reason: String) {
        Counter(label: "push_rows_closed_total", dimensions: [("outcome", outcome), ("reason", reason)]).increment()
    }

    static func invalidated(reason: String) {
        Counter(label: "push_token_invalidations_total", dimensions: [("reason", reason)]).increment()
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
