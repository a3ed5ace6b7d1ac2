import Synchronization

// The engine's unstructured tasks (the token refresh's single flight, `AccessTokens`, lives in
// RemoteStore beside `SupabaseAuth`): each exists because a structured task cannot do its job in
// Swift 6.3, which has no cancellation shield.

/// Runs `work` to its end even when the calling task is cancelled, and returns its result.
///
/// For the few things that must finish once started: withdrawing an approval request after
/// its asker was cancelled, and a watch's tick, which holds the store's lease. Swift 6.3 has no
/// cancellation shield, so the work runs in a task of its own; the caller still waits for it, so nothing
/// outlives the call.
func uncancelled<Result: Sendable>(_ work: @escaping @Sendable () async -> Result) async -> Result {
    await Task { await work() }.value
}

/// The work and the clock of ``ApprovalCenter/within(_:_:)``: whichever ends first resumes the
/// caller, once; the deadline cancels the work. Both are tasks of their own: the caller must have
/// its answer at the deadline even while the work is blocked in a call that does not notice
/// cancellation (a SQLite busy wait), so the work may end after the call returned.
final class DeadlineRace<T: Sendable>: Sendable {
    let continuation = Mutex<CheckedContinuation<T, Error>?>(nil)
    /// Set when the caller was cancelled before the work started: it then never starts.
    let cancelled = Mutex(false)
    let work = Mutex<Task<Void, Never>?>(nil)
    let clock = Mutex<Task<Void, Never>?>(nil)

    func start(
        _ continuation: CheckedContinuation<T, Error>, limit: Duration, body: @escaping @Sendable () async throws -> T
    ) {
        self.continuation.withLock { $0 = continuation }
        guard !cancelled.withLock({ $0 }) else {
            finish(.failure(CancellationError()))
            return
        }
        work.withLock {
            $0 = Task {
                do { self.finish(.success(try await body())) } catch { self.finish(.failure(error)) }
            }
        }
        let sleeper = Task {
            guard (try? await Task.sleep(for: limit)) != nil else { return }
            self.finish(
                .failure(
                    SyncError(
                        code: .deadlineExceeded,
                        message:
                            "no answer within \(Self.spoken(limit)): nothing more is sent, but an answer already on its way may have been recorded"
                    )))
        }
        clock.withLock { $0 = sleeper }
    }

    /// A limit as a person reads it: "300 ms", "10 s" (whole seconds said as seconds).
    static func spoken(_ limit: Duration) -> String {
        let milliseconds = limit.components.seconds * 1000 + limit.components.attoseconds / 1_000_000_000_000_000
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(milliseconds) ms"
    }

    func finish(_ result: Result<T, Error>) {
        if case .failure = result { work.withLock { $0?.cancel() } }
        clock.withLock { $0?.cancel() }
        continuation.withLock { pending in
            pending?.resume(with: result)
            pending = nil
        }
    }
}
