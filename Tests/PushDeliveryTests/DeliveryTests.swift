import APNsImitation
import Crypto
import Foundation
import PushDelivery
import TestStack
import Testing

/// The worker against the imitation and the stack's PostgreSQL (push-delivery.md). The suite is
/// serialised: every worker claims every due row of `sync_push`.
extension PushStackTests {
    @Suite struct DeliveryTests {
        @Test func oneCorrectRequestPerRowWithOneProviderToken() async throws {
            let world = try await PushWorld()
            let device = try await world.token()
            let activity = try await world.token(liveActivity: true)
            // Expirations are counted from when each row is sent: between these two times.
            let before = Int(Date().timeIntervalSince1970)
            let background = try await world.enqueue(token: device, count: 20)
            let alert = try await world.enqueue(
                token: device, type: "alert", priority: 10, collapseID: "approval-request-x",
                payload:
                    #"{"aps": {"alert": {"title": "Approval needed", "body": "An agent session is waiting"}}, "n": 0}"#)
            let live = try await world.enqueue(
                token: activity, type: "liveactivity", priority: 10,
                payload:
                    #"{"aps": {"event": "update", "timestamp": 1, "content-state": {"status": "working"}}, "n": 0}"#)
            let running = try RunningWorker(world.configuration())
            #expect(try await world.drained())
            try await running.stop()
            let after = Int(Date().timeIntervalSince1970) + 1

            let requests = world.imitation.requests
            #expect(requests.count == 22)
            #expect(requests.allSatisfy { $0.status == 200 })
            // One provider token for all of them.
            #expect(Set(requests.map { $0.headers["authorization"] ?? "" }).count == 1)
            #expect(await running.worker.tokens.mints == 1)
            let rows = try await world.rows(
                """
                SELECT id, apns_id, delivered_at IS NOT NULL AS delivered, last_status, attempts, leased_by
                FROM public.push_outbox WHERE user_id = '\(world.userID)' ORDER BY id
                """)
            #expect(rows.count == 22)
            let byID = Dictionary(uniqueKeysWithValues: rows.map { (Int64($0["id"]!)!, $0["apns_id"]) })
            for request in requests {
                let row = try #require(rows.first { $0["apns_id"] == request.headers["apns-id"] })
                #expect(row["delivered"] == "true" && row["last_status"] == "200" && row["attempts"] == "1")
                #expect(row["leased_by"] == nil)
            }
            // Each kind's headers.
            let first = try #require(requests.first { $0.headers["apns-id"] == byID[background[0]] ?? nil })
            #expect(first.headers["apns-push-type"] == "background")
            #expect(first.headers["apns-priority"] == "5")
            #expect(first.headers["apns-topic"] == PushWorld.bundleID)
            #expect(first.token.count == 64 && first.path == "/3/device/" + device)
            let expiration = Int(first.headers["apns-expiration"] ?? "") ?? 0
            #expect((before + 3600...after + 3600).contains(expiration), "\(expiration)")
            #expect(String(decoding: first.body, as: UTF8.self) == #"{"n":1,"aps":{"content-available":1}}"#)
            let alertRequest = try #require(requests.first { $0.headers["apns-id"] == byID[alert[0]] ?? nil })
            #expect(alertRequest.headers["apns-push-type"] == "alert")
            #expect(alertRequest.headers["apns-priority"] == "10")
            #expect(alertRequest.headers["apns-collapse-id"] == "approval-request-x")
            let liveRequest = try #require(requests.first { $0.headers["apns-id"] == byID[live[0]] ?? nil })
            #expect(liveRequest.headers["apns-push-type"] == "liveactivity")
            #expect(liveRequest.headers["apns-topic"] == PushWorld.bundleID + ".push-type.liveactivity")
            let liveExpiration = Int(liveRequest.headers["apns-expiration"] ?? "") ?? 0
            #expect((before + 300...after + 300).contains(liveExpiration), "\(liveExpiration)")
            await world.close()
        }

        /// Round 4, finding 6: a client that is not this engine writes raw status text into a
        /// session; with details on, the trigger copies it into a live activity, and what reaches
        /// APNs is the sanitiser's output.
        @Test func rawStatusTextAClientWroteIsSanitisedBeforeAPNs() async throws {
            let world = try await PushWorld()
            let activity = try await world.token(liveActivity: true)
            let session = try #require(
                try await world.rows("SELECT session_id::text AS s FROM public.push_tokens WHERE token = '\(activity)'")
                    .first?["s"])
            try await world.sql(
                """
                INSERT INTO public.notification_settings (device_id, user_id, show_notification_details)
                VALUES ('\(world.device.uuidString.lowercased())', '\(world.userID)', true)
                """)
            let secret = "sk_live_" + String(repeating: "Zq7", count: 10)
            try await world.sql(
                """
                UPDATE public.agent_coding_sessions SET runtime_status_updated_at = now(), runtime_status = jsonb_build_object('coding_session',
                    jsonb_build_object('status', 'running', 'current_operation', 'deploying with \(secret)',
                        'todo_progress', jsonb_build_object('completed', 1, 'total', 3, 'current_task', 'password\u{200B}: hunter2')))
                WHERE id = '\(session)'
                """)
            // The queue holds what the client wrote (it is the user's own row).
            #expect(
                try await world.count(
                    "SELECT count(*) FROM public.push_outbox WHERE token = '\(activity)' AND payload::text LIKE '%\(secret)%'"
                ) == 1)
            let running = try RunningWorker(world.configuration())
            #expect(try await world.drained())
            try await running.stop()
            let request = try #require(world.imitation.requests.first { $0.token == activity })
            #expect(request.status == 200)
            let body = String(decoding: request.body, as: UTF8.self)
            #expect(!body.contains(secret) && !body.contains("hunter2"))
            #expect(body.contains("deploying with [REDACTED]"))
            await world.close()
        }

        /// Round 4, finding 2: another account's backlog of 3,000 alerts, queued first, does not
        /// hold back this account's alert: the claim is fair across users.
        @Test func anotherAccountsBacklogDoesNotDelayThisAccountsAlert() async throws {
            let world = try await PushWorld()
            let mine = try await world.token()
            let (flooder, floodDevice, floodToken) = try await Self.otherAccount(world)
            let floodStarted = ContinuousClock.now
            try await world.sql(
                """
                INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, payload)
                SELECT '\(flooder)', '\(floodDevice)', '\(floodToken)', 'alert', 10, '{"aps": {"alert": "flood"}}'
                FROM generate_series(1, 3000)
                """)
            let alert = try await world.enqueue(
                token: mine, type: "alert", priority: 10, payload: #"{"aps": {"alert": "mine"}, "n": 0}"#)
            // The flood's rows are spaced 1 ms apart from its start: those ahead of mine are the
            // ones the flood queued in the time it took to queue mine, plus a claim or two.
            let elapsed = ContinuousClock.now - floodStarted
            let allowed =
                Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000) + 100
            let apnsID = try #require(
                try await world.rows("SELECT apns_id::text AS a FROM public.push_outbox WHERE id = \(alert[0])").first?[
                    "a"])
            let running = try RunningWorker(
                world.configuration {
                    $0.maxInFlight = 8
                    $0.batchSize = 32
                })
            #expect(
                try await world.eventually {
                    try await world.count(
                        "SELECT count(*) FROM public.push_outbox WHERE id = \(alert[0]) AND delivered_at IS NOT NULL")
                        == 1
                })
            try await running.stop()
            let requests = world.imitation.requests
            let position = try #require(requests.firstIndex { $0.headers["apns-id"] == apnsID })
            // Without the fair order it is request 3,001 (index 3,000); with it, among the first claims.
            #expect(position < min(3000, allowed), "position \(position), allowed \(allowed)")
            await world.close()
        }

        /// Another account of the world's database: a user, its phone and the phone's device token.
        static func otherAccount(_ world: PushWorld) async throws -> (user: String, device: String, token: String) {
            let user = UUID().uuidString.lowercased()
            let device = UUID().uuidString.lowercased()
            let token = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            try await world.sql(
                "INSERT INTO public.devices (id, user_id, name, device_type) VALUES ('\(device)', '\(user)', 'phone', 'ios-phone')"
            )
            try await world.sql(
                "INSERT INTO public.push_tokens (user_id, device_id, token) VALUES ('\(user)', '\(device)', '\(token)')"
            )
            return (user, device, token)
        }

        /// Round 5, finding 2: four accounts' backlogs, all queued before this account's alert and
        /// all due, do not hold it back: a new row starts at the head of the queue (a virtual
        /// clock), not at the wall-clock time it was queued, which sorts after every backlog row.
        @Test func anAlertQueuedAfterFourBacklogsGoesAtTheHead() async throws {
            let world = try await PushWorld()
            let mine = try await world.token()
            for _ in 0..<4 {
                let (flooder, floodDevice, floodToken) = try await Self.otherAccount(world)
                try await world.sql(
                    """
                    INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, payload)
                    SELECT '\(flooder)', '\(floodDevice)', '\(floodToken)', 'alert', 10, '{"aps": {"alert": "flood"}}'
                    FROM generate_series(1, 300)
                    """)
            }
            // Every backlog row's fair start is in the past: by the wall clock, a row queued now
            // would sort after all 1,200.
            #expect(
                try await Waiting.until {
                    try await world.count(
                        "SELECT count(*) FROM public.push_outbox WHERE fair_at >= clock_timestamp() - interval '10 milliseconds'"
                    ) == 0
                })
            let alert = try await world.enqueue(
                token: mine, type: "alert", priority: 10, payload: #"{"aps": {"alert": "mine"}, "n": 0}"#)
            let apnsID = try #require(
                try await world.rows("SELECT apns_id::text AS a FROM public.push_outbox WHERE id = \(alert[0])").first?[
                    "a"])
            let running = try RunningWorker(
                world.configuration {
                    $0.maxInFlight = 8
                    $0.batchSize = 32
                })
            #expect(
                try await world.eventually {
                    try await world.count(
                        "SELECT count(*) FROM public.push_outbox WHERE id = \(alert[0]) AND delivered_at IS NOT NULL")
                        == 1
                })
            try await running.stop()
            let position = try #require(world.imitation.requests.firstIndex { $0.headers["apns-id"] == apnsID })
            // In the first claim (32 rows); by the wall clock it would be request 1,201.
            #expect(position < 32, "position \(position)")
            await world.close()
        }

        @Test func aBurstOfExpiredProviderTokenMintsExactlyOnce() async throws {
            let world = try await PushWorld()
            let device = try await world.token()
            try await world.enqueue(token: device)
            let running = try RunningWorker(world.configuration())
            #expect(try await world.drained())
            let firstIssuedAt = try #require(world.imitation.requests.first?.issuedAt)
            // Every token issued so far is now expired; the next mint gets a later iat.
            try await Task.sleep(for: .milliseconds(1100))
            world.imitation.expireProviderTokens(issuedAtOrBefore: firstIssuedAt)
            try await world.enqueue(token: device, count: 100)
            #expect(try await world.drained())
            try await running.stop()
            let requests = world.imitation.requests
            let expired = requests.filter { $0.reason == "ExpiredProviderToken" }
            #expect(expired.count >= 1)
            #expect(await running.worker.tokens.mints == 2)
            #expect(Set(requests.map { $0.issuedAt }).count == 2)
            #expect(
                try await world.count(
                    "SELECT count(*) FROM public.push_outbox WHERE delivered_at IS NOT NULL AND user_id = '\(world.userID)'"
                ) == 101)
            // The refresh charged no attempt.
            #expect(
                try await world.count(
                    "SELECT count(*) FROM public.push_outbox WHERE attempts <> 1 AND user_id = '\(world.userID)'") == 0)
            await world.close()
        }
    }
}
