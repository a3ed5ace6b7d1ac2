import Foundation

/// Codex CLI's hook input and its `notify` program's argument, read into ``AgentEvent``s (Codex's
/// hooks documentation, and `notify` in its configuration documentation).
///
/// Hooks: one JSON object on stdin with `session_id`, `cwd`, `hook_event_name`, `permission_mode`
/// and, per event, `source` (SessionStart), `tool_name` and `tool_input` (PermissionRequest; a
/// shell command's text in `tool_input.command`). `notify`: Codex runs the program with one JSON
/// object as its last argument, `{"type": "agent-turn-complete", "thread-id", "turn-id", "cwd",
/// "input-messages", "last-assistant-message"}`; only the type, the thread and the directory are read.
public enum CodexEvents {
    /// Reads one hook input.
    ///
    /// - Throws: ``AgentEventError`` as ``ClaudeCodeEvents/parse(_:)`` does.
    public static func parse(_ bytes: [UInt8]) throws(AgentEventError) -> AgentEvent {
        var event = try ClaudeCodeEvents.parse(bytes)
        event.agent = .codex
        // Codex reports no background tasks and no failed turns; its other events map as Claude Code's.
        if case .stop = event.kind { event.kind = .stop(backgroundTasksRunning: false) }
        return event
    }

    /// Reads a `notify` argument: a finished turn of the thread (session) it names.
    ///
    /// - Throws: ``AgentEventError`` for anything but an `agent-turn-complete` with a `thread-id`.
    public static func parseNotification(_ bytes: [UInt8]) throws(AgentEventError) -> AgentEvent {
        guard bytes.count <= ClaudeCodeEvents.maxInput, let root = try? JSONValue.parse(bytes), root.members != nil
        else { throw AgentEventError("the notification is not a JSON object; ignored") }
        guard root["type"]?.string == "agent-turn-complete" else {
            throw AgentEventError("the notification is not an agent-turn-complete; ignored")
        }
        guard let thread = root["thread-id"]?.string, (1...256).contains(thread.unicodeScalars.count),
            !thread.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { throw AgentEventError("the notification has no usable thread-id; ignored") }
        return AgentEvent(
            agent: .codex, agentSession: thread, cwd: root["cwd"]?.string, kind: .stop(backgroundTasksRunning: false))
    }
}
