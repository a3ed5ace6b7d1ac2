import AgentHooks
import AgentImitation
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel
import TestStack
import Testing

/// Hook inputs as Claude Code sends them (its hooks reference's examples), and the recorded
/// sequences in `Sequences/`.
enum Events {
    /// A recorded sequence, its placeholders filled.
    static func recorded(_ name: String, session: String, world: AgentWorld) throws -> [JSONValue] {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Sequences/\(name).json").path
        let text = try String(contentsOfFile: path, encoding: .utf8)
            .replacingOccurrences(of: "{{session}}", with: session)
            .replacingOccurrences(of: "{{cwd}}", with: world.project.path)
            .replacingOccurrences(of: "{{home}}", with: world.home.path)
        return try JSONValue.parse(Array(text.utf8)).array ?? []
    }

    static func common(_ name: String, session: String, world: AgentWorld) -> [(String, JSONValue)] {
        [
            ("session_id", .string(session)),
            ("transcript_path", .string(world.home.path + "/.claude/projects/app/\(session).jsonl")),
            ("cwd", .string(world.project.path)), ("permission_mode", .string("default")),
            ("hook_event_name", .string(name)),
        ]
    }

    static func start(_ session: String, world: AgentWorld, source: String = "startup") -> JSONValue {
        .object(common("SessionStart", session: session, world: world) + [("source", .string(source))])
    }

    static func prompt(_ session: String, world: AgentWorld) -> JSONValue {
        .object(common("UserPromptSubmit", session: session, world: world) + [("prompt", .string("Fix the build"))])
    }

    /// A `PermissionRequest` for a Bash command.
    static func bash(
        _ session: String, world: AgentWorld, command: String, description: String = "Run the tests"
    )
        -> JSONValue
    {
        .object(
            common("PermissionRequest", session: session, world: world) + [
                ("tool_name", .string("Bash")),
                (
                    "tool_input",
                    .object([("command", .string(command)), ("description", .string(description))])
                ),
                (
                    "permission_suggestions",
                    .array([
                        .object([
                            ("type", .string("addRules")),
                            (
                                "rules",
                                .array([.object([("toolName", .string("Bash")), ("ruleContent", .string(command))])])
                            ),
                            ("behavior", .string("allow")), ("destination", .string("localSettings")),
                        ])
                    ])
                ),
            ])
    }

    /// The `AskUserQuestion` tool input of the reference's example, with two questions.
    static let questionsInput = JSONValue.object([
        (
            "questions",
            .array([
                .object([
                    ("question", .string("Which framework?")), ("header", .string("Framework")),
                    (
                        "options",
                        .array([
                            .object([("label", .string("React")), ("description", .string("Hooks and JSX"))]),
                            .object([("label", .string("Vue")), ("description", .string("Templates"))]),
                            .object([("label", .string("Svelte")), ("description", .string("Compiled"))]),
                        ])
                    ),
                    ("multiSelect", .bool(false)),
                ]),
                .object([
                    ("question", .string("Which checks?")), ("header", .string("Checks")),
                    (
                        "options",
                        .array([
                            .object([("label", .string("Unit tests")), ("description", .string(""))]),
                            .object([("label", .string("Lint")), ("description", .string(""))]),
                            .object([("label", .string("Type check")), ("description", .string(""))]),
                        ])
                    ),
                    ("multiSelect", .bool(true)),
                ]),
            ])
        )
    ])

    static func askUserQuestion(_ session: String, world: AgentWorld, input: JSONValue = questionsInput) -> JSONValue {
        .object(
            common("PreToolUse", session: session, world: world) + [
                ("tool_name", .string("AskUserQuestion")), ("tool_input", input),
                ("tool_use_id", .string("toolu_01ABC")),
            ])
    }
}

/// The phone, answering through the library as an app does.
enum Phone {
    /// Waits for the desktop's request, opens it (pulling the session's secret first) and answers.
    static func answer(_ verdict: ApprovalVerdict, world: AgentWorld) async throws -> OpenedApproval {
        let remote = try world.remote()
        let center = ApprovalCenter(local: world.phone, remote: remote)
        let deadline = ContinuousClock.now + Waiting.ceiling
        while ContinuousClock.now < deadline {
            if let row = try await center.pending().first {
                _ = try await SyncEngine(local: world.phone, remote: remote).pull()
                let opened = try await center.open(row)
                #expect(try await center.answer(opened, verdict: verdict).accepted, "the phone's answer was refused")
                return opened
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw CancellationError()
    }

    /// The question ids alerted to the phone (what its push would carry), newest first.
    static func questions(world: AgentWorld) async throws -> [UUID] {
        try await world.remote().listOutbox(limit: 200).compactMap { entry -> UUID? in
            guard entry.collapseID?.hasPrefix("question-") == true,
                entry.collapseID?.hasPrefix("question-clear-") == false
            else { return nil }
            return UUID.parse(String(entry.collapseID!.dropFirst("question-".count)))
        }
    }

    /// Waits for the desktop's multiple-choice question and answers it with `choices`.
    static func choose(_ choices: [[Int]], world: AgentWorld) async throws -> OpenedQuestion {
        let remote = try world.remote()
        let alerts = SessionAlerts(local: world.phone, remote: remote)
        let deadline = ContinuousClock.now + Waiting.ceiling
        while ContinuousClock.now < deadline {
            if let id = try await questions(world: world).first {
                _ = try await SyncEngine(local: world.phone, remote: remote).pull()
                let opened = try await alerts.open(question: id)
                let answered = try await alerts.answer(opened, choices: choices)
                #expect(answered.accepted)
                return opened
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw CancellationError()
    }
}
