import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import TestStack

/// An imitation of APNs for the tests and the benchmark: a real HTTP/2 server over TLS on
/// loopback, with a certificate made for it (by `openssl`) at start.
///
/// It checks what APNs checks (the provider token's ES256 signature, `kid`, `iss` and age, the
/// topic, the push type, the priority, the apns-id, the collapse id, the token's format and the
/// payload's size) and answers with APNs' statuses and reasons. Like APNs, it allows one stream
/// per connection until the connection has shown a valid provider token. Tests script answers
/// per device token or per request, and faults: GOAWAY, stream resets and refusals, stalls,
/// closed connections. Every request is logged.
public final class APNsImitation: Sendable {
    /// What to do with a request instead of checking it.
    public enum Fault: Sendable, Equatable {
        /// Answer this status and reason (and for 410 a timestamp).
        case answer(status: Int, reason: String, timestamp: Date? = nil)
        /// Send GOAWAY (last stream 0: nothing processed) and close the connection.
        case goaway
        /// Reset the stream (RST_STREAM, INTERNAL_ERROR).
        case reset
        /// Refuse the stream (RST_STREAM, REFUSED_STREAM: not processed, RFC 9113 8.7).
        case refuse
        /// Never answer.
        case stall
        /// Close the TCP connection.
        case close
        /// Answer 400 with a head and the start of a body, then never end the body.
        case stallBody
        /// Answer 400 with a head, then send one byte of body a second, never ending it.
        case dripBody
    }

    /// One request as the imitation saw it.
    public struct LoggedRequest: Sendable {
        public var time: Date
        public var connection: Int
        public var method: String
        public var path: String
        public var token: String
        public var headers: [String: String]
        public var body: [UInt8]
        /// What it answered (0 for a fault without an answer).
        public var status: Int
        public var reason: String?
        /// The provider token's `iat`, when it carried a readable one.
        public var issuedAt: Int?
        /// Streams open on the connection when this one arrived (this one included).
        public var concurrentStreams: Int
    }

    public struct Options: Sendable {
        public var keyID: String
        public var teamID: String
        public var bundleID: String
        /// The provider key's public half (x963 bytes; the key type is not Sendable).
        public var publicKeyBytes: Data
        var publicKey: P256.Signing.PublicKey { try! P256.Signing.PublicKey(x963Representation: publicKeyBytes) }
        /// Provider tokens older than this are `ExpiredProviderToken` (APNs: one hour).
        public var maximumTokenAge: TimeInterval = 3600
        /// The stream limit once a connection has shown a valid token (before: 1).
        public var streamsAfterAuthentication = 1000
        /// The names the server's certificate carries (openssl's subjectAltName syntax).
        public var certificateNames = "DNS:localhost,IP:127.0.0.1"

        public init(keyID: String, teamID: String, bundleID: String, publicKey: P256.Signing.PublicKey) {
            self.keyID = keyID
            self.teamID = teamID
            self.bundleID = bundleID
            self.publicKeyBytes = publicKey.x963Representation
        }
    }

    struct State {
        var log: [LoggedRequest] = []
        var tokenScripts: [String: [Fault]] = [:]
        var stickyTokenFaults: [String: Fault] = [:]
        var requestScript: [Fault] = []
        var random: (rate: Double, faults: [Fault], generator: SplitMix)?
        var expiredIssuedAtOrBefore: Int?
        var nextConnection = 0
        var openStreams: [Int: Int] = [:]
        var keepLog = true
        var requestCount = 0
        var observer: (@Sendable (LoggedRequest) -> Void)?
    }

    public let port: Int
    /// The certificate to trust (PEM).
    public let certificateFile: String
    let options: Options
    let state = NIOLockedValueBox(State())
    private let channel: any Channel
    private let group: MultiThreadedEventLoopGroup

    /// `https://127.0.0.1:<port>`.
    public var baseURL: URL { URL(string: "https://127.0.0.1:\(port)")! }

    /// Starts the server on 127.0.0.1 with a new certificate written under `directory`.
    public static func start(
        options: Options, directory: URL, port: Int = 0, threads: Int = 1
    ) async throws -> APNsImitation {
        let certificate = directory.appendingPathComponent("apns-imitation-cert.pem").path
        let key = directory.appendingPathComponent("apns-imitation-key.pem").path
        try await makeCertificate(certificate: certificate, key: key, names: options.certificateNames)
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let box = NIOLockedValueBox<APNsImitation?>(nil)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard let server = box.withLockedValue({ $0 }) else { throw ChannelError.ioOnClosedChannel }
                    let connection = server.state.withLockedValue { state -> Int in
                        state.nextConnection += 1
                        return state.nextConnection
                    }
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLServerHandler(context: context))
                    let authenticated = NIOLockedValueBox(false)
                    // Like APNs: one stream until the connection shows a valid provider token.
                    var http2 = NIOHTTP2Handler.ConnectionConfiguration()
                    http2.initialSettings = [
                        HTTP2Setting(parameter: .maxConcurrentStreams, value: 1),
                        HTTP2Setting(parameter: .maxHeaderListSize, value: HPACKDecoder.defaultMaxHeaderListSize),
                    ]
                    _ = try sync.configureHTTP2Pipeline(
                        mode: .server,
                        connectionConfiguration: http2,
                        streamConfiguration: .init()
                    ) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandler(
                                StreamHandler(server: server, connection: connection, authenticated: authenticated))
                        }
                    }
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
        let server = APNsImitation(
            port: channel.localAddress!.port!, certificateFile: certificate, options: options, channel: channel,
            group: group)
        box.withLockedValue { $0 = server }
        return server
    }

    private init(
        port: Int, certificateFile: String, options: Options, channel: any Channel, group: MultiThreadedEventLoopGroup
    ) {
        self.port = port
        self.certificateFile = certificateFile
        self.options = options
        self.channel = channel
        self.group = group
    }

    public func shutdown() async throws {
        try await channel.close()
        try await group.shutdownGracefully()
    }

    // MARK: - scripting

    /// The next answers for `token`, one per request, then the normal checks.
    public func script(token: String, _ faults: [Fault]) {
        state.withLockedValue { $0.tokenScripts[token, default: []] += faults }
    }

    /// Every request for `token` gets `fault` (nil: none).
    public func always(token: String, _ fault: Fault?) {
        state.withLockedValue { $0.stickyTokenFaults[token] = fault }
    }

    /// The next requests, whatever their token, get these faults in turn.
    public func scriptRequests(_ faults: [Fault]) {
        state.withLockedValue { $0.requestScript += faults }
    }

    /// Each request gets one of `faults` with probability `rate` (a seeded generator).
    public func randomFaults(rate: Double, _ faults: [Fault], seed: UInt64) {
        state.withLockedValue { $0.random = rate > 0 ? (rate, faults, SplitMix(state: seed)) : nil }
    }

    /// Provider tokens issued at or before `iat` are answered `ExpiredProviderToken`.
    public func expireProviderTokens(issuedAtOrBefore iat: Int?) {
        state.withLockedValue { $0.expiredIssuedAtOrBefore = iat }
    }

    /// Whether requests are logged (the benchmark turns it off).
    public func keepLog(_ keep: Bool) { state.withLockedValue { $0.keepLog = keep } }

    public var requests: [LoggedRequest] { state.withLockedValue { $0.log } }
    public var requestCount: Int { state.withLockedValue { $0.requestCount } }
    public func clearLog() { state.withLockedValue { $0.log = [] } }

    // MARK: - checks

    func decide(
        method: String, path: String, headers: [String: String], body: [UInt8]
    ) -> (fault: Fault?, status: Int, reason: String?, timestamp: Date?, issuedAt: Int?, validToken: Bool) {
        let token = path.hasPrefix("/3/device/") ? String(path.dropFirst("/3/device/".count)) : ""
        let now = Date()
        let (scripted, expiredCutoff) = state.withLockedValue { state -> (Fault?, Int?) in
            state.requestCount += 1
            if !state.requestScript.isEmpty {
                return (state.requestScript.removeFirst(), state.expiredIssuedAtOrBefore)
            }
            if var script = state.tokenScripts[token], !script.isEmpty {
                let fault = script.removeFirst()
                state.tokenScripts[token] = script
                return (fault, state.expiredIssuedAtOrBefore)
            }
            if let fault = state.stickyTokenFaults[token] { return (fault, state.expiredIssuedAtOrBefore) }
            if var random = state.random {
                defer { state.random = random }
                if random.generator.nextDouble() < random.rate, !random.faults.isEmpty {
                    let fault = random.faults[Int(random.generator.next() % UInt64(random.faults.count))]
                    return (fault, state.expiredIssuedAtOrBefore)
                }
            }
            return (nil, state.expiredIssuedAtOrBefore)
        }
        let (tokenCheck, issuedAt) = checkProviderToken(
            headers["authorization"], now: now, expiredCutoff: expiredCutoff)
        if let scripted {
            if case .answer(let status, let reason, let timestamp) = scripted {
                return (nil, status, reason, timestamp, issuedAt, tokenCheck == nil)
            }
            return (scripted, 0, nil, nil, issuedAt, tokenCheck == nil)
        }
        func refuse(_ status: Int, _ reason: String) -> (Fault?, Int, String?, Date?, Int?, Bool) {
            (nil, status, reason, nil, issuedAt, tokenCheck == nil)
        }
        guard method == "POST" else { return refuse(405, "MethodNotAllowed") }
        guard path.hasPrefix("/3/device/") else { return refuse(404, "BadPath") }
        if let tokenCheck { return refuse(403, tokenCheck) }
        guard token.utf8.count == 64, token.utf8.allSatisfy({ isHex($0) }) else { return refuse(400, "BadDeviceToken") }
        guard let type = headers["apns-push-type"], ["alert", "background", "liveactivity"].contains(type) else {
            return refuse(400, "InvalidPushType")
        }
        guard let topic = headers["apns-topic"] else { return refuse(400, "MissingTopic") }
        let expectedTopic = type == "liveactivity" ? options.bundleID + ".push-type.liveactivity" : options.bundleID
        guard topic == expectedTopic else { return refuse(400, "TopicDisallowed") }
        if let id = headers["apns-id"], UUID(uuidString: id) == nil { return refuse(400, "BadMessageId") }
        if let priority = headers["apns-priority"] {
            guard priority == "5" || priority == "10" else { return refuse(400, "BadPriority") }
            if type == "background" && priority != "5" { return refuse(400, "BadPriority") }
        }
        if let expiration = headers["apns-expiration"], Int(expiration) == nil {
            return refuse(400, "BadExpirationDate")
        }
        if let collapse = headers["apns-collapse-id"], collapse.utf8.count > 64 { return refuse(400, "BadCollapseId") }
        guard !body.isEmpty else { return refuse(400, "PayloadEmpty") }
        guard body.count <= 4096 else { return refuse(413, "PayloadTooLarge") }
        guard (try? JSONSerialization.jsonObject(with: Data(body))) is [String: Any] else {
            return refuse(400, "BadPayload")
        }
        return (nil, 200, nil, nil, issuedAt, true)
    }

    /// nil when valid, else APNs' reason; and the `iat` when readable.
    func checkProviderToken(_ header: String?, now: Date, expiredCutoff: Int?) -> (String?, Int?) {
        guard let header, header.hasPrefix("bearer ") else { return ("MissingProviderToken", nil) }
        let parts = header.dropFirst("bearer ".count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let head = decodeJSON(parts[0]), let claims = decodeJSON(parts[1]),
            let signature = base64URLDecode(parts[2])
        else { return ("InvalidProviderToken", nil) }
        let issuedAt = (claims["iat"] as? NSNumber)?.intValue
        guard head["alg"] as? String == "ES256", head["kid"] as? String == options.keyID,
            claims["iss"] as? String == options.teamID, let issuedAt,
            let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
            options.publicKey.isValidSignature(parsed, for: Data((parts[0] + "." + parts[1]).utf8))
        else { return ("InvalidProviderToken", issuedAt) }
        if Double(issuedAt) > now.timeIntervalSince1970 + 300 { return ("InvalidProviderToken", issuedAt) }
        if Double(issuedAt) < now.timeIntervalSince1970 - options.maximumTokenAge {
            return ("ExpiredProviderToken", issuedAt)
        }
        if let expiredCutoff, issuedAt <= expiredCutoff { return ("ExpiredProviderToken", issuedAt) }
        return (nil, issuedAt)
    }

    func record(_ request: LoggedRequest) {
        let observer = state.withLockedValue { state in
            if state.keepLog { state.log.append(request) }
            return state.observer
        }
        observer?(request)
    }

    /// Calls `observer` with every request (on the server's thread; keep it short).
    public func onRequest(_ observer: @escaping @Sendable (LoggedRequest) -> Void) {
        state.withLockedValue { $0.observer = observer }
    }

    func streamOpened(_ connection: Int) -> Int {
        state.withLockedValue { state in
            state.openStreams[connection, default: 0] += 1
            return state.openStreams[connection]!
        }
    }

    func streamClosed(_ connection: Int) {
        state.withLockedValue { $0.openStreams[connection, default: 1] -= 1 }
    }

    /// Writes a new self-signed certificate and its key for `names` (a subjectAltName) with
    /// `openssl`, waiting for it off the cooperative pool: every push test starts one, beside
    /// tests whose deadlines need the pool's threads (one on a machine pinned to one core).
    static func makeCertificate(certificate: String, key: String, names: String) async throws {
        // posix_spawn, not Foundation's Process (see SpawnedChild).
        let status = try await offThePool {
            let openssl = try SpawnedChild(
                "/usr/bin/env",
                [
                    "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", key, "-out", certificate, "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=\(names)",
                ], environment: ProcessInfo.processInfo.environment)
            return try openssl.wait()
        }
        guard status == 0 else {
            throw ImitationError("openssl could not make the imitation's certificate (is openssl installed?)")
        }
    }
}

public struct ImitationError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// A small seeded generator, so a fault pattern can be replayed.
struct SplitMix: Sendable {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func nextDouble() -> Double { Double(next() >> 11) / Double(1 << 53) }
}

private func isHex(_ byte: UInt8) -> Bool {
    (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte) || (0x41...0x46).contains(byte)
}

private func base64URLDecode(_ text: Substring) -> Data? {
    var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while base64.count % 4 != 0 { base64 += "=" }
    return Data(base64Encoded: base64)
}

private func decodeJSON(_ text: Substring) -> [String: Any]? {
    base64URLDecode(text).flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
}

/// One HTTP/2 stream: collects the request, asks the server what to do, answers.
final class StreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    let server: APNsImitation
    let connection: Int
    let authenticated: NIOLockedValueBox<Bool>
    var headers: HPACKHeaders?
    var body: [UInt8] = []
    var streams = 0
    var counted = true

    init(server: APNsImitation, connection: Int, authenticated: NIOLockedValueBox<Bool>) {
        self.server = server
        self.connection = connection
        self.authenticated = authenticated
    }

    func handlerAdded(context: ChannelHandlerContext) {
        streams = server.streamOpened(connection)
    }

    func handlerRemoved(context: ChannelHandlerContext) { uncount() }

    /// The stream stops counting as open once its answer has ended (as HTTP/2 sees it: both sides
    /// have ended it), not when its channel is torn down a moment later.
    func uncount() {
        guard counted else { return }
        counted = false
        server.streamClosed(connection)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            headers = frame.headers
            if frame.endStream { respond(context: context) }
        case .data(let frame):
            if case .byteBuffer(let buffer) = frame.data { body += buffer.readableBytesView }
            if frame.endStream { respond(context: context) }
        default:
            break
        }
    }

    private func respond(context: ChannelHandlerContext) {
        let headers = headers ?? HPACKHeaders()
        var plain: [String: String] = [:]
        for (name, value, _) in headers where !name.hasPrefix(":") { plain[name.lowercased()] = value }
        let method = headers.first(name: ":method") ?? ""
        let path = headers.first(name: ":path") ?? ""
        let decision = server.decide(method: method, path: path, headers: plain, body: body)
        let token = path.hasPrefix("/3/device/") ? String(path.dropFirst("/3/device/".count)) : ""
        server.record(
            .init(
                time: Date(), connection: connection, method: method, path: path, token: token, headers: plain,
                body: body,
                status: decision.status, reason: decision.reason, issuedAt: decision.issuedAt,
                concurrentStreams: streams))
        if decision.validToken, !authenticated.withLockedValue({ $0 }) {
            authenticated.withLockedValue { $0 = true }
            // Like APNs: the raise comes once the first request with a valid token has been
            // answered, so it reaches a connection with no stream open (written after the answer).
            let settings = HTTP2Frame(
                streamID: .rootStream,
                payload: .settings(
                    .settings([
                        HTTP2Setting(parameter: .maxConcurrentStreams, value: server.options.streamsAfterAuthentication)
                    ])))
            let parent = context.channel.parent
            parent?.eventLoop.scheduleTask(in: .milliseconds(20)) { parent?.writeAndFlush(settings, promise: nil) }
        }
        switch decision.fault {
        case .goaway:
            let parent = context.channel.parent
            let frame = HTTP2Frame(
                streamID: .rootStream, payload: .goAway(lastStreamID: .rootStream, errorCode: .noError, opaqueData: nil)
            )
            parent?.writeAndFlush(frame).whenComplete { _ in parent?.close(promise: nil) }
            return
        case .reset, .refuse:
            uncount()
            let code: HTTP2ErrorCode = decision.fault == .refuse ? .refusedStream : .internalError
            context.writeAndFlush(wrapOutboundOut(.rstStream(code)), promise: nil)
            return
        case .stall:
            return
        case .close:
            context.channel.parent?.close(promise: nil)
            return
        case .stallBody, .dripBody:
            let head = HPACKHeaders([(":status", "400"), ("content-type", "application/json")])
            context.write(wrapOutboundOut(.headers(.init(headers: head))), promise: nil)
            let start = context.channel.allocator.buffer(string: #"{"reason":"#)
            context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(start)))), promise: nil)
            guard decision.fault == .dripBody else { return }
            let channel = context.channel
            channel.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { task in
                guard channel.isActive else { return task.cancel() }
                let byte = channel.allocator.buffer(string: " ")
                channel.writeAndFlush(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(byte))), promise: nil)
            }
            return
        case .answer, nil:
            break
        }
        var response = HPACKHeaders([(":status", String(decision.status))])
        if let id = plain["apns-id"] { response.add(name: "apns-id", value: id) }
        uncount()
        if decision.status == 200 {
            context.writeAndFlush(wrapOutboundOut(.headers(.init(headers: response, endStream: true))), promise: nil)
            return
        }
        response.add(name: "content-type", value: "application/json")
        var json = #"{"reason":"\#(decision.reason ?? "")""#
        if let timestamp = decision.timestamp {
            json += #","timestamp":\#(Int64(timestamp.timeIntervalSince1970 * 1000))"#
        }
        json += "}"
        context.write(wrapOutboundOut(.headers(.init(headers: response))), promise: nil)
        let buffer = context.channel.allocator.buffer(string: json)
        context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(buffer), endStream: true))), promise: nil)
    }
}
