import Foundation
import HTTPTypes
import RemoteStore
import SecretCrypto
import SyncModel

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The PostgreSQL-backed test stack that `make test` starts (scripts/with-stack.sh).
public struct StackEnvironment: Sendable {
    public let url: URL
    public let deployedURL: URL
    public let anonKey: String
    public let serviceKey: String
    public let jwtSecret: String
    /// The credential every `request(...)` carries unless it names another (see ``acting(for:)``).
    public private(set) var actingCredential: DeviceCredential?

    /// This stack, with every raw request acting for the device of `credential`.
    public func acting(for credential: DeviceCredential) -> StackEnvironment {
        var copy = self
        copy.actingCredential = credential
        return copy
    }

    public static let howToStart = """
        the PostgreSQL test stack is not running: run the suite with `make test`, or start it with \
        `make stack` and `source /tmp/session-sync-stack/stack.env` before `swift test`; \
        set SYNC_SKIP_STACK_TESTS=1 to skip these tests deliberately
        """

    public static var skipped: Bool { ProcessInfo.processInfo.environment["SYNC_SKIP_STACK_TESTS"] == "1" }

    public static var current: StackEnvironment? {
        let env = ProcessInfo.processInfo.environment
        guard let url = env["SYNC_STACK_URL"].flatMap(URL.init(string:)),
            let deployed = env["SYNC_STACK_DEPLOYED_URL"].flatMap(URL.init(string:)),
            let anon = env["SYNC_STACK_ANON_KEY"], let service = env["SYNC_STACK_SERVICE_KEY"],
            let secret = env["SYNC_STACK_JWT_SECRET"]
        else { return nil }
        return StackEnvironment(url: url, deployedURL: deployed, anonKey: anon, serviceKey: service, jwtSecret: secret)
    }

    public struct Missing: Error, CustomStringConvertible {
        public var description: String { StackEnvironment.howToStart }
        public init() {}
    }

    public static func require() throws -> StackEnvironment {
        guard let current else { throw Missing() }
        return current
    }

    /// An HS256 access token for `user`, as Supabase Auth would issue it: `amr` says the user
    /// signed in with a password at `signedIn` (a fresh sign-in by default; `nil`: no `amr`).
    public func token(for user: UUID, expiresIn seconds: Int = 3600, signedIn: Date? = Date()) -> String {
        let now = Int(Date().timeIntervalSince1970)
        let amr =
            signedIn.map { #","amr":[{"method":"password","timestamp":\#(Int($0.timeIntervalSince1970))}]"# } ?? ""
        return sign(
            claims:
                #"{"aud":"authenticated","exp":\#(now + seconds),"iat":\#(now),"role":"authenticated","sub":"\#(user.canonical)"\#(amr)}"#
        )
    }

    /// A token with exactly these claims (JSON text), signed with the stack's secret: for the
    /// tests that forge every shape of JWT.
    public func sign(claims: String, header: String = #"{"alg":"HS256","typ":"JWT"}"#) -> String {
        let input = Self.base64URL(Data(header.utf8)) + "." + Self.base64URL(Data(claims.utf8))
        let signature = HMACSHA256.authenticationCode(
            for: Array(input.utf8), using: SecureBytes(copying: Array(jwtSecret.utf8)))
        return input + "." + Self.base64URL(Data(signature))
    }

    public static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Runs SQL on the stack's PostgreSQL as its superuser (`psql`), for tests that must see
    /// what the API cannot show (connection state, grants, plans). Returns psql's unaligned
    /// output, and with `notices` the server's notices too (what `auto_explain` reports). The
    /// child is waited for on a thread of its own, never on the cooperative pool.
    public func sql(
        _ statement: String, database: String = "sync_own", notices: Bool = false
    ) async throws -> String {
        try await offThePool { try self.sqlBlocking(statement, database: database, notices: notices) }
    }

    /// Runs `body`, then `cleanup` (SQL that undoes what the test set up), whether `body` returned
    /// or threw: a `defer` that awaits, so that the cleanup's `psql` waits off the cooperative pool.
    /// A cleanup that fails is ignored; `body`'s error, if any, is rethrown.
    public func afterwards<Value>(
        run cleanup: String, _ body: () async throws -> Value
    ) async throws -> Value {
        let result: Result<Value, any Error>
        do { result = .success(try await body()) } catch { result = .failure(error) }
        _ = try? await sql(cleanup)
        return try result.get()
    }

    /// ``sql(_:database:notices:)`` waiting on the calling thread: only where `await` cannot be
    /// written (a synchronous callback that must hold its caller until the statement is done).
    public func sqlBlocking(_ statement: String, database: String = "sync_own", notices: Bool = false) throws -> String
    {
        guard let settings = ProcessInfo.processInfo.environment["SYNC_STACK_DB"] else { throw Missing() }
        let connection = settings.replacingOccurrences(of: "dbname=sync_own", with: "dbname=\(database)")
        // The cluster's own psql when the stack names it (no Perl wrapper to start each time).
        let psql = ProcessInfo.processInfo.environment["SYNC_STACK_PSQL"].flatMap { $0.isEmpty ? nil : $0 } ?? "psql"
        // posix_spawn, not Foundation's Process: see SpawnedChild.
        let child = try SpawnedChild(
            "/usr/bin/env", [psql, "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", connection, "-c", statement],
            environment: ProcessInfo.processInfo.environment)
        let status = try child.wait()
        guard status == 0 else { throw SQLFailed(status: SpawnedChild.exitCode(status)) }
        // The notices (standard error) after the output: callers look for lines, not their order.
        let output = notices ? child.output + "\n" + child.errors : child.output
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The REST server's process id (for memory checks), when the stack runs from with-stack.sh.
    public func serverPID(deployed: Bool = false) -> Int32? {
        guard let directory = ProcessInfo.processInfo.environment["STACK_DIR"],
            let text = try? String(
                contentsOfFile: directory + (deployed ? "/api-deployed.pid" : "/api.pid"), encoding: .utf8)
        else { return nil }
        return Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// A raw request to the stack, for behaviours the client never exercises, acting for the
    /// device of `credential` when one is given (its header, as the product's client sends it).
    public func request(
        _ method: String, _ path: String, base: URL? = nil, token: String? = nil, headers: [String: String] = [:],
        body: String? = nil, apiKey: String?? = .none, credential: DeviceCredential? = nil
    ) async throws -> (status: Int, headers: [String: String], body: String) {
        // Through the product's own transport (libcurl on Linux), not URLSession: on Linux,
        // FoundationNetworking races a socket's teardown against its dispatch source and has
        // crashed the test process (swift-corelibs-foundation#4791).
        guard let requestMethod = HTTPRequest.Method(method) else { throw BadRequest(what: "method \(method)") }
        var fields = HTTPFields()
        func add(_ name: String, _ value: String) throws {
            guard let field = HTTPField.Name(name) else { throw BadRequest(what: "header name \(name)") }
            fields.append(HTTPField(name: field, value: value))
        }
        if let key = apiKey ?? anonKey { try add("apikey", key) }
        if let token { try add("Authorization", "Bearer \(token)") }
        for (name, value) in headers { try add(name, value) }
        if let credential = credential ?? actingCredential, !headers.keys.contains(DeviceCredential.headerName) {
            try add(DeviceCredential.headerName, credential.headerValue)
        }
        if body != nil, !headers.keys.contains(where: { $0.lowercased() == "content-type" }) {
            try add("Content-Type", "application/json")
        }
        let response = try await Self.transport.send(
            TransportRequest(
                method: requestMethod, url: URL(string: (base ?? url).absoluteString + path)!, headerFields: fields,
                body: body.map { Data($0.utf8) }, timeout: Self.ceiling))
        var received: [String: String] = [:]
        for field in response.headerFields { received[field.name.canonicalName.lowercased()] = field.value }
        return (response.status.code, received, String(decoding: response.body, as: UTF8.self))
    }

    /// How long a raw request may go without an answer: a ceiling that only catches a hang. The
    /// product's 10 s idle timeout is a product setting; on a machine whose two cores are busy,
    /// the stack can take longer than that to answer one request among hundreds in flight.
    static let ceiling: TimeInterval = 60

    private static let transport = defaultTransport(connectTimeout: ceiling)

    /// A request `request(...)` cannot express (HTTP field syntax).
    public struct BadRequest: Error, CustomStringConvertible {
        public let what: String
        public var description: String { "cannot send a request with this \(what)" }
    }

    /// Registers a fresh credential for `device` of `user` (`register_device`) and returns it: what
    /// a raw request then carries to act for that device.
    public func registeredCredential(
        for device: UUID, user: UUID, base: URL? = nil
    ) async throws -> DeviceCredential {
        let credential = DeviceCredential.random(for: device)
        let response = try await request(
            "POST", "/rest/v1/rpc/register_device", base: base, token: token(for: user),
            body: #"{"device_id":"\#(device.canonical)"}"#, credential: credential)
        guard response.status == 200 else { throw DeviceUpdateFailed(status: response.status) }
        return credential
    }

    /// Sets device columns as the trust flow would, with the service_role key (RLS bypassed).
    public func setDevice(_ device: UUID, base: URL? = nil, fields: String) async throws {
        let response = try await request(
            "PATCH", "/rest/v1/devices?id=eq.\(device.canonical)", base: base, token: serviceKey, body: fields)
        guard response.status == 204 else { throw DeviceUpdateFailed(status: response.status) }
    }
}

extension DeviceCredential {
    /// The credential's header, for `request(..., headers:)`.
    public var headers: [String: String] { [Self.headerName: headerValue] }
}

/// psql failed.
public struct SQLFailed: Error {
    public let status: Int32
}

/// The stack refused a trust-flow update.
public struct DeviceUpdateFailed: Error {
    public let status: Int
}
