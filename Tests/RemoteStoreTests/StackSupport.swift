import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The PostgreSQL-backed test stack that `make test` starts (scripts/with-stack.sh).
struct StackEnvironment: Sendable {
    let url: URL
    let deployedURL: URL
    let anonKey: String
    let serviceKey: String
    let jwtSecret: String

    static let howToStart = """
        the PostgreSQL test stack is not running: run the suite with `make test`, or start it with \
        `make stack` and `source /tmp/session-sync-stack/stack.env` before `swift test`; \
        set SYNC_SKIP_STACK_TESTS=1 to skip these tests deliberately
        """

    static var skipped: Bool { ProcessInfo.processInfo.environment["SYNC_SKIP_STACK_TESTS"] == "1" }

    static var current: StackEnvironment? {
        let env = ProcessInfo.processInfo.environment
        guard let url = env["SYNC_STACK_URL"].flatMap(URL.init(string:)),
              let deployed = env["SYNC_STACK_DEPLOYED_URL"].flatMap(URL.init(string:)),
              let anon = env["SYNC_STACK_ANON_KEY"], let service = env["SYNC_STACK_SERVICE_KEY"],
              let secret = env["SYNC_STACK_JWT_SECRET"] else { return nil }
        return StackEnvironment(url: url, deployedURL: deployed, anonKey: anon, serviceKey: service, jwtSecret: secret)
    }

    struct Missing: Error, CustomStringConvertible {
        var description: String { StackEnvironment.howToStart }
    }

    static func require() throws -> StackEnvironment {
        guard let current else { throw Missing() }
        return current
    }

    /// An HS256 access token for `user`, as Supabase Auth would issue it.
    func token(for user: UUID, expiresIn seconds: Int = 3600) -> String {
        let now = Int(Date().timeIntervalSince1970)
        let claims = #"{"aud":"authenticated","exp":\#(now + seconds),"iat":\#(now),"role":"authenticated","sub":"\#(user.canonical)"}"#
        func base64URL(_ data: Data) -> String {
            data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let input = base64URL(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8)) + "." + base64URL(Data(claims.utf8))
        let signature = HMACSHA256.authenticationCode(for: Array(input.utf8), using: SecureBytes(copying: Array(jwtSecret.utf8)))
        return input + "." + base64URL(Data(signature))
    }

    /// A raw request to the stack, for behaviours the client never exercises.
    func request(_ method: String, _ path: String, base: URL? = nil, token: String? = nil, headers: [String: String] = [:],
                 body: String? = nil) async throws -> (status: Int, headers: [String: String], body: String) {
        var request = URLRequest(url: URL(string: (base ?? url).absoluteString + path)!)
        request.httpMethod = method
        request.setValue(anonKey, forHTTPHeaderField: "apikey")
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let body {
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { fields[name.lowercased()] = value }
        }
        return (http.statusCode, fields, String(decoding: data, as: UTF8.self))
    }
}

/// A ``RemoteHarness`` on the PostgREST client against the stack.
final class PostgRESTHarness: RemoteHarness {
    let stack: StackEnvironment
    let base: URL

    init(deployedVariant: Bool) throws {
        stack = try StackEnvironment.require()
        base = deployedVariant ? stack.deployedURL : stack.url
    }

    func store(for user: UUID) async throws -> any RemoteStore {
        let stack = self.stack
        var configuration = PostgRESTConfiguration(projectURL: base, apiKey: stack.anonKey, userID: user) { _ in stack.token(for: user) }
        configuration.baseBackoff = .milliseconds(10)
        return PostgRESTRemoteStore(configuration: configuration)
    }

    func setTrust(user: UUID, device: UUID, isTrusted: Bool) async throws {
        let response = try await stack.request("PATCH", "/rest/v1/devices?id=eq.\(device.canonical)", base: base, token: stack.serviceKey,
                                               body: #"{"is_trusted":\#(isTrusted)}"#)
        precondition(response.status == 204, "setting trust failed: \(response.status)")
    }
}
