import APNsImitation
import Foundation
import PostgresNIO
import PushDelivery
import RemoteStore
import SyncModel
import Testing

/// Nothing silently lost (notifications-2.md, test 6): `request_approval`'s answer and
/// `alert_deliveries` after the real worker met the imitation's answers, on the stack.
extension PushStackTests {
    @Suite struct DeliveryOutcomeTests {
        /// Runs `query` (one row, one text column) as the world's signed-in user acting for
        /// `device` (its credential registered here, its header set as PostgREST sets it), on one
        /// connection. `query` is an expression unless `statement`: then a whole statement
        /// answering one text column.
        static func asUser(
            _ world: PushWorld, as device: UUID, _ query: String, statement: Bool = false
        ) async throws -> String {
            // A credential of the device's own: its id's hex digits, twice (64 hex digits).
            let credential = String(repeating: device.canonical.replacingOccurrences(of: "-", with: ""), count: 2)
            try await world.sql(
                "INSERT INTO private.device_credentials (device_id, user_id, hash) VALUES ('\(device.canonical)', '\(world.userID)', sha256(decode('\(credential)', 'hex'))) ON CONFLICT DO NOTHING"
            )
            return try await world.admin.withConnection { connection in
                let claims = #"{"sub": "\#(world.userID)", "role": "authenticated"}"#
                try await connection.query(
                    PostgresQuery(unsafeSQL: "SELECT set_config('request.jwt.claims', '\(claims)', false)"),
                    logger: world.logger)
                try await connection.query(
                    PostgresQuery(
                        unsafeSQL:
                            #"SELECT set_config('request.headers', '{"x-device-credential": "\#(credential)"}', false)"#
                    ),
                    logger: world.logger)
                // Back to no user before the connection returns to the pool (valid JSON: the
                // triggers read it).
                func reset() async throws {
                    try await connection.query(
                        "SELECT set_config('request.jwt.claims', '{}', false)", logger: world.logger)
                    try await connection.query(
                        "SELECT set_config('request.headers', '{}', false)", logger: world.logger)
                }
                var answer = ""
                do {
                    for try await text in try await connection.query(
                        PostgresQuery(unsafeSQL: statement ? query : "SELECT (\(query))::text"), logger: world.logger
                    ).decode(String.self) {
                        answer = text
                    }
                } catch {
                    try? await reset()
                    throw error
                }
                try await reset()
                return answer
            }
        }

        /// The world's user with a desktop, a tablet and a laptop beside the world's phone, all
        /// certified by a trust log; a session of the desktop's. Answers (desktop, session).
        static func devices(
            _ world: PushWorld
        ) async throws -> (desktop: UUID, session: UUID, tablet: UUID, laptop: UUID) {
            let (desktop, session, tablet, laptop, repository) = (UUID(), UUID(), UUID(), UUID(), UUID())
            let user = world.userID
            for (id, name) in [(desktop, "desktop"), (tablet, "tablet"), (laptop, "laptop")] {
                try await world.sql(
                    "INSERT INTO public.devices (id, user_id, name, device_type) VALUES ('\(id.canonical)', '\(user)', '\(name)', 'ios-phone')"
                )
            }
            try await world.sql("INSERT INTO private.trust_log_state (user_id, current_epoch) VALUES ('\(user)', 1)")
            for id in [world.device, desktop, tablet, laptop] {
                try await world.sql(
                    "INSERT INTO private.trust_log_devices (user_id, epoch, device_id, certified_seq) VALUES ('\(user)', 1, '\(id.canonical)', 1)"
                )
            }
            try await world.sql(
                "INSERT INTO public.repositories (id, user_id, device_id, name, local_path) VALUES ('\(repository.canonical)', '\(user)', '\(desktop.canonical)', 'r', '/r')"
            )
            try await world.sql(
                "INSERT INTO public.agent_coding_sessions (id, user_id, device_id, repository_id, session_started_at) VALUES ('\(session.canonical)', '\(user)', '\(desktop.canonical)', '\(repository.canonical)', now())"
            )
            return (desktop, session, tablet, laptop)
        }

        /// A token for `device` (64 hex digits).
        static func token(_ world: PushWorld, device: UUID, valid: Bool = true) async throws -> String {
            let token = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            try await world.sql(
                "INSERT INTO public.push_tokens (user_id, device_id, token, environment, is_valid) VALUES ('\(world.userID)', '\(device.canonical)', '\(token)', 'production', \(valid))"
            )
            return token
        }

        /// `request_approval` with a sealed-looking body of generation 1; answers its JSON.
        static func request(
            _ world: PushWorld, session: UUID, desktop: UUID, id: UUID
        ) async throws -> ApprovalRequested {
            let body = Data([1, 0, 0, 0, 1] + [UInt8](repeating: 7, count: 12 + 2 + 16)).base64EncodedString()
            let expires = Int(Date().timeIntervalSince1970) + 300
            let answer = try await asUser(
                world, as: desktop,
                "public.request_approval('\(session.canonical)', '\(id.canonical)', '\(desktop.canonical)', '\(body)', 1, \(expires))"
            )
            return try JSONDecoder().decode(ApprovalRequested.self, from: Data(answer.utf8))
        }

        @Test func theAskerLearnsWhichDeviceWasReachedAndWhyNot() async throws {
            let world = try await PushWorld()
            let (desktop, session, tablet, laptop) = try await Self.devices(world)
            let phoneToken = try await Self.token(world, device: world.device)
            let tabletToken = try await Self.token(world, device: tablet)
            _ = try await Self.token(world, device: laptop, valid: false)
            world.imitation.always(token: tabletToken, .answer(status: 410, reason: "Unregistered"))
            let request = UUID()
            let asked = try await Self.request(world, session: session, desktop: desktop, id: request)
            #expect(asked.devicesNotified == 2)
            let first = AlertDeliveries(
                alertID: request, kind: "approval", isFinal: false, devices: asked.devices ?? [])
            #expect(first.summary == "queued for phone, tablet; not reachable: laptop (token invalid)")

            let running = try RunningWorker(world.configuration())
            #expect(try await world.drained())
            try await running.stop()
            #expect(world.imitation.requests.contains { $0.token == phoneToken })
            let answer = try await Self.asUser(world, as: desktop, "public.alert_deliveries('\(request.canonical)')")
            let deliveries = try JSONDecoder().decode(AlertDeliveries.self, from: Data(answer.utf8))
            #expect(deliveries.isFinal)
            #expect(
                deliveries.summary
                    == "delivered to phone; failed: tablet (token invalid); not reachable: laptop (token invalid)")
            #expect(deliveries.devices.first { $0.deviceName == "tablet" }?.apnsReason == "Unregistered")
            #expect(!answer.contains(phoneToken) && !answer.contains(tabletToken))
            await world.close()
        }
    }
}

extension PushStackTests.DeliveryOutcomeTests {
    /// A sealed-looking body of `generation` (0x01, the generation big-endian, then 42 bytes).
    static func body(generation: UInt32) -> String {
        let bytes = withUnsafeBytes(of: generation.bigEndian) { Array($0) }
        return Data([1] + bytes + [UInt8](repeating: 7, count: 30)).base64EncodedString()
    }

    /// Whether `query` run as the world's user fails with `sqlState`.
    static func refused(_ world: PushWorld, as device: UUID, _ query: String, _ sqlState: String) async -> Bool {
        do {
            _ = try await asUser(world, as: device, query)
            return false
        } catch let error as PSQLError {
            return error.serverInfo?[.sqlState] == sqlState
        } catch {
            return false
        }
    }

    @Test func aBodyOfAGenerationFrom65536OnIsTakenByBothFunctions() async throws {
        let world = try await PushWorld()
        let (desktop, session, _, _) = try await Self.devices(world)
        let generation: UInt32 = 70_000
        let expires = Int(Date().timeIntervalSince1970) + 300
        let approval = try await Self.asUser(
            world, as: desktop,
            "public.request_approval('\(session.canonical)', '\(UUID().canonical)', '\(desktop.canonical)', '\(Self.body(generation: generation))', \(generation), \(expires))"
        )
        #expect(approval.contains("\"requestId\""))
        let question = try await Self.asUser(
            world, as: desktop,
            "public.ask_question('\(session.canonical)', '\(UUID().canonical)', '\(desktop.canonical)', '\(Self.body(generation: generation))', \(generation), \(expires))"
        )
        #expect(question.contains("\"questionId\""))
        // A body naming another generation is still refused.
        #expect(
            await Self.refused(
                world, as: desktop,
                "public.ask_question('\(session.canonical)', '\(UUID().canonical)', '\(desktop.canonical)', '\(Self.body(generation: generation + 65_536))', \(generation), \(expires))",
                "22023"))
        await world.close()
    }

    @Test func questionsAreBoundedAndAStatusWriteOverThePushBudgetStillCommits() async throws {
        do { try await bounded() } catch { Issue.record("\(String(reflecting: error))") }
    }

    func bounded() async throws {
        let world = try await PushWorld()
        let (desktop, session, _, _) = try await Self.devices(world)
        _ = try await Self.token(world, device: world.device)
        let expires = Int(Date().timeIntervalSince1970) + 300
        func ask() -> String {
            "public.ask_question('\(session.canonical)', '\(UUID().canonical)', '\(desktop.canonical)', '\(Self.body(generation: 1))', 1, \(expires))"
        }
        for _ in 0..<5 { _ = try await Self.asUser(world, as: desktop, ask()) }
        #expect(await Self.refused(world, as: desktop, ask(), "54000"), "a sixth pending question in one session")

        // The user's push budget spent: a runtime status write that would raise a task alert
        // commits all the same, without the alert.
        // (Spent directly and dated ahead, so that it stays in the budget's 60 s however long a
        // loaded machine takes.)
        try await world.sql(
            """
            INSERT INTO private.push_budget (user_id, kind, at_second, queued)
            VALUES ('\(world.userID)', 'push', date_trunc('second', now()) + interval '10 minutes', 600)
            """)
        func status(_ state: String) -> String {
            """
            WITH u AS (UPDATE public.agent_coding_sessions SET runtime_status = jsonb_build_object(
                'schema_version', '1', 'coding_session', jsonb_build_object('status', '\(state)'),
                'device_id', '\(desktop.canonical)', 'session_id', '\(session.canonical)', 'updated_at_ms', 1),
                runtime_status_updated_at = now() WHERE id = '\(session.canonical)' RETURNING 1) SELECT count(*)::text FROM u
            """
        }
        #expect(try await Self.asUser(world, as: desktop, status("running"), statement: true) == "1")
        #expect(
            try await Self.asUser(world, as: desktop, status("idle"), statement: true) == "1",
            "the write commits over the budget")
        #expect(
            try await world.count(
                "SELECT count(*) FROM public.push_outbox WHERE collapse_id = 'session-\(session.canonical)'") == 0)
        try await world.sql("DELETE FROM private.push_budget WHERE user_id = '\(world.userID)'")
        await world.close()
    }
}
