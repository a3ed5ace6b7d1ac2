import Foundation

/// Claude Code's hook input (its hooks reference, "Hook input and output"), read into an
/// ``AgentEvent``: one JSON object on stdin with `session_id`, `hook_event_name`, `cwd`, often
/// `permission_mode`, `agent_id`/`agent_type` inside a subagent, and the event's own fields.
public enum ClaudeCodeEvents {
    /// The most bytes of input read (1 MiB): a larger input is refused, never cut.
    public static let maxInput = 1 << 20

    /// Reads one hook input.
    ///
    /// - Throws: ``AgentEventError`` for input over ``maxInput``, input that is not one JSON
    ///   object, or one without a `session_id` (1-256 characters, no control character) or
    ///   `hook_event_name`. The message never quotes the input.
    public static func parse(_ bytes: [UInt8]) throws(AgentEventError) -> AgentEvent {
        guard bytes.count <= maxInput else { throw AgentEventError("the hook input is over 1 MiB; ignored") }
        let root: JSONValue
        do {
            root = try JSONValue.parse(bytes)
        } catch {
            throw AgentEventError("the hook input is not JSON (\(error)); ignored")
        }
        guard root.members != nil else { throw AgentEventError("the hook input is not a JSON object; ignored") }
        guard let session = root["session_id"]?.string, (1...256).contains(session.unicodeScalars.count),
            !session.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { throw AgentEventError("the hook input has no usable session_id; ignored") }
        guard let name = root["hook_event_name"]?.string, !name.isEmpty else {
            throw AgentEventError("the hook input has no hook_event_name; ignored")
        }
        let subagent = root["agent_id"] == nil ? nil : (root["agent_type"]?.string ?? "agent")
        return AgentEvent(
            agent: .claudeCode, agentSession: session, cwd: root["cwd"]?.string,
            permissionMode: root["permission_mode"]?.string, subagent: subagent, kind: kind(name, root))
    }

    static func kind(_ name: String, _ root: JSONValue) -> AgentEvent.Kind {
        switch name {
        case "SessionStart": return .sessionStart(source: root["source"]?.string ?? "startup")
        case "UserPromptSubmit": return .promptSubmitted
        case "PermissionRequest":
            return .permissionRequest(tool: root["tool_name"]?.string ?? "", input: root["tool_input"] ?? .object([]))
        case "PreToolUse":
            return .preToolUse(tool: root["tool_name"]?.string ?? "", input: root["tool_input"] ?? .object([]))
        case "Notification": return .notification(type: root["notification_type"]?.string ?? "")
        case "Stop": return .stop(backgroundTasksRunning: backgroundTasksRunning(root["background_tasks"]))
        case "StopFailure": return .stopFailure(errorType: errorType(root["error"]?.string))
        case "SessionEnd": return .sessionEnd(reason: root["reason"]?.string ?? "other")
        default: return .other(String(name.prefix(64)))
        }
    }

    /// Whether `background_tasks` lists work still in flight (an entry whose status is not a
    /// finished one).
    static func backgroundTasksRunning(_ tasks: JSONValue?) -> Bool {
        guard let tasks = tasks?.array else { return false }
        let finished: Set<String> = ["completed", "failed", "killed", "cancelled", "canceled", "stopped", "done"]
        return tasks.contains { !finished.contains($0["status"]?.string ?? "running") }
    }

    /// The error type as the reference lists them; anything else is `unknown` (the field is
    /// stored, so it must not carry text).
    static func errorType(_ text: String?) -> String {
        let known: Set<String> = [
            "rate_limit", "overloaded", "authentication_failed", "oauth_org_not_allowed", "billing_error",
            "invalid_request", "model_not_found", "server_error", "max_output_tokens",
        ]
        return text.map { known.contains($0) ? $0 : "unknown" } ?? "unknown"
    }
}
