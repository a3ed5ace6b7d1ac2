import ArgumentParser
import DeviceTrust
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel

extension SyncCLI {
    struct Question: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "question",
            abstract: "Ask the user a question on their other devices, sealed so the server cannot read it.",
            discussion: """
                An agent blocked on a question asks it from the desktop running its session; every other \
                trusted device with a push token gets an alert ("Your agent has a question", never the \
                question itself). The answer travels in the session's own channel: close the question once \
                it came (or cancel it), and the other devices' prompts clear.
                """,
            subcommands: [Ask.self, Close.self, Show.self, Answer.self])
    }
}

/// The store and the session alerts for one `question` command.
struct QuestionCommandContext {
    let store: DeviceStore
    let alerts: SessionAlerts

    init(_ storeOptions: StoreOptions, _ remoteOptions: RemoteOptions) async throws {
        store = try await storeOptions.open()
        alerts = SessionAlerts(local: store, remote: try await remoteOptions.remote(for: store))
    }

    /// A question given as its id or an unambiguous prefix of one of the user's 500 newest.
    func question(_ text: String) async throws -> UUID {
        if let id = UUID.parse(text) { return id }
        let recent = try await run { try await $0.recentQuestions() }
        return try resolveID(text, among: recent.map(\.id), kind: "question")
    }

    /// Runs `body`, turning the failures a person can fix into a message that says how.
    func run<T>(_ body: (SessionAlerts) async throws -> T) async throws -> T {
        do {
            return try await body(alerts)
        } catch let error as SyncError {
            throw CLIError(error.message)
        } catch let error as RemoteStoreError where error.code == .missingFunction || error.code == .missingTable {
            throw CLIError(
                "the remote has no questions; apply the project's supabase/migrations/*_notifications_2.sql to it")
        } catch let error as RemoteStoreError where error.code == .permissionDenied {
            throw CLIError(error.shown)
        } catch CryptoError.invalidApprovalContent {
            throw CLIError(
                "the question is outside the limits: 1-2,000 characters, no control characters but new lines and "
                    + "tabs, 4,096 bytes in all; --timeout \(SessionAlerts.questionTimeoutSeconds.lowerBound)-"
                    + "\(SessionAlerts.questionTimeoutSeconds.upperBound) seconds")
        } catch CryptoError.authenticationFailure {
            throw CLIError("the question does not open with this device's copy of the session's secret")
        }
    }
}

extension SyncCLI.Question {
    struct Ask: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ask",
            abstract: "Ask a question about a session this desktop runs; prints where its alert went.",
            discussion: """
                The text is read from --from-file (a file, or - for standard input) or --text. --text is \
                readable by every local user in the process list while the command runs; prefer \
                --from-file. Prints the question's id, then "Push: ..." (delivered to, queued for, not \
                reachable: ...), and on standard error a warning when no device can be reached by push.
                """)
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Argument(help: "The session's id or an unambiguous prefix.") var session: String
        @Option(help: "The question (1-2,000 characters); visible in the process list.") var text: String?
        @Option(
            name: .customLong("from-file"),
            help: ArgumentHelp("Read the question's text from this file; - reads standard input.", valueName: "path"))
        var fromFile: String?
        @Option(
            help: """
                Seconds the question stands \
                (\(SessionAlerts.questionTimeoutSeconds.lowerBound)-\(SessionAlerts.questionTimeoutSeconds.upperBound)).
                """) var timeout = 3_600
        @Flag(help: "Print the answer as JSON.") var json = false

        func validate() throws {
            let window = SessionAlerts.questionTimeoutSeconds
            guard window.contains(Int64(timeout)) else {
                throw ValidationError("--timeout must be \(window.lowerBound) to \(window.upperBound) seconds")
            }
            guard (text == nil) != (fromFile == nil) else {
                throw ValidationError("give the question with --text or --from-file PATH (- for standard input)")
            }
        }

        func run() async throws {
            let question = try await readText()
            let context = try await QuestionCommandContext(storeOptions, remoteOptions)
            let id = try resolveID(session, among: try await context.store.sessions().map(\.id), kind: "session")
            let asked = try await context.run {
                try await $0.ask(session: id, text: question, timeout: .seconds(timeout))
            }
            let deliveries = asked.deliveries
            if let deliveries, !deliveries.reachesSomeone { printError(PushLines.warning) }
            if json {
                return try printJSON(
                    Asked(
                        questionId: asked.questionId,
                        expiresAt: Date(timeIntervalSince1970: TimeInterval(asked.expiresAt)),
                        devicesNotified: asked.devicesNotified, deliveries: deliveries))
            }
            let until = Date(timeIntervalSince1970: TimeInterval(asked.expiresAt))
            output("Asked question \(asked.questionId.canonical); it stands until \(JSONStyle.date(until)).")
            if let deliveries { output("Push: \(deliveries.summary).") }
        }

        func readText() async throws -> String {
            if let text {
                printError(
                    "Warning: the question was given as an argument, which every local user can read in the process "
                        + "list; next time pass it with --from-file PATH (or --from-file - on standard input)")
                return text
            }
            let path = fromFile ?? "-"
            let data =
                path == "-"
                ? Data(await readStandardInput()) : FileManager.default.contents(atPath: path)
            guard let data, let text = String(data: data, encoding: .utf8) else {
                throw CLIError(
                    "cannot read \(path) as UTF-8; --from-file takes a readable file, or - for standard input")
            }
            // One trailing newline (an editor's, echo's) is not part of the question.
            return text.hasSuffix("\n") ? String(text.dropLast()) : text
        }

        struct Asked: Encodable {
            var questionId: UUID
            var expiresAt: Date
            var devicesNotified: Int
            var deliveries: AlertDeliveries?
        }
    }

    struct Close: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "close", abstract: "Close a question: answered (the default) or, with --cancelled, given up.",
            discussion: "The other devices' prompts clear. A question already closed or expired changes nothing.")
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Argument(help: "The question's id, or an unambiguous prefix of it.") var question: String
        @Flag(help: "The agent gave up on the answer.") var cancelled = false
        @Flag(help: "Print the answer as JSON.") var json = false

        func run() async throws {
            let context = try await QuestionCommandContext(storeOptions, remoteOptions)
            let id = try await context.question(question)
            let closed = try await context.run { try await $0.close(question: id, answered: !cancelled) }
            if json { return try printJSON(closed) }
            output(
                closed.closed
                    ? "Question \(id.canonical) \(closed.status.rawValue); \(closed.devicesNotified) device\(closed.devicesNotified == 1 ? "" : "s") told to clear it."
                    : "Question \(id.canonical) was already \(closed.status.rawValue); nothing changed.")
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Open a question with this device's copy of the session's secret and print it.")
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Argument(help: "The question's id, or an unambiguous prefix of it.") var question: String
        @Flag(help: "Print it as JSON.") var json = false

        func run() async throws {
            let context = try await QuestionCommandContext(storeOptions, remoteOptions)
            let id = try await context.question(question)
            let opened = try await context.run { try await $0.open(question: id) }
            let row = opened.question
            let status = row.status(at: Date())
            if json {
                return try printJSON(
                    Shown(
                        questionId: row.id, sessionId: row.sessionID, requesterDeviceId: row.requesterDeviceID,
                        status: status.rawValue, expiresAt: Date(timeIntervalSince1970: TimeInterval(row.expiresAt)),
                        createdAt: row.createdAt,
                        closedAt: row.closedAt, text: opened.text))
            }
            output("Question \(row.id.canonical) (\(status.rawValue)), session \(row.sessionID.canonical):")
            output(opened.text)
        }

        struct Shown: Encodable {
            var questionId: UUID
            var sessionId: UUID
            var requesterDeviceId: UUID
            var status: String
            var expiresAt: Date
            var createdAt: Date?
            var closedAt: Date?
            var text: String
        }
    }
}

extension SyncCLI.Question {
    struct Answer: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "answer",
            abstract: "Answer a multiple-choice question (an agent's AskUserQuestion) from this device.",
            discussion: """
                Give one choice per question, in order: an option's number as `question show` prints it \
                (1 for the first), or several joined by commas where the question takes several \
                ("1,3"). The choice is signed with this device's key and sealed under the session's \
                secret: the server sees neither; the desktop that asked verifies it.
                """)
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Argument(help: "The question's id, or an unambiguous prefix of it.") var question: String
        @Argument(help: "One choice per question: option numbers, several joined by commas.") var choices: [String]
        @Flag(help: "Print the answer as JSON.") var json = false

        func run() async throws {
            let indexes = try choices.map { choice in
                try choice.split(separator: ",").map { part -> Int in
                    guard let number = Int(part.trimmingCharacters(in: .whitespaces)), number >= 1 else {
                        throw UsageError(
                            "\(choice) is not a choice: give option numbers from 1, several joined by commas")
                    }
                    return number - 1
                }
            }
            let context = try await QuestionCommandContext(storeOptions, remoteOptions)
            let id = try await context.question(question)
            let answered = try await context.run { alerts in
                let opened = try await alerts.open(question: id)
                guard opened.content.choices != nil else {
                    throw CLIError("question \(id.canonical) has no choices: it is answered in the session itself")
                }
                do {
                    return try await alerts.answer(opened, choices: indexes)
                } catch let error as DeviceTrustError {
                    throw CLIError("\(error.description): `sync-cli question show \(id.canonical)` lists the options")
                }
            }
            if json { return try printJSON(answered) }
            output(
                answered.accepted
                    ? "Answered question \(id.canonical); the desktop that asked verifies the answer."
                    : "Question \(id.canonical) is \(answered.status.rawValue); the answer was not recorded.")
        }
    }
}
