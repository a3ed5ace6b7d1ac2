import Foundation

/// The push worker's settings, read from the environment (docs/push-worker.md). Reading fails
/// with ``ConfigurationErrors``: every problem found, each a ``ConfigurationError`` naming its
/// variable; no key or token is ever part of a message.
public struct PushWorkerConfiguration: Sendable {
    /// Which APNs environments the worker serves. With `.both`, each device token goes to the
    /// host of the environment it was registered in.
    public enum Environment: String, Sendable, CaseIterable {
        case development, production, both

        /// The token environments (`push_tokens.environment`) this setting serves.
        public var served: [String] {
            switch self {
            case .development: ["development"]
            case .production: ["production"]
            case .both: ["development", "production"]
            }
        }
    }

    public var keyPath: String
    public var keyID: String
    public var teamID: String
    public var bundleID: String
    public var environment: Environment
    /// 443, or 2197 where a firewall closes 443.
    public var port: Int
    public var database: DatabaseSettings
    /// A test override of both APNs hosts (`APNS_BASE_URL`): https, and loopback unless
    /// `allowNonLoopbackOverride`, so that a configuration change cannot ship the provider
    /// token elsewhere.
    public var baseURLOverride: URL?
    /// A PEM file of trust roots (`APNS_CA_FILE`), for the imitation's certificate. It replaces
    /// the production root (USERTrust RSA) rather than adding to it.
    public var caFile: String?
    public var allowNonLoopbackOverride = false

    public var batchSize = 256
    public var lease: Duration = .seconds(60)
    public var maxInFlight = 256
    public var requestDeadline: Duration = .seconds(10)
    public var maxAttempts = 8
    public var backoffBase: Duration = .seconds(1)
    public var backoffMax: Duration = .seconds(300)
    /// How long a token's `TooManyRequests` holds back that token's pushes at first.
    public var tokenBackoffBase: Duration = .seconds(30)
    /// How long `TooManyProviderTokenUpdates` holds back every resend.
    public var providerTokenUpdatesBackoff: Duration = .seconds(300)
    /// How long an open circuit (`InvalidProviderToken`) waits before one probing request.
    public var circuitProbeInterval: Duration = .seconds(300)
    /// Clamped to 20-55 minutes: APNs refuses tokens older than an hour and refreshes more
    /// often than every 20 minutes.
    public var providerTokenRefresh: Duration = .seconds(40 * 60)
    public var pollInterval: Duration = .seconds(2)
    public var retention: Duration = .seconds(7 * 24 * 3600)
    /// How long a SIGTERM waits for requests in flight before it gives their rows back.
    public var drainTimeout: Duration = .seconds(8)
    /// How long `check-config` and `send-once` wait for the database before they exit 1.
    public var databaseConnectTimeout: Duration = .seconds(10)
    /// A name for this process in `leased_by`: host, pid and a random part.
    public var workerID: String
    /// Where `run` serves its Prometheus metrics; `nil` (no `PUSH_METRICS_PORT`): nowhere.
    public var metrics: MetricsEndpointSettings?

    public init(
        keyPath: String, keyID: String, teamID: String, bundleID: String, environment: Environment, port: Int = 443,
        database: DatabaseSettings, workerID: String = PushWorkerConfiguration.defaultWorkerID()
    ) {
        self.keyPath = keyPath
        self.keyID = keyID
        self.teamID = teamID
        self.bundleID = bundleID
        self.environment = environment
        self.port = port
        self.database = database
        self.workerID = workerID
    }

    public static func defaultWorkerID() -> String {
        let host = ProcessInfo.processInfo.hostName.prefix(64)
        return "\(host)-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// The APNs base URL for a token of `environment` (`development` or `production`).
    public func baseURL(forTokenEnvironment environment: String) -> URL {
        if let baseURLOverride { return baseURLOverride }
        let host = environment == "development" ? "api.sandbox.push.apple.com" : "api.push.apple.com"
        return URL(string: "https://\(host):\(port)")!
    }

    /// Reads the configuration from `environment` (the process's by default). Every variable is
    /// read, so the error lists every problem, not only the first.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigurationErrors) -> PushWorkerConfiguration {
        let reader = EnvironmentReader(environment: environment)
        var configuration = apnsSettings(reader)
        configuration.readOverrides(reader)
        configuration.readTuning(reader)
        do {
            configuration.metrics = try MetricsEndpointSettings.fromEnvironment(environment)
        } catch {
            reader.problems.append(error)
        }
        guard reader.problems.isEmpty else { throw ConfigurationErrors(problems: reader.problems) }
        return configuration
    }

    /// The required settings: the APNs key, team, bundle, environment and port, and the database.
    /// A missing or wrong one is noted in `reader` and stands in as an empty value.
    static func apnsSettings(_ reader: EnvironmentReader) -> PushWorkerConfiguration {
        let keyPath = reader.required("APNS_KEY_PATH") ?? ""
        let keyID = reader.required("APNS_KEY_ID") ?? ""
        let teamID = reader.required("APNS_TEAM_ID") ?? ""
        for (name, value) in [("APNS_KEY_ID", keyID), ("APNS_TEAM_ID", teamID)]
        where !value.isEmpty && !isAppleID(value) {
            reader.note(name, "must be 10 characters of A-Z and 0-9")
        }
        let bundleID = reader.required("APNS_BUNDLE_ID") ?? ""
        if !bundleID.isEmpty,
            bundleID.count > 155
                || !bundleID.unicodeScalars.allSatisfy({
                    $0.isASCII && ($0.properties.isAlphabetic || "0123456789.-".unicodeScalars.contains($0))
                })
        {
            reader.note("APNS_BUNDLE_ID", "must be a bundle identifier (letters, digits, '.', '-')")
        }
        var apnsEnvironment = Environment.production
        if let text = reader.required("APNS_ENVIRONMENT") {
            if let value = Environment(rawValue: text) {
                apnsEnvironment = value
            } else {
                reader.note("APNS_ENVIRONMENT", "must be development, production or both")
            }
        }
        var port = 443
        if let value = reader.environment["APNS_PORT"] {
            if value == "443" || value == "2197" {
                port = Int(value)! // one of two literals just compared
            } else {
                reader.note("APNS_PORT", "must be 443 or 2197")
            }
        }
        var database = DatabaseSettings(
            host: "localhost", port: 5432, username: "", password: nil, database: "", tls: .prefer)
        if let url = reader.required("DATABASE_URL") {
            do {
                database = try DatabaseSettings(url: url)
            } catch {
                reader.problems.append(error)
            }
        }
        return PushWorkerConfiguration(
            keyPath: keyPath, keyID: keyID, teamID: teamID, bundleID: bundleID, environment: apnsEnvironment,
            port: port, database: database)
    }

    /// Where APNs is, for an imitation or a proxy: `APNS_BASE_URL` (loopback unless allowed) and
    /// `APNS_CA_FILE`.
    mutating func readOverrides(_ reader: EnvironmentReader) {
        let environment = reader.environment
        allowNonLoopbackOverride = environment["APNS_ALLOW_NON_LOOPBACK_OVERRIDE"] == "1"
        if let value = environment["APNS_BASE_URL"], !value.isEmpty {
            if let url = URL(string: value), url.scheme == "https", let host = url.host,
                url.path.isEmpty || url.path == "/"
            {
                if allowNonLoopbackOverride || DatabaseSettings.loopbackHosts.contains(host) {
                    baseURLOverride = url
                } else {
                    reader.note(
                        "APNS_BASE_URL",
                        "must name a loopback host (set APNS_ALLOW_NON_LOOPBACK_OVERRIDE=1 to send elsewhere)")
                }
            } else {
                reader.note("APNS_BASE_URL", "must be an https URL with no path")
            }
        }
        if let value = environment["APNS_CA_FILE"], !value.isEmpty {
            if FileManager.default.isReadableFile(atPath: value) {
                caFile = value
            } else {
                reader.note("APNS_CA_FILE", "is not a readable file")
            }
        }
    }

    /// The numbers (`PUSH_*`), each in its range, and the worker's id.
    mutating func readTuning(_ reader: EnvironmentReader) {
        reader.integer("PUSH_BATCH_SIZE", 1...10_000, into: &batchSize)
        reader.integer("PUSH_MAX_IN_FLIGHT", 1...10_000, into: &maxInFlight)
        reader.integer("PUSH_MAX_ATTEMPTS", 1...100, into: &maxAttempts)
        reader.seconds("PUSH_LEASE_SECONDS", 5...3600, into: &lease)
        reader.seconds("PUSH_REQUEST_DEADLINE_SECONDS", 0.1...60, into: &requestDeadline)
        reader.seconds("PUSH_BACKOFF_BASE_SECONDS", 0.001...60, into: &backoffBase)
        reader.seconds("PUSH_BACKOFF_MAX_SECONDS", 0.01...3600, into: &backoffMax)
        reader.seconds("PUSH_TOKEN_BACKOFF_SECONDS", 0.001...3600, into: &tokenBackoffBase)
        reader.seconds("PUSH_PROVIDER_UPDATES_BACKOFF_SECONDS", 0.001...3600, into: &providerTokenUpdatesBackoff)
        reader.seconds("PUSH_CIRCUIT_PROBE_SECONDS", 0.01...3600, into: &circuitProbeInterval)
        reader.seconds("PUSH_POLL_SECONDS", 0.01...60, into: &pollInterval)
        reader.seconds("PUSH_RETENTION_SECONDS", 60...(365 * 86400), into: &retention)
        reader.seconds("PUSH_DRAIN_SECONDS", 0.1...9, into: &drainTimeout)
        // One attempt can make two requests (a provider token refused as expired is re-minted
        // and the row sent again), each with the whole deadline.
        if lease <= requestDeadline * 2 {
            reader.note(
                "PUSH_LEASE_SECONDS",
                "must be longer than twice PUSH_REQUEST_DEADLINE_SECONDS (\(requestDeadline.seconds) s): one attempt can make two requests, and a lease that ends before they answer lets another worker send the row again"
            )
        }
        reader.seconds("PUSH_DB_CONNECT_SECONDS", 0.1...300, into: &databaseConnectTimeout)
        var refreshMinutes = 40
        reader.integer("PUSH_PROVIDER_TOKEN_REFRESH_MINUTES", 1...1000, into: &refreshMinutes)
        providerTokenRefresh = .seconds(60 * min(55, max(20, refreshMinutes)))
        if let value = reader.environment["PUSH_WORKER_ID"] {
            if !value.isEmpty, value.count <= 200 {
                workerID = value
            } else {
                reader.note("PUSH_WORKER_ID", "must be 1 to 200 characters")
            }
        }
    }

    /// Reads typed values out of the environment, noting each problem with the variable it names.
    final class EnvironmentReader {
        let environment: [String: String]
        /// What was found wrong, in the order read.
        var problems: [ConfigurationError] = []

        init(environment: [String: String]) { self.environment = environment }

        func note(_ variable: String, _ problem: String) {
            problems.append(ConfigurationError(variable: variable, problem: problem))
        }

        /// The value, or nil (noted) when it is not set.
        func required(_ name: String) -> String? {
            guard let value = environment[name], !value.isEmpty else {
                note(name, "is not set")
                return nil
            }
            return value
        }

        func integer(_ name: String, _ range: ClosedRange<Int>, into value: inout Int) {
            guard let text = environment[name] else { return }
            guard let number = Int(text), range.contains(number) else {
                return note(name, "must be a whole number in \(range.lowerBound)...\(range.upperBound)")
            }
            value = number
        }

        func seconds(_ name: String, _ range: ClosedRange<Double>, into value: inout Duration) {
            guard let text = environment[name] else { return }
            guard let number = Double(text), range.contains(number) else {
                return note(name, "must be a number of seconds in \(range.lowerBound)...\(range.upperBound)")
            }
            value = .milliseconds(Int64((number * 1000).rounded()))
        }
    }

    static func isAppleID(_ value: String) -> Bool {
        value.utf8.count == 10 && value.utf8.allSatisfy { (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) }
    }
}

/// Every setting found missing or wrong, in the order read. `push-worker` prints each on a line
/// of its own and exits 2.
public struct ConfigurationErrors: Error, Equatable, CustomStringConvertible {
    public let problems: [ConfigurationError]
    public init(problems: [ConfigurationError]) { self.problems = problems }
    public var description: String { problems.map(\.description).joined(separator: "; ") }
}

/// A setting that is missing or wrong.
public struct ConfigurationError: Error, Equatable, CustomStringConvertible {
    /// The environment variable to fix.
    public let variable: String
    public let problem: String
    public init(variable: String, problem: String) {
        self.variable = variable
        self.problem = problem
    }
    public var description: String { "\(variable) \(problem)" }
}

/// Where the outbox is: a direct or session connection (LISTEN does not pass a transaction
/// pooler). Parsed from a `postgres://user:password@host:port/database?sslmode=...` URL; the
/// password is never printed. Without `sslmode`, a loopback host means `prefer` and any other
/// host `require`.
public struct DatabaseSettings: Sendable, CustomStringConvertible {
    public enum TLSMode: String, Sendable { case disable, prefer, require }
    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String
    public var tls: TLSMode

    public init(host: String, port: Int, username: String, password: String?, database: String, tls: TLSMode) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.tls = tls
    }

    public init(url text: String) throws(ConfigurationError) {
        let bad = ConfigurationError(
            variable: "DATABASE_URL",
            problem: "must be postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require]")
        guard let components = URLComponents(string: text),
            ["postgres", "postgresql"].contains(components.scheme ?? ""),
            let host = components.host, !host.isEmpty, let user = components.user, !user.isEmpty
        else { throw bad }
        let database = String(components.path.dropFirst())
        guard !database.isEmpty, !database.contains("/") else { throw bad }
        // Without sslmode, a database on another machine gets TLS or nothing (PostgreSQL's own
        // default, prefer, would send the password in the clear to a server that declines TLS).
        var tls = Self.loopbackHosts.contains(host) ? TLSMode.prefer : .require
        if let mode = components.queryItems?.first(where: { $0.name == "sslmode" })?.value {
            switch mode {
            case "disable": tls = .disable
            case "prefer", "allow": tls = .prefer
            case "require", "verify-ca", "verify-full": tls = .require
            default: throw bad
            }
        }
        self.init(
            host: host, port: components.port ?? 5432, username: user.removingPercentEncoding ?? user,
            password: components.password.map { $0.removingPercentEncoding ?? $0 }, database: database, tls: tls)
    }

    /// The host names that stay on this machine.
    static let loopbackHosts: Set<String> = ["localhost", "127.0.0.1", "::1", "[::1]"]

    /// Host, port, user and database; never the password.
    public var description: String { "\(username)@\(host):\(port)/\(database)" }
}
