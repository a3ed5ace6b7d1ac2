import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A request as the hostile server read it.
public struct HostileRequest: Sendable {
    public var method: String
    /// The path without the query.
    public var path: String
    /// The raw (still percent-encoded) query string.
    public var rawQuery: String
    /// Header fields, names lowercased.
    public var headers: [String: String]
    public var body: Data
}

/// One accepted connection: the behaviour writes whatever bytes it likes, when it likes.
public struct HostileConnection: Sendable {
    let fd: Int32

    /// Writes `data`; false once the peer is gone.
    @discardableResult
    public func write(_ data: Data) -> Bool {
        data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if n <= 0 { return false }
                offset += n
            }
            return true
        }
    }

    /// A complete response with `Content-Length` and `Connection: close`.
    public func respond(_ status: Int, headers: [String: String] = [:], body: Data = Data()) {
        var text = "HTTP/1.1 \(status) Status\r\n"
        var fields = headers
        fields["content-length"] = String(body.count)
        fields["connection"] = "close"
        for (name, value) in fields { text += "\(name): \(value)\r\n" }
        write(Data((text + "\r\n").utf8) + body)
    }

    /// A JSON response.
    public func json(_ status: Int, _ text: String, headers: [String: String] = [:]) {
        respond(
            status, headers: headers.merging(["content-type": "application/json"]) { a, _ in a }, body: Data(text.utf8))
    }
}

/// A server on 127.0.0.1 that misbehaves on purpose, for the client's security tests: each
/// connection runs on its own thread, and the behaviour decides what (if anything) to answer:
/// redirects, endless pages, oversized or dripped bodies, silence.
public final class HostileServer: Sendable {
    public typealias Behavior = @Sendable (HostileRequest, HostileConnection) -> Void

    public let port: UInt16
    private let listener: Int32
    private let state = Mutex<(requests: [HostileRequest], stopped: Bool, open: Set<Int32>)>(([], false, []))
    private let behavior: Behavior

    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }
    /// Every request read so far.
    public var requests: [HostileRequest] { state.withLock { $0.requests } }

    public init(behavior: @escaping Behavior) throws {
        self.behavior = behavior
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
        precondition(bound == 0 && listen(fd, 64) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        Thread { [self] in self.acceptLoop() }.start()
    }

    /// Stops accepting and closes every open connection.
    ///
    /// Idempotent (`deinit` calls this too): the listener is closed exactly once, by the accept
    /// loop, since closing a descriptor number twice can close whatever file reused it meanwhile.
    public func stop() {
        let open = state.withLock { state -> Set<Int32>? in
            guard !state.stopped else { return nil }
            state.stopped = true
            return state.open
        }
        guard let open else { return }
        // Shut down, not closed: the accept loop closes it on its way out. Closed here, its
        // number could go to another server's listener while the loop still calls `accept`
        // with it, and the loop would serve that server's connections with this behaviour.
        shutdown(listener, Int32(SHUT_RDWR))
        state.withLock { state in
            for fd in open where state.open.contains(fd) { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    deinit { stop() }

    /// Whether the server has been stopped (behaviours that loop check it).
    public var isStopped: Bool { state.withLock { $0.stopped } }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if isStopped {
                    close(listener)
                    return
                }
                continue
            }
            state.withLock { _ = $0.open.insert(connection) }
            Thread { [self] in
                self.serve(connection)
                shutdown(connection, Int32(SHUT_WR))
                var sink = [UInt8](repeating: 0, count: 4096)
                var idle = timeval(tv_sec: 1, tv_usec: 0)
                setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &idle, socklen_t(MemoryLayout<timeval>.size))
                while read(connection, &sink, sink.count) > 0 {}
                // Removed under the lock before closing, so stop() never touches a reused number.
                self.state.withLock { _ = $0.open.remove(connection) }
                close(connection)
            }.start()
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
        let connection = HostileConnection(fd: fd)
        if headers["expect"]?.lowercased() == "100-continue" {
            connection.write(Data("HTTP/1.1 100 Continue\r\n\r\n".utf8))
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        var body = Data(buffer[headerEnd.upperBound...])
        while body.count < length {
            buffer = Data()
            if !readMore() { return }
            body.append(buffer)
        }
        let target = String(requestLine[1])
        let parts = target.split(separator: "?", maxSplits: 1).map(String.init)
        let request = HostileRequest(
            method: String(requestLine[0]), path: parts[0], rawQuery: parts.count > 1 ? parts[1] : "",
            headers: headers, body: body)
        state.withLock { $0.requests.append(request) }
        behavior(request, connection)
    }
}
