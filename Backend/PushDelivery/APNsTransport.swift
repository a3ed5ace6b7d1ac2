import Foundation

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
    /// The whole exchange (connecting, the answer's head and its body) did not end within the
    /// request deadline.
    case deadline(Duration)
    /// The server's certificate does not name the host connected to.
    case certificateName(String)
    /// An answer without a status.
    case malformedAnswer
    /// The server reset the stream (RST_STREAM, with its error code).
    case streamReset(Int)
    /// A new connection was not up (TCP, TLS, HTTP/2 settings) within the connect timeout.
    case connectTimeout(Duration)
    /// The server says it never processed the request (RFC 9113 8.7): the stream was above a
    /// GOAWAY's last stream id, or reset with REFUSED_STREAM. Safe to send again, and the worker
    /// does so without charging the row an attempt.
    case notProcessed
    /// The connection broke the HTTP/2 protocol or the transport's bounds (a flood of frames):
    /// it was closed, with every request still on it.
    case connectionError(String)

    public var description: String {
        switch self {
        case .notHTTP2: "the APNs server did not answer over HTTP/2"
        case .redirect(let status): "the APNs server answered a redirect (\(status)); redirects are not followed"
        case .deadline(let deadline): "no complete answer within the request deadline (\(deadline))"
        case .certificateName(let host): "the server's certificate does not name \(host)"
        case .malformedAnswer: "the APNs server answered without a status"
        case .streamReset(let code): "the APNs server reset the stream (HTTP/2 error \(code))"
        case .connectTimeout(let bound): "no connection to the APNs server within \(bound) (connect, TLS, HTTP/2)"
        case .notProcessed: "the APNs server did not process the request (GOAWAY or REFUSED_STREAM)"
        case .connectionError(let why): "the connection to the APNs server was closed: \(why)"
        }
    }
}
