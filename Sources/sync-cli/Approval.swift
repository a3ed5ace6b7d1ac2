import ArgumentParser
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel

extension ApprovalVerdict: ExpressibleByArgument {}

/// How `approval request` leaves the program (approvals.md).
enum ApprovalExit {
    static let denied: Int32 = 5
    static let expired: Int32 = 6

    static let help = """
        Exit status: 0 approved; 5 denied; 6 expired or cancelled; 1 nothing was asked (no pinned \
        identity, not a session of this device, content out of limits, the remote refused); 4 the \
        user's identity key changed.
        """
}

extension SyncCLI {
    struct Approval: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "approval",
            abstract:
                "Ask the user's other devices before the agent runs a tool; list, show and answer such questions.",
            discussion: """
                The question is sealed under a key derived from the session's secret, so the server \
                (and Apple, which carries the push) sees only ciphertext; the answer is signed by the \
                answering device and counts only once this desktop verified it against the user's \
                trust. The first answer wins; the others are told who answered. Needs paired devices \
                (`sync-cli trust`).
                """,
            subcommands: [Request.self, List.self, Show.self, Answer.self, AnswerPush.self, Clear.self],
            aliases: ["approvals"]
        )
    }
}

/// The store, the remote and the approval center for one command.
struct ApprovalContext {
    let store: DeviceStore
    let center: ApprovalCenter

    init(_ storeOptions: StoreOptions, _ remoteOptions: RemoteOptions) async throws {
        store = try await storeOptions.open()
        let remote = try await remoteOptions.remote(for: store)
        center = ApprovalCenter(local: store, remote: remote)
    }

    /// Runs `body`, turning the failures a person can fix into a message that says how.
    func run<T>(_ body: (ApprovalCenter) async throws -> T) async throws -> T {
        do {
            return try await body(center)
        } catch let error as SyncError {
            printError("Error: \(HintFlags.apply(error.message))")
            throw ExitCode(TrustExit.isTrustFailure(error.code) ? TrustExit.identityChanged : 1)
        } catch let error as RemoteStoreError where error.code == .missingFunction || error.code == .missingTable {
            throw CLIError("the remote has no approvals; apply the project's supabase/migrations/*_approvals.sql to it")
        } catch CryptoError.invalidApprovalContent {
            throw CLIError(
                "the question is outside the limits: --tool 1-64 characters, --summary 1-200, --detail up to 2,000 "
                    + "(no control characters but new lines and tabs in the detail), 4,096 bytes in all; --timeout "
                    + "\(ApprovalCenter.timeoutSeconds.lowerBound)-\(ApprovalCenter.timeoutSeconds.upperBound) seconds"
            )
        }
    }

    /// A request of the user's, by id or unambiguous prefix.
    func request(_ text: String) async throws -> ApprovalRequestRow {
        let all = try await run { center in
            try await center.remote.approvalRequests(status: nil)
        }
        let id = try resolveID(text, among: all.map(\.id), kind: "approval request")
        guard let row = all.first(where: { $0.id == id }) else {
            throw CLIError("no approval request \(id.canonical); `sync-cli approval list` shows the open ones")
        }
        return row
    }
}

/// What `approval list` and `approval show` print of a request: never its content.
struct ApprovalSummary: Encodable {
    let requestId: String
    let sessionId: String
    let requesterDeviceId: String
    let status: String
    let createdAt: Date?
    let expiresAt: Date
    let decidedByDeviceId: String?
    let decidedAt: Date?

    init(_ row: ApprovalRequestRow, now: Date = Date()) {
        requestId = row.id.canonical
        sessionId = row.sessionID.canonical
        requesterDeviceId = row.requesterDeviceID.canonical
        status = row.status(at: now).rawValue
        createdAt = row.createdAt
        expiresAt = Date(timeIntervalSince1970: TimeInterval(min(row.expiresAt, 1 << 40)))
        decidedByDeviceId = row.decidedByDeviceID?.canonical
        decidedAt = row.decidedAt
    }
}

extension SyncCLI.Approval {
    struct Request: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "request", abstract: "Ask whether the agent may run a tool, and wait for the answer.",
            discussion: """
                The question is a JSON object {"tool": ..., "summary": ..., "detail": ...} ("detail" \
                optional) read with --from-file from a file, or from standard input with --from-file -. \
                --tool, --summary and --detail still work but print a warning: a process's arguments \
                are readable by every local user (ps, /proc/PID/cmdline) for as long as it waits.

                Waits until a paired device answers (and the answer verifies), the question expires, \
                or it is cancelled: Ctrl-C or SIGTERM cancels it, which clears the prompt on the other devices.

                Right after asking it prints where the alert went ("Push: delivered to phone; failed: \
                tablet (token invalid)."), and again once that is settled, if it changed. When no device \
                can be reached by push it warns on standard error and keeps waiting: a device with the \
                app open or in watch mode can still answer. --json adds requestId and deliveries (the \
                last outcomes read).

                \(ApprovalExit.help)
                """
        )
        /// The seconds a request may stand: the server's rule.
        static let window = ApprovalCenter.timeoutSeconds
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Argument(help: "The session's id or an unambiguous prefix.") var session: String
        @Option(
            name: .customLong("from-file"),
            help: ArgumentHelp(
                "Read the question (JSON: tool, summary, detail) from this file; - reads standard input.",
                valueName: "path"))
        var fromFile: String?
        @Option(help: "Discouraged (visible in the process list): the tool the agent wants to run (1-64 characters).")
        var tool: String?
        @Option(help: "Discouraged (visible in the process list): what it would do, in one line (1-200 characters).")
        var summary: String?
        @Option(help: "Discouraged (visible in the process list): more detail (up to 2,000 characters).")
        var detail: String?
        @Option(help: "Seconds the question stands (\(Self.window.lowerBound)-\(Self.window.upperBound)).")
        var timeout = 60
        @Flag(help: "Print the outcome as JSON.") var json = false

        func validate() throws {
            guard Self.window.contains(Int64(timeout)) else {
                throw ValidationError(
                    "--timeout must be \(Self.window.lowerBound) to \(Self.window.upperBound) seconds")
            }
            if fromFile != nil {
                guard tool == nil, summary == nil, detail == nil else {
                    throw ValidationError(
                        "give the question either with --from-file or with --tool and --summary, not both")
                }
            } else {
                guard tool != nil, summary != nil else {
                    throw ValidationError(
                        "give the question with --from-file PATH (or --from-file - on standard input)")
                }
            }
        }

        func run() async throws {
            let question = try await readQuestion()
            let context = try await ApprovalContext(storeOptions, remoteOptions)
            let id = try resolveID(session, among: try await context.store.sessions().map(\.id), kind: "session")
            try await context.run { try await $0.checkCanAsk(session: id) }
            if !json { output("Asking the user's other devices; waiting up to \(timeout) s for an answer...") }
            let (tool, summary, detail, timeout) = (question.tool, question.summary, question.detail ?? "", timeout)
            let pushes = PushLines(printing: !json)
            let asking = Task {
                try await context.run { center in
                    try await center.request(
                        session: id, tool: tool, summary: summary, detail: detail, timeout: .seconds(timeout),
                        onRefused: { refusal in printError("Warning: \(refusal.description)") },
                        onDeliveries: { pushes.update($0) })
                }
            }
            // SIGINT and SIGTERM cancel the request (its other devices' prompts clear) and exit 6.
            signal(SIGINT, SIG_IGN)
            signal(SIGTERM, SIG_IGN)
            let sources = [SIGINT, SIGTERM].map { number -> any DispatchSourceSignal in
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler { asking.cancel() }
                source.resume()
                return source
            }
            defer { sources.forEach { $0.cancel() } }
            let outcome: ApprovalOutcome
            do {
                outcome = try await asking.value
            } catch is CancellationError {
                outcome = .cancelled
            }
            let deliveries = pushes.finish()
            if json {
                try printJSON(
                    RequestAnswer(
                        outcome: outcome.name, deviceId: outcome.device, requestId: deliveries?.alertID,
                        deliveries: deliveries))
            } else {
                output("The request \(outcome.sentence).")
            }
            switch outcome {
            case .approved: return
            case .denied: throw ExitCode(ApprovalExit.denied)
            case .expired, .cancelled: throw ExitCode(ApprovalExit.expired)
            }
        }
    }

    /// The question `approval request` asks, as `--from-file` reads it.
    struct Question: Decodable {
        var tool: String
        var summary: String
        var detail: String?
    }
}

extension SyncCLI.Approval.Request {
    /// The question from `--from-file` (a file, or standard input for `-`), or from the flags with
    /// a warning that they are visible to other local users.
    func readQuestion() async throws -> SyncCLI.Approval.Question {
        guard let fromFile else {
            printError(
                "Warning: the question was given as arguments, which every local user can read in the process list "
                    + "while this waits; next time write it as JSON to a file and pass --from-file PATH (or pipe it "
                    + "with --from-file -)")
            return .init(tool: tool ?? "", summary: summary ?? "", detail: detail)
        }
        let data: Data
        if fromFile == "-" {
            data = Data(await readStandardInput())
        } else {
            guard let read = FileManager.default.contents(atPath: fromFile) else {
                throw CLIError("cannot read \(fromFile); --from-file takes a readable file, or - for standard input")
            }
            data = read
        }
        do {
            return try JSONDecoder().decode(SyncCLI.Approval.Question.self, from: data)
        } catch {
            throw CLIError(
                #"the question must be a JSON object {"tool": "...", "summary": "...", "detail": "..."} ("detail" optional)"#
            )
        }
    }
}

extension SyncCLI.Approval {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract:
                "List the user's approval requests, newest first, with who answered and when (never what they ask).")
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Flag(help: "Only the pending ones another device asked (what this device may answer).") var pending = false
        @Flag(help: "Print the list as JSON.") var json = false

        func run() async throws {
            let context = try await ApprovalContext(storeOptions, remoteOptions)
            let rows = try await context.run { center in
                if pending { return try await center.pending() }
                return try await center.remote.approvalRequests(status: nil)
            }
            let summaries = rows.map { ApprovalSummary($0) }
            if json { return try printJSON(summaries) }
            if summaries.isEmpty { output(pending ? "No pending approval requests." : "No approval requests.") }
            // The decider by the name its device row carries, with its id.
            let names =
                summaries.contains { $0.decidedByDeviceId != nil }
                ? Dictionary(
                    ((try? await context.run { try await $0.remote.listDevices() }) ?? []).map {
                        ($0.id.canonical, $0.name)
                    }, uniquingKeysWith: { first, _ in first }) : [:]
            for item in summaries {
                let when = item.decidedAt.map(JSONStyle.date) ?? "?"
                let decided =
                    item.decidedByDeviceId.map { id in " by \(names[id].map { "\($0) (\(id))" } ?? id) at \(when)" }
                    ?? ""
                output("\(item.requestId)  session \(item.sessionId.prefix(8))  \(item.status)\(decided)")
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Open one approval request with this device's copy of the session secret and show what it asks.")
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Argument(help: "The request's id or an unambiguous prefix.") var request: String
        @Flag(help: "Print it as JSON.") var json = false

        func run() async throws {
            let context = try await ApprovalContext(storeOptions, remoteOptions)
            let row = try await context.request(request)
            let opened = try await context.run { try await $0.open(row) }
            if json {
                return try printJSON([
                    "requestId": row.id.canonical, "status": row.status(at: Date()).rawValue,
                    "tool": opened.content.tool,
                    "summary": opened.content.summary, "detail": opened.content.detail,
                ])
            }
            output(
                "Request \(row.id.canonical) (\(row.status(at: Date()).rawValue)), session \(row.sessionID.canonical)")
            output("Tool:    \(opened.content.tool)")
            output("Summary: \(opened.content.summary)")
            if !opened.content.detail.isEmpty { output("Detail:\n\(opened.content.detail)") }
        }
    }

    struct Answer: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "answer", abstract: "Approve or deny a request this device can open; the first answer wins.",
            discussion: """
                The answer is signed with this device's signing key; the asking desktop checks it. Exit \
                status: 0 the answer was recorded; 1 it was not (another answer came first, the question \
                expired or was cancelled; with --json too, after printing the remote's answer).
                """)
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Argument(help: "The request's id or an unambiguous prefix.") var request: String
        @Argument(help: "approve or deny.") var verdict: ApprovalVerdict
        @Flag(help: "Print the remote's answer as JSON.") var json = false

        func run() async throws {
            let context = try await ApprovalContext(storeOptions, remoteOptions)
            let row = try await context.request(request)
            let answered = try await context.run { center in
                try await center.answer(try await center.open(row), verdict: verdict)
            }
            // One exit-code rule with or without --json: 1 when the answer was not recorded.
            if json {
                try printJSON(answered)
                if !answered.accepted { throw ExitCode(1) }
                return
            }
            if answered.accepted {
                output("Answered \(verdict.rawValue) for \(row.id.canonical).")
            } else {
                let by = answered.decidedBy.map { " by \($0.canonical)" } ?? ""
                output("Not recorded: the request was already \(answered.status.rawValue)\(by).")
                throw ExitCode(1)
            }
        }
    }

    struct AnswerPush: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "answer-push",
            abstract: "Answer an approval from its push payload, as an app's notification action does.",
            discussion: """
                Runs `ApprovalCenter.answerNotification` on the payload (a JSON file, or - for standard \
                input): opens its sealed request (or fetches it by id when the payload had no room for \
                it), signs the decision with this device's key and the trust-log head it pinned, and \
                records it, in at most two requests, within --deadline. No trust table is fetched: the \
                desktop that asked verifies the answer. Prints accepted, status, decidedBy and elapsedMs.
                Exit status: 0 recorded; 1 not recorded (another answer came first, or expired) or \
                refused (not an approval, expired, a body that does not open, past the deadline).
                """)
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Argument(help: "The payload's JSON file, or - for standard input.") var payload: String
        @Argument(help: "approve or deny.") var verdict: ApprovalVerdict
        @Option(help: "Seconds the answer may take (iOS gives an action about 30).") var deadline: Int = 20
        @Flag(help: "Print the answer as JSON.") var json = false

        func validate() throws {
            guard (1...300).contains(deadline) else { throw ValidationError("--deadline must be 1-300 seconds") }
        }

        struct Printed: Encodable {
            let accepted: Bool
            let status: String
            let decidedBy: UUID?
            let elapsedMs: Int
        }

        func run() async throws {
            let start = ContinuousClock.now
            let data: Data
            do {
                data =
                    payload == "-"
                    ? Data(await readStandardInput())
                    : try Data(contentsOf: URL(fileURLWithPath: payload))
            } catch {
                throw CLIError("cannot read \(payload): \((error as NSError).localizedDescription)")
            }
            let parsed: AlertPayload
            do { parsed = try AlertPayload(json: data) } catch { throw CLIError("\(error)") }
            let store = try await storeOptions.open()
            let remote = try await remoteOptions.remote(for: store)
            let answered: ApprovalAnswered
            do {
                answered = try await ApprovalCenter.answerNotification(
                    parsed, verdict: verdict, store: store, remote: remote, deadline: .seconds(deadline))
            } catch let error as AlertPayloadError {
                throw CLIError("\(error)")
            } catch let error as SyncError {
                printError("Error: \(HintFlags.apply(error.message))")
                throw ExitCode(TrustExit.isTrustFailure(error.code) ? TrustExit.identityChanged : 1)
            } catch CryptoError.authenticationFailure {
                throw CLIError("the payload's request does not open with this device's secret: nothing was answered")
            }
            let elapsed = ContinuousClock.now - start
            let milliseconds = Int(
                elapsed.components.seconds * 1_000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
            if json {
                try printJSON(
                    Printed(
                        accepted: answered.accepted, status: answered.status.rawValue, decidedBy: answered.decidedBy,
                        elapsedMs: milliseconds))
            } else if answered.accepted {
                output("Answered \(verdict.rawValue) in \(milliseconds) ms.")
            } else {
                let by = answered.decidedBy.map { " by \($0.canonical)" } ?? ""
                output("Not recorded: the request was already \(answered.status.rawValue)\(by).")
            }
            if !answered.accepted { throw ExitCode(1) }
        }
    }

    struct Clear: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "clear", abstract: "Clear an answered approval prompt on the user's other devices.",
            discussion: """
                Queues the silent payload {"aps":{"content-available":1},"clearApprovalId":..., \
                "reason":"approved_on_other_device"} for every valid device token but the excluded \
                one, once per request and token: asking again queues nothing new and answers the same.
                """
        )
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Argument(help: "The approval request's id (a lowercase UUID, as the request names it).") var requestID: String
        @Option(
            name: .customLong("exclude-token"), help: "A device token not to notify (the answering device's own).")
        var excludeToken: String?
        @Flag(help: "Print the design's response as JSON.") var json = false

        func validate() throws {
            // The remote takes an id in one spelling only (22023 otherwise): said here, first.
            guard UUID.parse(requestID)?.canonical == requestID else {
                throw ValidationError(
                    "the request id is a lowercase UUID, as the request names it (got another spelling)")
            }
        }

        func run() async throws {
            let context = try await CoordinationContext(storeOptions, remoteOptions)
            let result = try await context.run {
                try await $0.clearApproval(requestID: requestID, excludingToken: excludeToken)
            }
            if json { return try printJSON(result) }
            output(
                "Cleared approval \(requestID): \(result.devicesNotified) device\(result.devicesNotified == 1 ? "" : "s") notified."
            )
        }
    }
}
