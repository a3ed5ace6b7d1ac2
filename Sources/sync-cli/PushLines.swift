import Foundation
import RemoteStore
import Synchronization

/// Prints where an alert went while `approval request` (or `question ask`) waits: `Push:
/// <summary>.` at once, and again when the outcomes are settled or the wait ends, if changed;
/// with nobody reachable, a warning on standard error at once.
final class PushLines: Sendable {
    private struct State {
        var latest: AlertDeliveries?
        var printed: String?
        var warned = false
    }
    private let state = Mutex(State())
    private let printing: Bool

    /// `printing` false (`--json`): only the warning is printed; the outcomes are kept.
    init(printing: Bool) { self.printing = printing }

    static let warning =
        "Warning: no device can be reached by push; only a device with the app open or in watch mode can answer."

    /// Told each change the library reads.
    func update(_ deliveries: AlertDeliveries) {
        state.withLock { state in
            let first = state.latest == nil
            state.latest = deliveries
            if first && !deliveries.reachesSomeone && !state.warned {
                state.warned = true
                printError(Self.warning)
            }
            if first || deliveries.isFinal { Self.line(&state, printing: printing) }
        }
    }

    /// The wait ended: prints the last outcomes if they changed, and answers them.
    func finish() -> AlertDeliveries? {
        state.withLock { state in
            Self.line(&state, printing: printing)
            return state.latest
        }
    }

    private static func line(_ state: inout State, printing: Bool) {
        guard let latest = state.latest, latest.summary != state.printed else { return }
        state.printed = latest.summary
        if printing { output("Push: \(latest.summary).") }
    }
}

/// `approval request --json`'s answer.
struct RequestAnswer: Encodable {
    var outcome: String
    var deviceId: UUID?
    var requestId: UUID?
    var deliveries: AlertDeliveries?
}
