import Foundation
import SyncModel
import TestStack
import Testing

/// Every `--json` of `sync-cli` in the one style docs/cli.md ("JSON") describes: camelCase keys
/// with `Id`, lowercase UUIDs, RFC 3339 UTC dates with `Z`, booleans as booleans (issue 52, item 5).
/// An APNs payload (`outbox list`'s `payload`) is Apple's JSON and is not checked.
@Suite("sync-cli: one JSON style")
struct JSONStyleTests {

    /// What in `value` breaks the style, by path.
    static func violations(_ value: Any, at path: String = "$") -> [String] {
        switch value {
        case let object as [String: Any]:
            return object.flatMap { key, child -> [String] in
                var found: [String] = []
                if key.contains("_") || key.contains("-") || key.wholeMatch(of: /[a-z][A-Za-z0-9]*/) == nil
                    || key.contains(/[a-z0-9]ID($|[A-Z])/)
                {
                    found.append("\(path).\(key): key not camelCase with Id")
                }
                if key == "payload" { return found }
                return found + violations(child, at: "\(path).\(key)")
            }
        case let array as [Any]:
            return array.enumerated().flatMap { violations($0.element, at: "\(path)[\($0.offset)]") }
        case let text as String:
            if text == "true" || text == "false" { return ["\(path): a boolean as a string"] }
            if text.wholeMatch(of: /[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}/)
                != nil, text != text.lowercased()
            {
                return ["\(path): an uppercase UUID"]
            }
            if text.wholeMatch(of: /\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}.*/) != nil,
                text.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z/) == nil
            {
                return ["\(path): a date not RFC 3339 UTC with Z: \(text)"]
            }
            return []
        default:
            return []
        }
    }

    /// docs/cli.md's JSON table.
    static let documented: [String: JSONShape] = {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../docs/cli.md")
        return JSONShape.documented(in: (try? String(contentsOf: docs, encoding: .utf8)) ?? "")
    }()

    /// The documented command a command line runs: the longest run of its leading words (up
    /// to three) that the table names.
    static func documentedCommand(_ arguments: [String]) -> String? {
        let words = arguments.prefix { !$0.hasPrefix("-") }
        return (1...min(3, max(1, words.count))).reversed().map { words.prefix($0).joined(separator: " ") }
            .first { documented[$0] != nil }
    }

    /// Runs `command` with `--json`: exit 0, the one style, and the shape its row in docs/cli.md gives.
    static func check(
        _ cli: CLI, _ command: [String], stdin: String? = nil, mayBeEmpty: Bool = false
    ) async throws
        -> Any
    {
        let result = try await cli.run(command + ["--json"], stdin: stdin)
        #expect(result.status == 0, "\(command): \(result.status) \(result.err)")
        let value = try JSONSerialization.jsonObject(with: Data(result.out.utf8), options: [.fragmentsAllowed])
        let found = Self.violations(value)
        #expect(found.isEmpty, "\(command.prefix(2).joined(separator: " ")): \(found)")
        guard let name = documentedCommand(command), let shape = documented[name] else {
            Issue.record("\(command.prefix(3)): no row of docs/cli.md's JSON table names this command")
            return value
        }
        let wrong = shape.violations(of: value, allowingEmpty: mayBeEmpty)
        #expect(wrong.isEmpty, "\(name): docs/cli.md says \(shape.keys.sorted()); \(wrong)")
        return value
    }

    @Test("every --json a paired desktop and phone print is in the one style, in the shape docs/cli.md gives")
    func everyCommand() async throws {
        let cli = try CLI()
        #expect(Self.documented.count > 40, "docs/cli.md's JSON table was not read: \(Self.documented.count) rows")
        let session = try await ApprovalCLITests.paired(cli)
        let (d, p) = (cli.store("d"), cli.store("p"))
        _ = try await cli.run(["session", "activity", "--store", p, session])
        _ = try await cli.run(["session", "status", "--store", d, session, "running", "--operation", "build"])
        let commands: [[String]] = [
            ["status", "--store", d], ["status", "--store", p], ["sync", "--store", d], ["sync", "--store", p],
            ["push", "--store", d], ["pull", "--store", p], ["repo", "list", "--store", d],
            ["session", "list", "--store", d], ["session", "list", "--store", p],
            ["session", "activity", "--store", d, session], ["session", "touch", "--store", d, session],
            ["session", "status", "--store", d, session, "waiting", "--operation", "asks"],
            ["session", "notify", "--store", d, session, "paused"],
            ["devices", "list", "--store", d], ["trust", "status", "--store", d], ["trust", "status", "--store", p],
            ["trust", "invite", "--store", d, "--device-type", "ios-phone"], ["trust", "approve", "--store", d],
            ["secrets", "show", "--store", d, session], ["secrets", "show", "--store", p, session],
            ["notifications", "show", "--store", p], ["notifications", "set", "--store", p, "details", "on"],
            ["push-token", "register", "--store", p, String(repeating: "cd", count: 32)],
            ["push-token", "status", "--store", p],
            ["push-token", "invalidate", "--store", p, String(repeating: "cd", count: 32)],
            ["trust", "recovery-key", "show", "--store", d],
        ]
        for command in commands { _ = try await Self.check(cli, command) }

        // The commands that make things, each on what the one before made.
        let x = cli.store("x")
        _ = try await Self.check(cli, ["init", "--store", x, "--role", "desktop", "--name", "spare"])
        _ = try await Self.check(cli, ["login", "--store", x, "--email", "q@example.com"])
        let project = cli.directory.appendingPathComponent("second")
        try FileManager.default.createDirectory(at: project, withIntermediateDirectories: true)
        let repository = try await Self.check(cli, ["repo", "add", "--store", d, project.path]) as? [String: Any]
        let repositoryID = try #require(repository?["id"] as? String)
        let started = try await Self.check(cli, ["session", "start", "--store", d, "--repo", repositoryID])
        let sessionID = try #require((started as? [String: Any])?["id"] as? String)
        _ = try await Self.check(cli, ["session", "end", "--store", d, sessionID])
        _ = try await Self.check(cli, ["session", "delete", "--store", d, sessionID])
        _ = try await Self.check(cli, ["repo", "remove", "--store", d, repositoryID])
        _ = try await Self.check(cli, ["push-token", "register", "--store", p, String(repeating: "ef", count: 32)])
        let asked = try await Self.check(
            cli, ["question", "ask", "--store", d, session, "--from-file", "-"], stdin: "Rebase onto main?")
        let questionID = try #require((asked as? [String: Any])?["questionId"] as? String)
        _ = try await Self.check(cli, ["question", "show", "--store", p, questionID])
        // Lists with something in them (the question's alert is queued for the phone's token).
        _ = try await Self.check(cli, ["outbox", "list", "--store", p])
        // No approval was asked in this world: ApprovalCLITests checks a list with rows in it.
        _ = try await Self.check(cli, ["approval", "list", "--store", p], mayBeEmpty: true)
        _ = try await Self.check(cli, ["question", "close", "--store", d, questionID, "--cancelled"])
        _ = try await Self.check(cli, ["trust", "recovery-key", "new", "--store", d])
        _ = try await Self.check(cli, ["trust", "rotate-identity", "--store", d])
    }

    @Test("the style's key rule, and the checker catches each kind of break")
    func rules() {
        #expect(JSONStyle.key("deviceID") == "deviceId" && JSONStyle.key("rowID") == "rowId")
        #expect(JSONStyle.key("device_id") == "deviceId" && JSONStyle.key("live-activities") == "liveActivities")
        #expect(JSONStyle.key("inviteIDText") == "inviteIdText" && JSONStyle.key("remoteURL") == "remoteURL")
        #expect(Self.violations(["device_id": 1]).count == 1 && Self.violations(["deviceID": 1]).count == 1)
        #expect(Self.violations(["a": "true"]).count == 1)
        #expect(Self.violations(["a": "0C6A4A53-55A5-4D8E-9D83-3F0E3B3F2F11"]).count == 1)
        #expect(Self.violations(["a": "2026-11-27T08:00:00.123+00:00"]).count == 1)
        #expect(Self.violations(["a": "2026-11-27T08:00:00Z", "b": "0c6a4a53-55a5-4d8e-9d83-3f0e3b3f2f11"]).isEmpty)
        // The docs table's shapes: keys at the top, `key?` optional, prose in parentheses ignored.
        let table = """
            | command | JSON |
            |---|---|
            | `a b`, `c` | {`x`, `y?`, `z` [{`inner`}]} (as `other` prints) |
            | `d` | [{`p`, …}] |
            """
        let shapes = JSONShape.documented(in: table)
        #expect(shapes["a b"] == JSONShape(keys: ["x", "y", "z"], optional: ["y"], open: false) && shapes["c"] != nil)
        #expect(shapes["d"] == JSONShape(keys: ["p"], open: true, array: true))
        #expect(shapes["a b"]?.violations(of: ["x": 1, "z": []]) == [])
        #expect(shapes["a b"]?.violations(of: ["y": 1, "z": [], "w": 0]) == ["missing x", "undocumented w"])
        #expect(shapes["d"]?.violations(of: [["p": 1, "q": 2], ["q": 3]]) == ["missing p"])
        #expect(shapes["d"]?.violations(of: []) == ["an empty array: nothing was checked"])
        #expect(shapes["d"]?.violations(of: ["p": 1]) == ["an object where the table gives an array"])
        #expect(shapes["a b"]?.violations(of: [["x": 1]]) == ["an array where the table gives an object"])
    }
}
