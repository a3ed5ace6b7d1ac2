import ArgumentParser
import Foundation
import LocalStore
import SyncModel

extension SyncCLI {
    struct Repo: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Manage this desktop's repositories.",
            subcommands: [Add.self, List.self, Remove.self]
        )
    }

    struct Session: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Manage this desktop's agent sessions.",
            subcommands: [Start.self, End.self, List.self, Delete.self]
        )
    }
}

/// Requires a desktop store with a user.
func desktopStore(_ options: StoreOptions) async throws -> (LocalStore, DeviceIdentity, UUID) {
    let store = try options.open()
    let identity = try await store.requireIdentity()
    guard identity.role == .desktop else { throw CLIError("this is a mobile store; repositories and sessions live on desktops") }
    guard let user = identity.userID else { throw CLIError("this store is not logged in; run `sync-cli login` first") }
    return (store, identity, user)
}

/// The absolute, symlink-free form of a path, as repositories are stored.
func canonicalPath(_ path: String) -> String {
    URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
}

/// A repository given as its path, its id or an unambiguous id prefix.
func resolveRepository(_ text: String, among repositories: [RepositoryRecord]) throws -> RepositoryRecord {
    let path = canonicalPath(text)
    if let match = repositories.first(where: { $0.localPath == path }) { return match }
    let id = try resolveID(text, among: repositories.map(\.id), kind: "repository")
    return repositories.first { $0.id == id }!
}

/// Runs git in `path`, returning its trimmed output, or nil.
func git(_ arguments: [String], in path: String) -> String? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["git", "-C", path] + arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    do { try process.run() } catch { return nil }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { return nil }
    let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    return text.isEmpty ? nil : text
}

extension SyncCLI.Repo {
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a repository (a git checkout or any directory).",
            discussion: "For a git checkout the name, remote URL and default branch are read with git; flags override them."
        )

        @OptionGroup var storeOptions: StoreOptions
        @Argument(help: "The repository's directory.", completion: .directory) var path: String
        @Option(help: "The name (default: the checkout's directory name).") var name: String?

        func run() async throws {
            let (store, identity, user) = try await desktopStore(storeOptions)
            var isDirectory: ObjCBool = false
            let absolute = canonicalPath(path)
            guard FileManager.default.fileExists(atPath: absolute, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw CLIError("\(path) is not a directory")
            }
            let root = git(["rev-parse", "--show-toplevel"], in: absolute) ?? absolute
            let remoteURL = git(["config", "--get", "remote.origin.url"], in: root)
            let defaultBranch = git(["symbolic-ref", "--short", "refs/remotes/origin/HEAD"], in: root).map { $0.replacingOccurrences(of: "origin/", with: "") }
                ?? git(["rev-parse", "--abbrev-ref", "HEAD"], in: root)
            let existing = try await store.repositories().first { $0.deviceID == identity.id && $0.localPath == root }
            var record = existing ?? RepositoryRecord(userID: user, deviceID: identity.id, name: "", localPath: root)
            record.name = name ?? existing?.name ?? URL(fileURLWithPath: root).lastPathComponent
            record.remoteURL = remoteURL ?? record.remoteURL
            record.defaultBranch = defaultBranch ?? record.defaultBranch
            record.updatedAt = Date()
            try await store.upsertRepositories([record])
            output("\(existing == nil ? "Added" : "Updated") repository \(record.name) (\(record.id.canonical))")
            output("  path            \(root)")
            if let remoteURL = record.remoteURL { output("  remote          \(remoteURL)") }
            if let branch = record.defaultBranch { output("  default branch  \(branch)") }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the repositories in this store.")
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            let store = try storeOptions.open()
            let repositories = try await store.repositories()
            if repositories.isEmpty { output("No repositories.") }
            for repository in repositories.sorted(by: { $0.name < $1.name }) {
                output("\(repository.id.canonical)  \(repository.name)  \(repository.localPath)  [\(repository.status.rawValue)]")
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a repository and its sessions, here and (at the next push) on the remote."
        )
        @OptionGroup var storeOptions: StoreOptions
        @Argument(help: "The repository's id (or an unambiguous prefix) or path.") var repository: String

        func run() async throws {
            let (store, _, _) = try await desktopStore(storeOptions)
            let id = try resolveRepository(repository, among: try await store.repositories()).id
            try await store.removeRepositories(ids: [id])
            output("Removed repository \(id.canonical); the next push deletes it remotely.")
        }
    }
}

extension SyncCLI.Session {
    struct Start: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Start a session with a fresh secret (sealed to this device's key at rest)."
        )
        @OptionGroup var storeOptions: StoreOptions
        @Option(help: "The repository: id, id prefix or path.") var repo: String
        @Option(help: "A title for the session.") var title: String?
        @Option(help: "The branch the session works on.") var branch: String?

        func run() async throws {
            let (store, identity, user) = try await desktopStore(storeOptions)
            let repository = try resolveRepository(repo, among: try await store.repositories())
            let id = repository.id
            let session = try await store.createSession(SessionRecord(
                userID: user, deviceID: identity.id, repositoryID: id, title: title, sessionPID: Int(getpid()),
                currentBranch: branch ?? git(["rev-parse", "--abbrev-ref", "HEAD"], in: repository.localPath),
                workingDirectory: repository.localPath))
            output(session.id.canonical)
        }
    }

    struct End: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Mark a session ended.")
        @OptionGroup var storeOptions: StoreOptions
        @Argument(help: "The session's id or an unambiguous prefix.") var session: String

        func run() async throws {
            let (store, _, _) = try await desktopStore(storeOptions)
            let all = try await store.sessions()
            let id = try resolveID(session, among: all.map(\.id), kind: "session")
            var record = all.first { $0.id == id }!
            record.status = .ended
            record.sessionEndedAt = Date()
            record.updatedAt = Date()
            try await store.upsertSessions([record])
            output("Ended session \(id.canonical)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the sessions in this store.")
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            let store = try storeOptions.open()
            let sessions = try await store.sessions()
            if sessions.isEmpty { output("No sessions.") }
            for session in sessions {
                output("\(session.id.canonical)  \(session.status.rawValue.padding(toLength: 6, withPad: " ", startingAt: 0))  \(session.title ?? "(untitled)")")
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a session here and (at the next push) on the remote and every phone."
        )
        @OptionGroup var storeOptions: StoreOptions
        @Argument(help: "The session's id or an unambiguous prefix.") var session: String

        func run() async throws {
            let (store, _, _) = try await desktopStore(storeOptions)
            let id = try resolveID(session, among: try await store.sessions().map(\.id), kind: "session")
            try await store.removeSessions(ids: [id])
            output("Deleted session \(id.canonical); the next push deletes it remotely.")
        }
    }
}
