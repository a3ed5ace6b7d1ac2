import ArgumentParser
import Dispatch
import Foundation
import Logging
import PostLoginSync
import Synchronization

/// `sync --watch` options.
struct WatchRunOptions: ParsableArguments {
    @Flag(help: "Keep running: a tick every --interval seconds until SIGINT or SIGTERM (see below).")
    var watch = false

    @Option(help: ArgumentHelp("Seconds from one tick to the next (default 5).", valueName: "seconds"))
    var interval: Double?

    @Option(help: ArgumentHelp("Minutes between full reconciliations (default 10).", valueName: "minutes"))
    var fullEvery: Double?

    @Flag(help: "Also print quiet ticks (a heartbeat line each) and every failed one.")
    var verbose = false

    func validate() throws {
        if let interval, !(interval > 0 && interval <= 3600) {
            throw ValidationError("--interval must be more than 0 and at most 3600 seconds")
        }
        if let fullEvery, !(fullEvery > 0 && fullEvery <= 10_080) {
            throw ValidationError("--full-every must be more than 0 and at most 10080 minutes")
        }
    }

    var options: WatchOptions {
        var options = WatchOptions()
        if let interval { options.interval = .milliseconds(Int64(interval * 1000)) }
        if let fullEvery { options.fullEvery = .milliseconds(Int64(fullEvery * 60_000)) }
        return options
    }
}

/// Runs `sync --watch`: one line per tick that did something, log lines on standard error when
/// the remote goes away and comes back, exit 0 on SIGINT or SIGTERM after the running tick.
enum WatchRunner {
    static let help = """
        Watch mode (--watch): a desktop asks the remote each tick only what changed (devices, \
        secret requests, trust statements) and its store for new local rows; when nothing \
        changed it refreshes its heartbeat (two requests) and seals nothing, otherwise it \
        pushes. A full push runs first and every --full-every minutes. A mobile device pulls \
        each tick. One line per tick that did something: a push, or a pull that received \
        envelopes or deletions (--json: one JSON object per line; --verbose: every tick); \
        while the remote is down, ticks back off up to 60 s apart with one log line on \
        standard error when that starts and one when it ends. The store is locked only during \
        a tick, so other commands run meanwhile. SIGINT or SIGTERM: the running tick \
        finishes, the lock is released, exit 0.
        """

    static func run(
        store storeOptions: StoreOptions, remote remoteOptions: RemoteOptions, sync: SyncRunOptions,
        watch: WatchRunOptions
    ) async throws {
        let store = try await storeOptions.open()
        _ = try await store.requireIdentity()
        let remote = try await remoteOptions.remote(for: store)
        var logger = Logger(label: "sync-cli") { _ in StandardErrorLogHandler() }
        logger.logLevel = watch.verbose ? .debug : .notice
        let engine = SyncEngine(local: store, remote: remote, options: sync.options, logger: logger)
        let options = watch.options
        logger.notice(
            "watch: every \(format(options.interval.components.seconds, options.interval.components.attoseconds)) s, a full reconciliation every \(Int(options.fullEvery.components.seconds / 60)) min; stop with Ctrl-C or SIGTERM"
        )

        let ticks = Mutex(0)
        let task = Task {
            for await tick in engine.watch(options) {
                ticks.withLock { $0 += 1 }
                guard Self.worthALine(tick) || watch.verbose else { continue }
                if sync.json {
                    printJSONText(tick.json())
                } else {
                    output(line(tick))
                }
            }
        }
        // SIGINT and SIGTERM stop the watch after the running tick.
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let sources = [SIGINT, SIGTERM].map { number -> any DispatchSourceSignal in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { task.cancel() }
            source.resume()
            return source
        }
        await task.value
        sources.forEach { $0.cancel() }
        logger.notice("watch: stopped after \(ticks.withLock { $0 }) ticks; the store is unlocked")
    }

    static func format(_ seconds: Int64, _ attoseconds: Int64) -> String {
        let value = Double(seconds) + Double(attoseconds) * 1e-18
        return value == value.rounded() ? String(Int(value)) : String(format: "%.2f", value)
    }

    /// `tick 12 sync (1 device changed): 5 requests, 10 sealed, 0.31 s, partial` (`1 request`).
    static func line(_ tick: WatchTick) -> String {
        var text = "tick \(tick.number) \(tick.action.rawValue)"
        if !tick.reasons.isEmpty { text += " (\(tick.reasons.joined(separator: ", ")))" }
        text +=
            ": \(counted(tick.requests, "request")), \(tick.envelopesSealed) sealed, \(String(format: "%.2f", tick.durationSeconds)) s"
        if let report = tick.report {
            text += ", \(report.outcome.rawValue)"
            if let requests = report.secretRequests {
                if requests.fulfilled > 0 { text += ", \(counted(requests.fulfilled, "request")) fulfilled" }
                if requests.refused > 0 {
                    text += ", \(counted(requests.refused, "request")) refused (devices that do not qualify)"
                }
                if requests.created > 0 { text += ", \(counted(requests.created, "secret")) requested" }
            }
            if !report.errors.isEmpty {
                text += ", \(counted(report.errors.count, "problem")) (first: \(report.errors[0]))"
            }
        }
        if let failure = tick.failure {
            text +=
                ": \(failure.code): \(failure.message); next try in \(String(format: "%.1f", tick.nextTickSeconds)) s"
        }
        return text
    }
}

/// Log lines on standard error (control characters escaped): `2026-11-23T10:00:00Z warning: ...`.
struct StandardErrorLogHandler: LogHandler {
    var logLevel: Logger.Level = .notice
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let time = ISO8601DateFormatter().string(from: Date())
        printError("\(time) \(event.level): \(event.message)")
    }
}

extension WatchRunner {
    /// Whether a tick gets a line without `--verbose`: a tick that synced (a desktop's push, or
    /// a phone's pull that changed its store), or one that failed in part or brought approvals
    /// (a phone pulls at every tick; a line per quiet tick would say nothing).
    static func worthALine(_ tick: WatchTick) -> Bool {
        switch tick.action {
        case .sync, .full: return true
        case .quiet: return tick.approvals?.isEmpty == false || tick.report.map { $0.outcome != .success } ?? false
        case .failed, .busy: return false
        }
    }
}

/// `1 request`, `2 requests`: a count with its noun, plural unless the count is one.
func counted(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }
