import Foundation
import SyncModel

/// Where an agent works: the repository its working directory belongs to, found by reading the
/// repository's files in this process.
///
/// Git itself is never run: a repository's configuration can name programs git would start
/// (`core.fsmonitor`, `core.sshCommand`, filters), and a hook runs in whatever directory the agent
/// is in, including a repository someone else prepared. Only `.git`, `HEAD`, `commondir`, `config`
/// and `refs/remotes/origin/HEAD` are read, and includes are not followed.
public struct RepositoryLocation: Sendable, Hashable {
    /// The repository's top level (for a linked worktree, its main working tree's), symlinks
    /// resolved: the path a repository row is keyed by. Outside a repository: the directory itself.
    public var topLevel: String
    /// The top level's folder name.
    public var name: String
    /// `origin`'s URL (else the first remote's), without credentials.
    public var remoteURL: String?
    /// The default branch, from `refs/remotes/origin/HEAD`.
    public var defaultBranch: String?
    /// The branch checked out where the agent works, `nil` when detached.
    public var branch: String?
    /// The linked worktree's top level, when the agent works in one.
    public var worktree: String?
    /// Whether a git repository was found.
    public var isRepository: Bool
}

/// Finds a working directory's repository (``RepositoryLocation``) without running git.
public enum RepositoryLocator {
    /// The most directories walked up from the working directory.
    static let maxLevels = 128

    /// The repository `directory` is in, or the directory itself when it is in none.
    public static func locate(_ directory: String) -> RepositoryLocation {
        let start = URL(fileURLWithPath: directory).standardizedFileURL.resolvingSymlinksInPath()
        var current = start
        for _ in 0..<maxLevels {
            if let found = repository(at: current) { return found }
            let parent = current.deletingLastPathComponent()
            if parent.path == current.path { break }
            current = parent
        }
        return RepositoryLocation(
            topLevel: start.path, name: folderName(start.path), remoteURL: nil, defaultBranch: nil, branch: nil,
            worktree: nil, isRepository: false)
    }

    /// The repository whose working tree's top level is `top`, if `top/.git` makes it one.
    static func repository(at top: URL) -> RepositoryLocation? {
        let dotGit = top.appendingPathComponent(".git")
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dotGit.path, isDirectory: &isDirectory) else { return nil }
        let gitDir: URL
        if isDirectory.boolValue {
            gitDir = dotGit
        } else {
            // A linked worktree or a submodule: "gitdir: <path>", relative to the top level.
            guard let text = read(dotGit), text.hasPrefix("gitdir:") else { return nil }
            let path = text.dropFirst("gitdir:".count).trimmingCharacters(in: .whitespacesAndNewlines)
            gitDir = URL(fileURLWithPath: path, relativeTo: top).standardizedFileURL
        }
        guard FileManager.default.fileExists(atPath: gitDir.appendingPathComponent("HEAD").path) else { return nil }
        var commonDir = gitDir
        if let common = read(gitDir.appendingPathComponent("commondir"))?.trimmingCharacters(
            in: .whitespacesAndNewlines),
            !common.isEmpty
        {
            commonDir = URL(fileURLWithPath: common, relativeTo: gitDir.appendingPathComponent("x")).standardizedFileURL
        }
        // A linked worktree belongs to its main working tree (the parent of a non-bare common
        // `.git`); a bare repository's worktree stands for itself.
        var main = top
        var worktree: String?
        if commonDir.path != gitDir.path {
            worktree = top.path
            if commonDir.lastPathComponent == ".git" { main = commonDir.deletingLastPathComponent() }
        }
        let mainPath = main.resolvingSymlinksInPath().path
        let config = read(commonDir.appendingPathComponent("config")).flatMap(remoteURL(inConfig:))
        let originHead = read(commonDir.appendingPathComponent("refs/remotes/origin/HEAD")).flatMap {
            symbolicRef($0, under: "refs/remotes/origin/")
        }
        return RepositoryLocation(
            topLevel: mainPath, name: folderName(mainPath), remoteURL: config.map(RemoteURL.redacted),
            defaultBranch: originHead,
            branch: read(gitDir.appendingPathComponent("HEAD")).flatMap { symbolicRef($0, under: "refs/heads/") },
            worktree: worktree.flatMap { $0 == mainPath ? nil : $0 }, isRepository: true)
    }

    /// The URL of `origin` (else of the first remote) in a git config file's text.
    static func remoteURL(inConfig text: String) -> String? {
        var section: String?
        var urls: [(remote: String, url: String)] = []
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("[") {
                section = line
                continue
            }
            guard let section, line.lowercased().hasPrefix("url"), let equals = line.firstIndex(of: "=") else {
                continue
            }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            guard key == "url", let remote = remoteName(section) else { continue }
            var value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            urls.append((remote, value))
        }
        return (urls.first { $0.remote == "origin" } ?? urls.first)?.url
    }

    /// `remote` of a `[remote "name"]` section header, else `nil`.
    static func remoteName(_ header: String) -> String? {
        let inner = header.dropFirst().prefix { $0 != "]" }
        let parts = inner.split(separator: "\"", omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].trimmingCharacters(in: .whitespaces).lowercased() == "remote" else {
            return nil
        }
        return String(parts[1])
    }

    /// The name after `prefix` in a symbolic ref file (`ref: refs/heads/main`).
    static func symbolicRef(_ text: String, under prefix: String) -> String? {
        let line = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard line.hasPrefix("ref: " + prefix) else { return nil }
        let name = String(line.dropFirst(("ref: " + prefix).count))
        return name.isEmpty ? nil : name
    }

    static func folderName(_ path: String) -> String {
        let name = URL(fileURLWithPath: path).lastPathComponent
        return name.isEmpty || name == "/" ? "root" : name
    }

    /// A small regular file's text (at most 64 KiB), or `nil`: a FIFO or a device someone put in
    /// a repository is never opened (reading it could wait for ever).
    static func read(_ url: URL) -> String? {
        guard
            (try? FileManager.default.attributesOfItem(atPath: url.path)[.type] as? FileAttributeType) == .typeRegular,
            let handle = FileHandle(forReadingAtPath: url.path)
        else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: 65_536) else { return nil }
        return String(data: data, encoding: .utf8)
    }
}
