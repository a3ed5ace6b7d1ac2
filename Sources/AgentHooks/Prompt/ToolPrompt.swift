import Foundation
import SecretCrypto

/// What the phone is shown for a permission the agent asks (docs/agent-hooks.md, "What the phone
/// is shown"): what will run, never the model's own account of it.
///
/// - `tool`: the tool's name, and "(subagent TYPE)" when a subagent asks;
/// - `summary`: a shell command's first line and "(+N lines)"; a file tool's path relative to
///   the repository, or absolute and "(outside the repository)"; a fetch's host and path; an MCP
///   tool's server and tool; otherwise the input's first words;
/// - `detail`: the whole tool input as JSON.
///
/// Every hidden character is shown as `<U+XXXX>` (``VisibleText``). The model's `description` of a
/// command is never the summary: it is only one more member of the detail.
public struct ToolPrompt: Sendable, Hashable {
    public var tool: String
    public var summary: String
    public var detail: String
    /// Whether the detail was cut to fit (the person's setting allowed it).
    public var truncated: Bool

    /// What is appended to a detail cut to fit.
    public static let truncationMark = "\n[truncated: see the desk]"

    /// The prompt for `toolName` called with `input`.
    ///
    /// - Parameters:
    ///   - toolName: The agent's tool name (`Bash`, `Edit`, `mcp__server__tool`...).
    ///   - input: The tool input as the agent gave it.
    ///   - subagent: The subagent's type when a subagent asks.
    ///   - repository: The repository's top level, for relative paths.
    ///   - allowTruncated: Whether a detail too long for a request may be cut (and marked).
    /// - Returns: The prompt, or `nil` when it does not fit a request (the terminal asks instead).
    public static func make(
        toolName: String, input: JSONValue, subagent: String? = nil, repository: String? = nil,
        allowTruncated: Bool = false
    ) -> ToolPrompt? {
        var tool = VisibleText.make(toolName.isEmpty ? "tool" : toolName)
        if let subagent { tool += " (subagent \(VisibleText.make(subagent)))" }
        let prompt = ToolPrompt(
            tool: cut(tool, to: 64), summary: cut(summary(toolName, input, repository: repository), to: 200),
            detail: VisibleText.make(input.compactText, keepsLines: true), truncated: false)
        if prompt.fits { return prompt }
        guard allowTruncated else { return nil }
        // Cut the detail until the whole request fits, and say so.
        var cutPrompt = prompt
        cutPrompt.truncated = true
        var keep = min(prompt.detail.unicodeScalars.count, 2_000 - truncationMark.unicodeScalars.count)
        while keep > 0 {
            cutPrompt.detail =
                String(String.UnicodeScalarView(prompt.detail.unicodeScalars.prefix(keep))) + truncationMark
            if cutPrompt.fits { return cutPrompt }
            keep -= max(1, keep / 8)
        }
        return nil
    }

    /// Whether the three fields make a valid approval request (approvals.md's limits).
    var fits: Bool { (try? content()) != nil }

    /// The request's sealed content.
    ///
    /// - Throws: `CryptoError.invalidApprovalContent` when it does not fit.
    public func content() throws -> ApprovalContent {
        try ApprovalContent(tool: tool, summary: summary, detail: detail)
    }

    /// At most `limit` scalars, the last one "…" when cut.
    static func cut(_ text: String, to limit: Int) -> String {
        let scalars = text.unicodeScalars
        guard scalars.count > limit else { return text.isEmpty ? "-" : text }
        return String(String.UnicodeScalarView(scalars.prefix(limit - 1))) + "…"
    }

    static func summary(_ toolName: String, _ input: JSONValue, repository: String?) -> String {
        func field(_ name: String) -> String? { input[name]?.string }
        switch toolName {
        case "Bash", "PowerShell", "shell", "exec_command", "local_shell":
            return command(field("command") ?? input["command"]?.array?.compactMap(\.string).joined(separator: " "))
        case "Edit", "Write", "Read", "MultiEdit", "NotebookEdit", "NotebookRead":
            guard let path = field("file_path") ?? field("notebook_path") else { break }
            return displayPath(path, repository: repository)
        case "WebFetch":
            guard let text = field("url") else { break }
            guard let url = URLComponents(string: text), let host = url.host, !host.isEmpty else {
                return VisibleText.make(text)
            }
            return VisibleText.make(host + (url.port.map { ":\($0)" } ?? "") + url.percentEncodedPath)
        case "WebSearch":
            if let query = field("query") { return "search: " + VisibleText.make(query) }
        case "Glob", "Grep":
            if let pattern = field("pattern") {
                let place = field("path").map { " in " + displayPath($0, repository: repository) } ?? ""
                return VisibleText.make(pattern) + place
            }
        case "Agent", "Task":
            // What the subagent is told (its prompt), never the model's description of it.
            let type = field("subagent_type").map { VisibleText.make($0) } ?? "subagent"
            return type + ": " + command(field("prompt"))
        default:
            if toolName.hasPrefix("mcp__") {
                let parts = toolName.dropFirst(5).components(separatedBy: "__")
                if parts.count >= 2 {
                    return
                        "MCP server \(VisibleText.make(parts[0])), tool \(VisibleText.make(parts.dropFirst().joined(separator: "__")))"
                }
            }
        }
        return VisibleText.make(input.compactText)
    }

    /// A command's first line, and how many lines follow it.
    static func command(_ text: String?) -> String {
        guard let text else { return "(no command)" }
        let lines = text.replacingOccurrences(of: "\r\n", with: "\n").split(
            separator: "\n", omittingEmptySubsequences: false)
        let rest = lines.dropFirst().count - (lines.count > 1 && lines.last?.isEmpty == true ? 1 : 0)
        let first = lines.first.map(String.init) ?? ""
        let shown = first.isEmpty ? "(an empty first line)" : VisibleText.make(first)
        return rest > 0 ? "\(shown) (+\(rest) line\(rest == 1 ? "" : "s"))" : shown
    }

    /// A path relative to the repository, or absolute and marked when outside it.
    static func displayPath(_ path: String, repository: String?) -> String {
        let standard = URL(fileURLWithPath: path).standardizedFileURL.path
        if let repository {
            let root = URL(fileURLWithPath: repository).standardizedFileURL.path
            if standard == root { return "." }
            if standard.hasPrefix(root.hasSuffix("/") ? root : root + "/") {
                return VisibleText.make(String(standard.dropFirst(root.count).drop { $0 == "/" }))
            }
        }
        return VisibleText.make(standard) + " (outside the repository)"
    }
}
