import RemoteContract

/// Where an approval's or a question's alert went, as values (docs/notifications.md, "Nothing
/// silently lost"): what one outbox row says of its device, which of a device's rows speaks for
/// it, and why a device without a row was not reached. Pure (no storage, no clock): the embedded
/// remote calls them while it answers `alert_deliveries`; the SQL functions
/// `private.rule_delivery_outcome`, `private.rule_delivery_key` (with `private.rule_delivery_rank`)
/// and `private.rule_unreached` state the same rules in SQL; `testvectors/remote-rules-v1.json` holds both to the same answers.
public enum DeliveryRules {
    /// What the outbox writes before the reason of a row it closed at claim, never sent
    /// (`dropped: token moved`, …): such a row is `dropped`, any other closed row `failed`.
    public static let droppedPrefix = "dropped: "

    /// One outbox row's outcome and the reason shown with it.
    ///
    /// - Parameters:
    ///   - delivered: the row has a `delivered_at`.
    ///   - failed: the row has a `failed_at`.
    ///   - lastError: its `last_error`.
    ///   - attempts: its `attempts`.
    /// - Returns: `delivered`; else, once failed, `dropped` with the reason after
    ///   ``droppedPrefix`` or `failed` with `lastError`; else `sent` once tried, or `queued`. Only
    ///   a closed row has a reason.
    public static func outcome(
        delivered: Bool, failed: Bool, lastError: String?, attempts: Int
    ) -> (outcome: DeliveryOutcome, reason: String?) {
        if delivered { return (.delivered, nil) }
        guard failed else { return (attempts >= 1 ? .sent : .queued, nil) }
        // By bytes, as the SQL's starts_with and substr read it: a combining mark after the
        // prefix's space must not hide the prefix (as a String's characters would).
        if let lastError, lastError.utf8.starts(with: droppedPrefix.utf8) {
            return (.dropped, String(decoding: lastError.utf8.dropFirst(droppedPrefix.utf8.count), as: UTF8.self))
        }
        return (.failed, lastError)
    }

    /// How far a row's outcome went, to choose the row that speaks for a device: delivered 5,
    /// sent 4, queued 3, failed 2, dropped 1 (a row's outcomes only; the others 0).
    public static func rank(_ outcome: DeliveryOutcome) -> Int {
        switch outcome {
        case .delivered: 5
        case .sent: 4
        case .queued: 3
        case .failed: 2
        case .dropped: 1
        case .unreachable, .off: 0
        }
    }

    /// One of a device's outbox rows of an alert, as ``speaks(_:over:)`` weighs it.
    public struct Candidate: Sendable, Hashable {
        /// The row's outcome (``outcome(delivered:failed:lastError:attempts:)``).
        public var outcome: DeliveryOutcome
        /// When it last changed (delivered, failed or created), in seconds since 1970.
        public var updatedAt: Double
        /// Its `push_outbox.id`.
        public var id: Int64

        /// Creates a candidate.
        public init(outcome: DeliveryOutcome, updatedAt: Double, id: Int64) {
            self.outcome = outcome
            self.updatedAt = updatedAt
            self.id = id
        }
    }

    /// Whether row `a` speaks for its device rather than row `b`: the one whose outcome went
    /// further (``rank(_:)``), of those the one that changed last, of those the newer row (the
    /// higher id). Rows queued by one statement share their time; the id decides.
    public static func speaks(_ a: Candidate, over b: Candidate) -> Bool {
        (rank(a.outcome), a.updatedAt, a.id) > (rank(b.outcome), b.updatedAt, b.id)
    }

    /// Why a device with no row of the alert was not reached: `off` with `setting off` when its
    /// setting for the kind is off now; else `unreachable`, with the first that holds of
    /// `registered later` (a valid token newer than the alert), `not trusted` (the trust log in
    /// force does not certify it: a revoked device, whose tokens its revocation ended, reads so),
    /// `token invalid` (no valid token), else `not queued` (a setting or a limit at the time).
    public static func unreached(
        settingOff: Bool, registeredLater: Bool, validToken: Bool, trusted: Bool
    ) -> (outcome: DeliveryOutcome, reason: String) {
        if settingOff { return (.off, "setting off") }
        let reason =
            registeredLater
            ? "registered later" : !trusted ? "not trusted" : !validToken ? "token invalid" : "not queued"
        return (.unreachable, reason)
    }
}
