import APNsImitation
import Foundation
import PushDelivery
import TestStack
import Testing

extension PushStackTests {
    /// The real `push-worker` process: crashes, SIGTERM, its logs, its configuration errors.
    @Suite struct ProcessTests {
        @Test func killMinusNineMidRunLosesNothing() async throws {
            let world = try await PushWorld()
            var tokens: [String] = []
            for _ in 0..<10 { tokens.append(try await world.token()) }
            for token in tokens { try await world.enqueue(token: token, count: 300) }
            let environment = world.environment([
                "PUSH_LEASE_SECONDS": "9", "PUSH_REQUEST_DEADLINE_SECONDS": "4", "PUSH_MAX_IN_FLIGHT": "64",
                "PUSH_BATCH_SIZE": "64",
            ])
            let first = try WorkerProcess(["run"], environment: environment)
            // 500 delivered, waiting as long as deliveries keep coming: on one loaded core a fresh
            // worker (TLS, provider token, 4 s deadlines given up and sent again) took over 120 s.
            #expect(
                try await Waiting.drained {
                    try await max(
                        0,
                        500
                            - world.count(
                                "SELECT count(*) FROM public.push_outbox WHERE user_id = '\(world.userID)' AND delivered_at IS NOT NULL"
                            ))
                }, "hang: the first worker stopped delivering before 500 rows")
            first.signal(SIGKILL)
            _ = try await first.wait(timeout: Waiting.ceiling)
            let pendingAtKill = try await world.pending()
            let unrecordedAtKill = Set(
                try await world.rows(
                    "SELECT apns_id::text AS a FROM public.push_outbox WHERE user_id = '\(world.userID)' AND delivered_at IS NULL"
                ).compactMap { $0["a"] })
            let second = try WorkerProcess(["run"], environment: environment)
            #expect(try await world.drained())
            second.signal(SIGTERM)
            #expect(try await second.wait(timeout: Waiting.ceiling) == 0)
            #expect(pendingAtKill > 0)
            #expect(
                try await world.count(
                    "SELECT count(*) FROM public.push_outbox WHERE user_id = '\(world.userID)' AND delivered_at IS NOT NULL"
                )
                    == 3000)
            // Duplicates only where the worker could not know: among the rows whose delivery was
            // not yet recorded when the first worker died (those in flight, and those answered in
            // the last completion batch, written every 20 ms, so there can be more than
            // PUSH_MAX_IN_FLIGHT of them), and the rows whose request a worker gave up on (its
            // 4 s deadline passed; on a busy machine the imitation's 200 can come too late) and
            // sent again. Any other is a row sent twice though its first answer was read.
            // This world's rows only: the worker serves every due row of `sync_push`, and on one
            // loaded core the imitation answered 3,008 distinct apns-ids here, 8 of them of rows
            // not of this world (see PushWorld.close).
            let mine = try await world.apnsIDs()
            var answered: [String: Int] = [:]
            for request in world.imitation.requests where request.status == 200 {
                let id = request.headers["apns-id"] ?? ""
                if mine.contains(id) { answered[id, default: 0] += 1 }
            }
            #expect(answered.count == 3000)
            let duplicates = Set(answered.filter { $0.value > 1 }.keys)
            let givenUp = try await world.apnsIDs(ofRows: WorkerProcess.rowsGivenUp(in: first.errors + second.errors))
            let unexplained = duplicates.subtracting(unrecordedAtKill).subtracting(givenUp)
            #expect(
                unexplained.isEmpty,
                "\(unexplained.count) sent twice though not in flight at the kill: \(unexplained.sorted().prefix(5))")
            #expect(duplicates.subtracting(givenUp).count < pendingAtKill)
            await world.close()
        }

        @Test func sigtermDrainsWithinTenSecondsAndLeavesNoLease() async throws {
            let world = try await PushWorld()
            let stalled = try await world.token()
            let fine = try await world.token()
            world.imitation.always(token: stalled, .stall)
            // Prove the token on a first row, so the rest go out together.
            try await world.enqueue(token: fine)
            // The imitation never answers the stalled requests: the worker ends only because its
            // drain (5 s here) gives them up, and their rows are given back.
            let child = try WorkerProcess(
                ["run"], environment: world.environment(["PUSH_DRAIN_SECONDS": "5"]))
            #expect(try await world.drained())
            try await world.enqueue(token: stalled, count: 5)
            try await world.enqueue(token: fine, count: 50)
            #expect(
                try await world.eventually {
                    world.imitation.requests.filter { $0.token == stalled }.count == 5
                        && world.imitation.requests.filter { $0.token == fine }.count == 51
                })
            child.signal(SIGTERM)
            #expect(try await child.wait(timeout: Waiting.ceiling) == 0, "hang: the drain never gave up")
            #expect(
                try await world.count(
                    """
                    SELECT count(*) FROM public.push_outbox
                    WHERE user_id = '\(world.userID)' AND (leased_by IS NOT NULL OR lease_until IS NOT NULL)
                    """) == 0)
            // The stalled rows were given back uncharged, for the next worker.
            let stalledRows = try await world.rows(
                "SELECT attempts, delivered_at IS NULL AND failed_at IS NULL AS pending FROM public.push_outbox WHERE token = '\(stalled)'"
            )
            #expect(
                stalledRows.count == 5 && stalledRows.allSatisfy { $0["attempts"] == "0" && $0["pending"] == "true" })
            await world.close()
        }

        @Test func noLogLineHoldsATokenAKeyOrAPayload() async throws {
            let world = try await PushWorld()
            let marker = "payload-marker-\(UUID().uuidString)"
            var tokens: [String] = []
            for _ in 0..<6 { tokens.append(try await world.token()) }
            world.imitation.always(token: tokens[0], .answer(status: 410, reason: "Unregistered", timestamp: Date()))
            world.imitation.always(token: tokens[1], .answer(status: 400, reason: "BadDeviceToken"))
            world.imitation.always(token: tokens[2], .answer(status: 413, reason: "PayloadTooLarge"))
            world.imitation.script(token: tokens[3], [.answer(status: 500, reason: "InternalServerError"), .reset])
            world.imitation.script(token: tokens[4], [.answer(status: 429, reason: "TooManyRequests")])
            for token in tokens {
                try await world.enqueue(
                    token: token, count: 2, payload: #"{"aps": {"content-available": 1}, "n": 0, "m": "\#(marker)"}"#)
            }
            let huge = #"{"aps": {}, "n": 0, "m": "\#(marker)\#(String(repeating: "y", count: 4100))"}"#
            try await world.enqueue(token: tokens[5], payload: huge)
            let child = try WorkerProcess(
                ["run"],
                environment: world.environment(["PUSH_LOG_LEVEL": "trace", "PUSH_TOKEN_BACKOFF_SECONDS": "0.2"]))
            #expect(try await world.drained())
            child.signal(SIGTERM)
            #expect(try await child.wait(timeout: Waiting.ceiling) == 0)
            let log = child.errors + child.output
            #expect(log.contains("APNs refused the request as malformed"))
            #expect(log.contains(String(tokens[2].suffix(6))))
            for token in tokens { #expect(!log.contains(token)) }
            #expect(!log.contains(marker))
            let providerTokens = Set(world.imitation.requests.compactMap { $0.headers["authorization"] })
            #expect(!providerTokens.isEmpty)
            for bearer in providerTokens {
                let parts = bearer.dropFirst("bearer ".count).split(separator: ".")
                #expect(!log.contains(String(parts.last ?? "")))
                #expect(!log.contains(String(bearer.dropFirst("bearer ".count))))
            }
            for line in world.keyPEM.split(separator: "\n") where !line.hasPrefix("-----") {
                #expect(!log.contains(String(line)))
            }
            await world.close()
        }

        @Test func configurationMistakesExitTwoNamingTheVariable() async throws {
            let world = try await PushWorld()
            var missing = world.environment()
            missing["APNS_KEY_ID"] = nil
            let noKeyID = try await WorkerProcess.run(
                ["check-config"], environment: missing)
            #expect(noKeyID.status == 2 && noKeyID.err.contains("APNS_KEY_ID"))
            // Every problem in one run, a line each.
            missing["APNS_TEAM_ID"] = "team"
            missing["PUSH_BATCH_SIZE"] = "0"
            let three = try await WorkerProcess.run(["check-config"], environment: missing)
            let lines = three.err.split(separator: "\n").filter { $0.hasPrefix("push-worker: configuration: ") }
            #expect(three.status == 2 && lines.count == 3, "\(three.err)")
            #expect(
                lines.map { $0.dropFirst("push-worker: configuration: ".count).prefix { $0 != " " } } == [
                    "APNS_KEY_ID", "APNS_TEAM_ID", "PUSH_BATCH_SIZE",
                ])

            let badTeam = try await WorkerProcess.run(
                ["run"], environment: world.environment(["APNS_TEAM_ID": "team"]))
            #expect(badTeam.status == 2 && badTeam.err.contains("APNS_TEAM_ID"))

            let elsewhere = try await WorkerProcess.run(
                ["run"], environment: world.environment(["APNS_BASE_URL": "https://push.example.com"]))
            #expect(elsewhere.status == 2 && elsewhere.err.contains("APNS_BASE_URL"))
            let plain = try await WorkerProcess.run(
                ["run"], environment: world.environment(["APNS_BASE_URL": "http://127.0.0.1:1"]))
            #expect(plain.status == 2 && plain.err.contains("APNS_BASE_URL"))

            chmod(world.keyPath, 0o644)
            let readable = try await WorkerProcess.run(
                ["check-config"], environment: world.environment())
            #expect(
                readable.status == 2 && readable.err.contains("APNS_KEY_PATH") && readable.err.contains("chmod 600"))
            chmod(world.keyPath, 0o600)

            let good = try await WorkerProcess.run(
                ["check-config", "--json"], environment: world.environment())
            #expect(good.status == 0)
            let summary = try JSONSerialization.jsonObject(with: Data(good.out.utf8)) as? [String: String]
            #expect(summary?["outbox"] == "ok" && summary?["team"] == PushWorld.teamID)
            #expect(summary?["database"]?.hasPrefix("push_sender@127.0.0.1") == true)
            for line in world.keyPEM.split(separator: "\n") where !line.hasPrefix("-----") {
                #expect(!good.out.contains(String(line)) && !good.err.contains(String(line)))
            }
            await world.close()
        }

        @Test("a key file reached through symbolic links (as Kubernetes mounts secrets) is followed and checked")
        func keyFileBehindSymlinks() async throws {
            let world = try await PushWorld()
            let directory = URL(fileURLWithPath: world.keyPath).deletingLastPathComponent()
            // Kubernetes: key.p8 -> ..data/key.p8, ..data -> ..2026_11_26/
            let version = directory.appendingPathComponent("..2026_11_26")
            try FileManager.default.createDirectory(at: version, withIntermediateDirectories: true)
            let target = version.appendingPathComponent("key.p8").path
            try FileManager.default.copyItem(atPath: world.keyPath, toPath: target)
            chmod(target, 0o600)
            try FileManager.default.createSymbolicLink(
                atPath: directory.appendingPathComponent("..data").path, withDestinationPath: "..2026_11_26")
            let link = directory.appendingPathComponent("mounted.p8").path
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "..data/key.p8")
            let good = try await WorkerProcess.run(
                ["check-config", "--json"], environment: world.environment(["APNS_KEY_PATH": link]))
            #expect(good.status == 0, "\(good.err)")
            // The target, not the link (whose own mode is 0777), is what must be private.
            chmod(target, 0o644)
            let readable = try await WorkerProcess.run(
                ["check-config"], environment: world.environment(["APNS_KEY_PATH": link]))
            #expect(readable.status == 2 && readable.err.contains("chmod 600"))
            await world.close()
        }

        @Test("check-config and send-once give up on a silent database after the connect timeout, naming the host")
        func unreachableDatabaseExitsOne() async throws {
            let world = try await PushWorld()
            // A listening socket that never answers: the PostgreSQL client waits on it for ever.
            let silent = try SilentListener()
            defer { withExtendedLifetime(silent) {} }
            let port = silent.port
            let environment = world.environment([
                "DATABASE_URL": "postgres://push_sender:pw@127.0.0.1:\(port)/postgres?sslmode=disable",
                "PUSH_DB_CONNECT_SECONDS": "1",
            ])
            for arguments in [["check-config"], ["send-once", "--outbox-id", "1"]] {
                // Without the connect timeout the child would wait on the silent listener until
                // the run's ceiling kills it (status -1).
                let result = try await WorkerProcess.run(arguments, environment: environment)
                #expect(result.status == 1, "\(arguments): \(result.err)")
                #expect((result.out + result.err).contains("127.0.0.1:\(port)"), "\(arguments)")
            }
            await world.close()
        }

        @Test func sendOnceSendsOneRowNowAndSaysWhatHappened() async throws {
            let world = try await PushWorld()
            let token = try await world.token()
            let waiting = try await world.enqueue(token: token, notBefore: "now() + interval '1 hour'")
            let result = try await WorkerProcess.run(
                ["send-once", "--outbox-id", String(waiting[0]), "--json"], environment: world.environment())
            #expect(result.status == 0)
            let object = try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [String: Any]
            #expect(object?["outcome"] as? String == "delivered")
            #expect(world.imitation.requests.count == 1)
            let again = try await WorkerProcess.run(
                ["send-once", "--outbox-id", String(waiting[0])], environment: world.environment())
            #expect(again.status == 1 && again.out.contains("not pending"))
            #expect(world.imitation.requests.count == 1)
            await world.close()
        }
    }
}
