import APNsImitation
import Foundation
import Logging
import PostgresNIO
import SyncModel

extension RoundFiveBench {
    // MARK: - a loop of answer and reopen

    /// One account with its own desktop and two phones (certified, two tokens each) runs, for
    /// `duration`, the loop a token holder with the desktop's control can run: ask, answer from a
    /// phone, reopen, answer again... (a new request after 20 reopenings; a refusal is retried
    /// after 10 ms). Returns the most rows it queued in any 60 s, counted by a trigger of the
    /// benchmark's own (rows a refused call rolled back are not counted), and the calls refused.
    func reopenLoop(for duration: Duration) async throws -> (perMinute: Int, refused: Int) {
        let user = UUID().uuidString.lowercased()
        let desktop = UUID().uuidString.lowercased()
        let phones = [UUID().uuidString.lowercased(), UUID().uuidString.lowercased()]
        let repository = UUID().uuidString.lowercased()
        let session = UUID().uuidString.lowercased()
        func credential(_ device: String) -> String {
            String(repeating: device.replacingOccurrences(of: "-", with: ""), count: 2)
        }
        try await sql(
            "INSERT INTO public.devices (id, user_id, name, device_type) VALUES ('\(desktop)', '\(user)', 'desktop', 'linux-desktop'), ('\(phones[0])', '\(user)', 'phone 1', 'ios-phone'), ('\(phones[1])', '\(user)', 'phone 2', 'ios-phone')"
        )
        try await sql("INSERT INTO private.trust_log_state (user_id, current_epoch) VALUES ('\(user)', 1)")
        for device in [desktop] + phones {
            try await sql(
                "INSERT INTO private.trust_log_devices (user_id, epoch, device_id, certified_seq) VALUES ('\(user)', 1, '\(device)', 1)"
            )
            try await sql(
                "INSERT INTO private.device_credentials (device_id, user_id, hash) VALUES ('\(device)', '\(user)', sha256(decode('\(credential(device))', 'hex')))"
            )
        }
        for phone in phones {
            for _ in 0..<2 {
                try await sql(
                    "INSERT INTO public.push_tokens (user_id, device_id, token) VALUES ('\(user)', '\(phone)', '\(Self.hexToken())')"
                )
            }
        }
        try await sql(
            "INSERT INTO public.repositories (id, user_id, device_id, name, local_path) VALUES ('\(repository)', '\(user)', '\(desktop)', 'r', '/r')"
        )
        try await sql(
            "INSERT INTO public.agent_coding_sessions (id, user_id, device_id, repository_id, session_started_at) VALUES ('\(session)', '\(user)', '\(desktop)', '\(repository)', now())"
        )
        // The benchmark's own count of what was queued (committed rows only).
        try await sql("CREATE TABLE IF NOT EXISTS public.bench_queued (user_id uuid, at timestamptz)")
        try await sql(
            """
            CREATE OR REPLACE FUNCTION public.bench_count_queued() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN INSERT INTO public.bench_queued VALUES (NEW.user_id, clock_timestamp()); RETURN NULL; END $$
            """)
        try await sql(
            "CREATE OR REPLACE TRIGGER bench_count_queued AFTER INSERT ON public.push_outbox FOR EACH ROW EXECUTE FUNCTION public.bench_count_queued()"
        )
        let control = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let controlText = Data(control).base64EncodedString()
        let controlHash = try await string(
            "SELECT encode(sha256(decode('\(controlText)', 'base64')), 'base64')")
        let body = Data([1, 0, 0, 0, 1] + [UInt8](repeating: 7, count: 30)).base64EncodedString()
        let refused = try await admin.withConnection { connection in
            func call(_ text: String, as device: String) async throws -> String? {
                _ = try await connection.query(
                    PostgresQuery(
                        unsafeSQL:
                            "SELECT set_config('request.jwt.claims', '{\"sub\": \"\(user)\", \"role\": \"authenticated\"}', false), set_config('request.headers', '{\"x-device-credential\": \"\(credential(device))\"}', false)"
                    ), logger: logger)
                do {
                    for try await value in try await connection.query(PostgresQuery(unsafeSQL: text), logger: logger)
                        .decode(String.self)
                    { return value }
                    return nil
                } catch let error as PSQLError where error.serverInfo?[.sqlState] == "54000" {
                    return "refused: " + (error.serverInfo?[.message] ?? "")
                }
            }
            var refused = 0
            var request = ""
            var signature = ""
            var reopenings = 20
            let end = ContinuousClock.now + duration
            while ContinuousClock.now < end {
                if reopenings >= 20 {
                    request = UUID().uuidString.lowercased()
                    let expires = Int(Date().timeIntervalSince1970) + 600
                    let asked = try await call(
                        "SELECT public.request_approval('\(session)', '\(request)', '\(desktop)', '\(body)', 1, \(expires), '\(controlHash)')::text",
                        as: desktop)
                    if asked?.hasPrefix("refused") ?? false {
                        refused += 1
                        try await Task.sleep(for: .milliseconds(10))
                        continue
                    }
                    reopenings = 0
                }
                if signature.isEmpty {
                    let phone = phones[reopenings % 2]
                    signature = Data((0..<64).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
                    let decision = Data(
                        (0..<140).map { _ in UInt8.random(in: 0...255) } + Array(phone.utf8)
                            + (0..<118).map { _ in UInt8.random(in: 0...255) }
                    ).base64EncodedString()
                    _ = try await call(
                        "SELECT public.answer_approval('\(request)', '\(phone)', 'deny', '\(decision)', '\(signature)')::text",
                        as: phone)
                }
                let reopened = try await call(
                    "SELECT public.reopen_approval('\(request)', '\(signature)', '\(controlText)')::text", as: desktop)
                if let reopened, reopened.hasPrefix("refused") {
                    if reopened.contains("20 times") {
                        reopenings = 20
                    } else {
                        refused += 1
                        try await Task.sleep(for: .milliseconds(10))
                    }
                    continue
                }
                reopenings += 1
                signature = ""
            }
            _ = try await connection.query(
                "SELECT set_config('request.jwt.claims', '{}', false), set_config('request.headers', '{}', false)",
                logger: logger)
            return refused
        }
        let perMinute = try await count(
            """
            SELECT coalesce(max(c), 0)::bigint FROM (
                SELECT count(*) OVER (ORDER BY at RANGE BETWEEN interval '60 seconds' PRECEDING AND CURRENT ROW) AS c
                FROM public.bench_queued WHERE user_id = '\(user)') w
            """)
        try await sql("DROP TRIGGER bench_count_queued ON public.push_outbox")
        try await sql("DROP TABLE public.bench_queued")
        try await sql("DROP FUNCTION public.bench_count_queued()")
        try await sql(
            "UPDATE public.push_outbox SET failed_at = now(), last_error = 'closed by push-bench' WHERE delivered_at IS NULL AND failed_at IS NULL"
        )
        return (perMinute, refused)
    }

    func string(_ text: String) async throws -> String {
        for try await value in try await admin.query(PostgresQuery(unsafeSQL: text), logger: logger).decode(
            String.self)
        {
            return value
        }
        return ""
    }

    // MARK: - the worker under a CONTINUATION flood

    /// A `push-worker` process (from `spawn`) sending to a peer that answers every request with
    /// endless CONTINUATION frames, for `duration`, with 200 rows to send. Returns its peak
    /// resident memory (VmHWM, MiB), the connections it opened and the MiB the peer wrote.
    @MainActor
    func continuationFlood(
        for duration: Duration, directory: URL, user: String, device: String,
        spawn: @MainActor ([String: String]) throws -> Process
    ) async throws -> (peakMiB: Double, connections: Int, writtenMiB: Double) {
        let peer = try await HostilePeer.start(.continuationFlood, directory: directory)
        let token = Self.hexToken()
        try await sql(
            "INSERT INTO public.push_tokens (user_id, device_id, token) VALUES ('\(user)', '\(device)', '\(token)')")
        try await sql(
            """
            INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, payload)
            SELECT '\(user)', '\(device)', '\(token)', 'background', 5, '{"aps": {"content-available": 1}}'
            FROM generate_series(1, 200)
            """)
        // The worker's own settings: its backoff decides how often it connects again.
        let process = try spawn(["APNS_BASE_URL": peer.baseURL.absoluteString, "APNS_CA_FILE": peer.certificateFile])
        try await Task.sleep(for: duration)
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let peak =
            status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }.flatMap {
                Double($0.split(separator: " ")[1])
            } ?? 0
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        let result = (peak / 1024, peer.connections, Double(peer.bytesWritten) / 1_048_576)
        try await peer.shutdown()
        try await sql(
            "UPDATE public.push_outbox SET failed_at = now(), last_error = 'closed by push-bench' WHERE delivered_at IS NULL AND failed_at IS NULL"
        )
        return result
    }

    // MARK: - the sanitiser

    /// Milliseconds `LockScreenText.sanitised` takes on 100,000 scalars of `unit` repeated
    /// (median of 5), and on 10,000 (to show it linear).
    static func sanitiser(_ unit: String) -> (large: Double, small: Double) {
        func time(_ scalars: Int) -> Double {
            let text = String(String(repeating: unit, count: scalars / unit.unicodeScalars.count + 1).prefix(scalars))
            var times: [Double] = []
            for _ in 0..<5 {
                let started = ContinuousClock.now
                _ = LockScreenText.sanitised(text)
                times.append(PushBench.seconds(ContinuousClock.now - started) * 1000)
            }
            return times.sorted()[2]
        }
        return (time(100_000), time(10_000))
    }
}
