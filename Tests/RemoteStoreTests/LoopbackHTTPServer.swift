import Foundation
import RemoteStore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A request as the loopback server received it.
struct RecordedRequest: Sendable {
    var method: String
    /// Path without the query.
    var path: String
    /// The raw (still percent-encoded) query string.
    var rawQuery: String
    var headers: [String: String]
    var body: Data

    /// Query items, percent-decoded, in order.
    var query: [(String, String)] {
        rawQuery.split(separator: "&").map { item in
            let parts = item.split(separator: "=", maxSplits: 1).map(String.init)
            return (
                parts[0].removingPercentEncoding ?? parts[0],
                (parts.count > 1 ? parts[1] : "").removingPercentEncoding ?? ""
            )
        }
    }

    func queryValue(_ name: String) -> String? { query.first { $0.0 == name }?.1 }

    var jsonArray: [[String: Any]]? { (try? JSONSerialization.jsonObject(with: body)) as? [[String: Any]] }
}

/// A tiny HTTP/1.1 server on 127.0.0.1 for wire-level tests: one connection at a time,
/// `Connection: close`, every request recorded and answered by a handler.
final class LoopbackHTTPServer: Sendable {
    typealias Handler = @Sendable (RecordedRequest) -> TransportResponse

    let port: UInt16
    private let listener: Int32
    private let state = Mutex<(requests: [RecordedRequest], stopped: Bool)>(([], false))
    private let handler: Handler

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }
    var requests: [RecordedRequest] { state.withLock { $0.requests } }
    /// The requests but calls of functions (`/rpc/`): a table listing's own.
    var tableRequests: [RecordedRequest] { requests.filter { !$0.path.contains("/rpc/") } }

    init(handler: @escaping Handler) throws {
        self.handler = handler
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        precondition(fd >= 0)
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        precondition(bound == 0 && listen(fd, 16) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in self.acceptLoop() }
        thread.start()
    }

    /// Stops accepting. Idempotent (`deinit` calls this too).
    ///
    /// The listener is shut down here and closed by the accept loop on its way out. Closed here,
    /// its number could go to the next test's listener while the loop still calls `accept` with
    /// it, and this server would answer (and record) that server's requests: a test then saw
    /// its second request missing, answered by a server stopped before it started.
    func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    deinit { stop() }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if state.withLock({ $0.stopped }) {
                    close(listener)
                    return
                }
                continue
            }
            serve(connection)
            // Close gracefully: a close with unread input sends RST, which can cut the response.
            shutdown(connection, Int32(SHUT_WR))
            var sink = [UInt8](repeating: 0, count: 4096)
            var idle = timeval(tv_sec: 1, tv_usec: 0)
            setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &idle, socklen_t(MemoryLayout<timeval>.size))
            while read(connection, &sink, sink.count) > 0 {}
            close(connection)
        }
    }

    private func serve(_ fd: Int32) {
        var buffer = Data()
        var chunk = [UInt8](repeating: 0, count: 65536)
        func readMore() -> Bool {
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 { return false }
            buffer.append(contentsOf: chunk[0..<n])
            return true
        }
        let separator = Data("\r\n\r\n".utf8)
        while buffer.range(of: separator) == nil { if !readMore() { return } }
        let headerEnd = buffer.range(of: separator)!
        let head = String(decoding: buffer[..<headerEnd.lowerBound], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count >= 2 else { return }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        if headers["expect"]?.lowercased() == "100-continue" {
            send(fd, Data("HTTP/1.1 100 Continue\r\n\r\n".utf8))
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        var body = Data(buffer[headerEnd.upperBound...])
        while body.count < length {
            buffer = Data()
            if !readMore() { return }
            body.append(buffer)
        }
        let target = String(requestLine[1])
        let pathAndQuery = target.split(separator: "?", maxSplits: 1).map(String.init)
        let request = RecordedRequest(
            method: String(requestLine[0]), path: pathAndQuery[0],
            rawQuery: pathAndQuery.count > 1 ? pathAndQuery[1] : "", headers: headers, body: body)
        state.withLock { $0.requests.append(request) }
        let response = handler(request)
        var text = "HTTP/1.1 \(response.status.code) \(response.status.code < 300 ? "OK" : "Error")\r\n"
        var responseHeaders = response.headers
        responseHeaders["content-length"] = String(response.body.count)
        responseHeaders["connection"] = "close"
        for (name, value) in responseHeaders { text += "\(name): \(value)\r\n" }
        text += "\r\n"
        send(fd, Data(text.utf8) + response.body)
    }

    private func send(_ fd: Int32, _ data: Data) {
        data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n <= 0 { return }
                offset += n
            }
        }
    }
}

extension TransportResponse {
    static func json(_ status: Int, _ object: Any, headers: [String: String] = [:]) -> TransportResponse {
        let body = (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
        return TransportResponse(
            status: status, headers: headers.merging(["content-type": "application/json; charset=utf-8"]) { a, _ in a },
            body: body)
    }

    /// What a deployment without the pull feed's migration answers a call of
    /// `sync_pull_envelopes`: the client lists the table instead (and remembers it).
    static let noPullFunction = postgrestError(
        404, code: "PGRST202", message: "Could not find the function public.sync_pull_envelopes in the schema cache")

    static func postgrestError(
        _ status: Int, code: String, message: String, details: String? = nil, hint: String? = nil
    ) -> TransportResponse {
        json(
            status,
            [
                "code": code, "message": message, "details": details as Any? ?? NSNull(),
                "hint": hint as Any? ?? NSNull(),
            ],
            headers: status == 401 ? ["www-authenticate": "Bearer error=\"invalid_token\""] : [:])
    }
}
