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
