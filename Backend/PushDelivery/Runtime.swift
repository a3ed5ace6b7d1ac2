import Foundation
import Logging
import NIOSSL
import PostgresNIO

extension DatabaseSettings {
    /// The PostgreSQL client's configuration for these settings.
    public var clientConfiguration: PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS
        switch self.tls {
        case .disable: tls = .disable
        case .prefer: tls = .prefer(.makeClientConfiguration())
        case .require: tls = .require(.makeClientConfiguration())
        }
        let configuration = PostgresClient.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: tls)
        return configuration
    }
}

/// Everything a worker process holds: the database client, the APNs transport and the worker.
/// `push-worker run` puts the client and the worker in one `ServiceGroup`.
public struct PushWorkerRuntime: Sendable {
    public let client: PostgresClient
    public let transport: HTTP2APNsTransport
    public let worker: PushWorker

    /// Loads the key (refusing a readable one) and builds the parts. Nothing connects yet.
    public init(configuration: PushWorkerConfiguration, logger: Logger) throws {
        let key = try ProviderKey.load(path: configuration.keyPath)
        client = PostgresClient(configuration: configuration.database.clientConfiguration, backgroundLogger: logger)
        transport = try HTTP2APNsTransport(caFile: configuration.caFile)
        let tokens = ProviderTokens(
            key: key, keyID: configuration.keyID, teamID: configuration.teamID,
            refresh: configuration.providerTokenRefresh)
        worker = PushWorker(
            configuration: configuration, client: client, transport: transport, tokens: tokens, logger: logger)
    }
}
