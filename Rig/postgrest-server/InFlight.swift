import Foundation
import Synchronization

/// The requests the server is answering, and where each is: the watchdog names one still
/// unanswered after 20 s on standard error (the stack's log, which `scripts/with-stack.sh`
/// summarises), with the step it is in, so that a test that timed out says whether the request
/// waited for a connection, sat in a statement or never left the handler.
final class InFlight: Sendable {
    struct Entry {
        let line: String
        let started: ContinuousClock.Instant
        var step: String
        var reported = false
    }

    /// The request the current task answers.
    @TaskLocal static var current: UInt64?

    private let entries = Mutex<[UInt64: Entry]>([:])
    private let counter = Atomic<UInt64>(0)
    let stuckAfter: Duration

    init(stuckAfter: Duration = .seconds(20)) { self.stuckAfter = stuckAfter }

    /// Registers a request (its method and path: never the query, which can carry values).
    func begin(_ line: String) -> UInt64 {
        let id = counter.add(1, ordering: .relaxed).newValue
        entries.withLock { $0[id] = Entry(line: line, started: .now, step: "in the handler") }
        return id
    }

    func end(_ id: UInt64) {
        let entry = entries.withLock { $0.removeValue(forKey: id) }
        if let entry, entry.reported {
            Self.write("stuck request answered: \(entry.line) after \(Self.seconds(.now - entry.started)) s")
        }
    }

    /// Records the step the current task's request is in.
    func step(_ step: String) {
        guard let id = Self.current else { return }
        entries.withLock { $0[id]?.step = step }
    }

    /// Every 5 s, names each request unanswered for longer than ``stuckAfter``, once.
    func watch() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(5))
            let now = ContinuousClock.now
            let stuck = entries.withLock { entries -> [Entry] in
                var found: [Entry] = []
                for (id, entry) in entries where !entry.reported && now - entry.started > stuckAfter {
                    entries[id]?.reported = true
                    found.append(entry)
                }
                return found
            }
            for entry in stuck {
                Self.write(
                    "stuck request: \(entry.line) unanswered for \(Self.seconds(now - entry.started)) s (\(entry.step))"
                )
            }
        }
    }

    static func seconds(_ duration: Duration) -> String {
        String(format: "%.1f", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }

    static func write(_ text: String) {
        FileHandle.standardError.write(Data("postgrest-server: \(text)\n".utf8))
    }
}
