import Foundation
import RemoteStore
import SyncTestSupport
import Synchronization
import TestStack
import Testing

/// `CurlTransport`, the default HTTP transport, against a real server on loopback: what it
/// sends for each method, what it hands back, many requests at once, cancellation, and the
/// requests it refuses to send. The hostile-server defences it shares with `URLSessionTransport`
/// are in `HostileServerTests`.
@Suite("libcurl transport")
struct CurlTransportTests {
    static func echo() throws -> HostileServer {
        try HostileServer { request, connection in
            connection.respond(
                200, headers: ["content-type": "text/plain", "x-method": request.method],
                body: Data((request.method + " " + request.path).utf8))
        }
    }

    @Test("each method goes out as asked, with its body, its headers as given, and nothing libcurl would add")
    func methods() async throws {
        let server = try Self.echo()
        defer { server.stop() }
        let transport = CurlTransport()
        let body = Data(#"[{"a":1}]"#.utf8)
        let cases: [(String, Data?)] = [
            ("GET", nil), ("HEAD", nil), ("DELETE", nil), ("POST", body), ("PATCH", body), ("PUT", body), ("POST", nil),
        ]
        for (method, sent) in cases {
            let url = server.baseURL.appendingPathComponent("rest/v1/\(method.lowercased())")
            var headers = [("Authorization", "Bearer t"), ("Prefer", "return=minimal")]
            if sent != nil { headers.append(("Content-Type", "application/json")) }
            let response = try await transport.send(
                TransportRequest(method: method, url: url, headers: headers, body: sent))
            #expect(response.status == 200)
            #expect(response.headers["x-method"] == method)
            #expect(
                response.body == (method == "HEAD" ? Data() : Data("\(method) /rest/v1/\(method.lowercased())".utf8)))
            let seen = try #require(server.requests.last)
            #expect(seen.method == method)
            #expect(seen.body == (sent ?? Data()))
            #expect(seen.headers["authorization"] == "Bearer t")
            #expect(seen.headers["prefer"] == "return=minimal")
            #expect(seen.headers["expect"] == nil, "no 100-continue round trip")
            #expect(
                seen.headers["content-type"] == (sent == nil ? nil : "application/json"),
                "no form type libcurl would add")
        }
    }

    @Test("fifty requests at once each get their own response")
    func concurrent() async throws {
        let server = try HostileServer { request, connection in
            Thread.sleep(forTimeInterval: 0.05)
            connection.respond(200, body: Data(request.path.utf8))
        }
        defer { server.stop() }
        let transport = CurlTransport()
        try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for index in 0..<50 {
                group.addTask {
                    let response = try await transport.send(
                        TransportRequest(method: "GET", url: server.baseURL.appendingPathComponent("r\(index)")))
                    return (index, String(decoding: response.body, as: UTF8.self))
                }
            }
            var answered = 0
            for try await (index, body) in group {
                #expect(body == "/r\(index)")
                answered += 1
            }
            #expect(answered == 50)
        }
    }

    @Test("an interim 100 response's headers are dropped and repeated headers are joined")
    func responseHeaders() async throws {
        let server = try HostileServer { _, connection in
            let text =
                "HTTP/1.1 100 Continue\r\nx-interim: yes\r\n\r\n"
                + "HTTP/1.1 201 Created\r\nX-Repeated: a\r\nx-repeated: b\r\ncontent-length: 2\r\nconnection: close\r\n\r\n[]"
            _ = connection.write(Data(text.utf8))
        }
        defer { server.stop() }
        let response = try await CurlTransport().send(TransportRequest(method: "GET", url: server.baseURL))
        #expect(response.status == 201)
        #expect(response.headers["x-interim"] == nil)
        #expect(response.headers["x-repeated"] == "a, b")
        #expect(response.body == Data("[]".utf8))
    }

    @Test(
        "a header value with a line break cannot inject a header: the fields hold no line break, and the server sees none",
        arguments: [("CR LF", "token\r\nX-Injected: 1"), ("LF", "token\nX-Injected: 1"), ("NUL", "tok\u{0}en")])
    func headerInjection(kind: String, value: String) async throws {
        let server = try Self.echo()
        defer { server.stop() }
        let request = TransportRequest(
            method: "GET", url: server.baseURL, headers: [("Authorization", "Bearer \(value)")])
        _ = try await CurlTransport().send(request)
        let seen = try #require(server.requests.first)
        #expect(seen.headers["x-injected"] == nil)
        #expect(seen.headers["authorization"].map { !$0.unicodeScalars.contains { $0.value < 0x20 } } == true)
    }

    @Test("an access token with a line break fails the client's request at once: nothing is sent, nothing retried")
    func tokenWithLineBreak() async throws {
        let server = try Self.echo()
        defer { server.stop() }
        let calls = Mutex(0)
        let configuration = PostgRESTConfiguration(projectURL: server.baseURL, apiKey: "anon-key", userID: UUID()) {
            _ in
            calls.withLock { $0 += 1 }
            return "user-token\r\nX-Injected: 1"
        }
        let store = PostgRESTRemoteStore(configuration: configuration, transport: CurlTransport())
        await #expect { _ = try await store.listDevices() } throws: { error in
            guard let error = error as? RemoteStoreError else { return false }
            return error.code == .configuration && !error.description.contains("user-token")
        }
        #expect(server.requests.isEmpty)
        #expect(calls.withLock { $0 } == 1, "a request that cannot be sent is not retried")
    }

    @Test(
        "only http and https URLs are fetched",
        arguments: ["file:///etc/passwd", "ftp://127.0.0.1/x", "gopher://127.0.0.1/x"])
    func otherSchemes(url: String) async throws {
        await #expect {
            _ = try await CurlTransport().send(TransportRequest(method: "GET", url: URL(string: url)!))
        } throws: {
            ($0 as? RemoteStoreError)?.code == .configuration
        }
    }

    @Test("a refused connection is a network error that names neither the URL nor a header")
    func refused() async throws {
        // Nothing listens on port 1 (a stopped server's port could be taken by another test's).
        let url = URL(string: "http://127.0.0.1:1/rest/v1/secret-path")!
        let request = TransportRequest(
            method: "GET", url: url, headers: [("Authorization", "Bearer user-token")], timeout: 5)
        await #expect { _ = try await CurlTransport().send(request) } throws: { error in
            guard let error = error as? RemoteStoreError else { return false }
            return error.code == .network && !error.description.contains("secret-path")
                && !error.description.contains("user-token")
        }
    }

    @Test("a response whose headers never end is cut at the size cap")
    func endlessHeaders() async throws {
        let server = try HostileServer { _, connection in
            guard connection.write(Data("HTTP/1.1 200 OK\r\n".utf8)) else { return }
            for index in 0..<100_000 {
                guard connection.write(Data("x-filler-\(index): \(String(repeating: "a", count: 100))\r\n".utf8)) else {
                    return
                }
            }
        }
        defer { server.stop() }
        await #expect {
            _ = try await CurlTransport(maxResponseBytes: 64 * 1024).send(
                TransportRequest(method: "GET", url: server.baseURL))
        } throws: {
            ($0 as? RemoteStoreError)?.code == .responseTooLarge
        }
    }

    @Test("a cancelled request ends at once, and the transport keeps working")
    func cancellation() async throws {
        let silent = try HostileServer { _, _ in Thread.sleep(forTimeInterval: 60) }
        defer { silent.stop() }
        // The idle bound is the suite's hang ceiling, not the product's 10 s: on a loaded machine
        // this task may not run again for seconds after the server saw the request, and the
        // transfer must still be live when it is cancelled.
        let bound = TimeInterval(Waiting.ceiling.components.seconds)
        let transport = CurlTransport(connectTimeout: bound)
        let task = Task {
            try await transport.send(TransportRequest(method: "GET", url: silent.baseURL, timeout: bound))
        }
        while silent.requests.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        task.cancel()
        // Undefended, the transfer runs to its idle bound and fails as a network error.
        await #expect(throws: CancellationError.self) { try await task.value }

        let server = try Self.echo()
        defer { server.stop() }
        #expect(try await transport.send(TransportRequest(method: "GET", url: server.baseURL)).status == 200)
    }

    @Test("a task cancelled before it sends never reaches the server")
    func cancelledBeforeSending() async throws {
        let server = try Self.echo()
        defer { server.stop() }
        let transport = CurlTransport()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await transport.send(
                TransportRequest(method: "POST", url: server.baseURL, body: Data("{}".utf8)))
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(server.requests.isEmpty)
    }
}
