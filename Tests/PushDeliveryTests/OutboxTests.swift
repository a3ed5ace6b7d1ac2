import APNsImitation
import Foundation
import PostgresNIO
import PushDelivery
import Testing

extension PushStackTests {
    /// The outbox's rules on PostgreSQL: claims, tokens that moved, spacing, retention.
    @Suite struct OutboxTests {
        @Test func twoWorkersNeverSendTheSameRow() async throws {
            let world = try await PushWorld()
            var tokens: [String] = []
            for _ in 0..<8 { tokens.append(try await world.token()) }
            for token in tokens { try await world.enqueue(token: token, count: 100) }
            // A deadline and a lease an idle machine never reaches; a request that passed its
            // deadline anyway is sent again (at least once, by design), and counted below.
            let patient: (inout PushWorkerConfiguration) -> Void = {
                $0.batchSize = 32
                $0.requestDeadline = .seconds(60)
                $0.lease = .seconds(120)
            }
            let givenUp = GivenUpRows()
            let one = try RunningWorker(world.configuration(patient), logger: givenUp.logger, level: .warning)
            let two = try RunningWorker(world.configuration(patient), logger: givenUp.logger, level: .warning)
            #expect(try await world.drained())
            try await one.stop()
            try await two.stop()
            let mine = try await world.apnsIDs()
            let ids = world.imitation.requests.compactMap { $0.headers["apns-id"] }.filter(mine.contains)
            #expect(Set(ids).count == 800)
            // A request sent again is one its worker gave up on (on one loaded core a whole window
            // of 256 passed the 60 s deadline at once): at least once, by design. Any other
            // repeat is a row two workers both claimed.
            var sent: [String: Int] = [:]
            for id in ids { sent[id, default: 0] += 1 }
            let repeated = Set(sent.filter { $0.value > 1 }.keys)
            let explained = try await world.apnsIDs(ofRows: givenUp.rows)
            #expect(
                repeated.subtracting(explained).isEmpty,
                "sent twice, never given up: \(repeated.subtracting(explained).count)")
            #expect(ids.count <= 800 + givenUp.rows.count)
            // Both took part (each worker has its own connections).
            #expect(Set(world.imitation.requests.map(\.connection)).count >= 2)
            // Each connection's first request was alone on it (one stream before a valid provider
            // token); afterwards the streams were shared.
            var seen: Set<Int> = []
            for request in world.imitation.requests where seen.insert(request.connection).inserted {
                #expect(request.concurrentStreams == 1)
            }
            #expect(world.imitation.requests.contains { $0.concurrentStreams > 1 })
            await world.close()
        }

        @Test func aRowWhoseTokenMovedToAnotherUserIsNeverSent() async throws {
            let world = try await PushWorld()
            let token = try await world.token()
            let rows = try await world.enqueue(token: token, count: 3)
            // The phone was signed in to another account: register_push_token moved the token.
            let stranger = UUID().uuidString.lowercased()
            let strangerDevice = UUID().uuidString.lowercased()
            try await world.sql(
                "INSERT INTO public.devices (id, user_id, name, device_type) VALUES ('\(strangerDevice)', '\(stranger)', 'p', 'ios-phone')"
            )
            try await world.sql(
                "UPDATE public.push_tokens SET user_id = '\(stranger)', device_id = '\(strangerDevice)' WHERE token = '\(token)'"
            )
            let running = try RunningWorker(world.configuration())
            #expect(try await world.drained())
            try await running.stop()
            #expect(world.imitation.requests.isEmpty)
            let closed = try await world.rows(
                "SELECT last_error FROM public.push_outbox WHERE id IN (\(rows.map(String.init).joined(separator: ",")))"
            )
            #expect(closed.count == 3 && closed.allSatisfy { $0["last_error"] == "dropped: token moved" })
            await world.close()
        }

        @Test func aLongCollapseIDGoesOutAsFortyFiveStableBytes() async throws {
            let world = try await PushWorld()
            let token = try await world.token()
            let stored = "session-" + String(repeating: "é", count: 40)
            world.imitation.script(token: token, [.answer(status: 503, reason: "ServiceUnavailable")])
            try await world.enqueue(token: token, collapseID: stored)
            try await world.enqueue(token: token, collapseID: "short-one")
            let running = try RunningWorker(world.configuration())
            #expect(try await world.drained())
            try await running.stop()
            let requests = world.imitation.requests
            let long = requests.filter { $0.headers["apns-collapse-id"] != "short-one" }
            #expect(long.count == 2)
            #expect(long.allSatisfy { $0.headers["apns-collapse-id"] == APNsRequest.collapseID(stored) })
            #expect(long.first?.headers["apns-collapse-id"]?.utf8.count == 45)
            #expect(long.first?.headers["apns-id"] == long.last?.headers["apns-id"])
            #expect(requests.contains { $0.headers["apns-collapse-id"] == "short-one" })
            await world.close()
        }

        @Test func aRowWaitsForItsNotBefore() async throws {
            let world = try await PushWorld()
            let token = try await world.token(liveActivity: true)
            let ids = try await world.enqueue(
                token: token, type: "liveactivity", priority: 10,
                payload: #"{"aps": {"event": "update"}, "n": 0}"#, notBefore: "now() + interval '2 seconds'")
            // The row's own due time, as the server holds it: a time this test took after the
            // insert returned could be late on a busy machine and make a correct worker look early.
            let due = try await world.rows(
                "SELECT extract(epoch FROM not_before)::text AS due FROM public.push_outbox WHERE id = \(ids[0])")
            let notBefore = try #require(due.first?["due"].flatMap(Double.init))
            let running = try RunningWorker(world.configuration())
            #expect(try await world.drained())
            try await running.stop()
            let sent = try #require(world.imitation.requests.first).time
            // Not before it is due (one machine's clock; 10 ms for the two readings' rounding).
            #expect(sent.timeIntervalSince1970 >= notBefore - 0.01)
            await world.close()
        }

        @Test func theThrottleNeverRewritesARowInFlight() async throws {
            let world = try await PushWorld()
            let token = try await world.token(liveActivity: true)
            let first = try await world.enqueue(
                token: token, type: "liveactivity", priority: 10, payload: #"{"aps": {"event": "update"}, "n": 0}"#)
            // A worker holds it: the next state must not be written into it.
            try await world.sql(
                "UPDATE public.push_outbox SET lease_until = now() + interval '1 minute', leased_by = 'w' WHERE id = \(first[0])"
            )
            let replaced = try await world.rows(
                """
                SELECT private.queue_live_activity('\(world.userID)', '\(world.device.uuidString.lowercased())', '\(token)',
                    'update', '{"aps": {"event": "update"}, "n": 2}', 10)::text AS queued
                """)
            #expect(replaced.first?["queued"] == "true")
            let rows = try await world.rows(
                "SELECT id, payload ->> 'n' AS n, not_before > now() + interval '10 seconds' AS spaced FROM public.push_outbox WHERE token = '\(token)' ORDER BY id"
            )
            #expect(rows.count == 2)
            #expect(rows.first?["n"] == "1")
            #expect(rows.last?["n"] == "2" && rows.last?["spaced"] == "true")
            try await world.sql(
                "UPDATE public.push_outbox SET failed_at = now(), lease_until = NULL, leased_by = NULL WHERE token = '\(token)'"
            )
            await world.close()
        }

        @Test func expiredApprovalsAreExpiredAndOldClosedRowsDeleted() async throws {
            let world = try await PushWorld()
            let token = try await world.token()
            let session = UUID().uuidString.lowercased()
            let repository = UUID().uuidString.lowercased()
            let request = UUID().uuidString.lowercased()
            let device = world.device.uuidString.lowercased()
            let desktop = UUID().uuidString.lowercased()
            try await world.sql(
                """
                INSERT INTO public.repositories (id, user_id, device_id, name, local_path)
                    VALUES ('\(repository)', '\(world.userID)', '\(device)', 'r', '/r');
                """)
            try await world.sql(
                """
                INSERT INTO public.agent_coding_sessions (id, user_id, device_id, repository_id, session_started_at)
                    VALUES ('\(session)', '\(world.userID)', '\(device)', '\(repository)', now())
                """)
            try await world.sql(
                """
                INSERT INTO public.approval_requests (id, user_id, session_id, requester_device_id, body, generation, expires_at)
                VALUES ('\(request)', '\(world.userID)', '\(session)', '\(desktop)', 'x', 1, extract(epoch FROM now())::bigint - 5)
                """)
            // The timeout clearing goes to trusted devices other than the requester: the
            // server's reading of a log that certifies the phone.
            try await world.sql(
                """
                INSERT INTO private.trust_log_state (user_id, current_epoch, highest_epoch) VALUES ('\(world.userID)', 1, 1)
                """)
            try await world.sql(
                """
                INSERT INTO private.trust_log_devices (user_id, epoch, device_id, certified_seq) VALUES ('\(world.userID)', 1, '\(device)', 1)
                """)
            // Closed long ago: deleted. A live activity's end stays while its token exists.
            let old = try await world.enqueue(token: token, count: 2)
            try await world.sql(
                "UPDATE public.push_outbox SET delivered_at = now() - interval '8 days' WHERE id IN (\(old[0]), \(old[1]))"
            )
            let running = try RunningWorker(world.configuration())
            #expect(
                try await world.eventually {
                    try await world.rows("SELECT status FROM public.approval_requests WHERE id = '\(request)'").first?[
                        "status"]
                        == "expired"
                })
            #expect(
                try await world.eventually {
                    try await world.count("SELECT count(*) FROM public.push_outbox WHERE id IN (\(old[0]), \(old[1]))")
                        == 0
                })
            // expire_approvals queued the clearing push, and the worker sent it.
            #expect(try await world.drained())
            try await running.stop()
            #expect(
                world.imitation.requests.contains {
                    String(decoding: $0.body, as: UTF8.self).contains(request)
                        && $0.headers["apns-push-type"] == "background"
                })
            await world.close()
        }

        @Test("a row the worker still sends is never claimed again, though its lease ran out (a starved worker)")
        func aRowInFlightIsNotReclaimedWhenItsLeaseEnds() async throws {
            let world = try await PushWorld()
            let token = try await world.token()
            let id = try await world.enqueue(token: token)[0]
            let client = PostgresClient(configuration: world.configuration().database.clientConfiguration)
            let task = Task { await client.run() }
            let outbox = Outbox(client: client, workerID: "one", logger: world.logger)
            let first = try await outbox.claim(limit: 10, lease: .seconds(5), environments: ["production"])
            #expect(first.rows.map(\.id) == [id])
            // The worker was starved past its lease while the request was out.
            try await world.sql(
                "UPDATE public.push_outbox SET lease_until = now() - interval '1 second' WHERE id = \(id)")
            let again = try await outbox.claim(
                limit: 10, lease: .seconds(60), environments: ["production"], excluding: [id])
            #expect(again.rows.isEmpty, "the same row sent twice by one worker")
            // Recorded, or given up by the worker: then another claim may take it.
            let later = try await outbox.claim(limit: 10, lease: .seconds(60), environments: ["production"])
            #expect(later.rows.map(\.attempts) == [2])
            task.cancel()
            await world.close()
        }

        @Test("an outcome the database refuses holds back no other row's, and its row is closed, not sent again")
        func aRefusedOutcomeIsClosedAloneAndTheOthersRecorded() async throws {
            let world = try await PushWorld()
            let token = try await world.token()
            let poisoned = try await world.enqueue(token: token)[0]
            // The database refuses to record this one row's delivery (a stand-in for a row whose
            // outcome cannot be written), and only while the trigger stands.
            let name = "refuse_\(poisoned)"
            try await world.sql(
                """
                CREATE FUNCTION public.\(name)() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF OLD.id = \(poisoned) AND NEW.delivered_at IS NOT NULL THEN RAISE EXCEPTION 'refused'; END IF;
                    RETURN NEW;
                END $$
                """)
            try await world.sql(
                "CREATE TRIGGER \(name) BEFORE UPDATE ON public.push_outbox FOR EACH ROW EXECUTE FUNCTION public.\(name)()"
            )
            let running = try RunningWorker(world.configuration())
            let apnsID = try #require(try await world.apnsIDs(ofRows: [poisoned]).first)
            func sends() -> Int { world.imitation.requests.filter { $0.headers["apns-id"] == apnsID }.count }
            #expect(try await world.eventually { sends() >= 1 })
            // Answered after it: their outcomes join the refused one's batch.
            let later = try await world.enqueue(token: token, count: 10)
            let ids = later.map(String.init).joined(separator: ",")
            #expect(
                try await world.eventually {
                    try await world.count(
                        "SELECT count(*) FROM public.push_outbox WHERE id = ANY('{\(ids)}') AND delivered_at IS NOT NULL"
                    ) == 10
                }, "the other rows' outcomes were held back with the refused one")
            // Closed as dead, saying why; sent once, not again when a lease ends.
            #expect(
                try await world.eventually {
                    try await world.rows(
                        "SELECT last_error FROM public.push_outbox WHERE id = \(poisoned) AND failed_at IS NOT NULL"
                    ).first?["last_error"] == "outcome refused"
                })
            try await world.sql("DROP TRIGGER \(name) ON public.push_outbox")
            try await world.sql("DROP FUNCTION public.\(name)()")
            #expect(try await world.pending() == 0)
            try await running.stop()
            #expect(sends() == 1)
            await world.close()
        }

        @Test("a late answer of the same worker's earlier claim is fenced off by the claim, not only the worker")
        func aCompletionOfAnEarlierClaimBySameWorkerWritesNothing() async throws {
            let world = try await PushWorld()
            let token = try await world.token()
            let id = try await world.enqueue(token: token)[0]
            let client = PostgresClient(configuration: world.configuration().database.clientConfiguration)
            let task = Task { await client.run() }
            let outbox = Outbox(client: client, workerID: "one", logger: world.logger)
            let first = try await outbox.claim(limit: 10, lease: .seconds(5), environments: ["production"])
            #expect(first.rows.map(\.attempts) == [1])
            try await world.sql(
                "UPDATE public.push_outbox SET lease_until = now() - interval '1 second' WHERE id = \(id)")
            let second = try await outbox.claim(limit: 10, lease: .seconds(60), environments: ["production"])
            #expect(second.rows.map(\.attempts) == [2])
            // The first claim's answer arrives after the second claim: it must not close the row.
            #expect(
                try await outbox.complete([(id, 1, .dead(status: 400, reason: "BadTopic", note: "our fault"))]) == 0)
            #expect(try await outbox.complete([(id, 2, .delivered)]) == 1)
            let row = try #require(
                try await world.rows(
                    "SELECT delivered_at IS NOT NULL AS delivered, failed_at FROM public.push_outbox WHERE id = \(id)"
                ).first)
            #expect(row["delivered"] == "true" && row["failed_at"] == nil)
            task.cancel()
            await world.close()
        }

        @Test func aCompletionAfterTheLeaseWasTakenOverWritesNothing() async throws {
            let world = try await PushWorld()
            let token = try await world.token()
            let id = try await world.enqueue(token: token)[0]
            let configuration = world.configuration()
            let client = PostgresClient(configuration: configuration.database.clientConfiguration)
            let task = Task { await client.run() }
            let slow = Outbox(client: client, workerID: "slow", logger: world.logger)
            let quick = Outbox(client: client, workerID: "quick", logger: world.logger)
            let first = try await slow.claim(limit: 10, lease: .seconds(5), environments: ["production"])
            #expect(first.rows.map(\.id) == [id])
            // While the lease holds, nobody else gets the row.
            #expect(try await quick.claim(limit: 10, lease: .seconds(5), environments: ["production"]).rows.isEmpty)
            try await world.sql(
                "UPDATE public.push_outbox SET lease_until = now() - interval '1 second' WHERE id = \(id)")
            let second = try await quick.claim(limit: 10, lease: .seconds(60), environments: ["production"])
            #expect(second.rows.map(\.id) == [id] && second.rows.first?.attempts == 2)
            // The first worker's late answer is fenced off; the holder's is written.
            #expect(try await slow.complete([(id, 1, .dead(status: 400, reason: "BadTopic", note: "our fault"))]) == 0)
            #expect(try await quick.complete([(id, 2, .delivered)]) == 1)
            let row = try #require(
                try await world.rows(
                    "SELECT delivered_at IS NOT NULL AS delivered, failed_at FROM public.push_outbox WHERE id = \(id)"
                ).first)
            #expect(row["delivered"] == "true" && row["failed_at"] == nil)
            task.cancel()
            await world.close()
        }

        @Test func rowsPastTheirExpiryOrForTheWrongTokenTypeAreClosedUnsent() async throws {
            let world = try await PushWorld()
            let device = try await world.token()
            let activity = try await world.token(liveActivity: true)
            let development = try await world.token(environment: "development")
            let late = try await world.enqueue(token: device)[0]
            try await world.sql(
                "UPDATE public.push_outbox SET expires_at = now() - interval '1 second' WHERE id = \(late)")
            // A live-activity update to a device token, and an alert to a live-activity token.
            let wrongForLive = try await world.enqueue(
                token: device, type: "liveactivity", priority: 10, payload: #"{"aps": {"event": "update"}, "n": 0}"#)[0]
            let wrongForAlert = try await world.enqueue(token: activity, type: "alert", priority: 10)[0]
            let notServed = try await world.enqueue(token: development)[0]
            let running = try RunningWorker(world.configuration { $0.environment = .production })
            #expect(try await world.drained())
            try await running.stop()
            #expect(world.imitation.requests.isEmpty)
            let reasons = Dictionary(
                uniqueKeysWithValues: try await world.rows(
                    "SELECT id, last_error FROM public.push_outbox WHERE user_id = '\(world.userID)'"
                ).map { (Int64($0["id"]!)!, $0["last_error"] ?? "") })
            #expect(reasons[late] == "expired")
            #expect(reasons[wrongForLive] == "dropped: token type")
            #expect(reasons[wrongForAlert] == "dropped: token type")
            #expect(reasons[notServed] == "dropped: environment not served")
            await world.close()
        }
    }
}
