import Foundation
import HTTPTypes
import Hummingbird
import Logging
import PostgresNIO

// postgrest-server: a PostgREST-compatible HTTP server over PostgreSQL, for the project's tests
// and benchmarks (never shipped in sync-cli). It serves what the engine and common PostgREST
// clients use: /rest/v1/<table> GET/HEAD/POST/PATCH/DELETE with filters, select, order,
// Range/limit/offset, Prefer (resolution, return, count), JWT roles and RLS via
// `SET LOCAL ROLE` + `request.jwt.claims`; and /auth/v1/signup and /auth/v1/token
// (password and refresh_token grants).
//
// Configuration comes from the environment (PGRST_JWT_SECRET, PGRST_SERVER_PORT, PGRST_DB_*).
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

var logger = Logger(label: "postgrest-server")
logger.logLevel = .error
let client = PostgresClient(
    configuration: .init(host: configuration.databaseHost, port: configuration.databasePort, username: configuration.databaseUser,
                         password: nil, database: configuration.databaseName, tls: .disable),
    backgroundLogger: logger
)
let backend = Backend(client: client, configuration: configuration, logger: logger)

let responder = CallbackResponder<BasicRequestContext> { request, _ in
    var request = request
    let buffer = try await request.collectBody(upTo: 64 * 1024 * 1024)
    let body = String(buffer: buffer)
    var headers: [String: String] = [:]
    for field in request.headers { headers[field.name.canonicalName] = field.value }
    let path = request.uri.path
    let query = Grammar.decodeQuery(request.uri.query ?? "")
    let answer: Answer
    if path.hasPrefix("/auth/v1/") {
        answer = await auth(path: String(path.dropFirst("/auth/v1/".count)), method: request.method.rawValue, query: query, body: body)
    } else {
        var table = path
        if table.hasPrefix("/rest/v1") { table.removeFirst("/rest/v1".count) }
        table = String(table.drop { $0 == "/" })
        if table.isEmpty || table.contains("/") {
            answer = .error(APIError(status: 404, code: "PGRST125", message: "Invalid path specified in request URL"))
        } else {
            answer = await backend.handle(RESTRequest(method: request.method.rawValue, table: table.removingPercentEncoding ?? table,
                                                      query: query, headers: headers, body: body))
        }
    }
    var fields = HTTPFields()
    for (name, value) in answer.headers {
        if let field = HTTPField.Name(name) { fields.append(HTTPField(name: field, value: value)) }
    }
    let bytes = ByteBuffer(string: answer.body ?? "")
    return Response(status: .init(code: answer.status), headers: fields, body: .init(byteBuffer: bytes))
}

func auth(path: String, method: String, query: [(String, String)], body: String) async -> Answer {
    guard method == "POST" else { return .json(405, #"{"code":405,"msg":"method not allowed"}"#) }
    let object = (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
    let email = object["email"] as? String ?? ""
    let password = object["password"] as? String ?? ""
    do {
        switch (path, query.first { $0.0 == "grant_type" }?.1) {
        case ("signup", _): return try await backend.signUp(email: email, password: password)
        case ("token", "password"): return try await backend.passwordGrant(email: email, password: password)
        case ("token", "refresh_token"): return try await backend.refreshGrant(token: object["refresh_token"] as? String ?? "")
        case ("token", _): return Backend.invalidGrant("unsupported grant_type", code: "validation_failed")
        default: return .json(404, #"{"code":404,"msg":"not found"}"#)
        }
    } catch {
        return .json(500, #"{"code":500,"msg":"auth backend error"}"#)
    }
}

var app = Application(
    responder: responder,
    configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "postgrest-server"),
    onServerRunning: { _ in
        FileHandle.standardOutput.write(Data("postgrest-server listening on http://\(configuration.host):\(configuration.port)\n".utf8))
    },
    logger: logger
)
app.addServices(client)
try await app.runService()
