import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL

/// Sends one request to APNs and returns its answer. A thrown error is a transport fault
/// (connection refused or reset, GOAWAY, TLS, the deadline): the worker retries the row.
public protocol APNsTransport: Sendable {
    func send(_ request: APNsRequest, to baseURL: URL, deadline: Duration) async throws -> APNsResponse
    func shutdown() async throws
}

/// A transport fault, with no request content in it.
public enum APNsTransportError: Error, CustomStringConvertible {
    /// The server did not speak HTTP/2.
    case notHTTP2
    /// A redirect, which APNs never sends: not followed.
    case redirect(Int)

    public var description: String {
        switch self {
        case .notHTTP2: "the APNs server did not answer over HTTP/2"
        case .redirect(let status): "the APNs server answered a redirect (\(status)); redirects are not followed"
        }
    }
}

/// The transport on AsyncHTTPClient: HTTP/2 over TLS, connections pooled and multiplexed, no
/// redirects, a deadline on every request, at most 4 KiB of answer read.
public final class HTTPClientAPNsTransport: APNsTransport {
    private let client: HTTPClient

    /// - Parameter caFile: extra trust roots (PEM), for a test server's certificate.
    public init(caFile: String? = nil) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        if let caFile {
            tls.additionalTrustRoots = [.file(caFile)]
        }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(5), read: nil), ignoreUncleanSSLShutdown: false)
        configuration.httpVersion = .automatic
        configuration.connectionPool.idleTimeout = .seconds(600)
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    public func send(_ request: APNsRequest, to baseURL: URL, deadline: Duration) async throws -> APNsResponse {
        var base = baseURL.absoluteString
        if base.hasSuffix("/") { base.removeLast() }
        var outgoing = HTTPClientRequest(url: base + request.path)
        outgoing.method = .POST
        for header in request.headers { outgoing.headers.add(name: header.name, value: header.value) }
        outgoing.body = .bytes(ByteBuffer(bytes: request.body))
        let nanoseconds = deadline.components.seconds * 1_000_000_000 + deadline.components.attoseconds / 1_000_000_000
        let response = try await client.execute(outgoing, deadline: .now() + .nanoseconds(nanoseconds))
        guard response.version.major == 2 else { throw APNsTransportError.notHTTP2 }
        if (300..<400).contains(Int(response.status.code)) {
            throw APNsTransportError.redirect(Int(response.status.code))
        }
        // At most 4 KiB: an answer larger than that is not APNs'; its reason is ignored. A body
        // cut off by a closed connection or stream is a transport fault, not an answer: its
        // status alone would dead-letter a row that was never refused.
        var body: [UInt8] = []
        do {
            body = Array(try await response.body.collect(upTo: 4096).readableBytesView)
        } catch let error as NIOTooManyBytesError {
            _ = error
        }
        return APNsResponse(status: Int(response.status.code), body: body)
    }

    public func shutdown() async throws {
        try await client.shutdown()
    }
}
