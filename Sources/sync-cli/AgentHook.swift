import AgentHooks
import ArgumentParser
import Dispatch
import Foundation
import LocalStore
import Logging
import RemoteStore
import SecretCrypto
import SyncModel

#if canImport(Glibc)
import Glibc
#endif

extension SyncCLI.Agent {
    struct Hook: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "hook",
            abstract: "Handle one hook event (the agent runs this with the event on standard input).",
            discussion: """
                Reads one event (at most 1 MiB) from standard input and prints the decision the agent \
                reads, one JSON object, or nothing. It always exits 0: a malformed event, a store that \
                is busy or not logged in, a dead remote end with no decision and one line on standard \
                error. --async is the background handler: the remote work (push, runtime status, claims, \
                alerts), in the order the agent fired the events. SIGTERM, SIGHUP or the agent going \
                away cancel a request this process waits on.
                """)
        @Argument(help: "The agent: claude-code or codex.") var agent: AgentKind
        @Flag(name: .customLong("async"), help: "Run as the background handler.") var background = false
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions

        func run() async throws {
            let stdout = HookStandardOutput.take()
            let input = await readStandardInput(limit: ClaudeCodeEvents.maxInput + 1)
            let agent = self.agent
            let outcome = await HookProcess.run(
                storeOptions: storeOptions, remoteOptions: remoteOptions, background: background
            ) {
                agent == .codex ? try CodexEvents.parse(input) : try ClaudeCodeEvents.parse(input)
            } key: {
                ByteEncoding.hex(SHA256.hash(input))
            }
            stdout.finish(HookOutput.render(outcome.decision, agent: agent), problem: outcome.problem)
        }
    }

    struct Notify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "notify",
            abstract: "Handle a notification of Codex's notify program (Codex passes it as the last argument).",
            discussion: """
                Set `notify = ["/path/to/sync-cli", "agent", "notify", "codex", "--store", "DIR"]` in \
                ~/.codex/config.toml: each agent-turn-complete then marks the session idle here (a task \
                alert on the phone). Only the notification's type, thread id and directory are read; \
                Codex also passes the turn's messages in the argument, which this command never stores.
                """)
        @Argument(help: "The agent: codex.") var agent: AgentKind
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Argument(help: "The notification's JSON.") var notification: String

        func run() async throws {
            let stdout = HookStandardOutput.take()
            let input = Array(notification.utf8)
            let outcome = await HookProcess.run(
                storeOptions: storeOptions, remoteOptions: remoteOptions, background: true
            ) {
                try CodexEvents.parseNotification(input)
            } key: {
                ByteEncoding.hex(SHA256.hash(input))
            }
            stdout.finish("", problem: outcome.problem)
        }
    }
}

/// One hook process: open the store (a short busy timeout), run the event, never throw.
enum HookProcess {
    static func run(
        storeOptions: StoreOptions, remoteOptions: RemoteOptions, background: Bool,
        parse: () throws -> AgentEvent, key: () -> String
    ) async -> HookOutcome {
        let event: AgentEvent
        do {
            event = try parse()
        } catch {
            return HookOutcome(problem: "sync-cli agent hook: \(error)")
        }
        let directory = storeOptions.directory
        guard FileManager.default.fileExists(atPath: directory.appendingPathComponent("store.sqlite").path) else {
            let problem =
                "sync-cli: no store at \(directory.path): run `sync-cli init --role desktop` and `sync-cli login` (or fix --store in the agent's settings)"
            if case .sessionStart = event.kind, !background { return HookOutcome(.notice(problem), problem: problem) }
            return HookOutcome(problem: problem)
        }
        let store: DeviceStore
        do {
            // Writes wait a quarter second for another process's: a hook must not hold up its agent.
            store = try await DeviceStore.opened(directory: directory, busyTimeout: background ? 10 : 0.25)
        } catch {
            return HookOutcome(problem: "sync-cli agent hook: \(error)")
        }
        let runner = AgentHookRunner(store: store) { try await remoteOptions.remote(for: store) }
        if !background, event.mayAskThePhone { await refreshIfExpiring(store, remoteOptions) }
        let key = key()
        let work = Task {
            background ? await runner.handleInBackground(event, key: key) : await runner.handle(event, key: key)
        }
        let watcher = CancelOnSignals(work)
        defer { watcher.stop() }
        return await work.value
    }
}

/// Refreshes the login, with no deadline, when it expires within two minutes: a request that
/// may go to the phone first reads who holds the session within 300 ms, and a refresh cut short
/// there (the process exits with the terminal's answer) could leave a spent refresh token saved.
func refreshIfExpiring(_ store: DeviceStore, _ remoteOptions: RemoteOptions) async {
    guard let session = try? store.authSessionFile.load(), session.expiresAt.timeIntervalSinceNow < 120,
        let remote = try? await remoteOptions.remote(for: store)
    else { return }
    _ = try? await remote.sessionHolder(sessionID: UUID())
}

extension AgentEvent {
    /// Whether this event may ask the phone (a permission, an `AskUserQuestion`).
    var mayAskThePhone: Bool {
        switch kind {
        case .permissionRequest: true
        case .preToolUse(let tool, _): tool == "AskUserQuestion"
        default: false
        }
    }
}

/// Cancels a hook's work on SIGTERM, SIGHUP or SIGINT, and when the agent that started it goes
/// away (the process is handed to another parent): the work then cancels its request and ends.
final class CancelOnSignals {
    let sources: [any DispatchSourceSignal]
    let parentWatch: any DispatchSourceTimer

    init(_ work: Task<HookOutcome, Never>) {
        sources = [SIGTERM, SIGHUP, SIGINT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { work.cancel() }
            source.resume()
            return source
        }
        let parent = getppid()
        parentWatch = DispatchSource.makeTimerSource(queue: .global())
        parentWatch.schedule(deadline: .now() + .milliseconds(250), repeating: .milliseconds(250))
        parentWatch.setEventHandler { if getppid() != parent { work.cancel() } }
        parentWatch.resume()
    }

    func stop() {
        sources.forEach { $0.cancel() }
        parentWatch.cancel()
    }
}

/// The hook's standard output: taken at the start and pointed at /dev/null, so that nothing but
/// the one final write reaches the agent (plain text on SessionStart and UserPromptSubmit would
/// become model context).
struct HookStandardOutput {
    let descriptor: Int32

    static func take() -> HookStandardOutput {
        signal(SIGPIPE, SIG_IGN)
        fflush(nil)
        let saved = dup(STDOUT_FILENO)
        let null = open("/dev/null", O_WRONLY)
        if null >= 0 {
            dup2(null, STDOUT_FILENO)
            close(null)
        }
        return HookStandardOutput(descriptor: saved)
    }

    /// Writes `text` (the decision) and the problem's one line, and exits 0.
    func finish(_ text: String, problem: String?) -> Never {
        if let problem {
            printError(problem.split(whereSeparator: \.isNewline).joined(separator: " "))
        }
        if descriptor >= 0, !text.isEmpty {
            let bytes = Array(text.utf8)
            var written = 0
            while written < bytes.count {
                let count = bytes[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                guard count > 0 else { break }
                written += count
            }
        }
        exit(0)
    }
}

/// At most `limit` bytes of standard input (to its end), read off the cooperative pool.
func readStandardInput(limit: Int = .max) async -> [UInt8] {
    (try? await Blocking.run {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while bytes.count < limit {
            let count = buffer.withUnsafeMutableBytes {
                read(STDIN_FILENO, $0.baseAddress, min($0.count, limit - bytes.count))
            }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        return bytes
    }) ?? []
}
