import ArgumentParser
import EmbeddedRemote
import Foundation
import LocalStore
import PostLoginSync
import RemoteSelection
import RemoteStore
import SecretCrypto
import SyncModel

/// `--store`: which local store a command works on.
struct StoreOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The store directory (default: $SYNC_STORE_DIR, else $XDG_DATA_HOME/session-sync, else ~/.local/share/session-sync).",
            valueName: "dir"))
    var store: String?

    var directory: URL {
        if let store { return URL(fileURLWithPath: store) }
        if let env = ProcessInfo.processInfo.environment["SYNC_STORE_DIR"], !env.isEmpty {
            return URL(fileURLWithPath: env)
        }
        return DeviceStore.defaultDirectory()
    }

    /// Opens an existing store. Only `init` creates one (``create()``): a mistyped `--store`
    /// must not make a new, empty store that then reports success.
    func open() async throws -> DeviceStore {
        let directory = directory
        guard FileManager.default.fileExists(atPath: directory.appendingPathComponent("store.sqlite").path) else {
            throw CLIError(
                "no store at \(directory.path): run `sync-cli init --store \(HintFlags.quoted(directory.path)) --role desktop|mobile --name NAME` to create one, or check --store and $SYNC_STORE_DIR"
            )
        }
        return try await DeviceStore.opened(directory: directory)
    }

    /// Opens the store for a command that only reads it: as ``open()`` does, and when the store
    /// cannot be written (read-only media, a directory this user cannot write), read-only, so
    /// that it can still be inspected. A write through it fails with the store's read-only error.
    func openForReading() async throws -> DeviceStore {
        do {
            return try await open()
        } catch let error as LocalStoreError where error.code == .readOnly {
            return try await DeviceStore.openedReadOnly(directory: directory)
        }
    }

    /// Opens the store, creating it when missing (`init`).
    func create() async throws -> DeviceStore { try await DeviceStore.opened(directory: directory) }
}

/// `--remote`: where the remote is.
struct RemoteOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The remote: a Supabase project URL (apikey from $SUPABASE_ANON_KEY) or embedded:PATH. Default: $SYNC_REMOTE, else what `login` saved, else embedded:<store>/../embedded-remote.sqlite.",
            valueName: "url"))
    var remote: String?

    @Flag(
        name: .customLong("insecure-http"),
        help:
            "Allow a plain http:// remote on a host that is not this machine (a lab only: the password and tokens travel in the clear)."
    )
    var insecureHTTP = false

    /// The remote a signed-in store talks to, at ``address(for:)``.
    func remote(for store: DeviceStore) async throws -> any CompleteRemote {
        // A store nobody signed in on says so before its address is judged.
        guard try await store.requireIdentity().userID != nil else {
            throw CLIError("this store is not logged in; run `sync-cli login` first")
        }
        let configuration = try await configuration(for: store)
        let environment = ProcessInfo.processInfo.environment
        return try await configuration.open(
            for: store, apiKey: environment["SUPABASE_ANON_KEY"], accessToken: environment["SYNC_ACCESS_TOKEN"],
            allowCleartext: insecureHTTP)
    }

    /// The remote's address: this option, the environment, the store's saved choice, the default.
    func address(for store: DeviceStore) async throws -> String {
        try await RemoteConfiguration.address(for: store, explicit: remote)
    }

    /// The remote at ``address(for:)``, parsed; a cleartext one refused, or allowed with a warning
    /// on every run (`--insecure-http`).
    func configuration(for store: DeviceStore) async throws -> RemoteConfiguration {
        let configuration = try RemoteConfiguration(address: try await address(for: store))
        try configuration.checkTransport(allowCleartext: insecureHTTP)
        if configuration.isCleartext, case .supabase(let url) = configuration.location {
            printError(
                "Warning: plain http:// to \(url.host ?? "?"): the password, tokens and rows travel in the clear")
        }
        return configuration
    }
}

/// The project's anon key, from `$SUPABASE_ANON_KEY`.
func anonKey() throws -> String {
    guard let key = ProcessInfo.processInfo.environment["SUPABASE_ANON_KEY"], !key.isEmpty else {
        throw CLIError("set SUPABASE_ANON_KEY to the project's anon (publishable) key")
    }
    return key
}

/// A failure at run time: printed as `Error: <message>`, exit status 1, no usage text.
struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ message: String) { description = message }
}

/// A command given wrongly (a value of the wrong form, a required option missing): exit 64, as
/// ArgumentParser's own validation errors, without the usage text.
struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ message: String) { description = message }
}

/// A secret typed by the person (a password, a pairing code): from the environment variable
/// `environment`, else a prompt without echo on a terminal, else one line of standard input.
/// Never from a flag or an argument: those show in `ps` and `/proc` to other local users.
func readSecretLine(environment: String, prompt: String, what: String) throws -> String {
    if let value = ProcessInfo.processInfo.environment[environment], !value.isEmpty { return value }
    if isatty(STDIN_FILENO) == 1, let entered = getpass(prompt) {
        return String(cString: entered)
    }
    guard let line = readLine(strippingNewline: true), !line.isEmpty else {
        throw CLIError("no \(what): set $\(environment) or pipe it on standard input")
    }
    return line
}

/// Text from elsewhere (a device name) on one line: line breaks and tabs written as `\n`, `\t`,
/// so that a name cannot add lines to a list a person confirms.
func oneLine(_ text: String) -> String {
    text.replacingOccurrences(of: "\r", with: "\\r").replacingOccurrences(of: "\n", with: "\\n")
        .replacingOccurrences(of: "\t", with: "\\t")
}

/// Writes to standard error, with control characters escaped (messages quote servers).
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message.escapingControlCharacters + "\n").utf8))
}

/// Prints one line of human output. Names, paths and messages in it may come from the remote
/// or another device, so control characters are escaped: a device called "\u{1B}]0;..." must not
/// retitle or recolour the terminal. `--json` output goes through ``printJSONText(_:)`` (JSON
/// escapes them). Each line is flushed at once, whatever standard output is: through a pipe, a
/// pairing code (`trust invite --wait | tee`) must appear when it is printed, not at exit.
func output(_ text: String) {
    print(text.escapingControlCharacters)
    fflush(nil)
}

/// Resolves a session or repository given as an id or an unambiguous id prefix.
func resolveID(_ text: String, among ids: [UUID], kind: String, minimumPrefix: Int = 1) throws -> UUID {
    if let id = UUID.parse(text), ids.contains(id) { return id }
    guard text.count >= minimumPrefix else {
        throw UsageError("give at least \(minimumPrefix) characters of the \(kind) id")
    }
    let matches = ids.filter { $0.canonical.hasPrefix(text.lowercased()) }
    guard matches.count == 1 else {
        throw CLIError(
            matches.isEmpty
                ? "no \(kind) matches \(text)" : "\(text) matches \(matches.count) \(kind)s; give more of the id")
    }
    return matches[0]
}

/// Requires a desktop store with a user.
func desktopStore(_ options: StoreOptions) async throws -> (DeviceStore, DeviceIdentity, UUID) {
    let store = try await options.open()
    let identity = try await store.requireIdentity()
    guard identity.role == .desktop else {
        throw CLIError(
            "this store is a phone's; repositories and sessions live on desktops: run it with a desktop's --store")
    }
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
    // The name `repo add` printed, when exactly one repository has it.
    let named = repositories.filter { $0.name == text }
    if named.count == 1 { return named[0] }
    if named.count > 1 {
        throw CLIError("\(named.count) repositories are named \(text): give its path or its id (`sync-cli repo list`)")
    }
    let id = try resolveID(text, among: repositories.map(\.id), kind: "repository")
    return repositories.first { $0.id == id }!
}

/// Runs git in `path` (a child process, waited for on a thread of its own), returning its
/// trimmed output, or nil.
func git(_ arguments: [String], in path: String) async -> String? {
    (try? await Blocking.run { runGit(arguments, in: path) }) ?? nil
}

private func runGit(_ arguments: [String], in path: String) -> String? {
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
