import AgentHooks
import Foundation
import LocalStore
import SyncModel
import TestStack
import Testing

/// `sync-cli agent install|uninstall|status` on real settings files (docs/agent-hooks.md, "What
/// the person does").
@Suite("Agent hooks: install")
struct InstallTests {
    /// A user settings file with the person's own keys and hooks.
    static let theirs = """
        {
          "model": "claude-sonnet-5",
          "hooks": {
            "PreToolUse": [
              {
                "matcher": "Bash",
                "hooks": [
                  { "type": "command", "command": "/usr/local/bin/guard.sh", "timeout": 5 }
                ]
              }
            ],
            "Stop": [
              { "hooks": [ { "type": "command", "command": "say done" } ] }
            ]
          },
          "permissions": { "allow": ["Bash(npm test)"], "ratio": 1.50 }
        }
        """

    var settingsPath: (AgentWorld) -> URL { { $0.home.appendingPathComponent(".claude/settings.json") } }

    @Test(
        "install keeps the person's settings and hooks in order; a second install changes nothing; uninstall restores them"
    )
    func mergeKeepsTheirs() async throws {
        let world = try await AgentWorld.make(.embedded)
        let file = settingsPath(world)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Self.theirs.write(to: file, atomically: true, encoding: .utf8)
        let original = try JSONValue.parse(try Data(contentsOf: file))

        try await world.install()
        let installed = try JSONValue.parse(try Data(contentsOf: file))
        #expect(installed.members?.map(\.0) == ["model", "hooks", "permissions"], "key order kept")
        #expect(installed["permissions"] == original["permissions"], "numbers kept as written (1.50)")
        let preToolUse = try #require(installed["hooks"]?["PreToolUse"]?.array)
        #expect(preToolUse.first == original["hooks"]?["PreToolUse"]?.array?.first, "their hook first, untouched")
        #expect(preToolUse.count == 2 && preToolUse[1]["matcher"]?.string == "AskUserQuestion")
        let stop = try #require(installed["hooks"]?["Stop"]?.array)
        #expect(stop.first == original["hooks"]?["Stop"]?.array?.first && stop.count == 2)
        let ours = try #require(installed["hooks"]?["PermissionRequest"]?.array?.first?["hooks"]?.array?.first)
        #expect(ours["command"]?.string == URL(fileURLWithPath: CLIPath.path).resolvingSymlinksInPath().path)
        #expect(ours["args"]?.array?.compactMap(\.string).prefix(3) == ["agent", "hook", "claude-code"])
        #expect(ours["timeout"] != nil, "the handler that waits has a timeout")
        let sessionEnd = try #require(installed["hooks"]?["SessionEnd"]?.array?.first?["hooks"]?.array)
        #expect(sessionEnd.allSatisfy { $0["timeout"] == nil }, "never a timeout on SessionEnd")
        #expect(sessionEnd.contains { $0["async"]?.bool == true })
        #expect(FileManager.default.fileExists(atPath: file.path + ".bak"))

        let bytes = try Data(contentsOf: file)
        let again = try await world.cli(["agent", "install", "claude-code", "--store", world.desktop.directory.path])
        #expect(again.status == 0 && again.out.contains("nothing changed"))
        #expect(try Data(contentsOf: file) == bytes, "a second install writes nothing")

        let status = try await world.cli(["agent", "status", "--store", world.desktop.directory.path, "--json"])
        #expect(status.status == 0 && status.out.contains("\"scope\" : \"user\""))
        #expect(try await world.cli(["agent", "uninstall", "claude-code"]).status == 0)
        #expect(try JSONValue.parse(try Data(contentsOf: file)) == original, "uninstall leaves theirs as they were")
    }

    @Test("a settings file that does not parse, or is a symlink, is left untouched")
    func refusals() async throws {
        let world = try await AgentWorld.make(.embedded)
        let file = settingsPath(world)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        let broken = "{\n  \"model\": \"x\",\n  \"hooks\": { oops }\n}\n"
        try broken.write(to: file, atomically: true, encoding: .utf8)
        let refused = try await world.cli(["agent", "install", "claude-code", "--store", world.desktop.directory.path])
        #expect(refused.status == 1 && refused.err.contains("line 3, column"))
        #expect(try String(contentsOf: file, encoding: .utf8) == broken)
        #expect(!FileManager.default.fileExists(atPath: file.path + ".bak"))

        try FileManager.default.removeItem(at: file)
        let target = world.directory.appendingPathComponent("elsewhere.json")
        try "{}".write(to: target, atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(at: file, withDestinationURL: target)
        let linked = try await world.cli(["agent", "install", "claude-code", "--store", world.desktop.directory.path])
        #expect(linked.status == 1 && linked.err.contains("symbolic link"))
        #expect(try String(contentsOf: target, encoding: .utf8) == "{}")
    }

    @Test("one scope at a time; project scope warns and ignores its backup; an unpaired store is refused")
    func scopes() async throws {
        let world = try await AgentWorld.make(.embedded)
        let project = try await world.cli([
            "agent", "install", "claude-code", "--scope", "project", "--store", world.desktop.directory.path,
        ])
        #expect(project.status == 0 && project.err.contains("a file people commit"))
        let ignore = try String(contentsOf: world.project.appendingPathComponent(".gitignore"), encoding: .utf8)
        #expect(ignore.contains("/.claude/settings.json.bak"))
        let user = try await world.cli(["agent", "install", "claude-code", "--store", world.desktop.directory.path])
        #expect(user.status == 1 && user.err.contains("already installed in the project scope"))
        #expect(!FileManager.default.fileExists(atPath: settingsPath(world).path))

        let lone = try await DeviceStore.opened(directory: world.directory.appendingPathComponent("lone"))
        _ = try await lone.createIdentity(name: "lone", deviceType: .linuxDesktop, hostname: nil, role: .desktop)
        try await lone.setUserID(world.user)
        let unpaired = try await world.cli([
            "agent", "install", "claude-code", "--scope", "project", "--store", lone.directory.path,
        ])
        #expect(unpaired.status == 1 && unpaired.err.contains("trust init"))
    }

    @Test("Codex: hooks.json with quoted shell commands; its notify program marks a finished turn")
    func codex() async throws {
        let world = try await AgentWorld.make(.embedded)
        let installed = try await world.cli(["agent", "install", "codex", "--store", world.desktop.directory.path])
        #expect(installed.status == 0 && installed.out.contains("notify = ["))
        let hooks = try JSONValue.parse(
            try Data(contentsOf: world.home.appendingPathComponent(".codex/hooks.json")))
        let command = try #require(
            hooks["hooks"]?["PermissionRequest"]?.array?.first?["hooks"]?.array?.first?["command"]?.string)
        #expect(command.hasPrefix("'/") && command.contains("' agent hook codex --store '"))
        // A Codex session's prompt, then its turn-complete notification (JSON as the last argument).
        let prompt = JSONValue.object([
            ("session_id", .string("codex-thread-1")), ("turn_id", .string("t1")), ("cwd", .string(world.project.path)),
            ("hook_event_name", .string("UserPromptSubmit")), ("model", .string("gpt-5")), ("prompt", .string("go")),
        ]).compactText
        for async in [false, true] {
            let run = try await world.cli(
                ["agent", "hook", "codex"] + (async ? ["--async"] : []) + ["--store", world.desktop.directory.path],
                stdin: prompt)
            #expect(run.status == 0 && run.out.isEmpty)
        }
        let notification =
            #"{"type":"agent-turn-complete","thread-id":"codex-thread-1","turn-id":"t1","cwd":"\#(world.project.path)","input-messages":["go"],"last-assistant-message":"done"}"#
        let notified = try await world.cli([
            "agent", "notify", "codex", "--store", world.desktop.directory.path, notification,
        ])
        #expect(notified.status == 0 && notified.err.isEmpty, "\(notified.err)")
        let id = AgentSessionName.sessionID(desktop: world.desktopID, agent: .codex, agentSession: "codex-thread-1")
        #expect(try await world.desktop.session(id: id)?.runtimeStatus?.state == .idle)
        #expect(try await world.cli(["agent", "uninstall", "codex"]).status == 0)
    }
}
