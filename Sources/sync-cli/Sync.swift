import ArgumentParser
import Foundation
import LocalStore
import PostLoginSync
import SyncModel
import Synchronization

/// Exit statuses of push, pull and sync (also in `--help` and the README).
enum SyncExit {
    static let success: Int32 = 0
    static let error: Int32 = 1
    static let partial: Int32 = 2
    static let failure: Int32 = 3
    /// Ctrl-C (SIGINT) or SIGTERM: what was written stays, the next sync takes the rest.
    static let interrupted: Int32 = 130

    static let help = """
        Exit status: 0 everything synced; 2 partial success (some rows, devices or phases \
        failed; see the report); 3 every phase failed (a phase with nothing to do does not \
        count: a push with nothing to send to a dead server exits 3); 1 nothing ran (not \
        initialised or logged in, store busy, bad key file); 64 a usage mistake; 4 the trust \
        log does not verify, was forked or cut, or the identity was reset (nothing was sealed \
        or accepted; the other phases ran and the report says which), or in legacy mode the \
        identity key changed (nothing ran): compare `trust status` across devices, or re-pair, \
        or this device is not in the user's trust log (`notPaired`: pair it with `trust join`); \
        130 interrupted (Ctrl-C or SIGTERM; the next sync resumes).
        """
}

/// Options every sync command shares.
struct SyncRunOptions: ParsableArguments {
    @Flag(help: "Print the report as JSON on standard output (no progress bar).")
    var json = false

    @Option(
        help: ArgumentHelp(
            "Who receives secrets: any (every qualifying device), flagged (also is_trusted), verified (a valid certificate under the pinned identity). Default: verified once this store pinned the user's identity (trust init/join), any before.",
            valueName: "mode"))
    var trust: TrustMode?

    @Flag(help: "The same as --trust flagged (kept for scripts).")
    var requireTrusted = false

    @Flag(
        help:
            "Pull: refuse version-1 envelopes (no authenticated sender) instead of keeping them marked unauthenticated."
    )
    var requireAuthenticated = false

    @Flag(help: "Do not seal a copy of each secret for this device itself.")
    var excludeSelf = false

    @Option(help: "Seconds to wait for another sync of this store before giving up.")
    var wait: Double = 30

    func validate() throws {
        guard wait >= 0 else { throw ValidationError("--wait must not be negative") }
        if requireTrusted, let trust, trust != .flagged {
            throw ValidationError("--require-trusted is --trust flagged; it contradicts --trust \(trust.rawValue)")
        }
    }

    var options: SyncOptions {
        var options = SyncOptions()
        options.recipients = RecipientOptions(trust: requireTrusted ? .flagged : trust, includeSelf: !excludeSelf)
        options.requireAuthenticated = requireAuthenticated
        options.leaseTimeout = .milliseconds(Int(wait * 1000))
        return options
    }
}

/// Draws progress: a bar on a terminal, plain lines otherwise, on standard error.
final class ProgressPrinter: Sendable {
    let terminal = isatty(STDERR_FILENO) == 1
    private let state = Mutex<(phase: SyncPhase?, lastPercent: Int, width: Int)>((nil, -1, 0))

    func handle(_ event: SyncProgress) {
        state.withLock { state in
            let percent =
                event.total > 0 ? min(100, event.completed * 100 / event.total) : (event.completed > 0 ? 100 : 0)
            if terminal {
                let filled = percent * 20 / 100
                let bar =
                    String(repeating: "=", count: filled) + (filled < 20 ? ">" : "")
                    + String(repeating: " ", count: max(0, 19 - filled))
                let line = "[\(bar)] \(String(format: "%3d", percent))% \(event.message)"
                FileHandle.standardError.write(
                    Data(
                        ("\r" + line.padding(toLength: max(line.count, state.width), withPad: " ", startingAt: 0)).utf8)
                )
                state.width = line.count
            } else if event.phase != state.phase || percent >= state.lastPercent + 25
                || (percent == 100 && state.lastPercent != 100)
            {
                FileHandle.standardError.write(Data("\(event.message)\n".utf8))
                state.lastPercent = percent
            }
            state.phase = event.phase
        }
    }

    func finish() {
        if terminal && state.withLock({ $0.width }) > 0 { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}

enum SyncRunner {
    static func run(
        _ direction: SyncRole?, store storeOptions: StoreOptions, remote remoteOptions: RemoteOptions,
        options: SyncRunOptions
    ) async throws {
        let store = try await storeOptions.open()
        let identity = try await store.requireIdentity()
        if let direction, direction != identity.role {
            throw CLIError(
                "this store is a \(identity.role == .desktop ? "desktop's" : "phone's"): use `sync-cli \(identity.role == .desktop ? "push" : "pull")` (or `sync`)"
            )
        }
        let remote = try await remoteOptions.remote(for: store)
        let engine = SyncEngine(local: store, remote: remote, options: options.options)
        let printer = ProgressPrinter()
        // Ctrl-C and SIGTERM end the run at once: every write is a transaction, and the next
        // sync finds what this one did not finish (the kill rounds show nothing is lost).
        let interrupts = [SIGINT, SIGTERM].map { number -> any DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                printer.finish()
                printError("interrupted: the next sync resumes where this one stopped")
                exit(SyncExit.interrupted)
            }
            source.resume()
            return source
        }
        defer { interrupts.forEach { $0.cancel() } }
        let report: SyncReport
        do {
            report = try await engine.sync(progress: options.json ? nil : printer.handle)
        } catch let error as SyncError {
            printer.finish()
            printError("Error: \(HintFlags.apply(error.message))")
            throw ExitCode(TrustExit.isTrustFailure(error.code) ? TrustExit.identityChanged : SyncExit.error)
        }
        printer.finish()
        if options.json {
            printJSONText(report.json())
        } else {
            printSummary(report)
        }
        // A trust failure fails closed: the phases that seal or accept failed with it.
        if report.errors.contains(where: { TrustExit.isTrustFailure(SyncError.Code(rawValue: $0.code.rawValue)) }) {
            throw ExitCode(TrustExit.identityChanged)
        }
        switch report.outcome {
        case .success: return
        case .partial: throw ExitCode(SyncExit.partial)
        case .failure: throw ExitCode(SyncExit.failure)
        }
    }

    /// The requests, with the bytes they carried when any were counted: an embedded remote
    /// answers in the process, with no bytes on a wire to count.
    static func traffic(_ report: SyncReport) -> String {
        let requests = counted(report.requests, "request")
        guard report.bytesSent > 0 || report.bytesReceived > 0 else { return requests }
        return "\(requests), \(report.bytesSent) bytes sent, \(report.bytesReceived) received"
    }

    static func printSummary(_ report: SyncReport) {
        output(
            "\(report.direction.rawValue.capitalized) \(report.outcome.rawValue) in \(String(format: "%.2f", report.durationSeconds)) s: "
                + "\(traffic(report)), \(report.envelopesSealed) envelopes sealed, \(report.envelopesOpened) opened")
        if let reconciliation = report.reconciliation {
            output(
                reconciliation.method == .digest
                    ? "  reconciled by digest: \(reconciliation.bucketsListed) of \(reconciliation.buckets) buckets listed (\(reconciliation.rowsListed) rows)"
                    : "  reconciled by listing every pair (the remote has no digest function): \(reconciliation.rowsListed) rows"
            )
        }
        if let trust = report.trust {
            var line = "  trust \(trust.mode)"
            if let fingerprint = trust.identityFingerprint { line += " (identity \(fingerprint))" }
            if report.direction == .push && trust.identityFingerprint != nil {
                line +=
                    ": \(trust.verified) verified, \(trust.unverified) unverified, \(trust.revoked) revoked, \(trust.keyMismatch) key mismatch"
                if trust.sessionsRotated > 0 { line += "; \(trust.sessionsRotated) session secrets rotated" }
            } else if report.direction == .pull {
                line +=
                    ": \(trust.unauthenticatedEnvelopes) unauthenticated (v1) envelopes kept, \(trust.rejectedEnvelopes) refused"
            }
            if trust.invalidStatements > 0 {
                line += "; \(trust.invalidStatements) invalid certificates or revocations ignored"
            }
            output(line)
            if report.direction == .push && trust.mode == .verified && trust.unverified > 0 {
                output(
                    "  ! \(trust.unverified) device(s) receive no secrets until paired: `sync-cli devices list` names them; pair each (`sync-cli trust invite` here, `sync-cli trust join` there) or push with --trust any"
                )
            }
            if let note = trust.note { output("  note: \(note)") }
            // What verifying the trust reported without failing: a pending or vetoed reset, a
            // clock behind the log, ignored witnesses, a root's duty not done.
            for issue in trust.reports { output("  note: \(issue.message)") }
        }
        for phase in report.phases {
            output(
                "  \(phase.phase.rawValue.padding(toLength: 12, withPad: " ", startingAt: 0)) \(phase.status.rawValue.padding(toLength: 7, withPad: " ", startingAt: 0)) "
                    + "sent \(phase.sent), applied \(phase.applied), skipped \(phase.skipped), failed \(phase.failed), deleted \(phase.deleted)"
            )
        }
        let errors = report.errors
        for issue in errors.prefix(20) { output("  ! \(issue)") }
        if errors.count > 20 { output("  ! ... and \(errors.count - 20) more (use --json for all)") }
        // Once per kind of remote failure: what to check.
        var hinted = Set<String>()
        for issue in errors {
            if let hint = remoteHint(issue.code.rawValue), hinted.insert(issue.code.rawValue).inserted {
                output("  hint: \(hint)")
            }
        }
    }
}

extension SyncCLI {
    struct Push: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "push", abstract: "Desktop: push the device row, repositories, sessions and sealed secrets.",
            discussion: "Only what changed since the last push is sent; only missing or stale envelopes are sealed.\n\n"
                + SyncExit.help
        )
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @OptionGroup var syncOptions: SyncRunOptions

        func run() async throws {
            try await SyncRunner.run(.desktop, store: storeOptions, remote: remoteOptions, options: syncOptions)
        }
    }

    struct Pull: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "pull",
            abstract: "Mobile: pull repositories, sessions and the envelopes addressed to this device.",
            discussion:
                "Only rows changed since the last pull are fetched, plus an id listing to find deletions. Secrets stay sealed on disk.\n\n"
                + SyncExit.help
        )
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @OptionGroup var syncOptions: SyncRunOptions

        func run() async throws {
            try await SyncRunner.run(.mobile, store: storeOptions, remote: remoteOptions, options: syncOptions)
        }
    }

    struct Sync: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sync", abstract: "Push on a desktop, pull on a mobile device; with --watch, keep doing it.",
            discussion: SyncExit.help + "\n\n" + WatchRunner.help
        )
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @OptionGroup var syncOptions: SyncRunOptions
        @OptionGroup var watchOptions: WatchRunOptions

        func validate() throws {
            if !watchOptions.watch
                && (watchOptions.interval != nil || watchOptions.fullEvery != nil || watchOptions.verbose)
            {
                throw ValidationError("--interval, --full-every and --verbose go with --watch")
            }
        }

        func run() async throws {
            if watchOptions.watch {
                try await WatchRunner.run(
                    store: storeOptions, remote: remoteOptions, sync: syncOptions, watch: watchOptions)
            } else {
                try await SyncRunner.run(nil, store: storeOptions, remote: remoteOptions, options: syncOptions)
            }
        }
    }
}
