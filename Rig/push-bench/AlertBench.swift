import APNsImitation
import Foundation
import Logging
import PostgresNIO

/// Notifications round 2's figures for `push-bench` (main's section "approval asked -> alert
/// accepted"): what it measures is said where main calls it.
struct AlertBench {
    let admin: PostgresClient
    let imitation: APNsImitation
    let logger: Logger

    typealias Asker = (user: String, desktop: String, session: String)
    static let users = 120

    /// 120 users, each a desktop and a phone (certified), a session and a phone token.
    func setUp() async throws -> [Asker] {
        let prefix = UUID().uuidString.lowercased()
        func id(_ g: String, _ part: String) -> String { "md5('\(prefix)' || \(g) || '\(part)')::uuid" }
        let users = Self.users
        for statement in [
            "INSERT INTO public.devices (id, user_id, name, device_type) SELECT \(id("g", "d")), \(id("g", "u")), 'desktop', 'linux-desktop' FROM generate_series(1, \(users)) g",
            "INSERT INTO public.devices (id, user_id, name, device_type) SELECT \(id("g", "p")), \(id("g", "u")), 'phone', 'ios-phone' FROM generate_series(1, \(users)) g",
            "INSERT INTO private.trust_log_state (user_id, current_epoch) SELECT \(id("g", "u")), 1 FROM generate_series(1, \(users)) g",
            "INSERT INTO private.trust_log_devices (user_id, epoch, device_id, certified_seq) SELECT \(id("g", "u")), 1, (md5('\(prefix)' || g || part)::uuid)::text, 1 FROM generate_series(1, \(users)) g, unnest(ARRAY['d', 'p']) part",
            "INSERT INTO public.repositories (id, user_id, device_id, name, local_path) SELECT \(id("g", "r")), \(id("g", "u")), \(id("g", "d")), 'r', '/r' FROM generate_series(1, \(users)) g",
            "INSERT INTO public.agent_coding_sessions (id, user_id, device_id, repository_id, session_started_at) SELECT \(id("g", "s")), \(id("g", "u")), \(id("g", "d")), \(id("g", "r")), now() FROM generate_series(1, \(users)) g",
            // Each desktop's credential (its id's hex digits, twice), as register_device keeps it.
            "INSERT INTO private.device_credentials (device_id, user_id, hash) SELECT \(id("g", "d")), \(id("g", "u")), sha256(decode(repeat(replace((\(id("g", "d")))::text, '-', ''), 2), 'hex')) FROM generate_series(1, \(users)) g",
            "INSERT INTO public.push_tokens (user_id, device_id, token) SELECT \(id("g", "u")), \(id("g", "p")), md5('\(prefix)' || g || 't') || md5('\(prefix)' || g || 'T') FROM generate_series(1, \(users)) g",
        ] {
            try await admin.query(PostgresQuery(unsafeSQL: statement), logger: logger)
        }
        // The ids as PostgreSQL computes them.
        var ids: [Asker] = []
        for try await (user, desktop, session) in try await admin.query(
            PostgresQuery(
                unsafeSQL:
                    "SELECT (\(id("g", "u")))::text, (\(id("g", "d")))::text, (\(id("g", "s")))::text FROM generate_series(1, \(users)) g ORDER BY g"
            ), logger: logger
        ).decode((String, String, String).self) {
            ids.append((user, desktop, session))
        }
        imitation.clearLog()
        imitation.keepLog(true)
        return ids
    }

    /// Asks 500 approvals at 50/s (users 1-100), then one at a time for users 101-120 until
    /// each is final; answers when each was asked, and the acceptance-to-final latencies (ms).
    func ask(_ ids: [Asker]) async throws -> (asked: [String: Date], finals: [Double]) {
        let body = Data([1, 0, 0, 0, 1] + [UInt8](repeating: 7, count: 30)).base64EncodedString()
        func ask(_ request: String, as index: Int, on connection: PostgresConnection) async throws {
            let (user, desktop, session) = ids[index]
            let expires = Int(Date().timeIntervalSince1970) + 600
            _ = try await connection.query(
                PostgresQuery(
                    unsafeSQL:
                        "SELECT set_config('request.jwt.claims', '{\"sub\": \"\(user)\", \"role\": \"authenticated\"}', false)"
                ), logger: logger)
            let credential = String(repeating: desktop.replacingOccurrences(of: "-", with: ""), count: 2)
            _ = try await connection.query(
                PostgresQuery(
                    unsafeSQL:
                        "SELECT set_config('request.headers', '{\"x-device-credential\": \"\(credential)\"}', false)"
                ), logger: logger)
            _ = try await connection.query(
                PostgresQuery(
                    unsafeSQL:
                        "SELECT public.request_approval('\(session)', '\(request)', '\(desktop)', '\(body)', 1, \(expires))::text"
                ), logger: logger)
        }
        func isFinal(_ request: String, on connection: PostgresConnection) async throws -> Bool {
            for try await text in try await connection.query(
                PostgresQuery(unsafeSQL: "SELECT (public.alert_deliveries('\(request)') ->> 'final')"),
                logger: logger
            ).decode(String.self) {
                return text == "true"
            }
            return false
        }
        func accepted(_ request: String) -> APNsImitation.LoggedRequest? {
            imitation.requests.first { $0.headers["apns-collapse-id"] == "approval-request-" + request }
        }
        return try await admin.withConnection { connection in
            var asked: [String: Date] = [:]
            for round in 0..<500 {
                let tick = ContinuousClock.now
                let request = UUID().uuidString.lowercased()
                asked[request] = Date()
                try await ask(request, as: round % 100, on: connection)
                try await Task.sleep(until: tick + .milliseconds(20))
            }
            var finals: [Double] = []
            for index in 100..<Self.users {
                let request = UUID().uuidString.lowercased()
                try await ask(request, as: index, on: connection)
                while accepted(request) == nil { try await Task.sleep(for: .milliseconds(2)) }
                let time = accepted(request)!.time
                while try await !isFinal(request, on: connection) { try await Task.sleep(for: .milliseconds(10)) }
                finals.append(Date().timeIntervalSince(time) * 1000)
            }
            _ = try await connection.query("SELECT set_config('request.jwt.claims', '{}', false)", logger: logger)
            _ = try await connection.query("SELECT set_config('request.headers', '{}', false)", logger: logger)
            return (asked, finals)
        }
    }

    /// From each approval's asking to the imitation accepting its alert (ms).
    func latencies(_ asked: [String: Date]) -> [Double] {
        var latencies: [Double] = []
        for request in imitation.requests {
            if let collapse = request.headers["apns-collapse-id"], collapse.hasPrefix("approval-request-"),
                let start = asked[String(collapse.dropFirst(17))]
            {
                latencies.append(request.time.timeIntervalSince(start) * 1000)
            }
        }
        imitation.keepLog(false)
        return latencies
    }
}
