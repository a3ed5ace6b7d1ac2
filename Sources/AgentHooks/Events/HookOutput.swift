import Foundation

/// A ``HookDecision`` as the agent reads it from stdout: one JSON object, or nothing (Claude
/// Code's hooks reference, "JSON output" and each event's "decision control"; Codex reads a
/// permission's decision in the same shape and has no `systemMessage`).
public enum HookOutput {
    /// What a denial on the phone tells the agent: fixed, so nobody can make it say anything else.
    public static let deniedMessage = "Denied from your phone"

    /// The text to print for `decision` to `agent`, empty for none.
    public static func render(_ decision: HookDecision, agent: AgentKind = .claudeCode) -> String {
        switch decision {
        case .none:
            return ""
        case .notice(let text):
            guard agent == .claudeCode else { return "" }
            return JSONValue.object([("systemMessage", .string(text))]).compactText
        case .allow, .deny:
            // Never `updatedInput` nor `updatedPermissions`: an approval on the phone runs exactly
            // what was shown, once, and never becomes a rule or a mode change.
            let verdict: JSONValue =
                decision == .allow
                ? .object([("behavior", .string("allow"))])
                : .object([("behavior", .string("deny")), ("message", .string(deniedMessage))])
            return JSONValue.object([
                (
                    "hookSpecificOutput",
                    .object([("hookEventName", .string("PermissionRequest")), ("decision", verdict)])
                )
            ]).compactText
        case .answers(let input, let answers):
            let object = JSONValue.object(answers.map { ($0.question, JSONValue.string($0.answer)) })
            return JSONValue.object([
                (
                    "hookSpecificOutput",
                    .object([
                        ("hookEventName", .string("PreToolUse")), ("permissionDecision", .string("allow")),
                        ("updatedInput", input.setting("answers", to: object)),
                    ])
                )
            ]).compactText
        }
    }
}
