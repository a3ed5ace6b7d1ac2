import Foundation

/// The one way this package runs blocking work from async code: opening a SQLite file (its
/// migration may wait out a busy timeout), a child process, a terminal prompt, standard input.
///
/// Swift's cooperative pool has one thread per core, two on a small machine. Work that blocks one
/// of them (a SQLite busy wait of 10 s, a prompt waiting for a person) leaves every other task of
/// the process one thread or none: a watch's tick, a request's deadline and a notification's
/// answer then wait for a thread rather than for what they asked. `Blocking.run` gives the work a
/// thread of its own and suspends the caller until it returns; the thread ends with the work.
package enum Blocking {
    /// Runs `work` on a thread of its own and returns (or throws) what it does.
    ///
    /// Cancelling the caller does not interrupt `work`: a blocking call cannot be interrupted, so
    /// only work whose own bound ends it (a busy timeout, a child's exit, the end of input) belongs
    /// here.
    package static func run<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread { continuation.resume(with: Result { try work() }) }
            thread.name = "session-sync.blocking"
            thread.start()
        }
    }
}
