import EnvelopeDigest
import Foundation
import LocalStore
import Logging
import RemoteStore
import SecretCrypto
import SyncModel
import Synchronization

/// Pages of a listing that may produce several at once (its ranges run together), handed one at
/// a time to a consumer in the calling task. Each producer waits until its page was consumed, so
/// no more than one page per range is held, whatever the listing's length.
struct PageQueue<Row: Sendable> {
    typealias Item = (rows: [Row], done: CheckedContinuation<Void, Error>)

    /// Runs `producing` (a listing that calls its handler with each page) and `consuming` on each
    /// page in turn. An error of either ends both; the first one is thrown.
    func drain(
        producing: @escaping @Sendable (@escaping PageHandler<Row>) async throws -> Void,
        consuming: ([Row]) async throws -> Void
    ) async throws {
        let (stream, continuation) = AsyncThrowingStream<Item, Error>.makeStream()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    try await producing { rows in
                        try await withCheckedThrowingContinuation { done in
                            if case .terminated = continuation.yield((rows, done)) {
                                done.resume(throwing: CancellationError())
                            }
                        }
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            var failure: Error?
            do {
                for try await item in stream {
                    // After a failure, each waiting producer is let go with it.
                    if let failure {
                        item.done.resume(throwing: failure)
                        continue
                    }
                    do {
                        try await consuming(item.rows)
                        item.done.resume()
                    } catch {
                        failure = error
                        item.done.resume(throwing: error)
                    }
                }
            } catch {
                if failure == nil { failure = error }
            }
            try? await group.waitForAll()
            if let failure { throw failure }
        }
    }
}
