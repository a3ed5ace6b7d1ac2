import Foundation
import LocalStore
import PostLoginSync

/// When the phone is asked instead of the terminal (docs/agent-hooks.md, "Away rule").
public enum AwayMode: String, Sendable, Hashable, CaseIterable, Codable {
    /// The terminal while the person types at this desk, else the phone.
    case auto
    /// The phone, every time.
    case always
    /// The terminal, every time.
    case never
}

/// The away rule as a value: where a permission or a question goes, decided from what this
/// desktop knows and, under `auto`, one remote read that must answer quickly.
public struct AwayRule: Sendable, Hashable {
    public var mode: AwayMode
    /// A prompt at this desk within this many seconds keeps permissions at the terminal (`auto`).
    public var deskActive: TimeInterval
    /// Whether a permission whose detail does not fit a request may go to the phone cut, marked
    /// "truncated: see the desk".
    public var allowTruncated: Bool
    /// How long the phone has when the person is away by `always` or a phone holds the session.
    public var awayWait: Duration = .seconds(110)
    /// How long the phone has under `auto` without a claim: a person who comes back is not kept long.
    public var autoWait: Duration = .seconds(30)

    /// The defaults: `auto`, 120 seconds, nothing truncated, 110 and 30 seconds of waiting.
    public static let defaults = AwayRule(mode: .auto, deskActive: 120, allowTruncated: false)
    /// The waits a person may set, in seconds: as long as an approval request may stand
    /// (`ApprovalCenter.timeoutSeconds`, 5 to 600).
    public static let waits: ClosedRange<Int64> = ApprovalCenter.timeoutSeconds
    /// How fresh a phone's handoff claim must be to count.
    public static let claimFreshness: TimeInterval = 60
    /// How long the remote read of the claim may take before the terminal is asked instead.
    public static let remoteReadLimit: Duration = .milliseconds(300)

    /// Creates a rule.
    public init(mode: AwayMode, deskActive: TimeInterval, allowTruncated: Bool) {
        self.mode = mode
        self.deskActive = deskActive
        self.allowTruncated = allowTruncated
    }

    /// Where a request goes.
    public enum Route: Sendable, Hashable {
        /// The terminal: the hook returns nothing at once.
        case terminal
        /// The phone, waiting at most this long for a verified answer.
        case phone(wait: Duration)
    }

    /// What the remote said of the session's handoff claim.
    public enum Claim: Sendable, Hashable {
        /// A phone (or tablet) of the user holds it and used it within ``claimFreshness`` seconds.
        case phoneFresh
        /// Nobody, this desktop, or a stale claim.
        case none
        /// The read failed or took longer than ``remoteReadLimit``.
        case unknown
    }

    /// Whether the route depends on the remote's claim (only `auto` away from the desk asks it).
    public func needsClaim(lastDeskPrompt: Date?, now: Date) -> Bool {
        mode == .auto && !deskIsActive(lastDeskPrompt: lastDeskPrompt, now: now)
    }

    func deskIsActive(lastDeskPrompt: Date?, now: Date) -> Bool {
        guard let lastDeskPrompt else { return false }
        return now.timeIntervalSince(lastDeskPrompt) < deskActive
    }

    /// The route for a request made at `now`, when a prompt was last submitted at this desk at
    /// `lastDeskPrompt` (in any session) and the claim reads `claim`.
    public func route(lastDeskPrompt: Date?, now: Date, claim: Claim) -> Route {
        switch mode {
        case .never: return .terminal
        case .always: return .phone(wait: awayWait)
        case .auto:
            if deskIsActive(lastDeskPrompt: lastDeskPrompt, now: now) { return .terminal }
            switch claim {
            case .phoneFresh: return .phone(wait: awayWait)
            case .none: return .phone(wait: autoWait)
            case .unknown: return .terminal
            }
        }
    }

    /// How long a handler that waits may run under this rule: the longest wait, and 40 seconds
    /// for pushing the session and asking first.
    public var handlerTimeout: Int {
        Int(max(awayWait, autoWait).components.seconds) + 40
    }

    /// The rule this store keeps (``defaults`` for what it does not).
    public static func load(from store: DeviceStore) async throws -> AwayRule {
        var rule = defaults
        if let mode = try await store.setting(.agentAway).flatMap(AwayMode.init(rawValue:)) { rule.mode = mode }
        if let seconds = try await store.setting(.agentDeskActive), seconds >= 0 {
            rule.deskActive = TimeInterval(seconds)
        }
        if let allow = try await store.setting(.agentAllowTruncated) { rule.allowTruncated = allow }
        if let seconds = try await store.setting(.agentAwayWait), waits.contains(seconds) {
            rule.awayWait = .seconds(seconds)
        }
        if let seconds = try await store.setting(.agentAutoWait), waits.contains(seconds) {
            rule.autoWait = .seconds(seconds)
        }
        return rule
    }

    /// Keeps the rule in `store`.
    public func save(to store: DeviceStore) async throws {
        try await store.setSetting(.agentAway, mode.rawValue)
        try await store.setSetting(.agentDeskActive, Int64(deskActive))
        try await store.setSetting(.agentAllowTruncated, allowTruncated)
        try await store.setSetting(.agentAwayWait, awayWait.components.seconds)
        try await store.setSetting(.agentAutoWait, autoWait.components.seconds)
    }
}
