import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A process as a later event can recognise it: its pid and, where the system says, when it
/// started (so a pid the system gave to another process since is not taken for it).
public struct ProcessIdentity: Sendable, Hashable {
    public var pid: Int32
    /// Linux: field 22 of `/proc/PID/stat` (clock ticks after boot); `nil` elsewhere.
    public var started: String?

    /// This process.
    public static var current: ProcessIdentity {
        let pid = getpid()
        return ProcessIdentity(pid: pid, started: startTime(of: pid))
    }

    /// Creates an identity.
    public init(pid: Int32, started: String?) {
        self.pid = pid
        self.started = started
    }

    /// Whether this very process still runs.
    public var isAlive: Bool {
        guard pid > 0 else { return false }
        if kill(pid, 0) != 0 && errno != EPERM { return false }
        guard let started else { return true }
        guard let now = Self.startTime(of: pid) else { return true }
        return now == started
    }

    /// Field 22 of `/proc/PID/stat`, after the command name (which may hold spaces and parentheses).
    static func startTime(of pid: Int32) -> String? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // Fields after the name start at 3 (state); the start time is field 22.
        return fields.count > 19 ? String(fields[19]) : nil
    }
}
