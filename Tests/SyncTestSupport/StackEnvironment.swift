import Foundation
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
              let secret = env["SYNC_STACK_JWT_SECRET"] else { return nil }
        return StackEnvironment(url: url, deployedURL: deployed, anonKey: anon, serviceKey: service, jwtSecret: secret)
    }

    public struct Missing: Error, CustomStringConvertible {
        public var description: String { StackEnvironment.howToStart }
    }

    public static func require() throws -> StackEnvironment {
        guard let current else { throw Missing() }
        return current
    }

    /// An HS256 access token for `user`, as Supabase Auth would issue it.
    public func token(for user: UUID, expiresIn seconds: Int = 3600) -> String {
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
    public func request(_ method: String, _ path: String, base: URL? = nil, token: String? = nil, headers: [String: String] = [:],
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

    /// Sets device columns as the trust flow would, with the service_role key (RLS bypassed).
    public func setDevice(_ device: UUID, base: URL? = nil, fields: String) async throws {
        let response = try await request("PATCH", "/rest/v1/devices?id=eq.\(device.canonical)", base: base, token: serviceKey, body: fields)
        guard response.status == 204 else { throw DeviceUpdateFailed(status: response.status) }
    }
}

/// The stack refused a trust-flow update.
public struct DeviceUpdateFailed: Error {
    public let status: Int
}
