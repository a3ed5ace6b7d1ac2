import ArgumentParser
import Foundation
import Logging
import PostgresNIO
import PushDelivery
import ServiceLifecycle

/// `push-worker`: delivers `push_outbox` to APNs. Configuration comes from the environment
/// (docs/push-worker.md); a bad setting exits 2 naming the variable.
@main
struct PushWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push-worker",
        abstract: "Delivers the push outbox to APNs (token-based, HTTP/2).",
        discussion: """
            Reads APNS_KEY_PATH, APNS_KEY_ID, APNS_TEAM_ID, APNS_BUNDLE_ID, APNS_ENVIRONMENT and \
            DATABASE_URL from the environment (docs/push-worker.md lists the tunables). Exit codes: \
            0 done, 1 a failure while running, 2 a configuration error, 64 a usage error.
            """,
        subcommands: [Run.self, CheckConfig.self, SendOnce.self, Report.self]
    )
}

enum Setup {
    static func logger() -> Logger {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel =
                ProcessInfo.processInfo.environment["PUSH_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
            return handler
        }
        return Logger(label: "push-worker")
    }

    static func configuration() throws -> PushWorkerConfiguration {
        do {
            return try PushWorkerConfiguration.fromEnvironment()
        } catch {
            for problem in error.problems {
                FileHandle.standardError.write(Data("push-worker: configuration: \(problem)\n".utf8))
            }
            throw ExitCode(2)
        }
    }

    static func runtime(_ configuration: PushWorkerConfiguration, logger: Logger) throws -> PushWorkerRuntime {
        do {
            return try PushWorkerRuntime(configuration: configuration, logger: logger)
        } catch let error as ConfigurationError {
            FileHandle.standardError.write(Data("push-worker: configuration: \(error)\n".utf8))
            throw ExitCode(2)
        }
    }
}

extension Setup {
    /// With `PUSH_METRICS_PORT`, bootstraps swift-metrics over a Prometheus registry and serves
    /// it; a port that cannot be bound exits 2 naming the variable.
    static func metrics(_ configuration: PushWorkerConfiguration, logger: Logger) async throws -> MetricsEndpoint? {
        guard let settings = configuration.metrics else { return nil }
        let endpoint = MetricsEndpoint()
        endpoint.bootstrap()
        do {
            try await endpoint.start(settings)
        } catch {
            FileHandle.standardError.write(
                Data(
                    "push-worker: configuration: PUSH_METRICS_PORT cannot be served on \(settings.host):\(settings.port) (\(String(describing: error).prefix(120)))\n"
                        .utf8))
            throw ExitCode(2)
        }
        logger.info("metrics served", metadata: ["url": "\(settings.url)"])
        return endpoint
    }

    /// Runs `body` while the database client runs, and ends the client after it.
    static func withClient<T: Sendable>(
        _ runtime: PushWorkerRuntime, _ body: @escaping @Sendable () async -> T
    ) async -> T {
        await withTaskGroup(of: T?.self) { group in
            group.addTask {
                await runtime.client.run()
                return nil
            }
            group.addTask { await body() }
            var result: T?
            while result == nil, let next = await group.next() { result = next }
            group.cancelAll()
            return result!
        }
    }

    /// Nil when the outbox answers within the connect timeout; otherwise what is wrong, naming
    /// the database (never its password). The PostgreSQL client retries a refused or silent
    /// connection for ever: this is the bound.
    static func probe(_ runtime: PushWorkerRuntime, _ configuration: PushWorkerConfiguration) async -> String? {
        let timeout = configuration.databaseConnectTimeout
        return await withTaskGroup(of: String??.self) { group in
            group.addTask {
                do {
                    _ = try await runtime.worker.outbox.backlog()
                    return .some(nil)
                } catch {
                    return "unreachable or not migrated (\(String(describing: error).prefix(120)))"
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return Task.isCancelled
                    ? nil
                    : "no answer from \(configuration.database.host):\(configuration.database.port) within \(timeout.components.seconds) s (check DATABASE_URL and that PostgreSQL is reachable)"
            }
            var answer: String??
            while answer == nil, let next = await group.next() { answer = next }
            group.cancelAll()
            return answer ?? nil
        }
    }
}

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Deliver the outbox until SIGTERM or SIGINT (which drain within 10 seconds).")

    func run() async throws {
        let logger = Setup.logger()
        let configuration = try Setup.configuration()
        let runtime = try Setup.runtime(configuration, logger: logger)
        let endpoint = try await Setup.metrics(configuration, logger: logger)
        defer { if let endpoint { Task { await endpoint.stop() } } }
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: runtime.client), .init(service: runtime.worker)],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do {
            try await group.run()
        } catch {
            try? await runtime.transport.shutdown()
            logger.error("push worker failed", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }
        try? await runtime.transport.shutdown()
    }
}

struct CheckConfig: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Check the configuration, the key and the database, and print a summary (never a secret).")

    @Flag(help: "Print the summary as JSON.") var json = false

    func run() async throws {
        var logger = Logger(label: "push-worker")
        logger.logLevel = .critical
        let configuration = try Setup.configuration()
        let runtime = try Setup.runtime(configuration, logger: logger)
        let database = await Setup.withClient(runtime) { await Setup.probe(runtime, configuration) ?? "ok" }
        try? await runtime.transport.shutdown()
        let hosts = configuration.environment.served.map {
            configuration.baseURL(forTokenEnvironment: $0).absoluteString
        }
        let summary: [(String, String)] = [
            ("key", "loaded (id \(configuration.keyID))"), ("team", configuration.teamID),
            ("bundle", configuration.bundleID), ("environment", configuration.environment.rawValue),
            ("apns", hosts.joined(separator: " ")), ("database", configuration.database.description),
            ("outbox", database), ("metrics", configuration.metrics?.url ?? "off (PUSH_METRICS_PORT not set)"),
        ]
        if json {
            let object = Dictionary(uniqueKeysWithValues: summary)
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            print(String(decoding: data, as: UTF8.self))
        } else {
            for (name, value) in summary { print("\(name.padding(toLength: 12, withPad: " ", startingAt: 0))\(value)") }
        }
        if database != "ok" { throw ExitCode(1) }
    }
}

/// The database did not answer `send-once`'s probe.
struct DatabaseUnreachable: Error, CustomStringConvertible {
    let problem: String
    var description: String { "the database: \(problem)" }
}

struct SendOnce: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send-once", abstract: "Send one outbox row now (due or not) and print what APNs answered.")

    @Option(name: .customLong("outbox-id"), help: "The push_outbox row's id.") var outboxID: Int64
    @Flag(help: "Print the result as JSON.") var json = false

    func run() async throws {
        let logger = Setup.logger()
        let configuration = try Setup.configuration()
        let runtime = try Setup.runtime(configuration, logger: logger)
        let outboxID = outboxID
        let result: Result<PushWorker.SingleResult, any Error> = await Setup.withClient(runtime) {
            if let problem = await Setup.probe(runtime, configuration) {
                return .failure(DatabaseUnreachable(problem: problem))
            }
            do { return .success(try await runtime.worker.sendOnce(id: outboxID)) } catch { return .failure(error) }
        }
        try? await runtime.transport.shutdown()
        let outcome: String
        var exit: Int32 = 0
        switch result {
        case .failure(let error):
            FileHandle.standardError.write(
                Data("push-worker: send-once failed: \(String(describing: error).prefix(200))\n".utf8))
            throw ExitCode(1)
        case .success(.notPending):
            outcome = "not pending: row \(outboxID) does not exist, is closed or is leased by a running worker"
            exit = 1
        case .success(.closed(let reason)):
            outcome = "closed without a request: \(reason.rawValue)"
            exit = 1
        case .success(.completed(let completion)):
            switch completion {
            case .delivered: outcome = "delivered"
            case .dead(let status, let reason, let note):
                outcome = "dead (\(note)): \(status.map(String.init) ?? "no answer") \(reason ?? "")"
                exit = 1
            case .retry(let status, let reason, let delay):
                outcome =
                    "not delivered, will retry in \(delay): \(status.map(String.init) ?? "no answer") \(reason ?? "")"
                exit = 1
            case .release(let delay):
                outcome = "not sent, given back (due again in \(delay))"
                exit = 1
            }
        }
        if json {
            let data = try JSONSerialization.data(
                withJSONObject: ["id": outboxID, "outcome": outcome, "delivered": exit == 0], options: [.sortedKeys])
            print(String(decoding: data, as: UTF8.self))
        } else {
            print(outcome)
        }
        if exit != 0 { throw ExitCode(exit) }
    }
}
