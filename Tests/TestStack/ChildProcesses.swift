import Foundation
import Synchronization

/// Starts the tests' child processes one at a time.
///
/// swift-corelibs-foundation's `Process.run()` crashed (a bad pointer in a `memcpy` inside it)
/// when two threads of the test process started children at the same moment: the crash rounds
/// start a `sync-cli` every few hundred milliseconds while other suites start theirs. Starting
/// is quick; waiting for the child is not serialised.
public enum ChildProcesses {
    private static let starting = Mutex(())

    /// `process.run()`, never at the same time as another start through here.
    public static func start(_ process: Process) throws {
        try starting.withLock { _ in try process.run() }
    }
}

/// Runs blocking work (waiting for a child process or reading its pipes to the end) on a thread
/// of its own and awaits it.
///
/// Swift's cooperative pool has one thread per core: two on this project's machine. A test that
/// blocks one of them for as long as a child runs (the crash rounds do for ten minutes) leaves
/// every other test of the process one thread, and two such tests leave it none: timeouts that
/// had long passed were seen 40 s late.
public func offThePool<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
