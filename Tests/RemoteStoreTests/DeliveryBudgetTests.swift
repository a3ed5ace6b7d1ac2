import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import TestStack
import Testing

/// The push budget counts what was queued, and what fans pushes out is bounded (issue 66, item 1;
/// docs/push-worker.md, "Limits"). On the stack with the project's schema.
@Suite("Delivery budget")
struct DeliveryBudgetTests {
    static var kinds: [RemoteKind] { RemoteKind.available.filter { $0 == .postgrest } }

    /// `statements` run as the signed-in `user` (the budget holds for signed-in callers, not for the
    /// service role); a refusal (54000) comes back as `refused: <message>`, any other error as
    /// `failed: <state> <message>`.
    static func asUser(_ user: UUID, _ statements: String) async throws -> String {
        let stack = try StackEnvironment.require()
        return try await stack.sql(
            """
            BEGIN;
            SELECT set_config('request.jwt.claims', '{"sub": "\(user.canonical)", "role": "authenticated"}', true);
            DO $$ BEGIN \(statements); EXCEPTION WHEN program_limit_exceeded THEN RAISE NOTICE 'refused: %', SQLERRM;
                WHEN OTHERS THEN RAISE NOTICE 'failed: % %', SQLSTATE, SQLERRM; END $$;
            COMMIT;
            """, notices: true)
    }

    /// What `user` has spent of `kind`, set directly, dated ahead so that it stays in the 60 s
    /// window however long a loaded machine takes over the rest of the test.
    static func spend(_ user: UUID, _ kind: String, _ queued: Int) async throws {
        _ = try await StackEnvironment.require().sql(
            """
            INSERT INTO private.push_budget (user_id, kind, at_second, queued)
            VALUES ('\(user.canonical)', '\(kind)', date_trunc('second', now()) + interval '10 minutes', \(queued))
            """)
    }

    /// A loop of answer and reopen deleted its own rows and so was never refused (3,465 pushes in
    /// 65 s): a reopening after the budget is spent is refused, and an answer still commits.
    @Test("answering and reopening in a loop is refused once 600 pushes were queued", arguments: kinds)
    func reopenLoop(kind: RemoteKind) async throws {
        let harness = try kind.harness()
        let me = try await CoordinationActor(harness)
        for _ in 0..<5 {
            _ = try await me.phoneStore.registerPushToken(
                PushTokenRegistration(deviceID: me.phone, token: CoordinationActor.token()))
        }
        // Approval pushes go only to devices the trust log certifies: the server's reading of a
        // log that certifies the desktop and the phone (this test is about the budget).
        _ = try await StackEnvironment.require().sql(
            """
            INSERT INTO private.trust_log_state (user_id, current_epoch, highest_epoch) VALUES ('\(me.user.canonical)', 1, 1);
            INSERT INTO private.trust_log_devices (user_id, epoch, device_id, certified_seq)
                VALUES ('\(me.user.canonical)', 1, '\(me.desktop.canonical)', 0), ('\(me.user.canonical)', 1, '\(me.phone.canonical)', 1)
            """)
        let control = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let approvals = me.actor.store
        let phone = try #require(me.phoneStore as? any ApprovalRemote)
        let request = UUID()
        let body = Data([1, 0, 0, 0, 1] + (0..<60).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        _ = try await approvals.requestApproval(
            sessionID: me.session.id, requestID: request, requesterDeviceID: me.desktop, body: body, generation: 1,
            expiresAt: UInt64(Date().timeIntervalSince1970) + 300,
            controlHash: ByteEncoding.base64(SHA256.hash(control)))
        try await Self.spend(me.user, "push", 560)
        func answer() async throws -> (accepted: Bool, signature: String) {
            let signature = Data((0..<64).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            // Shaped as a decision (294 bytes, the answering device's id at byte 140); the server
            // cannot check its signature, the desktop does.
            let decision = Data(
                (0..<140).map { _ in UInt8.random(in: 0...255) } + Array(me.phone.canonical.utf8)
                    + (0..<118).map { _ in UInt8.random(in: 0...255) }
            ).base64EncodedString()
            let answered = try await phone.answerApproval(
                requestID: request, deviceID: me.phone, verdict: .deny, decisionBody: decision,
                decisionSignature: signature)
            return (answered.accepted, signature)
        }
        var refusal: (any Error)?
        var rounds = 0
        while refusal == nil, rounds < 19 {
            rounds += 1
            let (accepted, signature) = try await answer()
            #expect(accepted)
            do {
                _ = try await approvals.reopenApproval(
                    requestID: request, decisionSignature: signature, control: ByteEncoding.base64(control))
            } catch {
                refusal = error
            }
        }
        let error = try #require(refusal, "\(rounds) rounds of answer and reopen were never refused")
        #expect(
            isRemote(error, .limitExceeded) && String(reflecting: error).contains("600 pushes a minute"), "\(error)")
        // The request stays answered; nothing of it was deleted by the refused reopening.
        let row = try await approvals.approvalRequest(id: request)
        #expect(row?.status == .denied)
    }

    /// Live-activity rows had no budget: 300 in any 60 s, except an end, which always commits.
    @Test("live-activity rows have a budget of their own", arguments: kinds)
    func liveActivityBudget(kind: RemoteKind) async throws {
        let harness = try kind.harness()
        let me = try await CoordinationActor(harness)
        try await Self.spend(me.user, "liveactivity", 300)
        func queue(_ event: String) -> String {
            """
            INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, payload)
                VALUES ('\(me.user.canonical)', '\(me.phone.canonical)', '\(CoordinationActor.token())', 'liveactivity', 5,
                        '{"aps": {"event": "\(event)"}}')
            """
        }
        let update = try await Self.asUser(me.user, queue("update"))
        #expect(update.contains("refused: at most 300 live-activity updates a minute"), "\(update)")
        let end = try await Self.asUser(me.user, queue("end"))
        #expect(!end.contains("refused"), "\(end)")
        // Alerts are counted apart: the live-activity budget does not refuse them.
        let alert = try await Self.asUser(
            me.user,
            """
            INSERT INTO public.push_outbox (user_id, device_id, token, push_type, priority, payload)
                VALUES ('\(me.user.canonical)', '\(me.phone.canonical)', '\(CoordinationActor.token())', 'background', 5,
                        '{"aps": {}}')
            """)
        #expect(!alert.contains("refused"), "\(alert)")
        // A session's status write over the budget commits; its live-activity update is dropped.
        // Beside it, another user's same write (budget not spent) queues the update.
        #expect(try await Self.statusWrite(me) == "1/0")
        #expect(try await Self.statusWrite(try await CoordinationActor(harness)) == "1/1")
    }

    /// A live-activity token for `actor`'s session on its phone, then a runtime status written as
    /// the user: "sessions written/live-activity rows queued".
    static func statusWrite(_ actor: CoordinationActor) async throws -> String {
        let token = CoordinationActor.token()
        let status = try await asUser(
            actor.user,
            """
            INSERT INTO public.push_tokens (user_id, device_id, token, token_type, activity_id, session_id)
                VALUES ('\(actor.user.canonical)', '\(actor.phone.canonical)', '\(token)', 'live_activity', 'a1', '\(actor.session.id.canonical)');
            UPDATE public.agent_coding_sessions SET runtime_status = '{"coding_session": {"status": "running"}}', runtime_status_updated_at = now()
                WHERE id = '\(actor.session.id.canonical)'
            """)
        #expect(
            !status.contains("refused") && !status.contains("failed"),
            "\(status.replacingOccurrences(of: "\n", with: " | "))")
        return try await StackEnvironment.require().sql(
            """
            SELECT (SELECT count(*) FROM public.agent_coding_sessions WHERE id = '\(actor.session.id.canonical)' AND runtime_status IS NOT NULL)
                || '/' || (SELECT count(*) FROM public.push_outbox WHERE token = '\(token)')
            """
        ).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A row that `ON CONFLICT DO NOTHING` discards was never queued: clearing the same id twice
    /// queues once and counts once, so at the budget's edge the second call still commits.
    @Test("a row the conflict discards is not counted", arguments: kinds)
    func discardedRowsAreNotCounted(kind: RemoteKind) async throws {
        let me = try await CoordinationActor(try kind.harness())
        _ = try await me.phoneStore.registerPushToken(
            PushTokenRegistration(deviceID: me.phone, token: CoordinationActor.token()))
        try await Self.spend(me.user, "push", 599)
        let id = UUID().canonical
        #expect(try await me.store.clearApproval(requestID: id, excludingToken: nil).devicesNotified == 1)
        // The same clearing again: its row conflicts with the first and is not queued.
        _ = try await me.store.clearApproval(requestID: id, excludingToken: nil)
        #expect(try await me.outbox(collapse: "approval-\(id)").count == 1)
        // A new id is refused: the budget holds 600.
        await #expect {
            _ = try await me.store.clearApproval(requestID: UUID().canonical, excludingToken: nil)
        } throws: { isRemote($0, .limitExceeded) }
    }

    /// Device rows and live-activity tokens fan pushes out: at most 100 of each per user.
    @Test("at most 100 device rows and 100 valid live-activity tokens per user", arguments: kinds)
    func fanOutBounds(kind: RemoteKind) async throws {
        let harness = try kind.harness()
        let me = try await CoordinationActor(harness)
        // The desktop and the phone are two; 98 more fit, the next is refused. A revoked (inactive)
        // device is not counted.
        let devices = try await Self.asUser(
            me.user,
            """
            INSERT INTO public.devices (id, user_id, name, device_type)
                SELECT gen_random_uuid(), '\(me.user.canonical)', 'd' || g, 'ios-phone' FROM generate_series(1, 98) g
            """)
        #expect(!devices.contains("refused"), "\(devices)")
        let extra = try await Self.asUser(
            me.user,
            """
            INSERT INTO public.devices (id, user_id, name, device_type)
                VALUES (gen_random_uuid(), '\(me.user.canonical)', 'one too many', 'ios-phone')
            """)
        #expect(extra.contains("refused: a user has at most 100 active devices"), "\(extra)")
        _ = try await StackEnvironment.require().sql(
            "UPDATE public.devices SET is_active = false WHERE id = (SELECT id FROM public.devices WHERE user_id = '\(me.user.canonical)' AND name = 'd1')"
        )
        let afterRevoking = try await Self.asUser(
            me.user,
            """
            INSERT INTO public.devices (id, user_id, name, device_type)
                VALUES (gen_random_uuid(), '\(me.user.canonical)', 'replacement', 'ios-phone')
            """)
        #expect(!afterRevoking.contains("refused") && !afterRevoking.contains("failed"), "\(afterRevoking)")
        // Writing a device the user already has is not a new row.
        let again = try await Self.asUser(
            me.user,
            """
            INSERT INTO public.devices (id, user_id, name, device_type)
                VALUES ('\(me.phone.canonical)', '\(me.user.canonical)', 'phone', 'ios-phone')
                ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name
            """)
        #expect(!again.contains("refused"), "\(again)")
        // 100 live-activity tokens over five devices of the user (20 each), then one more.
        let tokens = try await Self.asUser(
            me.user,
            """
            INSERT INTO public.push_tokens (user_id, device_id, token, token_type, activity_id, session_id)
                SELECT '\(me.user.canonical)', d.id, md5(d.id::text || g), 'live_activity', 'a' || g, '\(me.session.id.canonical)'
                FROM (SELECT id FROM public.devices WHERE user_id = '\(me.user.canonical)' AND name LIKE 'd%' ORDER BY id LIMIT 5) d,
                     generate_series(1, 20) g
            """)
        #expect(!tokens.contains("refused"), "\(tokens)")
        let more = try await Self.asUser(
            me.user,
            """
            INSERT INTO public.push_tokens (user_id, device_id, token, token_type, activity_id, session_id)
                VALUES ('\(me.user.canonical)', '\(me.phone.canonical)', md5(random()::text), 'live_activity', 'x', '\(me.session.id.canonical)')
            """)
        #expect(more.contains("refused: a user holds at most 100 valid live-activity tokens"), "\(more)")
    }
}
