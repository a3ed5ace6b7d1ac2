import Foundation

/// Which program the hooks run, and on which store.
public struct HookCommand: Sendable, Hashable {
    /// The absolute path of `sync-cli`.
    public var executable: String
    /// The absolute path of the desktop's store.
    public var store: String
    /// The `timeout` of the handlers that wait, in seconds: the longest wait the store's away rule
    /// allows, and a margin for pushing the session first.
    public var waitTimeout: Int

    /// Creates a command.
    public init(executable: String, store: String, waitTimeout: Int = 150) {
        self.executable = executable
        self.store = store
        self.waitTimeout = waitTimeout
    }
}

/// An agent whose settings take our hooks: where its settings files are, which handlers go under
/// which events, and how ours are recognised.
public struct AgentSettingsLayout: Sendable {
    public let agent: AgentKind
    /// The scopes the agent reads hooks from.
    public let scopes: [HookScope]
    /// The settings file of `scope`.
    public let file: @Sendable (_ scope: HookScope, _ home: URL, _ project: URL, _ environment: [String: String]) -> URL
    /// The handlers an install writes.
    public let groups: @Sendable (HookCommand) -> [HookGroup]
    /// How ours are recognised (whatever the binary's path was).
    public let merge: HookSettingsMerge

    /// The layout of `agent`.
    public static func of(_ agent: AgentKind) -> AgentSettingsLayout {
        switch agent {
        case .claudeCode: claudeCode
        case .codex: codex
        }
    }

    /// Claude Code (its hooks reference, "Configuration"): user `~/.claude/settings.json` (or
    /// `$CLAUDE_CONFIG_DIR/settings.json`), project `.claude/settings.json`, local
    /// `.claude/settings.local.json`; exec-form handlers (`command` and `args`, no shell), ours
    /// recognised by `args` beginning `agent hook claude-code`. `timeout` only on the handlers
    /// that wait, never on SessionEnd (a timeout there raises the agent's exit budget).
    public static let claudeCode = AgentSettingsLayout(
        agent: .claudeCode, scopes: [.user, .project, .local],
        file: { scope, home, project, environment in
            switch scope {
            case .user:
                let base =
                    environment["CLAUDE_CONFIG_DIR"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
                    ?? home.appendingPathComponent(".claude")
                return base.appendingPathComponent("settings.json")
            case .project: return project.appendingPathComponent(".claude/settings.json")
            case .local: return project.appendingPathComponent(".claude/settings.local.json")
            }
        },
        groups: { command in
            func handler(async: Bool = false, timeout: Int? = nil) -> JSONValue {
                var args = ["agent", "hook", "claude-code"]
                if async { args.append("--async") }
                args += ["--store", command.store]
                var members: [(String, JSONValue)] = [
                    ("type", .string("command")), ("command", .string(command.executable)),
                    ("args", .array(args.map(JSONValue.string))),
                ]
                if let timeout { members.append(("timeout", .number(String(timeout)))) }
                if async { members.append(("async", .bool(true))) }
                return .object(members)
            }
            let both = [handler(), handler(async: true)]
            return [
                HookGroup(event: "SessionStart", handlers: both),
                HookGroup(event: "UserPromptSubmit", handlers: both),
                HookGroup(event: "PermissionRequest", handlers: [handler(timeout: command.waitTimeout)]),
                HookGroup(
                    event: "PreToolUse", matcher: "AskUserQuestion", handlers: [handler(timeout: command.waitTimeout)]),
                HookGroup(
                    event: "Notification", matcher: "idle_prompt|permission_prompt", handlers: [handler(async: true)]),
                HookGroup(event: "Stop", handlers: both),
                HookGroup(event: "StopFailure", handlers: both),
                HookGroup(event: "SessionEnd", handlers: both),
            ]
        },
        merge: HookSettingsMerge { handler in
            (handler["args"]?.array ?? []).prefix(3).compactMap(\.string) == ["agent", "hook", "claude-code"]
        })

    /// Codex CLI (its hooks documentation): user `~/.codex/hooks.json`, project
    /// `.codex/hooks.json`; a handler's `command` is one string run by the shell (Codex has no
    /// exec form), so the paths are quoted; ours recognised by ` agent hook codex`.
    public static let codex = AgentSettingsLayout(
        agent: .codex, scopes: [.user, .project],
        file: { scope, home, project, environment in
            switch scope {
            case .user:
                let base =
                    environment["CODEX_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
                    ?? home.appendingPathComponent(".codex")
                return base.appendingPathComponent("hooks.json")
            case .project, .local: return project.appendingPathComponent(".codex/hooks.json")
            }
        },
        groups: { command in
            func handler(async: Bool = false, timeout: Int? = nil) -> JSONValue {
                let line =
                    "\(shellQuoted(command.executable)) agent hook codex\(async ? " --async" : "") --store \(shellQuoted(command.store))"
                var members: [(String, JSONValue)] = [("type", .string("command")), ("command", .string(line))]
                if let timeout { members.append(("timeout", .number(String(timeout)))) }
                if async { members.append(("async", .bool(true))) }
                return .object(members)
            }
            let both = [handler(), handler(async: true)]
            return [
                HookGroup(event: "SessionStart", handlers: both),
                HookGroup(event: "UserPromptSubmit", handlers: both),
                HookGroup(event: "PermissionRequest", handlers: [handler(timeout: command.waitTimeout)]),
                HookGroup(event: "Stop", handlers: both),
                HookGroup(event: "SessionEnd", handlers: both),
            ]
        },
        merge: HookSettingsMerge { handler in
            handler["command"]?.string?.contains(" agent hook codex") ?? false
        })
}

/// `text` as one shell word: single-quoted, each `'` written `'\''`.
func shellQuoted(_ text: String) -> String {
    "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
}
