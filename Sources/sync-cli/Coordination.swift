import ArgumentParser
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SyncModel

extension ClientType: ExpressibleByArgument {}
extension PushTokenType: ExpressibleByArgument {}
extension PushEnvironment: ExpressibleByArgument {}
extension RuntimeStatus.State: ExpressibleByArgument {}

/// Opens the store and its remote as a ``Coordinator``; remote refusals get a hint at the fix.
struct CoordinationContext {
    let store: DeviceStore
    let identity: DeviceIdentity
    let coordinator: Coordinator
    /// The remote the coordinator speaks to, with every other feature (questions, approvals).
    let remote: any CompleteRemote

    init(_ storeOptions: StoreOptions, _ remoteOptions: RemoteOptions) async throws {
        store = try await storeOptions.open()
        identity = try await store.requireIdentity()
        let remote = try await remoteOptions.remote(for: store)
        self.remote = remote
        coordinator = Coordinator(store: store, remote: remote)
    }

    /// Runs one remote call, turning the refusals a person can fix into a message that says how
    /// (`migration`: the project's migration that brings what the call needs).
    func run<T>(migration: String = "coordination", _ body: (Coordinator) async throws -> T) async throws -> T {
        do {
            return try await body(coordinator)
        } catch let error as RemoteStoreError where error.code == .missingFunction || error.code == .missingTable {
            throw CLIError(
                "the remote lacks what this needs (\(error.message)); apply the project's supabase/migrations/*_\(migration).sql to it"
            )
        } catch let error as RemoteStoreError where error.code == .permissionDenied {
            throw CLIError(
                "\(error.shown) (a device or session the remote does not know yet: run `sync-cli sync` on the device that owns it first)"
            )
        } catch let error as RemoteStoreError where error.code == .invalidValue {
            throw CLIError(error.shown)
        }
    }

    /// A session given as a full id, or an id or unambiguous prefix of one this store has.
    func session(_ text: String) async throws -> UUID {
        if let id = UUID.parse(text) { return id }
        return try resolveID(text, among: try await store.sessions().map(\.id), kind: "session")
    }
}

/// Prints a value as pretty, key-sorted JSON, ids in lowercase (``printJSONText(_:)``).
func printJSON<T: Encodable>(_ value: T) throws {
    printJSONText(try JSONStyle.text(value))
}

/// Prints JSON text, every string that is exactly a UUID in lowercase (``JSONStyle``). Every
/// `--json` output goes through here.
func printJSONText(_ json: String) {
    print(JSONStyle.lowercasingUUIDs(json))
    fflush(nil) // a watch's JSON lines reach a pipe one by one
}

extension SyncCLI.Session {
    struct Activity: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "activity", abstract: "Claim a session for this device (the one driving it now).",
            discussion: """
                When another device held the session, it is handed off: every valid device push \
                token of that device gets the silent handoff payload in the push outbox.
                """
        )
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Argument(help: "The session: a full id, or an id or unambiguous prefix of one in this store.") var session:
            String
        @Option(help: "Claim as this client type (ios, desktop, web). Default: what this device is.") var client:
            ClientType?
        @Flag(help: "Print the function's answer as JSON.") var json = false

        func run() async throws {
            let context = try await CoordinationContext(storeOptions, remoteOptions)
            let id = try await context.session(session)
            let claim = try await context.run { try await $0.claim(sessionID: id, clientType: client) }
            if json { return try printJSON(claim) }
            let as_ = (client ?? ClientType(context.identity.deviceType)).rawValue
            if claim.handedOff {
                output(
                    "Claimed session \(id.canonical) as \(as_): handed off from device \(claim.previousDeviceID?.canonical ?? "?") (\(claim.previousClientType ?? "?")); \(claim.notified) handoff push\(claim.notified == 1 ? "" : "es") queued."
                )
            } else {
                output("Claimed session \(id.canonical) as \(as_): not handed off (no other device held it).")
            }
        }
    }

    struct Touch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "touch",
            abstract: "Keep this device's claim on a session fresh (as an app does every 30 s while it shows it).",
            discussion: """
                Refreshes the claim's time only when this device holds the session (`session activity` \
                claims it); never takes it over and queues nothing. While the claim is fresh (60 s), \
                the user's other devices with quiet-while-active on get no task alerts for the session \
                and its approvals without sound.
                """)
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Argument(help: "The session: a full id, or an id or unambiguous prefix of one in this store.") var session:
            String
        @Flag(help: "Print the answer as JSON.") var json = false

        func run() async throws {
            let context = try await CoordinationContext(storeOptions, remoteOptions)
            let id = try await context.session(session)
            let holder = try await context.run(migration: "notifications_2") { try await $0.touch(sessionID: id) }
            if json { return try printJSON(["holder": holder]) }
            output(
                holder
                    ? "Session \(id.canonical): this device holds it; its claim is fresh for 60 s."
                    : "Session \(id.canonical): another device holds it (or none does); nothing changed. Claim it with `sync-cli session activity`."
            )
        }
    }

    struct RuntimeState: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Report a session's live status (on the desktop that runs it); phones get it at their next pull."
        )
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var remoteOptions: RemoteOptions
        @Argument(help: "The session's id or an unambiguous prefix.") var session: String
        @Argument(help: "running, idle, waiting, not-available or error.") var state: RuntimeStatus.State
        @Option(
            help:
                "A message to show with the status, passed through the lock-screen sanitiser (secrets redacted, at most \(LockScreenText.maxLength) characters). Status text is metadata: the server stores it in clear."
        ) var message: String?
        @Option(
            help:
                "What the session is doing now, for its live activity (passed through the lock-screen sanitiser; metadata the server sees)."
        )
        var operation: String?
        @Option(help: "Todo progress as COMPLETED/TOTAL, e.g. 3/7.") var todo: String?
        @Option(help: "The todo task in progress (with --todo; passed through the lock-screen sanitiser).")
        var task: String?
        @Flag(help: "Print the stored runtime_status and runtime_status_updated_at as JSON.") var json = false

        func validate() throws {
            if task != nil, todo == nil { throw ValidationError("--task needs --todo COMPLETED/TOTAL") }
            if let todo, Self.progress(todo, task: nil) == nil {
                throw ValidationError("--todo must be COMPLETED/TOTAL with whole numbers from 0 to 100000, e.g. 3/7")
            }
        }

        static func progress(_ text: String, task: String?) -> RuntimeStatus.TodoProgress? {
            let parts = text.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 2, let completed = Int(parts[0]), let total = Int(parts[1]),
                (0...RuntimeStatus.TodoProgress.maxCount).contains(completed),
                (0...RuntimeStatus.TodoProgress.maxCount).contains(total)
            else { return nil }
            return RuntimeStatus.TodoProgress(completed: completed, total: total, currentTask: task)
        }

        func run() async throws {
            let context = try await CoordinationContext(storeOptions, remoteOptions)
            let id = try resolveID(session, among: try await context.store.sessions().map(\.id), kind: "session")
            let progress = todo.flatMap { Self.progress($0, task: task) }
            let status = try await context.run {
                try await $0.reportRuntimeStatus(
                    sessionID: id, state: state, errorMessage: message, currentOperation: operation,
                    todoProgress: progress)
            }
            if json {
                // The column's wire object, its keys in the one style (`updatedAtMs`: Unix ms, as stored).
                let wire = (try? JSONSerialization.jsonObject(with: Data(status.jsonText.utf8))) ?? [:]
                let object: [String: Any] = [
                    "runtimeStatus": restyledKeys(wire),
                    "runtimeStatusUpdatedAt": status.reportedAt.map(JSONStyle.date) ?? NSNull(),
                ]
                let data = try JSONSerialization.data(
                    withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
                return printJSONText(String(decoding: data, as: UTF8.self))
            }
            var line = "Session \(id.canonical) is \(status.state.rawValue)"
            if let message = status.errorMessage { line += ": \(message.escapingControlCharacters)" }
            if let operation = status.currentOperation { line += "; doing: \(operation)" }
            if let todo = status.todoProgress {
                line += "; todo \(todo.completed)/\(todo.total)\(todo.currentTask.map { " (\($0))" } ?? "")"
            }
            output(line + " (reported to the remote).")
        }
    }
}

extension SyncCLI {
    struct PushToken: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "push-token",
            abstract: "This device's push tokens on the remote.",
            subcommands: [Register.self, Invalidate.self, Status.self]
        )

        struct Register: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "register",
                abstract: "Register a push token for this device (moving it here if another device or user had it).",
                discussion: "With --previous, that token stops being valid: the device keeps exactly one."
            )
            @OptionGroup var storeOptions: StoreOptions
            @OptionGroup var remoteOptions: RemoteOptions
            @Argument(help: "The token (1 to 512 characters of A-Z a-z 0-9 . _ : -).") var token: String
            @Option(help: "device or live_activity.") var type: PushTokenType = .device
            @Option(help: "development or production.") var environment: PushEnvironment = .production
            @Option(help: "The platform (lowercase letters).") var platform = "ios"
            @Option(
                name: .customLong("activity-id"), help: "The live activity (live_activity tokens only; required there)."
            ) var activityID: String?
            @Option(
                name: .customLong("session-id"),
                help: "The session the live activity shows (live_activity tokens only; required there).") var sessionID:
                String?
            @Option(help: "The token this one replaces; it becomes invalid.") var previous: String?
            @Flag(help: "Print the function's answer as JSON.") var json = false

            func validate() throws {
                if type == .liveActivity, activityID == nil || sessionID == nil {
                    throw ValidationError("a live_activity token needs --activity-id and --session-id")
                }
                if type == .device, activityID != nil || sessionID != nil {
                    throw ValidationError("--activity-id and --session-id apply to live_activity tokens only")
                }
            }

            func run() async throws {
                let context = try await CoordinationContext(storeOptions, remoteOptions)
                var session: UUID?
                if let sessionID { session = try await context.session(sessionID) }
                let registered = try await context.run {
                    try await $0.registerPushToken(
                        token, type: type, environment: environment, platform: platform,
                        activityID: activityID, sessionID: session, previousToken: previous)
                }
                if json { return try printJSON(registered) }
                var line =
                    "Registered \(type.rawValue) token \(PushTokenText.hint(token)) for this device (\(environment.rawValue))"
                if registered.previousInvalidated, let previous {
                    line += "; \(PushTokenText.hint(previous)) is no longer valid"
                }
                output(line + ".")
            }
        }

        struct Invalidate: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "invalidate", abstract: "Mark one of your push tokens invalid.")
            @OptionGroup var storeOptions: StoreOptions
            @OptionGroup var remoteOptions: RemoteOptions
            @Argument(help: "The token.") var token: String
            @Flag(help: "Print the outcome as JSON ({\"invalidated\": true}).") var json = false

            func run() async throws {
                let context = try await CoordinationContext(storeOptions, remoteOptions)
                guard try await context.run({ try await $0.invalidatePushToken(token) }) else {
                    throw CLIError(
                        "you have no push token \(PushTokenText.hint(token)); register it first (`sync-cli push-token register`)"
                    )
                }
                if json { return try printJSON(["invalidated": true]) }
                output("Push token \(PushTokenText.hint(token)) is no longer valid.")
            }
        }

        struct Status: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "status",
                abstract: "Whether this device has a valid device token, and its live-activity tokens.")
            @OptionGroup var storeOptions: StoreOptions
            @OptionGroup var remoteOptions: RemoteOptions
            @Flag(help: "Print the design's status object as JSON.") var json = false

            func run() async throws {
                let context = try await CoordinationContext(storeOptions, remoteOptions)
                var status = try await context.run { try await $0.pushTokenStatus() }
                // The remote's timestamp text, in the one style.
                for index in status.liveActivityTokens.indices {
                    let text = status.liveActivityTokens[index].registeredAt
                    status.liveActivityTokens[index].registeredAt = Timestamp.parse(text).map(JSONStyle.date) ?? text
                }
                if json { return try printJSON(status) }
                output("Device token     \(status.deviceTokenRegistered ? "registered" : "none")")
                output(
                    "Live activities  \(status.liveActivityTokens.isEmpty ? "none" : String(status.liveActivityTokens.count))"
                )
                for live in status.liveActivityTokens {
                    output("  \(live.activityId)  session \(live.sessionId.canonical)  registered \(live.registeredAt)")
                }
            }
        }
    }

    struct Outbox: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "outbox", abstract: "What is queued for delivery to the user's devices.",
            discussion:
                "A backend delivery worker sends these to APNs and marks them delivered; this engine never does.",
            subcommands: [List.self, Deliveries.self]
        )

        struct Deliveries: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "deliveries",
                abstract: "Where an approval's alert went, device by device, and why where it did not.",
                discussion: """
                    One line: delivered to, sent to, queued for, failed:, dropped:, not reachable:, off: \
                    (each with its reason). With --json: alertId, kind, final (nothing can change any \
                    more) and devices [{deviceId, deviceName, deviceType, outcome, reason, apnsReason, \
                    attempts, updatedAt}]. Never a token.
                    """)
            @OptionGroup var storeOptions: StoreOptions
            @OptionGroup var remoteOptions: RemoteOptions
            @Argument(help: "The approval request's id.") var alert: String
            @Flag(help: "Print the answer as JSON.") var json = false

            func run() async throws {
                guard let id = UUID.parse(alert) else { throw UsageError("\(alert) is not an approval's id (a UUID)") }
                let store = try await storeOptions.open()
                let center = ApprovalCenter(local: store, remote: try await remoteOptions.remote(for: store))
                let deliveries: AlertDeliveries
                do {
                    deliveries = try await center.deliveries(of: id)
                } catch let error as RemoteStoreError where error.code == .permissionDenied {
                    throw CLIError("no approval \(id.canonical) of this user")
                }
                if json { return try printJSON(deliveries) }
                output("Push: \(deliveries.summary)\(deliveries.isFinal ? "." : " (not final yet).")")
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "list",
                abstract: "List the push outbox, newest first (tokens shown by their last characters).")
            @OptionGroup var storeOptions: StoreOptions
            @OptionGroup var remoteOptions: RemoteOptions
            @Option(help: "At most this many rows (1 to 10000).") var limit = 50
            @Flag(help: "Print the rows as JSON (tokens as hints too).") var json = false

            func validate() throws {
                guard (1...10_000).contains(limit) else { throw ValidationError("--limit must be between 1 and 10000") }
            }

            func run() async throws {
                let context = try await CoordinationContext(storeOptions, remoteOptions)
                let entries = try await context.run { try await $0.outbox(limit: limit) }
                if json {
                    let rows: [[String: Any]] = entries.map { entry in
                        // The payload is APNs' own JSON: its keys stay as they are.
                        var row: [String: Any] = [
                            "id": entry.id, "token": entry.tokenHint, "pushType": entry.pushType,
                            "priority": entry.priority,
                            "attempts": entry.attempts,
                            "payload": (try? JSONSerialization.jsonObject(with: Data(entry.payload.utf8)))
                                ?? entry.payload,
                        ]
                        row["deviceId"] = entry.deviceID?.canonical ?? NSNull()
                        row["collapseId"] = entry.collapseID ?? NSNull()
                        row["createdAt"] = entry.createdAt.map(JSONStyle.date) ?? NSNull()
                        row["deliveredAt"] = entry.deliveredAt.map(JSONStyle.date) ?? NSNull()
                        row["lastError"] = entry.lastError ?? NSNull()
                        row["notBefore"] = entry.notBefore.map(JSONStyle.date) ?? NSNull()
                        return row
                    }
                    let data = try JSONSerialization.data(
                        withJSONObject: rows, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
                    return printJSONText(String(decoding: data, as: UTF8.self))
                }
                if entries.isEmpty { return output("The outbox is empty.") }
                for entry in entries {
                    let state =
                        entry.deliveredAt.map { "delivered \(JSONStyle.date($0))" }
                        ?? "pending (\(entry.attempts) attempts)"
                    output(
                        "#\(entry.id)  \(entry.pushType)/\(entry.priority)  to \(entry.deviceID?.canonical ?? "?") \(entry.tokenHint)  \(state)"
                    )
                    output("    \(entry.payload)")
                }
            }
        }
    }
}

/// A JSON object of another style (a column's wire format) with its keys in ``JSONStyle``'s.
func restyledKeys(_ value: Any) -> Any {
    switch value {
    case let object as [String: Any]:
        Dictionary(
            object.map { (JSONStyle.key($0.key), restyledKeys($0.value)) }, uniquingKeysWith: { first, _ in first })
    case let array as [Any]: array.map(restyledKeys)
    default: value
    }
}
