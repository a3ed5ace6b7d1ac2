import ArgumentParser
import Foundation
import LocalStore
import SyncModel

extension SyncCLI {
    struct Session: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "session",
            abstract: "Agent sessions: start, end and delete them on a desktop; list, claim and report their status.",
            subcommands: [
                Start.self, End.self, List.self, Delete.self, Activity.self, Touch.self, RuntimeState.self, Notify.self,
            ]
        )
    }
}

extension SyncCLI.Session {
    struct Start: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "start", abstract: "Start a session with a fresh secret (sealed to this device's key at rest)."
        )
        @OptionGroup var storeOptions: StoreOptions
        @Option(help: "The repository: its path, its name, or its id (or an unambiguous prefix).") var repo: String
        @Option(help: "A title for the session.") var title: String?
        @Option(help: "The branch the session works on.") var branch: String?
        @Flag(help: "Print the session as JSON (as `session list` prints one).") var json = false

        func run() async throws {
            let (store, _, _) = try await desktopStore(storeOptions)
            let repository = try resolveRepository(repo, among: try await store.repositories())
            var branch = branch
            if branch == nil { branch = await git(["rev-parse", "--abbrev-ref", "HEAD"], in: repository.localPath) }
            let session = try await store.startSession(
                repositoryID: repository.id, title: title, branch: branch,
                processID: Int(getpid()))
            if json { return try printJSON(session) }
            output(session.id.canonical)
        }
    }

    struct End: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "end", abstract: "Mark a session ended.")
        @OptionGroup var storeOptions: StoreOptions
        @Argument(help: "The session's id or an unambiguous prefix.") var session: String
        @Flag(help: "Print the ended session's id as JSON.") var json = false

        func run() async throws {
            let (store, _, _) = try await desktopStore(storeOptions)
            let id = try resolveID(session, among: try await store.sessions().map(\.id), kind: "session")
            do {
                try await store.endSession(id)
            } catch let error as LocalStoreError where error.code == .notFound {
                throw CLIError("no session \(id.canonical) of this desktop; `sync-cli session list` shows them")
            }
            if json { return try printJSON(["sessionId": id.canonical, "status": "ended"]) }
            output("Ended session \(id.canonical)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List the sessions in this store, with the live status their desktop last reported.")
        @OptionGroup var storeOptions: StoreOptions
        @Flag(help: "Print the sessions as JSON.") var json = false

        func run() async throws {
            let store = try await storeOptions.openForReading()
            let sessions = try await store.sessions()
            if json { return try printJSON(sessions) }
            if sessions.isEmpty { output("No sessions.") }
            for session in sessions {
                let live =
                    session.runtimeStatus.map { status in
                        "  [\(status.state.rawValue)\(status.errorMessage.map { ": \($0)" } ?? "")]"
                    } ?? ""
                output(
                    "\(session.id.canonical)  \(session.status.rawValue.padding(toLength: 6, withPad: " ", startingAt: 0))  \(session.title ?? "(untitled)")\(live)"
                )
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete",
            abstract: "Delete a session here and (at the next push) on the remote and every phone."
        )
        @OptionGroup var storeOptions: StoreOptions
        @Argument(help: "The session's id or an unambiguous prefix.") var session: String
        @Flag(help: "Print the deleted session's id as JSON.") var json = false

        func run() async throws {
            let (store, _, _) = try await desktopStore(storeOptions)
            let id = try resolveID(session, among: try await store.sessions().map(\.id), kind: "session")
            try await store.removeSessions(ids: [id])
            if json { return try printJSON(["sessionId": id.canonical]) }
            output("Deleted session \(id.canonical); the next push deletes it remotely.")
        }
    }
}
