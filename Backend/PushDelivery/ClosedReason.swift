/// Why the worker closed a row at claim without a request (docs/push-worker.md): its raw value is
/// the text `last_error` stores, which `alert_deliveries` and the tests read; the claim's SQL
/// writes these values (bound from the cases, so the two cannot differ).
public enum ClosedReason: String, Sendable, Hashable, CaseIterable {
    /// Past its `expires_at`.
    case expired = "expired"
    /// No token row with the row's token.
    case tokenUnknown = "dropped: token unknown"
    /// The token was marked invalid.
    case tokenInvalid = "dropped: token invalid"
    /// The token now belongs to another user or device.
    case tokenMoved = "dropped: token moved"
    /// A live-activity row for a device token, or the reverse.
    case tokenType = "dropped: token type"
    /// The token's APNs environment is not one this worker serves.
    case environmentNotServed = "dropped: environment not served"

    /// How the row ended: `failed` for an expired row, `dropped` (never sendable) for the others,
    /// as `alert_deliveries` says.
    public var outcome: String { self == .expired ? "failed" : "dropped" }

    /// The metrics' `reason` label: the reason without its outcome.
    public var label: String { self == .expired ? "expired" : String(rawValue.dropFirst("dropped: ".count)) }
}
