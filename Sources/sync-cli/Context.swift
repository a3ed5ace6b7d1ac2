import ArgumentParser
import EmbeddedRemote
import Foundation
import LocalStore
import PostLoginSync
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
    func open() throws -> DeviceStore {
        let directory = directory
        guard FileManager.default.fileExists(atPath: directory.appendingPathComponent("store.sqlite").path) else {
            throw CLIError(
                "no store at \(directory.path): run `sync-cli init --store \(directory.path)` to create one, or check --store and $SYNC_STORE_DIR"
            )
        }
        return try DeviceStore(directory: directory)
    }

    /// Opens the store, creating it when missing (`init`).
    func create() throws -> DeviceStore { try DeviceStore(directory: directory) }
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
        try await RemoteFactory.make(address: try await address(for: store), store: store, insecureHTTP: insecureHTTP)
    }

    /// The remote's address: this option, the environment, the store's saved choice, the default.
    func address(for store: DeviceStore) async throws -> String {
        if let remote { return remote }
        if let env = ProcessInfo.processInfo.environment["SYNC_REMOTE"], !env.isEmpty { return env }
        if let saved = try await store.setting(.remoteAddress) { return saved }
        return "embedded:"
            + store.directory.deletingLastPathComponent().appendingPathComponent("embedded-remote.sqlite").path
    }
}

/// Builds the remote a signed-in store talks to.
enum RemoteFactory {
    static func make(address: String, store: DeviceStore, insecureHTTP: Bool) async throws -> any CompleteRemote {
        let identity = try await store.requireIdentity()
        guard let user = identity.userID else {
            throw CLIError("this store is not logged in; run `sync-cli login` first")
        }
        if address.hasPrefix("embedded:") {
            let signedIn = try await store.setting(.embeddedSignedInAt).map {
                Date(timeIntervalSince1970: TimeInterval($0))
            }
            return try embedded(path: String(address.dropFirst("embedded:".count)), userID: user, signedInAt: signedIn)
        }
        guard let url = URL(string: address), url.scheme == "https" || url.scheme == "http" else {
            throw UsageError.remote(address)
        }
        try checkTransport(url, insecureHTTP: insecureHTTP)
        let apiKey = try anonKey()
        let provider: AccessTokenProvider
        if let token = ProcessInfo.processInfo.environment["SYNC_ACCESS_TOKEN"], !token.isEmpty {
            provider = { _ in token }
        } else {
            guard let session = try store.authSessionFile.load() else {
                throw CLIError(
                    "no saved session for \(url.absoluteString); run `sync-cli login --remote \(url.absoluteString)`")
            }
            let tokens = AccessTokens(
                file: store.authSessionFile, session: session, auth: SupabaseAuth(projectURL: url, apiKey: apiKey))
            provider = tokens.provider
        }
        return PostgRESTRemoteStore(
            configuration: PostgRESTConfiguration(projectURL: url, apiKey: apiKey, userID: user, accessToken: provider))
    }

    /// The embedded remote at `path`: its directory must exist (a typo must not create a new,
    /// empty remote somewhere), and a file it creates is readable by its owner only. Only `login`
    /// creates one (`create`); every other command names a missing file, since a new, empty remote
    /// would then say the identity changed and advise re-pairing against the wrong remote.
    static func embedded(
        path: String, userID: UUID, signedInAt: Date? = nil, create: Bool = false
    ) throws
        -> EmbeddedRemoteStore
    {
        guard !path.isEmpty else {
            throw UsageError("embedded: needs a file path, for example embedded:/path/to/remote.sqlite")
        }
        let url = URL(fileURLWithPath: path)
        var isDirectory: ObjCBool = false
        let parent = url.deletingLastPathComponent().path
        guard FileManager.default.fileExists(atPath: parent, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CLIError(
                "the embedded remote's directory \(parent) does not exist: create it, or check --remote and $SYNC_REMOTE"
            )
        }
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw CLIError("the embedded remote \(path) is a directory; name a file, for example \(path)/remote.sqlite")
        }
        // Made 0600 before SQLite opens it: its journal files take the database file's mode.
        if !FileManager.default.fileExists(atPath: path) {
            guard create else {
                throw CLIError(
                    "there is no embedded remote at \(path): check --remote and $SYNC_REMOTE (`sync-cli status` "
                        + "shows the one login saved); `sync-cli login --remote embedded:\(path)` creates a new one")
            }
            _ = FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
        }
        return try EmbeddedRemoteStore(path: path, userID: userID, signedInAt: signedInAt)
    }

    /// Refuses plain `http://` to a host that is not this machine: the password, the tokens and
    /// every row would cross the network in the clear. `--insecure-http` allows it, with a warning
    /// on every run.
    static func checkTransport(_ url: URL, insecureHTTP: Bool) throws {
        guard url.scheme == "http", !isLoopback(url.host ?? "") else { return }
        guard insecureHTTP else {
            throw UsageError(
                "--remote \(url.absoluteString): plain http:// is refused for a host other than this machine "
                    + "(the password and tokens would travel in the clear); use https://, or --insecure-http for a lab")
        }
        printError("Warning: plain http:// to \(url.host ?? "?"): the password, tokens and rows travel in the clear")
    }

    /// `localhost`, `127.0.0.0/8` and `::1`.
    static func isLoopback(_ host: String) -> Bool {
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")).lowercased()
        if bare == "localhost" || bare == "::1" { return true }
        let parts = bare.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    static func anonKey() throws -> String {
        guard let key = ProcessInfo.processInfo.environment["SUPABASE_ANON_KEY"], !key.isEmpty else {
            throw CLIError("set SUPABASE_ANON_KEY to the project's anon (publishable) key")
        }
        return key
    }
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

    /// `--remote` names neither an http(s) URL nor `embedded:PATH`; a near miss of `embedded:` is named.
    static func remote(_ address: String) -> UsageError {
        let scheme = address.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
        if scheme != "embedded", editDistance(scheme.lowercased(), "embedded") <= 2 {
            return UsageError("--remote \(address): did you mean embedded:\(address.dropFirst(scheme.count + 1))?")
        }
        return UsageError("--remote must be an http(s) Supabase project URL or embedded:PATH")
    }
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
    let store = try options.open()
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

extension StoreSetting where Value == Int64 {
    /// When this store last signed in to an embedded remote (it has no passwords: `login` is the
    /// sign-in the trust log's first start and a reset ask to be recent).
    static var embeddedSignedInAt: Self { StoreSetting("embedded.signed_in_at") }
}
