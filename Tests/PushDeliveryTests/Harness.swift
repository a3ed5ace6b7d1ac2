import APNsImitation
import Crypto
import Foundation
import Logging
import PostgresNIO
import PushDelivery
import TestStack
import Testing

/// Every test that runs a worker on the stack: one at a time, since a worker claims every due
/// row of `sync_push`.
@Suite(.serialized, .enabled(if: PushWorld.available, "needs the stack (make test)"))
struct PushStackTests {}

/// One test's world: the stack's push database (`sync_push`, where only these tests queue),
/// an APNs imitation on loopback, a provider key on disk (0600), and rows of its own user.
final class PushWorld: Sendable {
    static let keyID = "ABC123DEFG"
    static let teamID = "TEAM123456"
    static let bundleID = "com.example.agentsync"

    let directory: URL
    let keyPath: String
    let keyPEM: String
    let imitation: APNsImitation
    /// Superuser access to sync_push, for setting up and checking.
    let admin: PostgresClient
    let adminTask: Task<Void, Never>
    let workerDatabase: DatabaseSettings
    let user = UUID()
    let device = UUID()
    var userID: String { user.uuidString.lowercased() }
    let logger: Logger

    static var available: Bool {
        !StackEnvironment.skipped && ProcessInfo.processInfo.environment["SYNC_STACK_PUSH_DATABASE_URL"] != nil
    }

    init() async throws {
        guard let url = ProcessInfo.processInfo.environment["SYNC_STACK_PUSH_DATABASE_URL"] else {
            throw StackEnvironment.Missing()
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("push-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let key = P256.Signing.PrivateKey()
        keyPEM = key.pemRepresentation
        keyPath = directory.appendingPathComponent("AuthKey.p8").path
        _ = FileManager.default.createFile(
            atPath: keyPath, contents: Data(keyPEM.utf8), attributes: [.posixPermissions: 0o600])
        imitation = try await APNsImitation.start(
            options: .init(keyID: Self.keyID, teamID: Self.teamID, bundleID: Self.bundleID, publicKey: key.publicKey),
            directory: directory)
        workerDatabase = try DatabaseSettings(url: url)
        var adminSettings = workerDatabase
        adminSettings.username = "postgres"
        admin = PostgresClient(configuration: adminSettings.clientConfiguration)
        let admin = admin
        adminTask = Task { await admin.run() }
        var logger = Logger(label: "push-test")
        logger.logLevel = .error
        self.logger = logger
        // Rows an earlier test left pending would go to this test's imitation: close them.
        try await sql(
            "UPDATE public.push_outbox SET failed_at = now(), last_error = 'closed by a later test' WHERE delivered_at IS NULL AND failed_at IS NULL"
        )
        try await sql(
            "INSERT INTO public.devices (id, user_id, name, device_type) VALUES ('\(device.uuidString.lowercased())', '\(user.uuidString.lowercased())', 'phone', 'ios-phone')"
        )
    }

    /// Ends the world, and its pending approvals and questions with it: one left pending expires
    /// later, and the worker of whichever test runs `expire_approvals()` then queues its clearing
    /// push and sends it to that test's imitation (the likely source of the 8 apns-ids of no row
    /// of its own that ProcessTests once counted; `init` closes only rows already queued).
    func close() async {
        try? await sql("DELETE FROM public.approval_requests WHERE user_id = '\(userID)'")
        try? await sql("DELETE FROM public.agent_questions WHERE user_id = '\(userID)'")
        try? await imitation.shutdown()
        adminTask.cancel()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs a statement as the superuser.
    func sql(_ text: String) async throws {
        try await admin.query(PostgresQuery(unsafeSQL: text), logger: logger)
    }

    /// Runs a query (or, with `returning`, a statement with RETURNING) as the superuser; each
    /// row is its columns as text by name (a NULL column is absent).
    func rows(_ text: String, returning: Bool = false) async throws -> [[String: String]] {
        let wrapped =
            returning
            ? "WITH q AS (\(text)) SELECT (SELECT coalesce(jsonb_object_agg(e.key, e.value), '{}') FROM jsonb_each_text(to_jsonb(q)) e)::text FROM q"
            : "SELECT (SELECT coalesce(jsonb_object_agg(e.key, e.value), '{}') FROM jsonb_each_text(to_jsonb(q)) e)::text FROM (\(text)) q"
        var rows: [[String: String]] = []
        for try await json in try await admin.query(PostgresQuery(unsafeSQL: wrapped), logger: logger).decode(
            String.self)
        {
            let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] ?? [:]
            rows.append(object.compactMapValues { $0 as? String })
        }
        return rows
    }

    /// The `apns_id`s of this world's outbox rows: a test counts only these (the worker serves
    /// every due row of `sync_push`, another world's too).
    func apnsIDs() async throws -> Set<String> {
        Set(
            try await rows("SELECT apns_id::text AS a FROM public.push_outbox WHERE user_id = '\(userID)'").compactMap {
                $0["a"]
            })
    }

    /// The `apns_id`s of these outbox rows.
    func apnsIDs(ofRows ids: [Int64]) async throws -> Set<String> {
        guard !ids.isEmpty else { return [] }
        let list = ids.map(String.init).joined(separator: ",")
        return Set(
            try await rows("SELECT apns_id::text AS a FROM public.push_outbox WHERE id IN (\(list))").compactMap {
                $0["a"]
            })
    }

    func count(_ text: String) async throws -> Int {
        Int(try await rows("SELECT (\(text))::text AS n").first?["n"] ?? "0") ?? 0
    }

    /// A new device token (64 hex digits) registered to this world's user and device.
    func token(environment: String = "production", liveActivity: Bool = false) async throws -> String {
        let token = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        if liveActivity {
            let session = UUID().uuidString.lowercased()
            let repository = UUID().uuidString.lowercased()
            try await sql(
                """
                INSERT INTO public.repositories (id, user_id, device_id, name, local_path)
                    VALUES ('\(repository)', '\(user.uuidString.lowercased())', '\(device.uuidString.lowercased())', 'r', '/r');
                """)
            try await sql(
                """
                INSERT INTO public.agent_coding_sessions (id, user_id, device_id, repository_id, session_started_at)
                    VALUES ('\(session)', '\(user.uuidString.lowercased())', '\(device.uuidString.lowercased())', '\(repository)', now())
                """)
            try await sql(
                """
                INSERT INTO public.push_tokens (user_id, device_id, token, token_type, activity_id, session_id, environment)
                VALUES ('\(user.uuidString.lowercased())', '\(device.uuidString.lowercased())', '\(token)', 'live_activity', 'a1', '\(session)', '\(environment)')
                """)
        } else {
            try await sql(
                """
                INSERT INTO public.push_tokens (user_id, device_id, token, environment)
                VALUES ('\(user.uuidString.lowercased())', '\(device.uuidString.lowercased())', '\(token)', '\(environment)')
                """)
        }
        return token
    }

    /// Queues `count` rows for `token`; returns their ids in order.
    @discardableResult
    func enqueue(
        token: String, count: Int = 1, type: String = "background", priority: Int = 5, collapseID: String? = nil,
        payload: String = #"{"aps": {"content-available": 1}, "n": 0}"#, notBefore: String = "now()"
    ) async throws -> [Int64] {
        let collapse = collapseID.map { "'\($0.replacingOccurrences(of: "'", with: "''"))'" } ?? "NULL"
        let rows = try await rows(
            """
            INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, collapse_id, payload, not_before)
            SELECT '\(user.uuidString.lowercased())', '\(device.uuidString.lowercased())', '\(token)', '\(type)', \(priority),
                   \(collapse), jsonb_set('\(payload.replacingOccurrences(of: "'", with: "''"))'::jsonb, '{n}', to_jsonb(g)), \(notBefore)
            FROM generate_series(1, \(count)) g
            RETURNING id
            """, returning: true)
        return rows.compactMap { $0["id"].flatMap { Int64($0) } }
    }

    /// The worker's configuration against this world's imitation and database.
    func configuration(_ change: (inout PushWorkerConfiguration) -> Void = { _ in }) -> PushWorkerConfiguration {
        var configuration = PushWorkerConfiguration(
            keyPath: keyPath, keyID: Self.keyID, teamID: Self.teamID, bundleID: Self.bundleID, environment: .both,
            database: workerDatabase)
        configuration.baseURLOverride = imitation.baseURL
        configuration.caFile = imitation.certificateFile
        configuration.backoffBase = .milliseconds(50)
        configuration.backoffMax = .seconds(1)
        // A loaded machine must not turn slow answers into retries. With APNs' own 10 s, the
        // token-refresh test's burst of 100 rows once ended with a row charged two attempts
        // while the whole suite ran (a send past the deadline is the likely cause: no answer
        // the imitation gives there is retried). Tests of the deadline set their own.
        configuration.requestDeadline = .seconds(30)
        configuration.pollInterval = .milliseconds(200)
        configuration.tokenBackoffBase = .seconds(2)
        configuration.lease = .seconds(30)
        change(&configuration)
        return configuration
    }

    /// The environment for a `push-worker` child process with `configuration`'s settings.
    func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["APNS_KEY_PATH"] = keyPath
        environment["APNS_KEY_ID"] = Self.keyID
        environment["APNS_TEAM_ID"] = Self.teamID
        environment["APNS_BUNDLE_ID"] = Self.bundleID
        environment["APNS_ENVIRONMENT"] = "both"
        environment["DATABASE_URL"] = ProcessInfo.processInfo.environment["SYNC_STACK_PUSH_DATABASE_URL"]
        environment["APNS_BASE_URL"] = imitation.baseURL.absoluteString
        environment["APNS_CA_FILE"] = imitation.certificateFile
        environment["PUSH_BACKOFF_BASE_SECONDS"] = "0.05"
        environment["PUSH_BACKOFF_MAX_SECONDS"] = "1"
        environment["PUSH_POLL_SECONDS"] = "0.2"
        for (name, value) in extra { environment[name] = value }
        return environment
    }

    /// Waits until `condition` holds (checked every 50 ms), at most `timeout`: a ceiling that only
    /// catches a hang (a loaded two-core machine took longer than 30 s where an idle one takes 1).
    func eventually(
        _ timeout: Duration = .seconds(120), _ condition: () async throws -> Bool
    ) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try await condition()
    }

    /// Whether every row of this world's user was delivered or closed, waiting while the worker
    /// keeps making progress (``Waiting/drained(stall:every:_:)``).
    func drained() async throws -> Bool {
        try await Waiting.drained { try await pending() }
    }

    func pending() async throws -> Int {
        try await count(
            "SELECT count(*) FROM public.push_outbox WHERE delivered_at IS NULL AND failed_at IS NULL AND user_id = '\(userID)'"
        )
    }
}

/// A worker running in this process, with its own database client.
final class RunningWorker: Sendable {
    let worker: PushWorker
    let client: PostgresClient
    let transport: HTTP2APNsTransport
    let task: Task<Void, any Error>
    let clientTask: Task<Void, Never>

    init(
        _ configuration: PushWorkerConfiguration, logger: Logger = Logger(label: "push-worker-test"),
        level: Logger.Level = .error
    ) throws {
        var logger = logger
        logger.logLevel = level
        client = PostgresClient(configuration: configuration.database.clientConfiguration)
        transport = try HTTP2APNsTransport(caFile: configuration.caFile)
        let tokens = ProviderTokens(
            key: try ProviderKey.load(path: configuration.keyPath), keyID: configuration.keyID,
            teamID: configuration.teamID, refresh: configuration.providerTokenRefresh)
        worker = PushWorker(
            configuration: configuration, client: client, transport: transport, tokens: tokens, logger: logger)
        let client = client
        clientTask = Task { await client.run() }
        let worker = worker
        task = Task { try await worker.run() }
    }

    /// Stops the worker (as SIGTERM would) and waits for it.
    func stop() async throws {
        worker.stop()
        try await task.value
        clientTask.cancel()
        try await transport.shutdown()
    }
}

/// `push-worker` as a child process (posix_spawn: see ``SpawnedChild``), its output in files.
final class WorkerProcess: @unchecked Sendable {
    static var path: String {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent(".build/debug"),
        ].map { $0.appendingPathComponent("push-worker").path }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates[0]
    }

    let child: SpawnedChild

    init(_ arguments: [String], environment: [String: String]) throws {
        child = try SpawnedChild(Self.path, arguments, environment: environment)
    }

    /// Runs to the end; returns the exit status and both outputs.
    static func run(
        _ arguments: [String], environment: [String: String]
    ) async throws -> (status: Int32, out: String, err: String) {
        let child = try WorkerProcess(arguments, environment: environment)
        let status = try await child.wait(timeout: Waiting.ceiling)
        return (status ?? -1, child.output, child.errors)
    }

    func signal(_ signal: Int32) { child.kill(signal) }

    /// The exit code (128 + the signal for one a signal ended), or nil if it is still running
    /// after `timeout`.
    func wait(timeout: Duration) async throws -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while try child.ended() == nil {
            guard ContinuousClock.now < deadline else { return nil }
            try await Task.sleep(for: .milliseconds(20))
        }
        return try child.ended().map(SpawnedChild.exitCode)
    }

    var output: String { child.output }
    var errors: String { child.errors }

    /// The rows whose request a worker's log says it gave up on and will send again (a
    /// transport fault or its deadline): `row=<id>` of each "request failed" warning.
    static func rowsGivenUp(in log: String) -> [Int64] {
        log.split(separator: "\n").filter { $0.contains("request failed; retrying") }.compactMap { line in
            guard let field = line.split(separator: " ").first(where: { $0.hasPrefix("row=") }) else { return nil }
            return Int64(field.dropFirst("row=".count))
        }
    }

    /// A worker still running when its test ends (one that failed early) is killed, not waited
    /// for.
    deinit { child.kill(SIGKILL) }
}

/// The rows whose request a worker in this process gave up on and sent again ("request failed;
/// retrying on a new connection": its deadline passed, or its connection went): what an
/// at-least-once worker may send twice (docs/push-worker.md). Other lines are dropped.
///
/// One instance serves every copy of its logger, and PostgresNIO sets metadata on its copies from
/// many tasks at once: so the handler keeps none of its own (a stored dictionary raced, and a run
/// crashed in its setter), and its level is fixed. It reads only each event's own metadata.
final class GivenUpRows: LogHandler, @unchecked Sendable {
    private let lock = NSLock()
    private var ids: [Int64] = []
    var metadata: Logger.Metadata {
        get { [:] }
        set {} // kept by no copy (see above)
    }
    var logLevel: Logger.Level {
        get { .warning }
        set {} // fixed: the handler only looks at warnings
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {} // kept by no copy (see above)
    }

    func log(event: LogEvent) {
        guard event.message.description.hasPrefix("request failed; retrying"),
            case .string(let row)? = event.metadata?["row"], let id = Int64(row)
        else { return }
        lock.withLock { ids.append(id) }
    }

    /// The rows given up so far.
    var rows: [Int64] { lock.withLock { ids } }

    /// A logger writing to this handler.
    var logger: Logger { Logger(label: "push-worker-test") { _ in self } }
}
