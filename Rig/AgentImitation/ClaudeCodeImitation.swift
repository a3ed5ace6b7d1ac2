import AgentHooks
import Foundation
import Synchronization
import TestStack

#if canImport(Glibc)
import Glibc
#endif

/// Claude Code as far as its hooks go, for tests with real processes: it reads the hooks of the
/// three settings files and runs them for an event as its hooks reference says (quoted from
/// `docs/external/claude-hooks-reference.md` of gabriel-dehan/claude_hooks, the public mirror).
///
/// - "Hook entries merge across settings levels": user, project and local hooks all run.
/// - "All matching hooks run in parallel. If you define the same handler in more than one
///   settings file, it runs once."
/// - "A command hook runs as exec form when `args` is set, and shell form when `args` is omitted."
///   Exec form resolves `command` on `PATH` and spawns it directly.
/// - Input: "one JSON object on stdin". `async: true` "runs in the background without blocking";
///   its output decides nothing.
/// - "A `command` ... hook that reaches its timeout is canceled: Claude Code discards the hook's
///   output, and the hook renders no decision." Defaults: 600 s; `UserPromptSubmit` 30 s;
///   `SessionEnd` hooks "share a 1.5-second budget" raised to the largest per-hook timeout (up to
///   60 s). Canceling here is SIGTERM, then SIGKILL after ``killGrace``.
/// - stdout "Starts with `{`: Claude Code parses it as JSON"; exit 2 blocks where the event can
///   block (not `PermissionRequest`); any other non-zero exit without JSON is a "hook error"
///   notice; plain stdout on `SessionStart` and `UserPromptSubmit` becomes model context.
/// - `PermissionRequest`: "if no hook returns a decision", the dialog appears (``Fired/permission``
///   is `nil`). `PreToolUse` decisions: "precedence is `deny` > `defer` > `ask` > `allow`".
public final class ClaudeCodeImitation: Sendable {
    public let home: URL
    public let project: URL
    public let environment: [String: String]
    /// Per event, a timeout in place of the reference's default and the handler's own (a test
    /// shortens a waiting handler's to see it killed).
    public let timeouts: [String: Duration]
    /// Between SIGTERM and SIGKILL when a handler's time is up.
    public let killGrace: Duration
    let backgroundRuns = Mutex<[SpawnedChild]>([])

    /// An imitation reading `home/.claude/settings.json` and `project/.claude/settings{,.local}.json`.
    public init(
        home: URL, project: URL, environment: [String: String], timeouts: [String: Duration] = [:],
        killGrace: Duration = .seconds(1)
    ) {
        self.home = home
        self.project = project
        self.environment = environment
        self.timeouts = timeouts
        self.killGrace = killGrace
    }

    /// A hook handler as a settings file holds it.
    public struct Handler: Sendable, Hashable {
        public var command: String
        public var args: [String]?
        public var timeout: Int?
        public var isAsync: Bool
    }

    /// What one blocking handler did.
    public struct Run: Sendable {
        public var handler: Handler
        public var exitCode: Int32
        public var stdout: String
        public var stderr: String
        /// Killed at its timeout: its output was discarded.
        public var timedOut: Bool
        /// Its stdout read as JSON (it started with `{` and parsed).
        public var json: JSONValue?
    }

    /// A `PermissionRequest` decision as the hooks rendered it.
    public enum PermissionDecision: Sendable, Hashable {
        case allow(updatedInput: JSONValue?, updatedPermissions: JSONValue?)
        case deny(message: String?)
    }

    /// What firing an event came to.
    public struct Fired: Sendable {
        public var runs: [Run] = []
        /// `PermissionRequest`: the decision, or `nil` (the dialog appears at the terminal).
        public var permission: PermissionDecision?
        /// `PreToolUse`: the winning `permissionDecision` and its `updatedInput`.
        public var preToolUse: (decision: String, updatedInput: JSONValue?)?
        public var systemMessages: [String] = []
        /// "<hook> hook error" notices: a non-zero exit (not 2) without JSON.
        public var hookErrors: [String] = []
        /// Plain stdout added to the model's context (`SessionStart`, `UserPromptSubmit`).
        public var context: [String] = []
    }

    /// The settings files, in the reference's order.
    public var settingsFiles: [URL] {
        [
            home.appendingPathComponent(".claude/settings.json"),
            project.appendingPathComponent(".claude/settings.json"),
            project.appendingPathComponent(".claude/settings.local.json"),
        ]
    }

    /// The handlers that match `event` with `value` (the field its matcher filters), each once.
    public func handlers(event: String, value: String?) throws -> [Handler] {
        var found: [Handler] = []
        for file in settingsFiles {
            guard let data = FileManager.default.contents(atPath: file.path) else { continue }
            let settings = try JSONValue.parse(data)
            for group in settings["hooks"]?[event]?.array ?? [] {
                guard Self.matches(group["matcher"]?.string, value: value, event: event) else { continue }
                for handler in group["hooks"]?.array ?? [] where handler["type"]?.string == "command" {
                    guard let command = handler["command"]?.string else { continue }
                    let parsed = Handler(
                        command: command, args: handler["args"]?.array?.compactMap(\.string),
                        timeout: handler["timeout"].flatMap { if case .number(let n) = $0 { Int(n) } else { nil } },
                        isAsync: handler["async"]?.bool ?? false)
                    if !found.contains(parsed) { found.append(parsed) }
                }
            }
        }
        return found
    }

    /// The reference's matcher rules: `*`, empty or absent match all; only letters, digits, `_`,
    /// `-`, spaces, `,` and `|` is an exact name or a list; anything else an unanchored regular
    /// expression. Events without matcher support ignore it.
    static func matches(_ matcher: String?, value: String?, event: String) -> Bool {
        let unmatched: Set<String> = [
            "UserPromptSubmit", "PostToolBatch", "Stop", "TeammateIdle", "TaskCreated", "TaskCompleted",
            "WorktreeCreate", "WorktreeRemove", "MessageDisplay",
        ]
        guard let matcher, !matcher.isEmpty, matcher != "*", !unmatched.contains(event) else { return true }
        let value = value ?? ""
        let exactSet = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "_-, |"))
        if matcher.unicodeScalars.allSatisfy({ exactSet.contains($0) }) {
            let names = matcher.split(whereSeparator: { $0 == "|" || $0 == "," }).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            return names.contains(value)
        }
        guard let regex = try? NSRegularExpression(pattern: matcher) else { return false }
        return regex.firstMatch(in: value, range: NSRange(value.startIndex..., in: value)) != nil
    }

    /// The field an event's matcher filters.
    static func matchValue(_ input: JSONValue, event: String) -> String? {
        switch event {
        case "PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "PermissionDenied":
            return input["tool_name"]?.string
        case "SessionStart": return input["source"]?.string
        case "SessionEnd": return input["reason"]?.string
        case "Notification": return input["notification_type"]?.string
        case "StopFailure": return input["error"]?.string
        default: return nil
        }
    }

    /// Waits for every background (async) handler started so far.
    public func settle() async throws {
        let runs = backgroundRuns.withLock { list -> [SpawnedChild] in
            defer { list.removeAll() }
            return list
        }
        for child in runs { _ = try await offThePool { try child.wait() } }
    }
}
