import Foundation

/// The suite's one rule for waiting (docs/testing.md): a test waits for the event it needs (a row,
/// a line, a request counted, a refusal reported), never for a length of time, and a test never
/// asserts how long something took. The ceiling only catches a hang: it is generous because a
/// busy two-core machine (or one core) runs the same schedule many times slower than an idle one.
public enum Waiting {
    /// The default ceiling: far past anything a loaded machine was seen to need.
    public static let ceiling: Duration = .seconds(120)

    /// The seconds an approval request or an agent's question that a test answers may stand: the
    /// most the CLI allows (`--timeout`, `--away-wait`: 5 to 600). A genuine answer comes long
    /// before it on any machine; on one loaded core a 60 s window ran out while the phone's CLI
    /// was still starting, and the test failed on the clock, not on the behaviour.
    public static let answerWindow = "600"

    /// Checks `condition` every `interval` until it holds (true) or `ceiling` passes (false: a
    /// hang, which the caller reports naming what it waited for).
    public static func until(
        ceiling: Duration = Waiting.ceiling, every interval: Duration = .milliseconds(25),
        _ condition: () async throws -> Bool
    ) async throws -> Bool {
        let deadline = ContinuousClock.now + ceiling
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: interval)
        }
        return try await condition()
    }

    /// Waits until `remaining` is zero (true). The ceiling counts from the last time it went
    /// down: a long drain that keeps moving (thousands of rows on one loaded core) is never cut
    /// short, and one that stops moving for `ceiling` is a hang (false).
    public static func drained(
        stall ceiling: Duration = Waiting.ceiling, every interval: Duration = .milliseconds(50),
        _ remaining: () async throws -> Int
    ) async throws -> Bool {
        var lowest = try await remaining()
        var deadline = ContinuousClock.now + ceiling
        while lowest > 0 {
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: interval)
            let left = try await remaining()
            if left < lowest {
                lowest = left
                deadline = ContinuousClock.now + ceiling
            }
        }
        return true
    }

    /// The value `produce` returns once it is not nil, or nil when `ceiling` passes first.
    public static func value<Value: Sendable>(
        ceiling: Duration = Waiting.ceiling, every interval: Duration = .milliseconds(25),
        _ produce: () async throws -> Value?
    ) async throws -> Value? {
        let deadline = ContinuousClock.now + ceiling
        while ContinuousClock.now < deadline {
            if let value = try await produce() { return value }
            try await Task.sleep(for: interval)
        }
        return try await produce()
    }
}
