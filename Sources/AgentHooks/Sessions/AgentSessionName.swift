import Foundation
import SecretCrypto
import SyncModel

/// The agents this module speaks for.
public enum AgentKind: String, Sendable, Hashable, CaseIterable, Codable {
    case claudeCode = "claude-code"
    case codex

    /// The agent's name as people know it.
    public var displayName: String {
        switch self {
        case .claudeCode: "Claude Code"
        case .codex: "Codex"
        }
    }
}

/// The session id an agent's session gets here: a version-5 UUID of the desktop, the agent and
/// the agent's own session id (docs/agent-hooks.md), so a resumed session, every hook process
/// and a second install on the same desktop all name the same session without asking anyone.
///
/// ```text
/// session = UUIDv5(8e1c1c84-6d2b-5c3a-9a65-1f3f6a7b0c11,
///                  UTF-8("<desktop device id>:<agent>:<agent session id>"))
/// ```
/// The desktop id is canonical lowercase; the agent is `claude-code` or `codex`; the agent's
/// session id is its bytes as given. `testvectors/agent-session-v1.json` pins it.
public enum AgentSessionName {
    /// The namespace (fixed by the spec).
    public static let namespace = UUID(uuidString: "8e1c1c84-6d2b-5c3a-9a65-1f3f6a7b0c11")!

    /// The session id of the agent's session `agentSession` on the desktop `desktop`.
    public static func sessionID(desktop: UUID, agent: AgentKind, agentSession: String) -> UUID {
        NameBasedUUID.v5(
            namespace: namespace, name: Array("\(desktop.canonical):\(agent.rawValue):\(agentSession)".utf8))
    }
}
