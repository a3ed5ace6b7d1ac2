import ArgumentParser
import RemoteSelection
import RemoteStore
import SyncModel

#if canImport(Glibc)
import Glibc
#endif

/// `sync-cli`: the end-to-end encrypted session-secret sync engine from the command line.
@main
struct SyncCLI: AsyncParsableCommand {
    /// `sync-cli --version`: the newest version heading of CHANGELOG.md, which says what each
    /// holds (a test keeps the two equal).
    static let version = "0.18.18"

    static let configuration = CommandConfiguration(
        commandName: "sync-cli",
        abstract: "End-to-end encrypted session-secret sync.",
        discussion: """
            A desktop pushes its repositories, sessions and each session's secret sealed to each \
            of the user's devices that qualify (active, a valid key, not a browser or temporary \
            viewer; `devices list` shows which and why): envelope v2 (RFC 9180 HPKE in auth mode, \
            the sender authenticated) to devices that read it, envelope v1 (X25519 + HKDF-SHA256 + \
            ChaCha20-Poly1305) to the others. A phone pulls and opens secrets on demand. The server \
            only ever sees ciphertext.

            Start with `sync-cli demo`. By hand: `init`, `login`, then `repo add` and `session start` \
            on a desktop, and `sync` on every device.
            """,
        version: SyncCLI.version,
        subcommands: [
            Demo.self, Init.self, Login.self, Repo.self, Session.self, Push.self, Pull.self, Sync.self,
            Status.self, Devices.self, Trust.self, Secrets.self, PushToken.self, Approval.self, Question.self,
            Notifications.self, Agent.self,
            Outbox.self,
            Vectors.self,
        ]
    )

    /// Runs the command; a remote failure that escapes it is printed with what to check next.
    static func main() async {
        limitMallocArenas()
        if let unknown = unknownSubcommand(Array(CommandLine.arguments.dropFirst())) {
            printError("Error: \(HintFlags.apply(unknown))")
            exit(withError: ExitCode(64))
        }
        do {
            var command = try parseAsRoot()
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch let error as UsageError {
            printError("Error: \(error)")
            exit(withError: ExitCode(64))
        } catch let error as CLIError {
            // As ArgumentParser would print it (exit 1), with the hint's flags kept (HintFlags).
            printError("Error: \(HintFlags.apply(error.description))")
            exit(withError: ExitCode(1))
        } catch let error as RemoteConfigurationError {
            printError("Error: \(error)")
            exit(withError: ExitCode(error.isUsageError ? 64 : 1))
        } catch let error as RemoteStoreError {
            printError("Error: \(error)")
            if let said = error.serverMessage { printError("The remote said: \(said)") }
            if let hint = remoteHint(error.code.description) { printError(hint) }
            exit(withError: ExitCode(1))
        } catch {
            exit(withError: error)
        }
    }
}

extension RemoteStoreError {
    /// For a person at a terminal: the remote's own words when it gave some (a refusal of the
    /// project's functions says what to do), else this client's message. Never for a log.
    var shown: String { serverMessage ?? message }
}

/// A message for a subcommand name that names none, with the nearest one, or `nil` when the
/// arguments name known subcommands all the way (their flags are ArgumentParser's to judge).
///
/// ArgumentParser reads an unknown word as the first positional argument of the command before
/// it, so `sync-cli pul --store X` was told "Unknown option '--store'". A command with a default
/// subcommand takes positional arguments, so a word after it is not judged here.
func unknownSubcommand(_ arguments: [String]) -> String? {
    // Help asked for anywhere is ArgumentParser's to give, for the nearest command it knows.
    if arguments.contains(where: { ["--help", "-h", "help"].contains($0) }) { return nil }
    var command: any ParsableCommand.Type = SyncCLI.self
    var path = ["sync-cli"]
    for argument in arguments {
        let configuration = command.configuration
        guard !configuration.subcommands.isEmpty, configuration.defaultSubcommand == nil,
            !argument.hasPrefix("-"), argument != "help"
        else { return nil }
        let names = configuration.subcommands.map { ($0._commandName, $0) }
        if let next = names.first(where: { $0.0 == argument || $0.1.configuration.aliases.contains(argument) }) {
            command = next.1
            path.append(argument)
            continue
        }
        let here = path.joined(separator: " ")
        let nearest = names.map { ($0.0, editDistance($0.0, argument)) }.min { $0.1 < $1.1 }
        if let nearest, nearest.1 <= max(1, argument.count / 3) {
            return "unknown command '\(argument)': did you mean `\(here) \(nearest.0)`? (`\(here) --help` lists them)"
        }
        return "unknown command '\(argument)' (`\(here) --help` lists them)"
    }
    return nil
}

/// Caps glibc's malloc arenas at two. glibc gives every thread that allocates at once an arena
/// of its own, and each of a pull's threads keeps one full of freed pages: two arenas hold the
/// same work in less memory (`mallopt(M_ARENA_MAX, 2)`; `<malloc.h>` is not in Swift's Glibc
/// module, so it is looked up by name). A `MALLOC_ARENA_MAX` in the environment is left to rule.
func limitMallocArenas() {
    #if canImport(Glibc)
    typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
    let arenaMax: Int32 = -8 // M_ARENA_MAX
    if getenv("MALLOC_ARENA_MAX") != nil { return }
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
    _ = unsafeBitCast(symbol, to: Mallopt.self)(arenaMax, 2)
    #endif
}

/// What to check after a remote failure of this kind (a `RemoteStoreError.Code`'s name, as
/// reports carry it), or `nil` when the message says it all.
func remoteHint(_ code: String) -> String? {
    switch code {
    case RemoteStoreError.Code.network.description:
        return
            "Check the remote's address (--remote, $SYNC_REMOTE, or the one `login` saved: `sync-cli status` shows it), "
            + "that this machine is online and that the server is running; then run the command again."
    case RemoteStoreError.Code.unauthorized.description:
        return "The server refused this login: run `sync-cli login` again (and check $SUPABASE_ANON_KEY)."
    case RemoteStoreError.Code.missingFunction.description, RemoteStoreError.Code.missingTable.description:
        return
            "The remote lacks part of the schema: apply supabase/migrations/*.sql in file order (docs/remote-schema.md)."
    default:
        return nil
    }
}
