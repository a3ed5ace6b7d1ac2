import Foundation

/// Installs, finds and removes our hooks in an agent's settings (docs/agent-hooks.md, "What the
/// person does"): one scope at a time, merged into what is there, written atomically with a
/// backup, a second install changing nothing.
public struct AgentInstaller: Sendable {
    public let layout: AgentSettingsLayout
    /// The person's home directory.
    public let home: URL
    /// The project a project or local scope means.
    public let project: URL
    public let environment: [String: String]

    /// Creates an installer.
    public init(
        agent: AgentKind, home: URL, project: URL, environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        layout = .of(agent)
        self.home = home
        self.project = project
        self.environment = environment
    }

    /// The settings file of `scope`.
    public func file(_ scope: HookScope) -> SettingsFile {
        SettingsFile(url: layout.file(scope, home, project, environment))
    }

    /// Where our hooks are found: each scope whose file holds one of ours, with the events.
    public struct Found: Sendable, Hashable {
        public var scope: HookScope
        public var path: String
        public var events: [String]
    }

    /// Every scope that holds our hooks; a file that cannot be read is said in `unreadable`.
    public func installations() -> (found: [Found], unreadable: [String]) {
        var found: [Found] = []
        var unreadable: [String] = []
        for scope in layout.scopes {
            let file = file(scope)
            do {
                guard let settings = try file.read() else { continue }
                let events = layout.merge.installedEvents(in: settings)
                if !events.isEmpty { found.append(Found(scope: scope, path: file.url.path, events: events)) }
            } catch {
                unreadable.append(error.description)
            }
        }
        return (found, unreadable)
    }

    /// What an install or an uninstall did.
    public struct Result: Sendable, Hashable {
        public var scope: HookScope
        public var path: String
        /// Whether the file was written (a second install writes nothing).
        public var changed: Bool
        /// Things the person should know (a project file people commit holds this machine's paths).
        public var warnings: [String]
    }

    /// Merges our hooks for `command` into `scope`'s settings.
    ///
    /// - Throws: ``SettingsFileError`` when another scope holds ours (two would ask the phone
    ///   twice), or the file is a symlink, does not parse, is too large or of another shape; the
    ///   file is then untouched.
    public func install(_ command: HookCommand, scope: HookScope) throws(SettingsFileError) -> Result {
        guard layout.scopes.contains(scope) else {
            throw SettingsFileError("\(layout.agent.displayName) has no \(scope.rawValue) scope")
        }
        if let other = installations().found.first(where: { $0.scope != scope }) {
            throw SettingsFileError(
                "\(layout.agent.displayName) hooks are already installed in the \(other.scope.rawValue) scope "
                    + "(\(other.path)); two scopes would ask the phone twice: run `sync-cli agent uninstall "
                    + "\(layout.agent.rawValue) --scope \(other.scope.rawValue)` first")
        }
        let file = file(scope)
        let current = try file.read()
        let merged = try layout.merge.installing(layout.groups(command), into: current ?? .object([]))
        var warnings: [String] = []
        if scope != .user {
            warnings.append(
                "the \(scope.rawValue) scope writes this machine's paths (\(command.executable), \(command.store)) into "
                    + "\(file.url.path)" + (scope == .project ? ", a file people commit" : ""))
        }
        guard merged != current else {
            return Result(scope: scope, path: file.url.path, changed: false, warnings: warnings)
        }
        try file.write(merged.prettyText)
        if scope != .user { try ignoreBackup(of: file) }
        return Result(scope: scope, path: file.url.path, changed: true, warnings: warnings)
    }

    /// Removes our hooks from `scope`, or from every scope that holds them.
    public func uninstall(scope: HookScope? = nil) throws(SettingsFileError) -> [Result] {
        var results: [Result] = []
        for found in installations().found where scope == nil || found.scope == scope {
            let file = file(found.scope)
            guard let current = try file.read() else { continue }
            let removed = try layout.merge.uninstalling(from: current)
            guard removed != current else { continue }
            try file.write(removed.prettyText)
            results.append(Result(scope: found.scope, path: file.url.path, changed: true, warnings: []))
        }
        return results
    }

    /// Adds the backup beside a project's settings file to the project's `.gitignore`.
    func ignoreBackup(of file: SettingsFile) throws(SettingsFileError) {
        let root = project.standardizedFileURL.path
        let backup = file.backupURL.standardizedFileURL.path
        guard backup.hasPrefix(root + "/") else { return }
        let line = "/" + backup.dropFirst(root.count + 1)
        let ignore = project.appendingPathComponent(".gitignore")
        // A .gitignore that is a link points elsewhere: it is not this project's to rewrite.
        if (try? FileManager.default.attributesOfItem(atPath: ignore.path)[.type] as? FileAttributeType)
            == .typeSymbolicLink
        {
            return
        }
        let existing = (try? String(contentsOf: ignore, encoding: .utf8)) ?? ""
        guard !existing.split(whereSeparator: \.isNewline).contains(where: { $0 == line }) else { return }
        let text = existing + (existing.isEmpty || existing.hasSuffix("\n") ? "" : "\n") + line + "\n"
        do {
            try text.write(to: ignore, atomically: true, encoding: .utf8)
        } catch {
            throw SettingsFileError("cannot add \(line) to \(ignore.path)")
        }
    }
}
