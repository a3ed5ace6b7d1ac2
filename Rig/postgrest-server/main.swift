import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTPTypes
import PostgRESTServerCore
import PostgresNIO

// postgrest-server: a PostgREST-compatible HTTP server over PostgreSQL, for the project's tests
// and benchmarks (never shipped in sync-cli). It serves what the engine and common PostgREST
// clients use: /rest/v1/<table> GET/HEAD/POST/PATCH/DELETE with filters, select, order,
// Range/limit/offset, Prefer (resolution, return, count), JWT roles and RLS via
// `SET LOCAL ROLE` + `request.jwt.claims`; and /auth/v1/signup, /auth/v1/token (password and
// refresh_token grants), /auth/v1/user, /auth/v1/logout, and the one-time sign-ins
// (/auth/v1/admin/generate_link, /auth/v1/verify: magic links, email codes, recovery, invites).
//
// Configuration comes from the environment (PGRST_JWT_SECRET, PGRST_SERVER_PORT, PGRST_DB_*,
// PGRST_AUTH_DB_USER, PGRST_JWT_AUD, PGRST_MAX_BODY_BYTES, PGRST_STATEMENT_TIMEOUT_MS,
// PGRST_IDLE_TIMEOUT_S, PGRST_BODY_TIMEOUT_S).
//
// Hostile requests meet limits before they reach PostgreSQL: a known `apikey` on every request,
// bodies over PGRST_MAX_BODY_BYTES refused with 413 (by Content-Length, or while reading),
// query strings over 32 KiB with 414, connections without a complete request head closed after
// PGRST_IDLE_TIMEOUT_S, bodies that take longer than PGRST_BODY_TIMEOUT_S closed, every
// statement under a timeout.
//   postgrest-server            serve
//   postgrest-server keys       print the anon and service_role API keys, then exit

let configuration: ServerConfiguration
do {
    configuration = try ServerConfiguration.fromEnvironment()
} catch let error as APIError {
    FileHandle.standardError.write(Data("postgrest-server: \(error.message)\n".utf8))
    exit(64)
}

if CommandLine.arguments.dropFirst().first == "keys" {
    print("anon=\(configuration.apiKey(role: "anon"))")
    print("service_role=\(configuration.apiKey(role: "service_role"))")
    exit(0)
}

let logger: Logger = {
    var logger = Logger(label: "postgrest-server")
    logger.logLevel = .error
    return logger
}()
func pool(user: String) -> PostgresClient {
    PostgresClient(
        configuration: .init(
            host: configuration.databaseHost, port: configuration.databasePort, username: user,
            password: nil, database: configuration.databaseName, tls: .disable),
        backgroundLogger: logger
    )
}
let client = pool(user: configuration.databaseUser)
let authClient = pool(user: configuration.authDatabaseUser)
let backend = Backend(client: client, authClient: authClient, configuration: configuration, logger: logger)

/// The 413 a gateway answers for a body over the limit, in PostgREST's error shape.
let tooLarge = Answer.error(
    APIError(
        status: 413, code: "PGRST413", message: "Payload Too Large",
        details: "The request body is larger than \(configuration.maxBodyBytes) bytes."))

/// Unanswered this long, a request is named on standard error (`PGRST_STUCK_AFTER_S`, 20 by default).
let inFlight = InFlight(
    stuckAfter: .seconds(ProcessInfo.processInfo.environment["PGRST_STUCK_AFTER_S"].flatMap(Int.init) ?? 20))

let responder = CallbackResponder<BasicRequestContext> { request, _ in
    let id = inFlight.begin("\(request.method.rawValue) \(request.uri.path)")
    defer { inFlight.end(id) }
    return try await InFlight.$current.withValue(id) { try await respond(to: request) }
}

func respond(to request: Request) async throws -> Response {
    var request = request
    let answer: Answer
    let started = ContinuousClock.now
    defer { reportIfSlow(request, since: started) }
    if let length = request.headers[.contentLength].flatMap(Int.init), length > configuration.maxBodyBytes {
        answer = tooLarge
    } else if (request.uri.query ?? "").utf8.count > configuration.maxQueryBytes {
        answer = .error(
            APIError(
                status: 414, code: "PGRST414", message: "URI Too Long",
                details: "The query string is longer than \(configuration.maxQueryBytes) bytes."))
    } else {
        do {
            let buffer = try await request.collectBody(upTo: configuration.maxBodyBytes)
            answer = await route(request, body: String(buffer: buffer))
        } catch is NIOTooManyBytesError {
            answer = tooLarge
        }
    }
    var fields = HTTPFields()
    for (name, value) in answer.headers {
        if let field = HTTPField.Name(name) { fields.append(HTTPField(name: field, value: value)) }
    }
    let bytes = ByteBuffer(string: answer.body ?? "")
    return Response(status: .init(code: answer.status), headers: fields, body: .init(byteBuffer: bytes))
}

/// A request answered more than 5 s after it arrived, one line on standard error (the stack's
/// log, which `scripts/with-stack.sh` summarises when it stops): where a test that waited too long
/// looks first. The path only: a query string can carry values.
func reportIfSlow(_ request: Request, since started: ContinuousClock.Instant) {
    let elapsed = ContinuousClock.now - started
    guard elapsed > .seconds(5) else { return }
    InFlight.write("slow request: \(request.method.rawValue) \(request.uri.path) took \(InFlight.seconds(elapsed)) s")
}

func route(_ request: Request, body: String) async -> Answer {
    var headers: [String: String] = [:]
    for field in request.headers { headers[field.name.canonicalName] = field.value }
    let path = request.uri.path
    let query = Grammar.decodeQuery(request.uri.query ?? "")
    if path.hasPrefix("/auth/v1/") {
        inFlight.step("in an auth endpoint (its own pool)")
        do {
            try backend.requireKnownAPIKey(headers["apikey"])
        } catch let error as APIError {
            return .error(error)
        } catch {
            return .error(APIError(status: 401, code: "PGRST000", message: "Invalid API key"))
        }
        let endpoint = String(path.dropFirst("/auth/v1/".count))
        if endpoint == "user" && request.method == .get {
            do { return try await backend.currentUser(authorization: headers["authorization"]) } catch {
                return .json(500, #"{"code":500,"msg":"auth backend error"}"#)
            }
        }
        if endpoint == "logout" && request.method == .post {
            let scope = query.first { $0.0 == "scope" }?.1 ?? "global"
            do { return try await backend.logout(authorization: headers["authorization"], scope: scope) } catch {
                return .json(500, #"{"code":500,"msg":"auth backend error"}"#)
            }
        }
        return await auth(
            path: endpoint, method: request.method.rawValue, query: query, body: body,
            authorization: headers["authorization"])
    }
    var table = path
    if table.hasPrefix("/rest/v1") { table.removeFirst("/rest/v1".count) }
    table = String(table.drop { $0 == "/" })
    if table.hasPrefix("rpc/") {
        let function = String(table.dropFirst("rpc/".count))
        return await backend.call(
            RESTRequest(method: request.method.rawValue, table: function, query: query, headers: headers, body: body),
            function: function.removingPercentEncoding ?? function)
    }
    if table.isEmpty || table.contains("/") {
        return .error(APIError(status: 404, code: "PGRST125", message: "Invalid path specified in request URL"))
    }
    return await backend.handle(
        RESTRequest(
            method: request.method.rawValue, table: table.removingPercentEncoding ?? table,
            query: query, headers: headers, body: body))
}

/// Closes a connection whose request body has not fully arrived this long after its head
/// (a slow-body slowloris); Hummingbird's idle timeout covers a head that never completes.
final class BodyDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    let timeout: TimeAmount
    var deadline: Scheduled<Void>?

    init(timeout: TimeAmount) { self.timeout = timeout }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            deadline?.cancel()
            deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { context.close(promise: nil) }
        case .end:
            deadline?.cancel()
            deadline = nil
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }
}

func auth(
    path: String, method: String, query: [(String, String)], body: String, authorization: String?
) async
    -> Answer
{
    guard method == "POST" else { return .json(405, #"{"code":405,"msg":"method not allowed"}"#) }
    let object = (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
    let email = object["email"] as? String ?? ""
    let password = object["password"] as? String ?? ""
    do {
        switch (path, query.first { $0.0 == "grant_type" }?.1) {
        case ("signup", _): return try await backend.signUp(email: email, password: password)
        case ("token", "password"): return try await backend.passwordGrant(email: email, password: password)
        case ("token", "refresh_token"):
            return try await backend.refreshGrant(token: object["refresh_token"] as? String ?? "")
        case ("token", _): return Backend.invalidGrant("unsupported grant_type", code: "validation_failed")
        case ("admin/generate_link", _):
            return try await backend.generateLink(
                authorization: authorization, type: object["type"] as? String ?? "", email: email)
        case ("verify", _):
            return try await backend.verifyOneTime(
                type: object["type"] as? String ?? "", email: email, token: object["token"] as? String ?? "")
        default: return .json(404, #"{"code":404,"msg":"not found"}"#)
        }
    } catch {
        return .json(500, #"{"code":500,"msg":"auth backend error"}"#)
    }
}

let bodyTimeout = TimeAmount.seconds(configuration.bodyTimeoutSeconds)
var app = Application(
    responder: responder,
    server: .http1(
        configuration: .init(
            additionalChannelHandlers: [BodyDeadlineHandler(timeout: bodyTimeout)],
            idleTimeout: .seconds(configuration.idleTimeoutSeconds))),
    configuration: .init(
        address: .hostname(configuration.host, port: configuration.port), serverName: "postgrest-server"),
    onServerRunning: { channel in
        let port = channel.localAddress?.port ?? configuration.port
        FileHandle.standardOutput.write(
            Data("postgrest-server listening on http://\(configuration.host):\(port)\n".utf8))
    },
    logger: logger
)
app.addServices(client, authClient)
let watchdog = Task { await inFlight.watch() }
do {
    try await app.runService()
} catch {
    FileHandle.standardError.write(
        Data("postgrest-server: cannot serve on \(configuration.host):\(configuration.port): \(error)\n".utf8))
    exit(1)
}
