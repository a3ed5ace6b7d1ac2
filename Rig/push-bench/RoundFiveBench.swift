import APNsImitation
import Foundation
import Logging
import PostgresNIO
import SyncModel
import Synchronization

/// Delivery round 5's figures for `push-bench` (issue 66; docs/push-worker.md): another
/// account's alert during a flood of four accounts' live-activity rows, what a loop of answer and
/// reopen queues a minute, the worker's peak memory under a CONTINUATION flood, and the
/// sanitiser's time on 100,000 scalars.
struct RoundFiveBench {
    let admin: PostgresClient
    let logger: Logger

    /// A worker started for one measurement, and how to stop it.
    struct Running {
        let stop: () async throws -> Void
    }

    func sql(_ text: String) async throws { try await admin.query(PostgresQuery(unsafeSQL: text), logger: logger) }

    func count(_ text: String) async throws -> Int {
        for try await value in try await admin.query(PostgresQuery(unsafeSQL: text), logger: logger).decode(Int.self) {
            return value
        }
        return 0
    }

    static func hexToken() -> String {
        (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    // MARK: - another account's alert during four accounts' live-activity flood

    /// Four accounts queue priority-10 live-activity rows (300 each every 100 ms, 12,000 a
    /// second, faster than one worker sends) over 20 live-activity tokens each; after 2 s of it,
    /// another account queues one priority-10 alert. Returns seconds from its commit to the
    /// imitation's accepting it.
    @MainActor
    func liveActivityFlood(imitation: APNsImitation, start: @MainActor () throws -> Running) async throws -> Double {
        var floods: [(user: String, device: String, tokens: [String])] = []
        for _ in 0..<4 {
            let user = UUID().uuidString.lowercased()
            let device = UUID().uuidString.lowercased()
            let repository = UUID().uuidString.lowercased()
            let session = UUID().uuidString.lowercased()
            try await sql(
                "INSERT INTO public.devices (id, user_id, name, device_type) VALUES ('\(device)', '\(user)', 'flood', 'ios-phone')"
            )
            try await sql(
                "INSERT INTO public.repositories (id, user_id, device_id, name, local_path) VALUES ('\(repository)', '\(user)', '\(device)', 'r', '/r')"
            )
            try await sql(
                "INSERT INTO public.agent_coding_sessions (id, user_id, device_id, repository_id, session_started_at) VALUES ('\(session)', '\(user)', '\(device)', '\(repository)', now())"
            )
            var tokens: [String] = []
            for index in 0..<20 {
                let token = Self.hexToken()
                tokens.append(token)
                try await sql(
                    """
                    INSERT INTO public.push_tokens (user_id, device_id, token, token_type, activity_id, session_id)
                    VALUES ('\(user)', '\(device)', '\(token)', 'live_activity', 'a\(index)', '\(session)')
                    """)
            }
            floods.append((user, device, tokens))
        }
        let other = UUID().uuidString.lowercased()
        let otherDevice = UUID().uuidString.lowercased()
        let otherToken = Self.hexToken()
        try await sql(
            "INSERT INTO public.devices (id, user_id, name, device_type) VALUES ('\(otherDevice)', '\(other)', 'other', 'ios-phone')"
        )
        try await sql(
            "INSERT INTO public.push_tokens (user_id, device_id, token) VALUES ('\(other)', '\(otherDevice)', '\(otherToken)')"
        )
        let arrived = Mutex<Date?>(nil)
        imitation.onRequest { request in
            if request.token == otherToken { arrived.withLock { $0 = request.time } }
        }
        defer { imitation.onRequest { _ in } }
        let admin = self.admin
        let logger = self.logger
        let statements = floods.map { flood in
            let list = flood.tokens.map { "'\($0)'" }.joined(separator: ",")
            return """
                INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, payload)
                SELECT '\(flood.user)', '\(flood.device)', (ARRAY[\(list)])[1 + g % 20], 'liveactivity', 10,
                       jsonb_build_object('aps', jsonb_build_object('event', 'update', 'timestamp', g, 'content-state', '{}'::jsonb))
                FROM generate_series(1, 300) g
                """
        }
        let flooding = Task {
            while !Task.isCancelled {
                let tick = ContinuousClock.now
                for statement in statements {
                    try await admin.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await Task.sleep(until: tick + .milliseconds(100))
            }
        }
        let worker = try start()
        try await Task.sleep(for: .seconds(2))
        let queued = Date()
        try await sql(
            """
            INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, payload)
            VALUES ('\(other)', '\(otherDevice)', '\(otherToken)', 'alert', 10, '{"aps": {"alert": "other"}}')
            """)
        while arrived.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(2)) }
        flooding.cancel()
        _ = await flooding.result
        try await worker.stop()
        try await sql(
            "UPDATE public.push_outbox SET failed_at = now(), last_error = 'closed by push-bench' WHERE delivered_at IS NULL AND failed_at IS NULL"
        )
        return arrived.withLock { $0 }!.timeIntervalSince(queued)
    }
}
