import ArgumentParser
import Foundation
import LocalStore
import SyncModel

extension SyncCLI {
    struct Repo: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "repo", abstract: "Manage this desktop's repositories.",
            subcommands: [Add.self, List.self, Remove.self]
        )
    }
}

extension SyncCLI.Repo {
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add", abstract: "Add a repository (a git checkout or any directory).",
            discussion:
                "For a git checkout the remote URL and default branch are read with git. The name is the directory's name unless --name gives another."
        )

        @OptionGroup var storeOptions: StoreOptions
        @Argument(help: "The repository's directory.", completion: .directory) var path: String
        @Option(help: "The name (default: the checkout's directory name).") var name: String?
        @Flag(help: "Print the repository as JSON (as `repo list` prints one).") var json = false

        func run() async throws {
            let (store, identity, _) = try await desktopStore(storeOptions)
            var isDirectory: ObjCBool = false
            let absolute = canonicalPath(path)
            guard FileManager.default.fileExists(atPath: absolute, isDirectory: &isDirectory), isDirectory.boolValue
            else {
                throw CLIError("\(path) is not a directory")
            }
            let root = await git(["rev-parse", "--show-toplevel"], in: absolute) ?? absolute
            let remoteURL = await git(["config", "--get", "remote.origin.url"], in: root)
            var defaultBranch = await git(["symbolic-ref", "--short", "refs/remotes/origin/HEAD"], in: root).map {
                $0.replacingOccurrences(of: "origin/", with: "")
            }
            if defaultBranch == nil { defaultBranch = await git(["rev-parse", "--abbrev-ref", "HEAD"], in: root) }
            let existing = try await store.repositories().first { $0.deviceID == identity.id && $0.localPath == root }
            let record = try await store.addRepository(
                name: name ?? existing?.name ?? URL(fileURLWithPath: root).lastPathComponent, localPath: root,
                remoteURL: remoteURL, defaultBranch: defaultBranch)
            if json { return try printJSON(record) }
            output("\(existing == nil ? "Added" : "Updated") repository \(record.name) (\(record.id.canonical))")
            output("  path            \(root)")
            if let remoteURL = record.remoteURL { output("  remote          \(remoteURL)") }
            if let branch = record.defaultBranch { output("  default branch  \(branch)") }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List the repositories in this store.")
        @OptionGroup var storeOptions: StoreOptions
        @Flag(help: "Print the repositories as JSON.") var json = false

        func run() async throws {
            let store = try await storeOptions.openForReading()
            let repositories = try await store.repositories()
            if json { return try printJSON(repositories.sorted { $0.name < $1.name }) }
            if repositories.isEmpty { output("No repositories.") }
            for repository in repositories.sorted(by: { $0.name < $1.name }) {
                output(
                    "\(repository.id.canonical)  \(repository.name)  \(repository.localPath)  [\(repository.status.rawValue)]"
                )
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove",
            abstract: "Remove a repository and its sessions, here and (at the next push) on the remote."
        )
        @OptionGroup var storeOptions: StoreOptions
        @Argument(help: "The repository: its path, its name, or its id (or an unambiguous prefix).") var repository:
            String
        @Flag(help: "Print the removed repository's id as JSON.") var json = false

        func run() async throws {
            let (store, _, _) = try await desktopStore(storeOptions)
            let id = try resolveRepository(repository, among: try await store.repositories()).id
            try await store.removeRepositories(ids: [id])
            if json { return try printJSON(["repositoryId": id.canonical]) }
            output("Removed repository \(id.canonical); the next push deletes it remotely.")
        }
    }
}
