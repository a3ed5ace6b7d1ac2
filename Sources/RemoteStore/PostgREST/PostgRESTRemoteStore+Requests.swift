import Foundation
import HTTPTypes
import SyncModel

// One request to PostgREST: the token, the headers, retries with backoff, a refresh after a
// 401, and PostgREST's error bodies read into `RemoteStoreError`.
extension PostgRESTRemoteStore {
    // MARK: - The request loop

    /// Sends one request, with token refresh and retries; returns only a 2xx response.
    func send(
        _ method: HTTPRequest.Method, _ table: String, query: [(String, String)], prefer: String?, body: Data?,
        extraHeaders: HTTPFields = [:], maxResponseBytes: Int? = nil
    ) async throws -> TransportResponse {
        if table != Self.registerDevice { try await ensureRegistered() }
        let queryString = PostgREST.queryString(query)
        guard let url = URL(string: restBase + table + (queryString.isEmpty ? "" : "?" + queryString)) else {
            throw RemoteStoreError(.configuration, "cannot build a URL for \(table)")
        }
        var refreshed = false
        var reregistered = false
        var attempt = 1
        while true {
            try Task.checkCancellation()
            let request = try await makeRequest(
                method, url: url, refreshed: refreshed, prefer: prefer, body: body, extraHeaders: extraHeaders,
                maxResponseBytes: maxResponseBytes)
            MetricsTally.record({ $0.requests += 1 }, in: counters)

            let response: TransportResponse
            do {
                response = try await transport.send(request)
            } catch is CancellationError {
                throw CancellationError()
            } catch let error as RemoteStoreError where error.code == .responseTooLarge || error.code == .configuration
            {
                // Neither changes on a second attempt.
                throw error
            } catch {
                if Task.isCancelled { throw CancellationError() }
                guard attempt < configuration.maxAttempts else {
                    throw RemoteStoreError(
                        .network, "\(method) \(table): no response after \(attempt) attempts (\(Self.describe(error)))")
                }
                try await backoff(attempt)
                attempt += 1
                continue
            }
            // A body counts as sent once an answer shows the server read it: a dead server
            // has been sent nothing, however many attempts were made.
            MetricsTally.record(
                {
                    $0.bytesSent += (body?.count ?? 0)
                    $0.bytesReceived += response.body.count
                }, in: counters)
            if response.status.kind == .successful { return response }

            if response.status.kind == .redirection {
                throw RemoteStoreError(
                    .redirected, "\(method) \(table): the remote answered with a redirect, which is never followed",
                    status: response.status.code)
            }
            let error = Self.decodeError(response, method: method, table: table)
            if response.status == .unauthorized {
                if !refreshed,
                    error.postgrestCode == .jwtInvalid || error.postgrestCode == .jwtClaimsInvalid
                        || error.postgrestCode == nil
                {
                    refreshed = true
                    continue
                }
                var unauthorized = error
                unauthorized.code = .unauthorized
                unauthorized.message =
                    "\(method) \(table): \(RemoteStoreError.meaning(of: .unauthorized, error.postgrestCode))"
                throw unauthorized
            }
            if [502, 503, 504, 520].contains(response.status.code), attempt < configuration.maxAttempts {
                try await backoff(attempt)
                attempt += 1
                continue
            }
            if error.code == .permissionDenied, table != Self.registerDevice, !reregistered {
                reregistered = true
                guard let refusal = await explainRefusal(error) else { continue }
                throw refusal
            }
            throw error
        }
    }

    /// One attempt's request: the current token (a fresh one after a 401) and the headers.
    func makeRequest(
        _ method: HTTPRequest.Method, url: URL, refreshed: Bool, prefer: String?, body: Data?, extraHeaders: HTTPFields,
        maxResponseBytes: Int?
    ) async throws -> TransportRequest {
        let token = try await configuration.accessToken(refreshed)
        // HTTPFields would turn a line break in a credential into a space: such a token or key
        // is refused here rather than sent mangled (its text never goes into the message).
        guard Self.isFieldValue(token), Self.isFieldValue(configuration.apiKey) else {
            throw RemoteStoreError(
                .configuration, "the access token or the apikey holds a character a header cannot carry")
        }
        var headers: HTTPFields = [
            .apikey: configuration.apiKey, .authorization: "Bearer \(token)",
            .accept: "application/json", .userAgent: configuration.userAgent,
        ]
        if let credential = configuration.deviceCredential { headers[.deviceCredential] = credential.headerValue }
        if body != nil { headers[.contentType] = "application/json" }
        if let prefer { headers[.prefer] = prefer }
        headers.append(contentsOf: extraHeaders)
        return TransportRequest(
            method: method, url: url, headerFields: headers, body: body, timeout: configuration.requestTimeout,
            maxResponseBytes: maxResponseBytes)
    }

    /// Sleeps a full-jitter exponential delay, counting the retry; throws on cancellation.
    func backoff(_ attempt: Int) async throws {
        MetricsTally.record({ $0.retries += 1 }, in: counters)
        let ceiling = min(configuration.maxBackoff, configuration.baseBackoff * (1 << min(attempt - 1, 20)))
        let nanos = ceiling.components.seconds * 1_000_000_000 + ceiling.components.attoseconds / 1_000_000_000
        try await Task.sleep(for: .nanoseconds(Int64.random(in: 0...max(nanos, 1))))
    }

    /// PostgREST's error body, or a generic one: the message is this client's; the server's
    /// message, details and hint are kept apart (only `debugDescription` shows them).
    static func decodeError(
        _ response: TransportResponse, method: HTTPRequest.Method, table: String
    ) -> RemoteStoreError {
        let object = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any]
        // Everything here came from the server: control characters are escaped so that an
        // error message cannot drive the terminal it is printed on.
        let postgrestCode = (object?["code"] as? String).flatMap(PostgRESTErrorCode.init(received:))
        let code: RemoteStoreError.Code
        switch (response.status.code, postgrestCode) {
        case (_, .uniqueViolation?): code = .conflict
        case (_, .foreignKeyViolation?): code = .foreignKeyViolation
        case (_, .insufficientPrivilege?), (403, _): code = .permissionDenied
        case (_, .checkViolation?), (_, .invalidParameterValue?), (_, .invalidTextRepresentation?),
            (_, .stringDataRightTruncation?):
            code = .invalidValue
        case (_, .tableNotFound?), (_, .undefinedTable?): code = .missingTable
        case (_, .programLimitExceeded?): code = .limitExceeded
        default: code = .http
        }
        return RemoteStoreError(
            code, "\(method) \(table): \(RemoteStoreError.meaning(of: code, postgrestCode))",
            status: response.status.code, postgrestCode: postgrestCode,
            serverMessage: (object?["message"] as? String)?.escapingControlCharacters,
            details: (object?["details"] as? String)?.escapingControlCharacters,
            hint: (object?["hint"] as? String)?.escapingControlCharacters)
    }

    static func describe(_ error: Error) -> String {
        if let error = error as? URLError { return "URL error \(error.code.rawValue)" }
        // The transports' own errors carry secret-free messages (never a URL or a header).
        if let error = error as? RemoteStoreError { return error.message }
        return String(describing: type(of: error))
    }
}

/// `Content-Range: 0-999/5000`, `*/0`, `0-9/*`.
struct ContentRange {
    var first: Int?
    var last: Int?
    var total: Int?

    init?(_ header: String) {
        let parts = header.split(separator: "/", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { return nil }
        if parts[0] != "*" {
            let bounds = parts[0].split(separator: "-").map { Int($0) }
            guard bounds.count == 2, let a = bounds[0], let b = bounds[1] else { return nil }
            first = a
            last = b
        }
        if parts[1] != "*" {
            guard let count = Int(parts[1]) else { return nil }
            total = count
        }
    }
}

extension PostgRESTRemoteStore {
    /// Whether `text` can travel as a header value as it is (no control character but tab).
    static func isFieldValue(_ text: String) -> Bool {
        !text.utf8.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }
    }
}

extension HTTPField.Name {
    /// Supabase's API key header.
    static let apikey = HTTPField.Name("apikey")!
    /// PostgREST's preferences (`return=minimal`, `resolution=merge-duplicates`, `count=exact`).
    static let prefer = HTTPField.Name("Prefer")!
    /// The unit of a `Range` request (`items`).
    static let rangeUnit = HTTPField.Name("Range-Unit")!
    /// The device's credential (``DeviceCredential``).
    static let deviceCredential = HTTPField.Name(DeviceCredential.headerName)!
}
