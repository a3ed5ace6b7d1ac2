import APNsImitation
import Foundation
import PostgresNIO
import PushDelivery
import SyncModel
import TestStack
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The worker's Prometheus endpoint and `notification_report` (notifications-2.md, "Metrics";
/// "What the tests must show", 11), with `push-worker` as a child process.
extension PushStackTests {
    @Suite struct MetricsTests {
        /// A port free on 127.0.0.1 now (bound to 0, read, closed).
        static func freePort() throws -> Int {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
            }
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            return Int(UInt16(bigEndian: address.sin_port))
        }

        /// One request: the status, the body and the content type.
        static func fetch(_ url: String, method: String = "GET") async throws -> (Int, String, String?) {
            var request = URLRequest(url: URL(string: url)!)
            request.httpMethod = method
            let (data, response) = try await URLSession.shared.data(for: request)
            let http = response as? HTTPURLResponse
            return (
                http?.statusCode ?? 0, String(decoding: data, as: UTF8.self),
                http?.value(forHTTPHeaderField: "Content-Type")
            )
        }

        static let names = [
            "push_alert_latency_seconds", "push_alerts_closed_total", "push_approvals_expired_total",
            "push_live_activity_events_total", "push_live_activities_open", "push_requests_total",
            "push_rows_closed_total", "push_outbox_pending",
        ]

        @Test func metricsOnLoopbackNameEveryFigureAndNoIdentifier() async throws {
            do { try await metrics() } catch { Issue.record("\(String(reflecting: error))") }
        }

        func metrics() async throws {
            let world = try await PushWorld()
            let (desktop, session, tablet, laptop) = try await DeliveryOutcomeTests.devices(world)
            _ = try await DeliveryOutcomeTests.token(world, device: world.device)
            let gone = try await DeliveryOutcomeTests.token(world, device: tablet)
            world.imitation.always(token: gone, .answer(status: 410, reason: "Unregistered"))
            // A server that puts an identifier in its reason: never a label value.
            let odd = try await DeliveryOutcomeTests.token(world, device: laptop)
            world.imitation.always(token: odd, .answer(status: 400, reason: String(repeating: "ab", count: 20)))
            _ = try await DeliveryOutcomeTests.request(world, session: session, desktop: desktop, id: UUID())
            // An approval nobody answered in time: expire_approvals() counts it.
            try await world.sql(
                """
                INSERT INTO public.approval_requests (id, user_id, session_id, requester_device_id, body, generation, expires_at)
                VALUES ('\(UUID().canonical)', '\(world.userID)', '\(session.canonical)', '\(desktop.canonical)', 'AQ==', 1,
                        floor(extract(epoch FROM now()))::bigint - 5)
                """)
            let live = try await world.token(liveActivity: true)
            try await world.enqueue(
                token: live, type: "liveactivity", priority: 10,
                payload: #"{"aps": {"event": "end", "timestamp": 1, "content-state": {"status": "completed"}}, "n": 0}"#
            )

            let port = try Self.freePort()
            let child = try WorkerProcess(["run"], environment: world.environment(["PUSH_METRICS_PORT": "\(port)"]))
            #expect(try await world.drained())
            let url = "http://127.0.0.1:\(port)/metrics"
            var text = ""
            #expect(
                try await world.eventually(.seconds(120)) {
                    text = (try? await Self.fetch(url))?.1 ?? ""
                    return Self.names.allSatisfy { text.contains($0) }
                        && text.contains(
                            #"push_alerts_closed_total{kind="approval",outcome="failed",reason="Unregistered"}"#)
                },
                "every name: \(text.prefix(3000))")
            #expect(text.contains(#"push_alerts_closed_total{kind="approval",outcome="delivered",reason="none"} 1"#))
            #expect(text.contains(#"push_live_activity_events_total{event="end"} 1"#))
            #expect(text.contains(#"push_alerts_closed_total{kind="approval",outcome="failed",reason="other"} 1"#))
            #expect(text.contains(#"push_alert_latency_seconds_bucket{kind="approval",le="0.05"}"#))
            // No label value is an id, a token or an apns-id.
            let values = text.matches(of: /="([^"]*)"/).map { String($0.output.1) }
            #expect(!values.isEmpty)
            for value in values {
                #expect(value.firstMatch(of: /[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-/) == nil, "\(value)")
                #expect(value.firstMatch(of: /[0-9a-f]{32,}/) == nil, "\(value)")
            }
            let (status, _, type) = try await Self.fetch(url)
            #expect(status == 200 && type == "text/plain; version=0.0.4; charset=utf-8")
            #expect(try await Self.fetch("http://127.0.0.1:\(port)/other").0 == 404)
            #expect(try await Self.fetch(url, method: "POST").0 == 405)
            child.signal(SIGTERM)
            #expect(try await child.wait(timeout: Waiting.ceiling) == 0)
            await world.close()
        }

        @Test func anotherHostNeedsTheFlagAndCheckConfigNamesTheEndpoint() async throws {
            let world = try await PushWorld()
            let elsewhere = try await WorkerProcess.run(
                ["run"], environment: world.environment(["PUSH_METRICS_PORT": "9464", "PUSH_METRICS_HOST": "0.0.0.0"]))
            #expect(
                elsewhere.status == 2 && elsewhere.err.contains("PUSH_METRICS_ALLOW_NON_LOOPBACK"), "\(elsewhere.err)")
            let named = try await WorkerProcess.run(
                ["check-config"],
                environment: world.environment(["PUSH_METRICS_PORT": "9464", "PUSH_METRICS_HOST": "127.example.com"]))
            #expect(
                named.status == 2 && named.err.contains("PUSH_METRICS_ALLOW_NON_LOOPBACK"), "a name is not loopback")
            let badPort = try await WorkerProcess.run(
                ["check-config"], environment: world.environment(["PUSH_METRICS_PORT": "70000"]))
            #expect(badPort.status == 2 && badPort.err.contains("PUSH_METRICS_PORT"))
            let port = try Self.freePort()
            let good = try await WorkerProcess.run(
                ["check-config", "--json"], environment: world.environment(["PUSH_METRICS_PORT": "\(port)"]))
            let summary = try JSONSerialization.jsonObject(with: Data(good.out.utf8)) as? [String: String]
            #expect(good.status == 0 && summary?["metrics"] == "http://127.0.0.1:\(port)/metrics")
            await world.close()
        }

        @Test func notificationReportIsTheOperatorsNotASignedInUsers() async throws {
            let world = try await PushWorld()
            let refused: Bool = try await world.admin.withConnection { connection in
                try await connection.query("SET ROLE authenticated", logger: world.logger)
                let refused: Bool
                do {
                    _ = try await connection.query("SELECT public.notification_report(7)", logger: world.logger)
                    refused = false
                } catch let error as PSQLError {
                    refused = error.serverInfo?[.sqlState] == "42501"
                }
                try await connection.query("RESET ROLE", logger: world.logger)
                return refused
            }
            #expect(refused, "authenticated may not read the report")
            // Whatever a deployment grants: a signed-in caller is refused by the function itself.
            #expect(
                await DeliveryOutcomeTests.refused(world, as: world.device, "public.notification_report(7)", "42501"),
                "a signed-in user's claims")
            let report = try await WorkerProcess.run(
                ["report", "--days", "2", "--json"], environment: world.environment())
            #expect(report.status == 0, "\(report.err)")
            let days = try #require(try JSONSerialization.jsonObject(with: Data(report.out.utf8)) as? [[String: Any]])
            #expect(days.count == 2 && days.allSatisfy { $0["approvalsAsked"] is Int && $0["alertsDelivered"] is Int })
            #expect(!report.out.contains(world.userID))
            let table = try await WorkerProcess.run(["report"], environment: world.environment())
            #expect(table.status == 0 && table.out.hasPrefix("day ") && table.out.split(separator: "\n").count == 8)
            let wrong = try await WorkerProcess.run(["report", "--days", "40"], environment: world.environment())
            #expect(wrong.status == 64)
            await world.close()
        }
    }
}
