import AgentHooks
import ArgumentParser
import Foundation
import LocalStore
import SyncModel

extension SyncCLI.Agent {
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract:
                "Where the agents' hooks are installed, whether this store can act on them, the away rule, the last events."
        )
        @OptionGroup var projectOptions: ProjectOptions
        @OptionGroup var storeOptions: StoreOptions
        @Flag(help: "Print it as JSON.") var json = false

        func run() async throws {
            var report = Report()
            for agent in AgentKind.allCases {
                let (found, unreadable) = projectOptions.installer(agent).installations()
                report.agents.append(
                    Report.Installed(
                        agent: agent.rawValue,
                        scopes: found.map { .init(scope: $0.scope.rawValue, path: $0.path, events: $0.events) },
                        unreadable: unreadable))
            }
            let directory = storeOptions.directory
            report.store = directory.path
            if FileManager.default.fileExists(atPath: directory.appendingPathComponent("store.sqlite").path) {
                let store = try await storeOptions.open()
                let identity = try await store.identity()
                report.role = identity?.role.rawValue
                report.loggedIn = identity?.userID != nil
                report.paired = try await AgentHookRunner.isPaired(store)
                let rule = try await AwayRule.load(from: store)
                report.away = .init(
                    mode: rule.mode.rawValue, deskActive: Int(rule.deskActive), allowTruncated: rule.allowTruncated)
                report.events = try await store.recentAgentEvents(limit: 10).map {
                    .init(
                        sessionId: $0.sessionID, kind: $0.kind.rawValue, at: $0.at, state: $0.state.rawValue,
                        note: $0.note)
                }
                report.pendingEvents = try await store.pendingAgentEvents().count
                report.openRequests = try await store.agentRequests().count
            }
            if json { return try printJSON(report) }
            print(report)
        }

        func print(_ report: Report) {
            for agent in report.agents {
                let name = AgentKind(rawValue: agent.agent)?.displayName ?? agent.agent
                if agent.scopes.isEmpty { output("\(name): not installed (`sync-cli agent install \(agent.agent)`)") }
                for scope in agent.scopes {
                    output(
                        "\(name): installed in \(scope.path) (\(scope.scope) scope; \(scope.events.joined(separator: ", ")))"
                    )
                }
                for problem in agent.unreadable { output("\(name): \(problem)") }
            }
            guard let role = report.role else {
                output("Store \(report.store): none (`sync-cli init --role desktop --store \(report.store)`)")
                return
            }
            let ready = role == "desktop" && report.loggedIn == true && report.paired == true
            output(
                "Store \(report.store): \(role), \(report.loggedIn == true ? "logged in" : "not logged in"), "
                    + "\(report.paired == true ? "paired" : "not paired")\(ready ? "" : ": permissions stay at the terminal")"
            )
            if let away = report.away {
                output(
                    "Away rule: \(away.mode), desk active \(away.deskActive) s\(away.allowTruncated ? ", truncated requests allowed" : "")"
                )
            }
            output(
                "Queued remote work: \(report.pendingEvents ?? 0) pending; requests waiting: \(report.openRequests ?? 0)"
            )
            if let events = report.events, !events.isEmpty {
                output("Last events:")
                for event in events {
                    let note = event.note.map { " (\($0))" } ?? ""
                    output(
                        "  \(JSONStyle.date(event.at))  \(event.sessionId.canonical.prefix(8))  \(event.kind)  \(event.state)\(note)"
                    )
                }
            }
        }

        struct Report: Encodable {
            struct Installed: Encodable {
                var agent: String
                var scopes: [Scope]
                var unreadable: [String]
            }
            struct Scope: Encodable {
                var scope: String
                var path: String
                var events: [String]
            }
            struct Away: Encodable {
                var mode: String
                var deskActive: Int
                var allowTruncated: Bool
            }
            struct Event: Encodable {
                var sessionId: UUID
                var kind: String
                var at: Date
                var state: String
                var note: String?
            }
            var agents: [Installed] = []
            var store = ""
            var role: String?
            var loggedIn: Bool?
            var paired: Bool?
            var away: Away?
            var events: [Event]?
            var pendingEvents: Int?
            var openRequests: Int?
        }
    }
}
