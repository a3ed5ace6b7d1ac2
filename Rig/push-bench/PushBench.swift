import APNsImitation
import Crypto
import Foundation
import Logging
import PostgresNIO
import PushDelivery

// `push-bench`: the push worker's figures (docs/push-worker.md), beside h2load against the
// same imitation in the same run. Run by `make bench-push` inside the test stack.
//
//   sender alone, one connection   requests/s of HTTP2APNsTransport, 100 in flight
//   h2load, one connection         requests/s of nghttp2's load generator, 100 streams
//   end to end, one worker         rows/s from PostgreSQL to the imitation
//   LISTEN latency at 50 rows/s    commit to request, p50/p99
//   kill -9 during 10,000 rows     lost, and duplicates against the in-flight limit
//   SIGTERM                        exit time and leases left; idle memory

@main
struct PushBench {
    static func seconds(_ duration: Duration) -> Double {
        let (whole, attoseconds) = duration.components
        return Double(whole) + Double(attoseconds) / 1e18
    }

    static func main() async throws {
        let arguments = CommandLine.arguments
        func option(_ name: String, _ fallback: Int) -> Int {
            guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return fallback }
            return Int(arguments[index + 1]) ?? fallback
        }
        let requests = option("--requests", 20_000)
        let rows = option("--rows", 20_000)
        let runs = option("--runs", 3)

        var logger = Logger(label: "push-bench")
        logger.logLevel = .error
        let keyID = "BENCH12345"
        let teamID = "TEAM123456"
        let bundleID = "com.example.bench"
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("push-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = P256.Signing.PrivateKey()
        let keyPath = directory.appendingPathComponent("AuthKey.p8").path
        _ = FileManager.default.createFile(
            atPath: keyPath, contents: Data(key.pemRepresentation.utf8), attributes: [.posixPermissions: 0o600])
        let imitation = try await APNsImitation.start(
            options: .init(keyID: keyID, teamID: teamID, bundleID: bundleID, publicKey: key.publicKey),
            directory: directory)
        imitation.keepLog(false)

        func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
        }
        func percentile(_ values: [Double], _ p: Double) -> Double {
            let sorted = values.sorted()
            return sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        func hexToken() -> String { (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() }
        var figures: [String: Double] = [:]
        func report(_ name: String, _ value: Double, _ unit: String, _ note: String = "") {
            figures[name] = value
            let number = value >= 100 ? String(format: "%.0f", value) : String(format: "%.2f", value)
            print(
                "  \(name.padding(toLength: 44, withPad: " ", startingAt: 0)) \(number.padding(toLength: 10, withPad: " ", startingAt: 0)) \(unit)  \(note)"
            )
        }

        let tokens = ProviderTokens(key: ProviderKey(key: key), keyID: keyID, teamID: teamID, refresh: .seconds(2400))
        let providerToken = try await tokens.token().value
        let benchToken = hexToken()
        let payload =
            #"{"aps": {"content-available": 1}, "clearApprovalId": "6f1c0e5a-2b1d-4c7e-9a55-0d1f2e3a4b5c", "reason": "answered"}"#

        // MARK: - the sender alone, and h2load, against the same imitation

        print("push delivery (imitation on loopback, \(ProcessInfo.processInfo.activeProcessorCount) cores)")
        func senderRun(count: Int) async throws -> Double {
            let transport = try HTTP2APNsTransport(caFile: imitation.certificateFile)
            defer { Task { try? await transport.shutdown() } }
            let row = OutboxRow(
                id: 1, token: benchToken, pushType: .background, priority: 5, collapseID: nil, payload: payload,
                apnsID: UUID(),
                expiresAt: nil, createdAt: Date(), attempts: 1, environment: "production")
            let request = try APNsRequest.make(row: row, bundleID: bundleID, providerToken: providerToken)
            // One request first: the connection then allows its streams.
            _ = try await transport.send(request, to: imitation.baseURL, deadline: .seconds(10))
            let started = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                var next = 0
                for _ in 0..<100 {
                    next += 1
                    group.addTask {
                        _ = try await transport.send(request, to: imitation.baseURL, deadline: .seconds(10))
                    }
                }
                while try await group.next() != nil {
                    if next < count {
                        next += 1
                        group.addTask {
                            _ = try await transport.send(request, to: imitation.baseURL, deadline: .seconds(10))
                        }
                    }
                }
            }
            let elapsed = seconds(ContinuousClock.now - started)
            return Double(count) / elapsed
        }
        var sender: [Double] = []
        for _ in 0..<runs { sender.append(try await senderRun(count: requests)) }
        report(
            "sender alone, one connection", median(sender), "requests/s",
            "median of \(runs), \(requests) requests, 100 in flight")

        func h2loadRun() throws -> Double? {
            let which = Process()
            which.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            which.arguments = ["sh", "-c", "command -v h2load"]
            which.standardOutput = FileHandle.nullDevice
            try which.run()
            which.waitUntilExit()
            guard which.terminationStatus == 0 else { return nil }
            let body = directory.appendingPathComponent("payload.json")
            try Data(APNsRequest.compactJSON(Array(payload.utf8))).write(to: body)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [
                "h2load", "-n", String(requests), "-c", "1", "-m", "100", "-d", body.path,
                "-H", "authorization: bearer \(providerToken)", "-H", "apns-push-type: background", "-H",
                "apns-topic: \(bundleID)",
                "-H", "apns-priority: 5", "\(imitation.baseURL.absoluteString)/3/device/\(benchToken)",
            ]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            // "finished in 1.23s, 16260.16 req/s, 1.23MB/s"; and "requests: ... 20000 succeeded"
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("finished in") }),
                let rate = line.split(separator: ",").dropFirst().first?.split(separator: " ").first.flatMap({
                    Double($0)
                }),
                text.contains("\(requests) succeeded")
            else {
                FileHandle.standardError.write(Data("push-bench: h2load did not finish cleanly:\n\(text)\n".utf8))
                return nil
            }
            return rate
        }
        var h2load: [Double] = []
        for _ in 0..<runs { if let rate = try h2loadRun() { h2load.append(rate) } }
        if h2load.isEmpty {
            print(
                "  h2load                                       not installed (scripts/install-bench-tools.sh installs it)"
            )
        } else {
            report(
                "h2load, one connection", median(h2load), "requests/s",
                "median of \(h2load.count), -n \(requests) -c 1 -m 100")
            report("sender / h2load", median(sender) / median(h2load), "", "target >= 0.5")
        }

        // MARK: - from PostgreSQL

        guard let url = ProcessInfo.processInfo.environment["SYNC_STACK_PUSH_DATABASE_URL"] else {
            print("  (no stack: SYNC_STACK_PUSH_DATABASE_URL is not set; run through make bench-push)")
            exit(0)
        }
        let workerDatabase = try DatabaseSettings(url: url)
        var adminSettings = workerDatabase
        adminSettings.username = "postgres"
        let admin = PostgresClient(configuration: adminSettings.clientConfiguration)
        let adminTask = Task { await admin.run() }
        func sql(_ text: String) async throws { try await admin.query(PostgresQuery(unsafeSQL: text), logger: logger) }
        func scalar(_ text: String) async throws -> Int {
            for try await value in try await admin.query(PostgresQuery(unsafeSQL: text), logger: logger).decode(
                Int.self)
            { return value }
            return 0
        }
        let user = UUID().uuidString.lowercased()
        let device = UUID().uuidString.lowercased()
        try await sql(
            "UPDATE public.push_outbox SET failed_at = now(), last_error = 'closed by push-bench' WHERE delivered_at IS NULL AND failed_at IS NULL"
        )
        try await sql(
            "INSERT INTO public.devices (id, user_id, name, device_type) VALUES ('\(device)', '\(user)', 'bench', 'ios-phone')"
        )
        var benchTokens: [String] = []
        for _ in 0..<100 {
            let token = hexToken()
            benchTokens.append(token)
            try await sql(
                "INSERT INTO public.push_tokens (user_id, device_id, token) VALUES ('\(user)', '\(device)', '\(token)')"
            )
        }
        let tokenList = benchTokens.map { "'\($0)'" }.joined(separator: ",")
        func enqueue(_ count: Int) async throws {
            try await sql(
                """
                INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, payload)
                SELECT '\(user)', '\(device)', (ARRAY[\(tokenList)])[1 + g % 100], 'background', 5,
                       '\(payload)'::jsonb || jsonb_build_object('n', g)
                FROM generate_series(1, \(count)) g
                """)
        }
        func pending() async throws -> Int {
            try await scalar(
                "SELECT count(*)::bigint FROM public.push_outbox WHERE user_id = '\(user)' AND delivered_at IS NULL AND failed_at IS NULL"
            )
        }
        func configuration() -> PushWorkerConfiguration {
            var configuration = PushWorkerConfiguration(
                keyPath: keyPath, keyID: keyID, teamID: teamID, bundleID: bundleID, environment: .production,
                database: workerDatabase)
            configuration.baseURLOverride = imitation.baseURL
            configuration.caFile = imitation.certificateFile
            return configuration
        }
        func inProcessWorker() throws -> (
            PushWorker, Task<Void, any Error>, Task<Void, Never>, PostgresClient, HTTP2APNsTransport
        ) {
            let configuration = configuration()
            let client = PostgresClient(configuration: configuration.database.clientConfiguration)
            let transport = try HTTP2APNsTransport(caFile: configuration.caFile)
            let worker = PushWorker(
                configuration: configuration, client: client, transport: transport,
                tokens: ProviderTokens(
                    key: ProviderKey(key: key), keyID: keyID, teamID: teamID, refresh: .seconds(2400)),
                logger: logger)
            let clientTask = Task { await client.run() }
            let task = Task { try await worker.run() }
            return (worker, task, clientTask, client, transport)
        }
        func stop(
            _ parts: (PushWorker, Task<Void, any Error>, Task<Void, Never>, PostgresClient, HTTP2APNsTransport)
        ) async throws {
            parts.0.stop()
            try await parts.1.value
            parts.2.cancel()
            try await parts.4.shutdown()
        }

        var endToEnd: [Double] = []
        for _ in 0..<runs {
            try await enqueue(rows)
            let started = ContinuousClock.now
            let worker = try inProcessWorker()
            while try await pending() > 0 { try await Task.sleep(for: .milliseconds(20)) }
            endToEnd.append(Double(rows) / seconds(ContinuousClock.now - started))
            try await stop(worker)
        }
        report(
            "end to end from PostgreSQL, one worker", median(endToEnd), "rows/s",
            "median of \(runs), \(rows) rows; target >= 1000")

        // Fairness: another account's push while one account's 5,000-row backlog drains.
        let otherUser = UUID().uuidString.lowercased()
        let otherDevice = UUID().uuidString.lowercased()
        let otherToken = hexToken()
        try await sql(
            "INSERT INTO public.devices (id, user_id, name, device_type) VALUES ('\(otherDevice)', '\(otherUser)', 'other', 'ios-phone')"
        )
        try await sql(
            "INSERT INTO public.push_tokens (user_id, device_id, token) VALUES ('\(otherUser)', '\(otherDevice)', '\(otherToken)')"
        )
        var otherLatency: [Double] = []
        for _ in 0..<runs {
            imitation.clearLog()
            imitation.keepLog(true)
            try await enqueue(5000)
            let worker = try inProcessWorker()
            while try await pending() > 4500 { try await Task.sleep(for: .milliseconds(5)) }
            let queued = Date()
            try await sql(
                """
                INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, payload)
                VALUES ('\(otherUser)', '\(otherDevice)', '\(otherToken)', 'background', 5, '\(payload)')
                """)
            while !imitation.requests.contains(where: { $0.token == otherToken }) {
                try await Task.sleep(for: .milliseconds(5))
            }
            let arrival = imitation.requests.first { $0.token == otherToken }!.time
            otherLatency.append(arrival.timeIntervalSince(queued))
            while try await pending() > 0 { try await Task.sleep(for: .milliseconds(20)) }
            try await stop(worker)
            imitation.keepLog(false)
        }
        report(
            "another account's push during a 5,000-row flood of one account", median(otherLatency) * 1000, "ms",
            "median of \(runs), queued after 500 of the flood were sent; target < 5000")

        // Round 5: another account's alert while four accounts flood live-activity rows.
        let round5 = RoundFiveBench(admin: admin, logger: logger)
        var floodLatency: [Double] = []
        for _ in 0..<runs {
            floodLatency.append(
                try await round5.liveActivityFlood(imitation: imitation) {
                    let parts = try inProcessWorker()
                    return RoundFiveBench.Running { try await stop(parts) }
                })
        }
        report(
            "another account's alert, 4 accounts' LA flood", median(floodLatency) * 1000, "ms",
            "median of \(runs), 12,000 live-activity rows/s queued; target < 1000")

        // Commit to request, LISTEN waking the worker (the poll is 2 s): 50 rows/s for 10 s.
        imitation.clearLog()
        imitation.keepLog(true)
        do {
            let worker = try inProcessWorker()
            try await Task.sleep(for: .milliseconds(500))
            var committed: [String: Date] = [:]
            for _ in 0..<500 {
                let tick = ContinuousClock.now
                for try await id in try await admin.query(
                    PostgresQuery(
                        unsafeSQL: """
                            INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, payload)
                            VALUES ('\(user)', '\(device)', '\(benchTokens[0])', 'background', 5, '\(payload)') RETURNING apns_id::text
                            """), logger: logger
                ).decode(String.self) {
                    committed[id] = Date()
                }
                try await Task.sleep(until: tick + .milliseconds(20))
            }
            while try await pending() > 0 { try await Task.sleep(for: .milliseconds(20)) }
            try await stop(worker)
            var latencies: [Double] = []
            for request in imitation.requests {
                if let id = request.headers["apns-id"], let start = committed[id] {
                    latencies.append(request.time.timeIntervalSince(start) * 1000)
                }
            }
            report("commit to request at 50 rows/s, p50", percentile(latencies, 0.5), "ms", "\(latencies.count) rows")
            report("commit to request at 50 rows/s, p99", percentile(latencies, 0.99), "ms", "target < 100")
        }

        // MARK: - notifications round 2: approval asked -> alert accepted, and deliveries final

        // 120 users, each a desktop and a phone (certified), a session and a phone token (a user
        // may have 5 approvals pending per session: approvals.md's limits). An approval is asked
        // through request_approval (as its user) every 20 ms for 10 s, users 1-100 in turn, each
        // alerting one token: 50 alerts/s. Measured: from before the call to the imitation
        // accepting the alert; then, for users 101-120 one at a time, from the imitation's
        // acceptance to alert_deliveries answering `final`.
        do {
            let bench = AlertBench(admin: admin, imitation: imitation, logger: logger)
            let ids = try await bench.setUp()
            let worker = try inProcessWorker()
            try await Task.sleep(for: .milliseconds(500))
            let (asked, finals) = try await bench.ask(ids)
            try await stop(worker)
            let latencies = bench.latencies(asked)
            report(
                "approval asked -> alert accepted, 50/s, p50", percentile(latencies, 0.5), "ms",
                "\(latencies.count) of 500 approvals")
            report("approval asked -> alert accepted, 50/s, p99", percentile(latencies, 0.99), "ms", "target < 1000")
            report(
                "alert accepted -> deliveries final, p50", median(finals), "ms",
                "\(finals.count) approvals asked one at a time; target < 3000")
        }

        // Round 5: what a loop of answer and reopen queues (65 s, no worker needed).
        do {
            let (perMinute, refused) = try await round5.reopenLoop(for: .seconds(65))
            report(
                "answer-and-reopen loop: rows in any 60 s", Double(perMinute), "rows",
                "65 s, \(refused) calls refused; target <= 600")
        }
        for unit in ["AKIA", "xoxb-"] {
            let (large, small) = RoundFiveBench.sanitiser(unit)
            report(
                "sanitiser, 100,000 scalars of \(unit)", large, "ms",
                String(format: "median of 5; 10,000: %.2f ms; target linear, < 50", small))
        }

        // MARK: - the process: kill -9, SIGTERM, idle memory

        let workerPath = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("push-worker").path
        func spawn(_ extra: [String: String] = [:]) throws -> Process {
            var environment = ProcessInfo.processInfo.environment
            environment["APNS_KEY_PATH"] = keyPath
            environment["APNS_KEY_ID"] = keyID
            environment["APNS_TEAM_ID"] = teamID
            environment["APNS_BUNDLE_ID"] = bundleID
            environment["APNS_ENVIRONMENT"] = "production"
            environment["DATABASE_URL"] = url
            environment["APNS_BASE_URL"] = imitation.baseURL.absoluteString
            environment["APNS_CA_FILE"] = imitation.certificateFile
            environment["PUSH_LOG_LEVEL"] = "error"
            for (name, value) in extra { environment[name] = value }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: workerPath)
            process.arguments = ["run"]
            process.environment = environment
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        }
        func wait(_ process: Process, timeout: Duration) async throws -> Bool {
            let deadline = ContinuousClock.now + timeout
            while process.isRunning && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            return !process.isRunning
        }
        func delivered() async throws -> Int {
            try await scalar(
                "SELECT count(*)::bigint FROM public.push_outbox WHERE user_id = '\(user)' AND delivered_at IS NOT NULL"
            )
        }
        guard FileManager.default.isExecutableFile(atPath: workerPath) else {
            print("  (push-worker is not built beside push-bench: the process figures are skipped)")
            exit(0)
        }
        do {
            imitation.clearLog()
            let before = try await delivered()
            try await enqueue(10_000)
            let first = try spawn(["PUSH_LEASE_SECONDS": "5", "PUSH_REQUEST_DEADLINE_SECONDS": "2"])
            while try await delivered() - before < 3000 { try await Task.sleep(for: .milliseconds(5)) }
            kill(first.processIdentifier, SIGKILL)
            _ = try await wait(first, timeout: .seconds(5))
            let second = try spawn(["PUSH_LEASE_SECONDS": "5", "PUSH_REQUEST_DEADLINE_SECONDS": "2"])
            while try await pending() > 0 { try await Task.sleep(for: .milliseconds(50)) }
            kill(second.processIdentifier, SIGTERM)
            _ = try await wait(second, timeout: .seconds(15))
            var answered: [String: Int] = [:]
            for request in imitation.requests where request.status == 200 {
                answered[request.headers["apns-id"] ?? "", default: 0] += 1
            }
            let lost = 10_000 - (try await delivered() - before)
            report("kill -9 during 10,000 rows: lost", Double(lost), "rows", "target 0")
            report(
                "kill -9 during 10,000 rows: sent twice", Double(answered.values.filter { $0 > 1 }.count), "rows",
                "in flight at most 256")
        }
        do {
            let stalled = hexToken()
            try await sql(
                "INSERT INTO public.push_tokens (user_id, device_id, token) VALUES ('\(user)', '\(device)', '\(stalled)')"
            )
            imitation.always(token: stalled, .stall)
            let process = try spawn()
            try await Task.sleep(for: .seconds(3))
            let status = try String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)
            let rss =
                status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }.flatMap {
                    Double($0.split(separator: " ")[1])
                } ?? 0
            report("idle memory (RSS after 3 s)", rss / 1024, "MiB", "target < 60 MB")
            try await enqueue(2_000)
            try await sql(
                """
                INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, payload)
                SELECT '\(user)', '\(device)', '\(stalled)', 'background', 5, '\(payload)' FROM generate_series(1, 20)
                """)
            while try await pending() > 20 { try await Task.sleep(for: .milliseconds(20)) }
            let started = ContinuousClock.now
            kill(process.processIdentifier, SIGTERM)
            _ = try await wait(process, timeout: .seconds(30))
            let took = seconds(ContinuousClock.now - started)
            let leases = try await scalar(
                "SELECT count(*)::bigint FROM public.push_outbox WHERE user_id = '\(user)' AND leased_by IS NOT NULL")
            report(
                "SIGTERM with 20 stalled requests: exit after", took, "s",
                "exit status \(process.terminationStatus); target < 10")
            report("SIGTERM: leases left", Double(leases), "rows", "target 0")
            imitation.always(token: stalled, nil)
        }
        do {
            let (peak, connections, written) = try await round5.continuationFlood(
                for: .seconds(15), directory: directory, user: user, device: device, spawn: spawn)
            report(
                "peak RSS under a CONTINUATION flood", peak, "MiB",
                String(format: "15 s, %d connections, %.1f MiB of frames written; target < 100", connections, written))
        }
        let json = try JSONSerialization.data(withJSONObject: figures, options: [.sortedKeys, .prettyPrinted])
        try? json.write(to: URL(fileURLWithPath: ".build/push-bench.json"))
        adminTask.cancel()
        try await imitation.shutdown()
    }
}
