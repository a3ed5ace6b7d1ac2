import Foundation
public import HTTPTypes
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An HTTP request as the PostgREST client builds it: swift-http-types' method and fields, the
/// URL, the body and the client's bounds.
public struct TransportRequest: Sendable {
    public var method: HTTPRequest.Method
    public var url: URL
    /// Header fields in order. `HTTPFields` cannot hold a line break or NUL in a value, so no
    /// header can be injected whatever a caller passes.
    public var headerFields: HTTPFields
    public var body: Data?
    /// Seconds before the request is abandoned.
    public var timeout: TimeInterval
    /// The largest response this request accepts, below the transport's own limit: an answer
    /// known to be small (a database function's) must not be allowed the size of a page.
    public var maxResponseBytes: Int?

    /// Creates a request.
    public init(
        method: HTTPRequest.Method, url: URL, headerFields: HTTPFields = [:], body: Data? = nil,
        timeout: TimeInterval = 30,
        maxResponseBytes: Int? = nil
    ) {
        self.method = method
        self.url = url
        self.headerFields = headerFields
        self.body = body
        self.timeout = timeout
        self.maxResponseBytes = maxResponseBytes
    }

}

/// An HTTP response: its status, fields and body.
public struct TransportResponse: Sendable {
    public var status: HTTPResponse.Status
    /// Header fields (names compare without regard to case).
    public var headerFields: HTTPFields
    public var body: Data

    /// Creates a response.
    public init(status: HTTPResponse.Status, headerFields: HTTPFields = [:], body: Data = Data()) {
        self.status = status
        self.headerFields = headerFields
        self.body = body
    }
}

/// The one thing the PostgREST client needs from HTTP.
///
/// The default is ``CurlTransport``; ``URLSessionTransport`` is the alternative. Tests use a real
/// loopback server or swap this.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and returns the response, whatever its status.
    ///
    /// - Throws: A transport error when no response arrived (the client retries those).
    func send(_ request: TransportRequest) async throws -> TransportResponse
}

/// The platform's transport: ``CurlTransport`` on Linux (libcurl), ``URLSessionTransport`` on
/// Apple platforms, where `URLSession` is the system's own HTTP stack.
///
/// - Parameter connectTimeout: Seconds without any byte before an attempt fails.
public func defaultTransport(connectTimeout: TimeInterval = 10) -> any HTTPTransport {
    #if canImport(CCurl)
    CurlTransport(connectTimeout: connectTimeout)
    #else
    URLSessionTransport(connectTimeout: connectTimeout)
    #endif
}

/// ``HTTPTransport`` on Foundation's `URLSession` (FoundationNetworking on Linux).
///
/// On Linux it busy-waits: FoundationNetworking leaves a write-readiness source on the socket
/// while libcurl waits for each response, which costs a core for as long as the server takes
/// (``CurlTransport`` explains). Prefer ``CurlTransport`` there.
///
/// Built for servers it does not trust:
/// - **No redirects are followed.** A 3xx comes back as the response it is (the client treats
///   it as a failure): following one would send `Authorization` and `apikey` to wherever it
///   points, and turn a POST into a GET (301/302) or drop its body (307/308) while the caller
///   believed its write succeeded.
/// - **Bounded size:** a response whose body grows past ``maxResponseBytes`` is cancelled and
///   reported as `.responseTooLarge`, never retried.
/// - **Bounded time:** no byte for ``connectTimeout`` seconds (connecting included) fails the
///   attempt, and so does a whole request that takes longer than the request's `timeout`,
///   however slowly the server drips bytes.
public final class URLSessionTransport: HTTPTransport {
    let session: URLSession
    let delegate: TransportDelegate
    /// The largest response body accepted.
    public let maxResponseBytes: Int
    /// Seconds without any byte (connecting, or between bytes) before an attempt fails.
    public let connectTimeout: TimeInterval

    /// Creates a transport on an ephemeral session (no cookies, no cache).
    ///
    /// - Parameters:
    ///   - maxResponseBytes: The largest response body accepted (64 MiB by default; a page of
    ///     1,000 rows is well under 1 MiB).
    ///   - connectTimeout: Seconds without any byte before an attempt fails.
    public init(maxResponseBytes: Int = 64 * 1024 * 1024, connectTimeout: TimeInterval = 10) {
        self.maxResponseBytes = maxResponseBytes
        self.connectTimeout = connectTimeout
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = connectTimeout
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.urlCache = nil
        delegate = TransportDelegate()
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    }

    deinit { session.finishTasksAndInvalidate() }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var urlRequest = URLRequest(url: request.url, timeoutInterval: min(request.timeout, connectTimeout))
        urlRequest.httpMethod = request.method.rawValue
        for field in request.headerFields { urlRequest.addValue(field.value, forHTTPHeaderField: field.name.rawName) }
        urlRequest.httpBody = request.body
        let task = session.dataTask(with: urlRequest)
        let delegate = self.delegate
        let limit = min(maxResponseBytes, request.maxResponseBytes ?? .max)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<TransportResponse, Error>) in
                delegate.register(task, limit: limit, continuation: continuation)
                // A cancellation that arrived before the task was registered found nothing to end.
                if Task.isCancelled {
                    delegate.fail(task, with: CancellationError())
                    return
                }
                let timeout = request.timeout
                let deadline = DispatchTime.now() + .milliseconds(Int(max(timeout, 0.001) * 1000))
                // The timer holds the task weakly and not the request: holding them kept every
                // request body alive until its deadline, hundreds of MiB on a large first push.
                // `send` holds the task until it returns, so the timer finds it while it runs.
                DispatchQueue.global().asyncAfter(deadline: deadline) { [weak task] in
                    guard let task else { return }
                    delegate.fail(
                        task, with: RemoteStoreError(.network, "no complete response within \(Int(timeout)) s"))
                }
                task.resume()
            }
        } onCancel: {
            delegate.fail(task, with: CancellationError())
        }
    }
}

/// The session delegate behind ``URLSessionTransport``: collects each task's body under a
/// size limit, refuses redirects, and resumes each task's continuation exactly once.
final class TransportDelegate: NSObject, URLSessionDataDelegate, Sendable {
    struct Pending {
        var continuation: CheckedContinuation<TransportResponse, Error>
        var limit: Int
        var body = Data()
        var response: HTTPURLResponse?
        var failure: Error?
    }

    let pending = Mutex<[Int: Pending]>([:])

    func register(_ task: URLSessionTask, limit: Int, continuation: CheckedContinuation<TransportResponse, Error>) {
        pending.withLock { $0[task.taskIdentifier] = Pending(continuation: continuation, limit: limit) }
    }

    /// Ends `task` with `error` (if it has not ended yet) and cancels it.
    func fail(_ task: URLSessionTask, with error: Error) {
        let entry = pending.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        guard let entry else { return }
        task.cancel()
        entry.continuation.resume(throwing: error)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        let tooLarge = pending.withLock { state -> Bool in
            guard var entry = state[dataTask.taskIdentifier] else { return false }
            entry.response = response as? HTTPURLResponse
            state[dataTask.taskIdentifier] = entry
            return response.expectedContentLength > Int64(entry.limit)
        }
        if tooLarge {
            completionHandler(.cancel)
            fail(dataTask, with: RemoteStoreError.responseTooLargeForClient)
        } else {
            completionHandler(.allow)
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let tooLarge = pending.withLock { state -> Bool in
            guard let held = state[dataTask.taskIdentifier]?.body.count,
                let limit = state[dataTask.taskIdentifier]?.limit
            else { return false }
            guard held + data.count <= limit else { return true }
            // Appended in place: an entry copied out of the dictionary would share the body's
            // storage, and appending would copy the whole body at every chunk.
            state[dataTask.taskIdentifier]?.body.append(data)
            return false
        }
        if tooLarge { fail(dataTask, with: RemoteStoreError.responseTooLargeForClient) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        guard let entry = pending.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let error {
            entry.continuation.resume(throwing: error)
            return
        }
        guard let http = entry.response ?? task.response as? HTTPURLResponse else {
            entry.continuation.resume(throwing: RemoteStoreError(.malformedResponse, "not an HTTP response"))
            return
        }
        var fields = HTTPFields()
        for (name, value) in http.allHeaderFields {
            if let name = (name as? String).flatMap({ HTTPField.Name($0) }), let value = value as? String {
                fields.append(HTTPField(name: name, value: value))
            }
        }
        entry.continuation.resume(
            returning: TransportResponse(
                status: HTTPResponse.Status(code: http.statusCode), headerFields: fields, body: entry.body))
    }
}
