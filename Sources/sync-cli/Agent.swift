import AgentHooks
import ArgumentParser
import Foundation
import LocalStore
import SyncModel

extension AgentKind: ExpressibleByArgument {}
extension HookScope: ExpressibleByArgument {}
extension AwayMode: ExpressibleByArgument {}

extension SyncCLI {
    struct Agent: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "agent",
            abstract:
                "Connect a coding agent (Claude Code, Codex) to this desktop: its own hooks start sessions, ask permissions and questions on the phone, and raise task alerts.",
            discussion: """
                `agent install claude-code` writes this sync-cli into Claude Code's settings as hooks; from \
                then on every session the agent runs becomes a session here, its secret reaches the phone \
                at once, and when you are away from the desk a permission or a multiple-choice question \
                is asked on the phone, sealed (the server sees nothing of the tool's input) and answered \
                with a signature this desktop verifies. A finished or failed turn raises a task alert.

                The away rule (--away): auto (the default) keeps a permission at the terminal while you \
                typed a prompt at this desk in the last --desk-active seconds (120), else asks the phone \
                (110 s when a phone holds the session, 30 s otherwise); always asks the phone; never asks it.
                """,
            subcommands: [Install.self, Uninstall.self, Status.self, Hook.self, Notify.self])
    }
}

/// `--project`: the project a project or local scope means.
struct ProjectOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The project whose .claude/ (or .codex/) settings a project or local scope means (default: the current directory's git top level).",
            valueName: "dir"))
    var project: String?

    var directory: URL {
        if let project { return URL(fileURLWithPath: canonicalPath(project)) }
        let here = FileManager.default.currentDirectoryPath
        let location = RepositoryLocator.locate(here)
        return URL(
            fileURLWithPath: location.isRepository ? location.worktree ?? location.topLevel : canonicalPath(here))
    }

    func installer(_ agent: AgentKind) -> AgentInstaller {
        // $HOME first, as the agent itself reads it (Foundation's home is the account's).
        let environment = ProcessInfo.processInfo.environment
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return AgentInstaller(
            agent: agent, home: URL(fileURLWithPath: home), project: directory, environment: environment)
    }
}

extension SyncCLI.Agent {
    struct Install: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "install",
            abstract: "Install this desktop's hooks into an agent's settings (one scope at a time).",
            discussion: """
                Claude Code: user scope writes ~/.claude/settings.json (all your projects), project \
                .claude/settings.json (a file people commit: it then holds this machine's paths), local \
                .claude/settings.local.json. Codex: user ~/.codex/hooks.json, project .codex/hooks.json \
                (Codex asks you to trust new hooks in /hooks once). Every other setting and hook is kept \
                in its order; ours are recognised by their arguments and replaced where they were; a \
                second install changes nothing. The file is written through a temporary file and a \
                rename, after a copy to <file>.bak. A settings file that is a symbolic link, does not \
                parse, or is over 1 MiB is left untouched.

                The store must be a paired desktop (`sync-cli trust init` or `trust join` first).
                """)
        @Argument(help: "The agent: claude-code or codex.") var agent: AgentKind
        @Option(help: "Which settings file: user (the default), project or local.") var scope: HookScope = .user
        @OptionGroup var projectOptions: ProjectOptions
        @OptionGroup var storeOptions: StoreOptions
        @Option(help: "When to ask the phone: auto, always or never (kept in the store).") var away: AwayMode?
        @Option(
            name: .customLong("desk-active"),
            help: ArgumentHelp(
                "Under auto, seconds after a prompt at this desk during which the terminal asks.", valueName: "seconds")
        )
        var deskActive: Int?
        @Option(
            name: .customLong("allow-truncated"),
            help: ArgumentHelp(
                "Whether a permission too long for the phone may go there cut and marked \"truncated: see the desk\" (true or false).",
                valueName: "bool"))
        var allowTruncated: Bool?
        @Option(
            name: .customLong("away-wait"),
            help: ArgumentHelp(
                "Seconds the phone has when you are away (always, or a phone holds the session); default 110.",
                valueName: "seconds"))
        var awayWait: Int64?
        @Option(
            name: .customLong("auto-wait"),
            help: ArgumentHelp(
                "Seconds the phone has under auto when no phone holds the session; default 30.", valueName: "seconds"))
        var autoWait: Int64?
        @Flag(help: "Print the result as JSON.") var json = false

        func validate() throws {
            if let deskActive, !(0...86_400).contains(deskActive) {
                throw ValidationError("--desk-active must be 0 to 86400 seconds")
            }
            for (name, value) in [("--away-wait", awayWait), ("--auto-wait", autoWait)] {
                if let value, !AwayRule.waits.contains(value) {
                    throw ValidationError(
                        "\(name) must be \(AwayRule.waits.lowerBound) to \(AwayRule.waits.upperBound) seconds")
                }
            }
        }

        func run() async throws {
            let store = try await storeOptions.open()
            try await requirePairedDesktop(store)
            var rule = try await AwayRule.load(from: store)
            if let away { rule.mode = away }
            if let deskActive { rule.deskActive = TimeInterval(deskActive) }
            if let allowTruncated { rule.allowTruncated = allowTruncated }
            if let awayWait { rule.awayWait = .seconds(awayWait) }
            if let autoWait { rule.autoWait = .seconds(autoWait) }
            let command = HookCommand(
                executable: try currentExecutable(), store: store.directory.standardizedFileURL.path,
                waitTimeout: rule.handlerTimeout)
            let result: AgentInstaller.Result
            do {
                result = try projectOptions.installer(agent).install(command, scope: scope)
            } catch {
                throw CLIError(error.description)
            }
            // Kept only once the hooks are in place (their timeout follows the waits).
            try await rule.save(to: store)
            if json {
                return try printJSON(
                    Installed(
                        agent: agent.rawValue, scope: result.scope.rawValue, path: result.path, changed: result.changed,
                        away: rule.mode.rawValue, deskActive: Int(rule.deskActive), allowTruncated: rule.allowTruncated,
                        warnings: result.warnings))
            }
            for warning in result.warnings { printError("Warning: \(warning)") }
            output(
                result.changed
                    ? "Installed the \(agent.displayName) hooks in \(result.path) (\(result.scope.rawValue) scope)."
                    : "The \(agent.displayName) hooks in \(result.path) are already up to date; nothing changed.")
            output(
                "Away rule: \(rule.mode.rawValue), desk active \(Int(rule.deskActive)) s; the phone has "
                    + "\(rule.awayWait.components.seconds) s when you are away, \(rule.autoWait.components.seconds) s otherwise."
            )
            if agent == .codex {
                output("For turn alerts from Codex's notify program too, add to ~/.codex/config.toml:")
                output(
                    "  notify = [\(jsonString(command.executable)), \"agent\", \"notify\", \"codex\", \"--store\", \(jsonString(command.store))]"
                )
            }
        }

        struct Installed: Encodable {
            var agent: String
            var scope: String
            var path: String
            var changed: Bool
            var away: String
            var deskActive: Int
            var allowTruncated: Bool
            var warnings: [String]
        }
    }

    struct Uninstall: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "uninstall",
            abstract: "Remove this desktop's hooks from an agent's settings (every scope, or --scope).",
            discussion: "Only our handlers go; every other setting and hook stays. The file is backed up first.")
        @Argument(help: "The agent: claude-code or codex.") var agent: AgentKind
        @Option(help: "Only this scope: user, project or local.") var scope: HookScope?
        @OptionGroup var projectOptions: ProjectOptions
        @Flag(help: "Print the result as JSON.") var json = false

        func run() async throws {
            let results: [AgentInstaller.Result]
            do {
                results = try projectOptions.installer(agent).uninstall(scope: scope)
            } catch {
                throw CLIError(error.description)
            }
            if json {
                return try printJSON(results.map { ["scope": $0.scope.rawValue, "path": $0.path] })
            }
            if results.isEmpty { output("No \(agent.displayName) hooks of ours were installed; nothing changed.") }
            for result in results { output("Removed the \(agent.displayName) hooks from \(result.path).") }
        }
    }
}

/// Refuses a store that cannot carry an agent's sessions to the phone, saying what to run.
func requirePairedDesktop(_ store: DeviceStore) async throws {
    let identity = try await store.requireIdentity()
    let flag = " --store \(store.directory.path)"
    guard identity.role == .desktop else {
        throw CLIError(
            "this store is a phone's; install agent hooks with the store of the desktop the agent runs on (--store)")
    }
    guard identity.userID != nil else {
        throw CLIError("this store is not logged in; run `sync-cli login\(flag)` first")
    }
    guard try await AgentHookRunner.isPaired(store) else {
        throw CLIError(
            "this desktop is not paired: run `sync-cli trust init\(flag)` (your first device) or `sync-cli trust join\(flag)`, then install again"
        )
    }
}

/// The absolute path of this `sync-cli`, as the hooks run it.
func currentExecutable() throws -> String {
    if let url = Bundle.main.executableURL, FileManager.default.isExecutableFile(atPath: url.path) {
        return canonicalPath(url.path)
    }
    let path = URL(fileURLWithPath: CommandLine.arguments[0]).path
    let resolved: String
    if path.contains("/") {
        resolved = canonicalPath(path)
    } else {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
        guard
            let found = directories.map({ "\($0)/\(path)" }).first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else { throw CLIError("cannot find this sync-cli's own path; run it by its path") }
        resolved = canonicalPath(found)
    }
    return resolved
}

/// A JSON string literal of `text`.
func jsonString(_ text: String) -> String {
    (try? JSONStyle.text(text, pretty: false)) ?? "\"\""
}
