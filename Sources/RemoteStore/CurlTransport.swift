// libcurl is the transport on Linux only (Package.swift); Apple platforms use URLSessionTransport.
#if canImport(CCurl)
import CCurl
import Foundation
import HTTPTypes
import Synchronization

/// ``HTTPTransport`` on libcurl's multi interface: the default transport.
///
/// Why not `URLSession` on Linux: FoundationNetworking registers a write-readiness source for
/// a connection while it sends a body and never removes it when libcurl then only waits to
/// read, so until the response arrives the source fires without pause (a socket is always
/// writable) and a core spins through libdispatch. A first push makes thousands of writes that
/// each wait on the database; that spinning took about a third of the client's CPU, on a
/// machine whose cores the crypto and the database needed. Here one thread drives every
/// transfer of the process and sleeps in `curl_multi_poll` while there is nothing to do.
///
/// The same defences as ``URLSessionTransport``, for servers it does not trust:
/// - **No redirects are followed** (a 3xx comes back as the response it is), and only `http`
///   and `https` URLs are fetched.
/// - **Bounded size:** a response whose headers and body grow past ``maxResponseBytes``, or
///   that announces a larger `Content-Length`, is abandoned and reported as `.responseTooLarge`.
/// - **Bounded time:** no byte for ``connectTimeout`` seconds (connecting included) fails the
///   attempt, and so does a whole request that takes longer than the request's `timeout`.
/// - A header name or value with a line break or NUL is refused before anything is sent.
///
/// TLS, proxies (`https_proxy`, `no_proxy`) and HTTP/2 are libcurl's, as built by the system.
public final class CurlTransport: HTTPTransport {
    /// The largest response (headers and body) accepted.
    public let maxResponseBytes: Int
    /// Seconds without any byte (connecting, or between bytes) before an attempt fails.
    public let connectTimeout: TimeInterval

    /// Creates a transport. Every transport shares one libcurl loop and its connections.
    ///
    /// - Parameters:
    ///   - maxResponseBytes: The largest response accepted (64 MiB by default; a page of
    ///     1,000 rows is well under 1 MiB).
    ///   - connectTimeout: Seconds without any byte before an attempt fails.
    public init(maxResponseBytes: Int = 64 * 1024 * 1024, connectTimeout: TimeInterval = 10) {
        self.maxResponseBytes = maxResponseBytes
        self.connectTimeout = connectTimeout
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        let transfer = try CurlTransfer(
            request, limit: min(maxResponseBytes, request.maxResponseBytes ?? .max),
            idleTimeout: min(request.timeout, connectTimeout))
        let loop = CurlLoop.shared
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<TransportResponse, Error>) in
                transfer.continuation = continuation
                loop.submit(transfer)
            }
        } onCancel: {
            loop.cancel(transfer)
        }
    }
}

/// The one thread that drives every ``CurlTransport`` transfer of the process.
///
/// Only this thread touches the multi handle and the transfers' easy handles; other threads
/// hand it transfers to start or cancel and wake it with `curl_multi_wakeup`. It resumes each
/// transfer's continuation exactly once, when the transfer leaves it.
final class CurlLoop: @unchecked Sendable {
    static let shared = CurlLoop()

    private let multi: UnsafeMutableRawPointer
    private let incoming = Mutex<[CurlTransfer]>([])
    /// Transfers in libcurl, by easy handle (the loop thread's alone).
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]

    private init() {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        guard let multi = curl_multi_init() else { fatalError("libcurl could not create a multi handle") }
        self.multi = multi
        let thread = Thread { [unowned self] in self.run() }
        thread.name = "session-sync.curl"
        thread.start()
    }

    func submit(_ transfer: CurlTransfer) {
        incoming.withLock { $0.append(transfer) }
        curl_multi_wakeup(multi)
    }

    func cancel(_ transfer: CurlTransfer) {
        transfer.cancelled.store(true, ordering: .releasing)
        curl_multi_wakeup(multi)
    }

    private func run() -> Never {
        while true {
            for transfer in incoming.withLock({ pending -> [CurlTransfer] in
                defer { pending = [] }
                return pending
            }) {
                if transfer.isCancelled {
                    transfer.finish(.failure(CancellationError()))
                } else if curl_multi_add_handle(multi, transfer.easy) == CURLM_OK {
                    active[transfer.easy] = transfer
                } else {
                    transfer.finish(.failure(RemoteStoreError(.network, "libcurl refused the transfer")))
                }
            }
            for (easy, transfer) in active where transfer.isCancelled {
                curl_multi_remove_handle(multi, easy)
                active[easy] = nil
                transfer.finish(.failure(CancellationError()))
            }
            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi, &left) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
                let result = ccurl_message_result(message)
                curl_multi_remove_handle(multi, easy)
                active.removeValue(forKey: easy)?.complete(result)
            }
            // Returns at libcurl's next timeout, a socket event or a wakeup, whichever is first.
            var events: Int32 = 0
            curl_multi_poll(multi, nil, 0, 60_000, &events)
        }
    }
}

/// One request in libcurl: its easy handle, the buffers libcurl reads from, and what came back.
final class CurlTransfer: @unchecked Sendable {
    let easy: UnsafeMutableRawPointer
    let cancelled = Atomic<Bool>(false)
    var continuation: CheckedContinuation<TransportResponse, Error>?

    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var body: UnsafeMutableRawBufferPointer?
    private let limit: Int
    private let timeout: TimeInterval
    private let idleTimeout: TimeInterval
    private let started = ContinuousClock.now
    private var receivedBytes = 0
    private var received = Data()
    private var headers = HTTPFields()
    private var tooLarge = false

    var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    init(_ request: TransportRequest, limit: Int, idleTimeout: TimeInterval) throws {
        guard let scheme = request.url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw RemoteStoreError(.configuration, "only http and https URLs are fetched")
        }
        // Names are HTTP tokens and values hold no line break or NUL: HTTPFields guarantees both.
        guard let easy = curl_easy_init() else {
            throw RemoteStoreError(.network, "libcurl could not create a transfer")
        }
        self.easy = easy
        self.limit = limit
        self.timeout = max(request.timeout, 0.001)
        self.idleTimeout = max(idleTimeout, 0.001)

        let context = UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
        var ok = ccurl_easy_set_string(easy, CURLOPT_URL, request.url.absoluteString) == CURLE_OK
        ok = ok && ccurl_easy_set_string(easy, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK
        ok = ok && ccurl_easy_set_long(easy, CURLOPT_FOLLOWLOCATION, 0) == CURLE_OK
        ok = ok && ccurl_easy_set_long(easy, CURLOPT_NOSIGNAL, 1) == CURLE_OK
        ok = ok && ccurl_easy_set_long(easy, CURLOPT_TIMEOUT_MS, Self.milliseconds(timeout)) == CURLE_OK
        ok = ok && ccurl_easy_set_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(self.idleTimeout)) == CURLE_OK
        // Fewer than one byte a second for the idle timeout (whole seconds, at least one) ends it.
        ok = ok && ccurl_easy_set_long(easy, CURLOPT_LOW_SPEED_LIMIT, 1) == CURLE_OK
        ok =
            ok
            && ccurl_easy_set_long(easy, CURLOPT_LOW_SPEED_TIME, max(1, Int(self.idleTimeout.rounded(.up)))) == CURLE_OK
        ok = ok && ccurl_easy_set_offset(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(limit)) == CURLE_OK
        ok = ok && ccurl_easy_set_data_callback(easy, CURLOPT_WRITEFUNCTION, curlReceiveBody) == CURLE_OK
        ok = ok && ccurl_easy_set_pointer(easy, CURLOPT_WRITEDATA, context) == CURLE_OK
        ok = ok && ccurl_easy_set_data_callback(easy, CURLOPT_HEADERFUNCTION, curlReceiveHeader) == CURLE_OK
        ok = ok && ccurl_easy_set_pointer(easy, CURLOPT_HEADERDATA, context) == CURLE_OK

        let method = request.method
        if request.body != nil || [.post, .put, .patch].contains(method) {
            let bytes = request.body ?? Data()
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
            buffer.copyBytes(from: bytes)
            body = buffer
            ok = ok && ccurl_easy_set_offset(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(bytes.count)) == CURLE_OK
            ok =
                ok && ccurl_easy_set_pointer(easy, CURLOPT_POSTFIELDS, UnsafeRawPointer(buffer.baseAddress)) == CURLE_OK
            if method != .post {
                ok = ok && ccurl_easy_set_string(easy, CURLOPT_CUSTOMREQUEST, method.rawValue) == CURLE_OK
            }
        } else if method == .head {
            ok = ok && ccurl_easy_set_long(easy, CURLOPT_NOBODY, 1) == CURLE_OK
        } else {
            ok = ok && ccurl_easy_set_long(easy, CURLOPT_HTTPGET, 1) == CURLE_OK
            if method != .get {
                ok = ok && ccurl_easy_set_string(easy, CURLOPT_CUSTOMREQUEST, method.rawValue) == CURLE_OK
            }
        }

        var lines = request.headerFields.map {
            $0.value.isEmpty ? "\($0.name.rawName);" : "\($0.name.rawName): \($0.value)"
        }
        // No `Expect: 100-continue` wait, and no form content type the caller did not ask for.
        lines.append("Expect:")
        if request.headerFields[.contentType] == nil { lines.append("Content-Type:") }
        for line in lines {
            guard let list = curl_slist_append(headerList, line) else {
                ok = false
                break
            }
            headerList = list
        }
        ok = ok && ccurl_easy_set_list(easy, CURLOPT_HTTPHEADER, headerList) == CURLE_OK
        guard ok else { throw RemoteStoreError(.configuration, "libcurl refused the request's options") }
    }

    deinit {
        curl_easy_cleanup(easy)
        curl_slist_free_all(headerList)
        body?.deallocate()
    }

    static func milliseconds(_ seconds: TimeInterval) -> Int {
        Int(min(max(seconds * 1000, 1), Double(Int32.max)))
    }

    /// Counts `count` bytes against the limit; false (and marked) when they pass it.
    fileprivate func admit(_ count: Int) -> Bool {
        receivedBytes += count
        if receivedBytes > limit { tooLarge = true }
        return !tooLarge
    }

    fileprivate func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard admit(bytes.count) else { return false }
        received.append(contentsOf: bytes)
        return true
    }

    fileprivate func receiveHeader(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard admit(bytes.count) else { return false }
        let line = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if line.hasPrefix("HTTP/") {
            // A new response head (after an interim 1xx): its headers replace the ones before.
            headers = HTTPFields()
        } else if let colon = line.firstIndex(of: ":") {
            // A name that is not an HTTP token is dropped (the response is read without it).
            guard let name = HTTPField.Name(line[..<colon].trimmingCharacters(in: .whitespaces)) else { return true }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers.append(HTTPField(name: name, value: value))
            if name == .contentLength, let length = Int(value), length > limit {
                tooLarge = true
                return false
            }
        }
        return true
    }

    /// Called by the loop when libcurl is done with the transfer.
    func complete(_ result: CURLcode) {
        if tooLarge || result == CURLE_FILESIZE_EXCEEDED {
            finish(.failure(RemoteStoreError.responseTooLargeForClient))
            return
        }
        guard result == CURLE_OK else {
            // libcurl's clock starts after ours and its timers fire to the millisecond, sometimes
            // a little early by ours: a timeout within 100 ms of the deadline is the deadline.
            let elapsed = ContinuousClock.now - started
            if result == CURLE_OPERATION_TIMEDOUT, elapsed >= .milliseconds(Self.milliseconds(timeout) - 100) {
                finish(.failure(RemoteStoreError(.network, "no complete response within \(Int(timeout)) s")))
            } else if result == CURLE_OPERATION_TIMEDOUT {
                finish(.failure(RemoteStoreError(.network, "no byte for \(Int(idleTimeout.rounded(.up))) s")))
            } else {
                // libcurl's text for the code: never the URL, a header or a body.
                finish(.failure(RemoteStoreError(.network, String(cString: curl_easy_strerror(result)))))
            }
            return
        }
        var status = 0
        ccurl_easy_get_long(easy, CURLINFO_RESPONSE_CODE, &status)
        finish(
            .success(
                TransportResponse(status: HTTPResponse.Status(code: status), headerFields: headers, body: received)))
    }

    /// Resumes the caller; the loop calls this once per transfer.
    func finish(_ result: Result<TransportResponse, Error>) {
        let continuation = self.continuation
        self.continuation = nil
        continuation?.resume(with: result)
    }
}

extension RemoteStoreError {
    /// A response larger than the transport accepts.
    static let responseTooLargeForClient = RemoteStoreError(
        .responseTooLarge, "the response is larger than this client accepts")
}

private let curlReceiveBody: ccurl_data_callback = { data, size, count, context in
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue()
    // Any other count than the one offered makes libcurl abandon the transfer.
    return transfer.receiveBody(UnsafeRawBufferPointer(start: data, count: size * count)) ? size * count : 0
}

private let curlReceiveHeader: ccurl_data_callback = { data, size, count, context in
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue()
    return transfer.receiveHeader(UnsafeRawBufferPointer(start: data, count: size * count)) ? size * count : 0
}
#endif
