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

    @Test("every --json a paired desktop and phone print is in the one style")
    func everyCommand() async throws {
        let cli = try CLI()
        let session = try await ApprovalCLITests.paired(cli)
        let (d, p) = (cli.store("d"), cli.store("p"))
        _ = try await cli.run(["session", "activity", "--store", p, session])
        _ = try await cli.run(["session", "status", "--store", d, session, "running", "--operation", "build"])
        let commands: [[String]] = [
            ["status", "--store", d], ["status", "--store", p], ["sync", "--store", d], ["sync", "--store", p],
            ["push", "--store", d], ["pull", "--store", p], ["repo", "list", "--store", d],
            ["session", "list", "--store", d], ["session", "list", "--store", p],
            ["session", "activity", "--store", d, session],
            ["session", "status", "--store", d, session, "waiting", "--operation", "asks"],
            ["devices", "list", "--store", d], ["trust", "status", "--store", d], ["trust", "status", "--store", p],
            ["trust", "invite", "--store", d, "--device-type", "ios-phone"], ["trust", "approve", "--store", d],
            ["secrets", "show", "--store", d, session], ["secrets", "show", "--store", p, session],
            ["notifications", "show", "--store", p], ["notifications", "set", "--store", p, "details", "on"],
            ["outbox", "list", "--store", p], ["approval", "list", "--store", p],
            ["push-token", "status", "--store", p],
        ]
        for command in commands {
            let result = try await cli.run(command + ["--json"])
            #expect(result.status == 0, "\(command): \(result.status) \(result.err)")
            let value = try JSONSerialization.jsonObject(with: Data(result.out.utf8), options: [.fragmentsAllowed])
            let found = Self.violations(value)
            #expect(found.isEmpty, "\(command.prefix(2).joined(separator: " ")): \(found)")
        }
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
    }
}
