import Foundation

/// One moment of an agent's session, in this module's words, whichever agent reported it
/// (``ClaudeCodeEvents``, ``CodexEvents``).
public struct AgentEvent: Sendable, Hashable {
    /// What happened.
    public enum Kind: Sendable, Hashable {
        /// A session started: `startup`, `resume`, `clear`, `fork` or `compact`.
        case sessionStart(source: String)
        /// The person submitted a prompt at the desk.
        case promptSubmitted
        /// The agent is about to ask for permission to run `tool` with `input`.
        case permissionRequest(tool: String, input: JSONValue)
        /// The agent is about to run `tool` (only `AskUserQuestion` is acted on).
        case preToolUse(tool: String, input: JSONValue)
        /// The agent notifies: `idle_prompt`, `permission_prompt`...
        case notification(type: String)
        /// A turn finished; whether background work it started is still running.
        case stop(backgroundTasksRunning: Bool)
        /// A turn ended with an API error of this type (`rate_limit`...); the message is not kept.
        case stopFailure(errorType: String)
        /// The session ended, for `reason`.
        case sessionEnd(reason: String)
        /// An event this module does not act on.
        case other(String)
    }

    public var agent: AgentKind
    /// The agent's own session id.
    public var agentSession: String
    /// Where the agent works, when it said.
    public var cwd: String?
    /// The agent's permission mode (`default`, `plan`, `bypassPermissions`...), when it said.
    public var permissionMode: String?
    /// The subagent's type when the event comes from a subagent (it belongs to the main session).
    public var subagent: String?
    public var kind: Kind

    /// Creates an event.
    public init(
        agent: AgentKind, agentSession: String, cwd: String? = nil, permissionMode: String? = nil,
        subagent: String? = nil, kind: Kind
    ) {
        self.agent = agent
        self.agentSession = agentSession
        self.cwd = cwd
        self.permissionMode = permissionMode
        self.subagent = subagent
        self.kind = kind
    }

    /// A short name for logs and `agent status`: the event, never its content.
    public var name: String {
        switch kind {
        case .sessionStart(let source): "SessionStart \(source)"
        case .promptSubmitted: "UserPromptSubmit"
        case .permissionRequest(let tool, _): "PermissionRequest \(tool.prefix(64))"
        case .preToolUse(let tool, _): "PreToolUse \(tool.prefix(64))"
        case .notification(let type): "Notification \(type.prefix(64))"
        case .stop: "Stop"
        case .stopFailure(let type): "StopFailure \(type.prefix(64))"
        case .sessionEnd(let reason): "SessionEnd \(reason.prefix(64))"
        case .other(let name): name
        }
    }
}

/// Why a hook's input was refused: said on one line of standard error, never with the input.
public struct AgentEventError: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String

    /// Creates the error.
    public init(_ description: String) { self.description = description }
}

/// What a hook process answers its agent (rendered per agent by ``HookOutput``).
public enum HookDecision: Sendable, Hashable {
    /// Nothing: the agent goes on as without the hook (a dialog at the terminal, say).
    case none
    /// A line for the person at the terminal (`systemMessage`).
    case notice(String)
    /// The permission, granted on the phone.
    case allow
    /// The permission, refused on the phone.
    case deny
    /// `AskUserQuestion` answered on the phone: the tool's input as it came, and the answers, each
    /// question's text to the label(s) chosen.
    case answers(input: JSONValue, answers: [(question: String, answer: String)])

    public static func == (lhs: HookDecision, rhs: HookDecision) -> Bool {
        switch (lhs, rhs) {
        case (.none, .none), (.allow, .allow), (.deny, .deny): return true
        case (.notice(let a), .notice(let b)): return a == b
        case (.answers(let a, let x), .answers(let b, let y)):
            return a == b && x.count == y.count
                && zip(x, y).allSatisfy { $0.question == $1.question && $0.answer == $1.answer }
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .none: hasher.combine(0)
        case .notice(let text): hasher.combine(text)
        case .allow: hasher.combine(1)
        case .deny: hasher.combine(2)
        case .answers(let input, let answers):
            hasher.combine(input)
            for answer in answers { hasher.combine(answer.answer) }
        }
    }
}
