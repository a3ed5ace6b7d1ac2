/// What the trust log's three writing calls refuse before they read an entry
/// (docs/trust-log.md, "The remote"), in the words of `private.start_trust_log`,
/// `private.append_trust_entries` and `private.request_identity_reset`. Pure: the embedded remote
/// asks it inside the call's transaction with the user's log state as the call's lock leaves it
/// (a pending reset past its 72 hours has taken effect); `testvectors/remote-rules-v1.json`
/// (TrustLogCall) holds it and the SQL functions themselves to the same answers. What follows,
/// each entry's checks, is `TrustLogServerRules` (DeviceTrust).
public enum TrustLogCallRules {
    /// The most entries one append carries; a start carries a genesis and as many more.
    public static let entriesPerAppend = 8
    /// How long after a reset was asked for another may be asked without an accept, in seconds.
    public static let resetSpacing: Int64 = 86_400

    /// The call.
    public enum Call: String, Sendable, Hashable, CaseIterable {
        /// `start_trust_log`: epoch 1's genesis and up to 8 entries.
        case start
        /// `append_trust_entries`.
        case append
        /// `request_identity_reset` without an accept: the reset waits 72 hours.
        case reset
        /// `request_identity_reset` with an accept from the current epoch: it takes effect at once.
        case resetAccept = "reset_accept"
    }

    /// The user's trust-log state as the call's lock leaves it.
    public struct State: Sendable, Hashable {
        /// The epoch in force (`nil`: none yet).
        public var current: UInt32?
        /// The highest epoch any genesis was stored for (0: none).
        public var highestEpoch: UInt32
        /// Whether a reset waits to take effect.
        public var pending: Bool
        /// Whether the user has an identity key from before the trust log.
        public var legacyIdentity: Bool
        /// Seconds since a reset was last asked for (`nil`: never).
        public var lastResetAge: Int64?
        /// The seq of the current epoch's head (`nil`: no head row).
        public var headSeq: UInt64?

        public init(
            current: UInt32?, highestEpoch: UInt32, pending: Bool, legacyIdentity: Bool, lastResetAge: Int64?,
            headSeq: UInt64?
        ) {
            (self.current, self.highestEpoch, self.pending) = (current, highestEpoch, pending)
            (self.legacyIdentity, self.lastResetAge, self.headSeq) = (legacyIdentity, lastResetAge, headSeq)
        }
    }

    /// Why a call is refused before its entries are read.
    public enum Reason: String, Sendable, Hashable, CaseIterable {
        /// The sign-in is older than 10 minutes (start and reset).
        case notFresh = "not_fresh"
        /// A start for a user who has a log.
        case logExists = "log_exists"
        /// Too few or too many entries, or backups that do not pair with them.
        case entryCount = "entry_count"
        /// An append to the current epoch whose first seq is not the head's next.
        case notHeadsNext = "not_heads_next"
        /// A reset for a user with no log, no reset and no legacy identity.
        case noIdentity = "no_identity"
        /// A reset while another waits.
        case resetPending = "reset_pending"
        /// A reset without an accept within ``TrustLogCallRules/resetSpacing`` of the last.
        case resetTooSoon = "reset_too_soon"
    }

    /// A refusal in the SQL's words.
    public struct Refusal: RuleRefusal, Hashable {
        public let reason: Reason
        public let message: String

        /// 28000 for a stale sign-in, 23505 for a log that exists, 22023 for the entries' count,
        /// 40001 for a stale head (read again), 55000 for the reset's state.
        public var sqlState: String {
            switch reason {
            case .notFresh: "28000"
            case .logExists: "23505"
            case .entryCount: "22023"
            case .notHeadsNext: "40001"
            case .noIdentity, .resetPending, .resetTooSoon: "55000"
            }
        }
    }

    /// Why `call` is refused before its entries are read, in the order the SQL checks, or `nil`.
    ///
    /// - Parameters:
    ///   - call: the call.
    ///   - freshSignIn: the caller signed in within the last 10 minutes (start and reset ask).
    ///   - state: the user's log state as the call's lock leaves it.
    ///   - entries: how many entries the call carries (a reset: one, not counted here).
    ///   - backups: how many backups it carries (`nil`: none given).
    ///   - epoch: an append's epoch.
    ///   - firstSeq: an append's first seq.
    public static func refusal(
        _ call: Call, freshSignIn: Bool, state: State, entries: Int = 1, backups: Int? = nil, epoch: UInt32? = nil,
        firstSeq: UInt64? = nil
    ) -> Refusal? {
        let paired = backups.map { $0 == entries } ?? true
        switch call {
        case .start:
            if !freshSignIn { return Refusal(reason: .notFresh, message: stale("starting a trust log needs")) }
            if state.current != nil {
                return Refusal(reason: .logExists, message: "this user already has a trust log (identityExists)")
            }
            guard (1...entriesPerAppend + 1).contains(entries), paired else {
                return Refusal(
                    reason: .entryCount,
                    message: "start with a genesis and up to 8 entries, with as many backups (or none)")
            }
        case .append:
            guard (1...entriesPerAppend).contains(entries), paired else {
                return Refusal(reason: .entryCount, message: "append 1 to 8 entries, with as many backups (or none)")
            }
            let next = state.headSeq.map { $0 + 1 }
            if let current = state.current, epoch == current, firstSeq != next {
                // RAISE's % prints a NULL as <NULL>.
                return Refusal(
                    reason: .notHeadsNext,
                    message:
                        "first_seq is not the head's next (\(next.map(String.init) ?? "<NULL>")): read again and rebuild"
                )
            }
        case .reset, .resetAccept:
            if !freshSignIn { return Refusal(reason: .notFresh, message: stale("a reset needs")) }
            if state.current == nil, state.highestEpoch == 0, !state.legacyIdentity {
                return Refusal(
                    reason: .noIdentity, message: "this user has no identity to reset: start one with trust init")
            }
            if state.pending { return Refusal(reason: .resetPending, message: "a reset is already pending") }
            if call == .reset, let age = state.lastResetAge, age < resetSpacing {
                return Refusal(reason: .resetTooSoon, message: "a reset was asked for in the last 24 hours")
            }
        }
        return nil
    }

    static func stale(_ what: String) -> String {
        "sign in again, then retry (\(what) a sign-in in the last 10 minutes)"
    }
}
