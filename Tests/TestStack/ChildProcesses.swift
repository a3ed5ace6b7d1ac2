import Foundation
import SyncModel
import Synchronization

/// The tests' child processes. They start with ``SpawnedChild`` (posix_spawn), never with
/// Foundation's `Process`: see there why.
public enum ChildProcesses {}

/// Runs blocking work (waiting for a child process or reading its pipes to the end) on a thread
/// of its own and awaits it.
///
/// Swift's cooperative pool has one thread per core the process may run on (libdispatch counts
/// the affinity mask): two on this project's machine, one under `taskset -c 0`. A test that
/// blocks one of them for as long as a child runs (the crash rounds do for ten minutes) leaves
/// every other test of the process one thread, and two such tests leave it none: timeouts that
/// had long passed were seen 40 s late.
///
/// The tests' name for the product's own mechanism, `Blocking.run` (SyncModel).
public func offThePool<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await Blocking.run(body)
}

/// Runs async `body` to its end while the calling thread waits: for a synchronous callback (a
/// push's progress handler) that must hold its caller until async work is done.
///
/// The caller may itself be one of the cooperative pool's threads. A task started there the
/// usual way would need a pool thread to run, and two such waits at once (two parameterised
/// cases) held both of this machine's threads: the suite hung with every thread idle. The
/// body's jobs therefore run on a serial queue of their own (a task executor preference, which
/// default actors follow too).
///
/// What does not follow the preference would still need the pool: `Task.sleep`, `Task.yield`,
/// an unstructured `Task {}` started inside, the main actor or an actor with an executor of its
/// own. The body must use none of them (swiftlang/swift#74395); a GRDB read or write is fine.
public func waitingOffThePool<Value: Sendable>(_ body: @escaping @Sendable () async -> Value) -> Value {
    let done = DispatchSemaphore(value: 0)
    let result = Mutex<Value?>(nil)
    let executor = QueueExecutor()
    Task(executorPreference: executor) {
        let value = await body()
        result.withLock { $0 = value }
        done.signal()
    }
    withExtendedLifetime(executor) { done.wait() }
    return result.withLock { $0! }
}

/// A task executor on a serial dispatch queue: its threads are not the cooperative pool's.
final class QueueExecutor: TaskExecutor {
    private let queue = DispatchQueue(label: "session-sync.tests.off-the-pool")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}

/// At most `limit` holders at once; the others wait without holding a thread.
public actor AsyncSlots {
    private let limit: Int
    private var taken = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    public init(_ limit: Int) { self.limit = max(1, limit) }

    /// Runs `body` in a slot.
    public func run<Value: Sendable>(_ body: @Sendable () async throws -> Value) async throws -> Value {
        await take()
        defer { give() }
        return try await body()
    }

    private func take() async {
        if taken < limit {
            taken += 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    private func give() {
        if waiting.isEmpty {
            taken -= 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}

extension ChildProcesses {
    /// The CLI children that may run at once: as many as the machine has cores, plus one. Dozens
    /// at once (a parametrised test starts one per argument) left the two cores to them for
    /// seconds, and a push worker test elsewhere saw its requests pass their deadline.
    public static let slots = AsyncSlots(ProcessInfo.processInfo.activeProcessorCount + 1)
}
