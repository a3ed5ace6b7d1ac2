import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
import TestStack
import Testing

@testable import DeviceTrust
@testable import PostLoginSync

/// Round 4, findings 7 and 8 (docs/approvals.md, "Who is asked, who may answer"): alerts and
/// clearings reach only devices the trust log certifies and does not revoke, never the
/// requester; the remote takes an answer only from such a device, and a refused answer leaves
/// the question open for the genuine one.
@Suite("Approvals: who is asked, who may answer")
struct ApprovalRecipientsTests {
    /// A decision `device` signs for `row`, as a token holder with that device's key would.
    static func answer(
        _ row: ApprovalRequestRow, as device: World.Device, in w: ApprovalWorld
    ) async throws -> ApprovalAnswered {
        let decision = ApprovalDecision(
            userID: w.world.user, sessionID: row.sessionID, requestID: row.id, deviceID: device.identity.id,
            verdict: .approve, bodyHash: SHA256.hash(try ByteEncoding.bytes(base64: row.body)),
            read: [UInt8](repeating: 0, count: 32), decidedAt: UInt64(Date().timeIntervalSince1970),
            logHead: try await ApprovalWorld.pinnedHead(w.phone.store)
        ).signed(by: try await device.store.signingKey())
        return try await (w.world.remote() as any ApprovalRemote).answerApproval(
            requestID: row.id, deviceID: device.identity.id, verdict: .approve, decisionBody: decision.body,
            decisionSignature: decision.signature)
    }

    /// What `clear_approval` of `requestID` answers: the refusal's code, `nil` when it queued.
    static func clearRefusal(_ requestID: String, _ w: ApprovalWorld) async throws -> RemoteStoreError.Code? {
        let remote: any CompleteRemote = try w.world.remote(credential: .some(.random(for: UUID())))
        do {
            _ = try await remote.clearApproval(requestID: requestID, excludingToken: nil)
            return nil
        } catch let error as RemoteStoreError {
            return error.code
        }
    }

    @Test(
        "a revoked device gets no alert, no clearing and cannot answer; the requester gets no clearing",
        arguments: Backend.available)
    func revokedDevice(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        // A clearing queued for the tablet before its revocation, still waiting.
        let early = UUID()
        let queued = try await w.world.remote(for: w.desktop).clearApproval(
            requestID: early.uuidString.lowercased(), excludingToken: nil)
        #expect(queued.devicesNotified == 3)
        // The revocation rotates the desktop's sessions at once: the phone takes generation 2.
        #expect(try await w.root.revoke([w.tablet.identity.id]).sessionsRotated > 0)
        #expect(try await w.phone.engine.pull().outcome == .success)
        let phone = try #require(w.tokens[w.phone.identity.id])
        let tablet = try #require(w.tokens[w.tablet.identity.id])
        // clear_approval counts what it queued: the desktop's and the phone's tokens, not the
        // revoked tablet's (the stack once counted it, then dropped its row).
        let cleared = try await w.world.remote(for: w.desktop).clearApproval(
            requestID: UUID().uuidString.lowercased(), excludingToken: nil)
        #expect(cleared.devicesNotified == 2)
        // Clearing the early id again takes away what still waited for the tablet.
        _ = try await w.world.remote(for: w.desktop).clearApproval(
            requestID: early.uuidString.lowercased(), excludingToken: nil)
        let left = try await w.outbox(early).clearings.map(\.tokenHint)
        #expect(left.count == 2 && !left.contains(PushTokenText.hint(tablet)), "\(left)")

        // Cancelled: the alert and the clearing reach the phone only.
        let (cancelled, first) = try await w.ask()
        #expect(try await w.outbox(first.id).alerts.map(\.tokenHint) == [PushTokenText.hint(phone)])
        cancelled.cancel()
        _ = try? await cancelled.value
        #expect(try await w.world.remote().approvalRequest(id: first.id)?.status == .cancelled)
        #expect(try await w.outbox(first.id).clearings.map(\.tokenHint) == [PushTokenText.hint(phone)])

        // The revoked tablet's answer is refused and ends nothing; the phone's is then taken.
        let (task, row) = try await w.ask()
        await #expect {
            _ = try await Self.answer(row, as: w.tablet, in: w)
        } throws: { ($0 as? RemoteStoreError)?.code == .permissionDenied }
        #expect(try await w.world.remote().approvalRequest(id: row.id)?.status == .pending)
        let answered = try await w.center(w.phone).answer(w.center(w.phone).open(row), verdict: .approve)
        #expect(answered.accepted && answered.decidedBy == w.phone.identity.id)
        #expect(try await task.value == .approved(by: w.phone.identity.id))
    }

    @Test(
        "a revoked device's push tokens end with it: what was queued for them is not sent, no live activity reaches it",
        arguments: Backend.available)
    func revokedDevicePushes(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let session = try await w.session
        let live = SecureBytes(randomCount: 32).withUnsafeBytes { ByteEncoding.hex($0) }
        try await w.world.remote(for: w.tablet).registerPushToken(
            PushTokenRegistration(
                deviceID: w.tablet.identity.id, token: live, type: .liveActivity, activityID: "activity-1",
                sessionID: session))
        let desktop = Coordinator(store: w.desktop.store, remote: try w.world.remote(for: w.desktop))
        func livePayloads() async throws -> [String] {
            try await w.world.remote().listOutbox(limit: 1_000).filter { $0.tokenHint == PushTokenText.hint(live) }
                .map(\.payload)
        }
        _ = try await desktop.reportRuntimeStatus(sessionID: session, state: .running)
        let before = try await livePayloads()
        #expect(before.count == 1)
        #expect(try await w.validTokens(of: w.tablet.identity.id) == 2)

        _ = try await w.root.revoke([w.tablet.identity.id])
        // Both tokens are invalid: the worker closes the rows queued for them at claim
        // (token_invalid) and sends none; the phone's token is untouched.
        #expect(try await w.validTokens(of: w.tablet.identity.id) == 0)
        #expect(try await w.validTokens(of: w.phone.identity.id) == 1)
        // A status change queues nothing for the revoked tablet: its waiting update is not
        // replaced by one that says what the session does now.
        _ = try await desktop.reportRuntimeStatus(sessionID: session, state: .error, errorMessage: "failed")
        #expect(try await livePayloads() == before)
        // The desktop's delivery report says why the tablet is not reached: it is not trusted
        // (that its token is invalid too is the consequence).
        let (asking, row) = try await w.ask()
        let report = try await w.world.remote(for: w.desktop).alertDeliveries(alertID: row.id)
        let tablet = try #require(report.devices.first { $0.deviceID == w.tablet.identity.id })
        #expect(tablet.outcome == .unreachable && tablet.reason == "not trusted")
        asking.cancel()
        _ = try? await asking.value
    }

    @Test("an embedded file from before v15: the tokens of a device revoked then end when it is opened")
    func revokedBeforeMigration() async throws {
        let w = try await ApprovalWorld.make(.embedded)
        let tablet = w.tablet.identity.id.uuidString.lowercased()
        // The file as v14 left a revocation: the credential ended, the tokens valid.
        let queue = try w.world.operatorDatabase()
        try await queue.write { db in
            try db.execute(
                sql: "UPDATE device_credentials SET ended_at = '2026-11-01T00:00:00Z' WHERE device_id = ?",
                arguments: [tablet])
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v15:%'")
        }
        #expect(try await w.validTokens(of: w.tablet.identity.id) == 1)
        _ = try await w.world.remote(for: w.desktop).listOutbox(limit: 1)
        #expect(try await w.validTokens(of: w.tablet.identity.id) == 0)
        #expect(try await w.validTokens(of: w.phone.identity.id) == 1)
    }

    /// The `pg_locks` condition of the advisory lock `key` (a bigint SQL expression) names.
    static func advisory(_ key: String) -> String {
        "locktype = 'advisory' AND classid = ((\(key) >> 32) & 4294967295)::oid AND objid = (\(key) & 4294967295)::oid"
    }

    /// Whether some session comes to hold the advisory lock `key` (within the waiting ceiling).
    static func held(_ key: String, on stack: StackEnvironment) async throws -> Bool {
        try await Waiting.until(every: .milliseconds(20)) {
            (try? await stack.sql("SELECT count(*) FROM pg_locks WHERE granted AND \(advisory(key))")) == "1"
        }
    }

    @Test(
        "a push token registered while its device is being revoked waits for the revocation and is refused",
        .enabled(if: !StackEnvironment.skipped))
    func registrationRacingRevocation() async throws {
        let w = try await ApprovalWorld.make(.postgrest)
        let stack = try StackEnvironment.require()
        let tablet = w.tablet.identity.id.uuidString.lowercased()
        let lock = "hashtextextended('register_device:\(tablet)', 0)"
        // The tablet's client has registered its credential already (its first call does).
        let remote = try w.world.remote(for: w.tablet)
        #expect(try await remote.pushTokenStatus(deviceID: w.tablet.identity.id).deviceTokenRegistered)
        // A revocation in flight, as private.end_revoked_device runs it: its lock, then the
        // credential ended, committed once a call waits for the lock (or after 30 s without one).
        let revocation = Task {
            try await stack.sql(
                """
                BEGIN; SELECT pg_advisory_xact_lock(\(lock));
                UPDATE private.device_credentials SET ended_at = now() WHERE device_id = '\(tablet)';
                DO $$ BEGIN
                    FOR i IN 1..600 LOOP
                        IF EXISTS (SELECT 1 FROM pg_locks WHERE NOT granted AND \(Self.advisory(lock))) THEN
                            RAISE NOTICE 'a call waits for the revocation';
                            RETURN;
                        END IF;
                        PERFORM pg_sleep(0.05);
                    END LOOP;
                END $$;
                COMMIT;
                """, notices: true)
        }
        #expect(try await Self.held(lock, on: stack))
        // The tablet's client registers a token meanwhile: it checked a live credential before;
        // now it waits for the lock, reads the credential again and is refused.
        let token = SecureBytes(randomCount: 32).withUnsafeBytes { ByteEncoding.hex($0) }
        await #expect {
            _ = try await remote.registerPushToken(PushTokenRegistration(deviceID: w.tablet.identity.id, token: token))
        } throws: { ($0 as? RemoteStoreError)?.code == .permissionDenied }
        // The call did wait for the lock: the race was run, not skipped by a late call.
        #expect(try await revocation.value.contains("a call waits for the revocation"))
        #expect(
            try await stack.sql("SELECT count(*) FROM public.push_tokens WHERE token = '\(token)' AND is_valid") == "0")
    }

    @Test(
        "a revocation of two devices, one's token registered by the other meanwhile: no deadlock, both end",
        .enabled(if: !StackEnvironment.skipped))
    func revocationOfTwoDevicesBesideARegistration() async throws {
        let w = try await ApprovalWorld.make(.postgrest)
        let stack = try StackEnvironment.require()
        let phone = w.phone.identity.id.uuidString.lowercased()
        let tablet = w.tablet.identity.id.uuidString.lowercased()
        // A token the phone holds, which the tablet's client then registers (a token moving).
        let token = SecureBytes(randomCount: 32).withUnsafeBytes { ByteEncoding.hex($0) }
        try await w.world.remote(for: w.phone).registerPushToken(
            PushTokenRegistration(deviceID: w.phone.identity.id, token: token))
        let tabletRemote = try w.world.remote(for: w.tablet)
        _ = try await tabletRemote.pushTokenStatus(deviceID: w.tablet.identity.id)
        // One entry revoking both, as the trust log's reading records it: the phone, then the
        // tablet once the registration below is done or waits for a row (at most 30 s later).
        let phoneLock = "hashtextextended('register_device:\(phone)', 0)"
        let done = "hashtextextended('registration done', 0)"
        func revoke(_ device: String) -> String {
            """
            UPDATE private.trust_log_devices SET revoked_seq = coalesce(certified_seq, 0) + 1000
            WHERE device_id = '\(device)' AND revoked_seq IS NULL;
            """
        }
        let revocation = Task {
            try await stack.sql(
                """
                BEGIN; \(revoke(phone))
                DO $$ BEGIN
                    FOR i IN 1..600 LOOP
                        IF EXISTS (SELECT 1 FROM pg_locks WHERE granted AND \(Self.advisory(done))) THEN
                            RAISE NOTICE 'the registration was done first';
                            RETURN;
                        END IF;
                        IF EXISTS (SELECT 1 FROM pg_locks WHERE NOT granted
                                   AND pg_backend_pid() = ANY (pg_blocking_pids(pid))) THEN
                            RAISE NOTICE 'the registration waits for the revocation';
                            RETURN;
                        END IF;
                        PERFORM pg_sleep(0.05);
                    END LOOP;
                END $$;
                \(revoke(tablet)) COMMIT;
                """, notices: true)
        }
        #expect(try await Self.held(phoneLock, on: stack))
        // Before the revocation takes the tablet's own lock: the call goes through (the phone's
        // token stays the phone's) without waiting on the phone's token row.
        _ = try await tabletRemote.registerPushToken(
            PushTokenRegistration(deviceID: w.tablet.identity.id, token: token))
        _ = try await stack.sql("SELECT pg_advisory_lock(\(done)); SELECT pg_sleep(1)")
        // The revocation committed (a deadlock fails it) after the registration was done, never
        // waiting on a row the revocation had locked; its commit ended both devices' tokens.
        #expect(try await revocation.value.contains("the registration was done first"))
        #expect(try await w.validTokens(of: w.phone.identity.id) == 0)
        #expect(try await w.validTokens(of: w.tablet.identity.id) == 0)
    }

    @Test(
        "a device row the trust log never certified gets no alert, no live activity and cannot answer; the question stays open",
        arguments: Backend.available)
    func uncertifiedDevice(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        // A token holder adds a device row of the user and registers a token for it, and a
        // live-activity token for a session.
        let intruder = try await w.world.device("intruder", role: .mobile)
        _ = try? await intruder.engine.pull() // writes its device row
        let token = SecureBytes(randomCount: 32).withUnsafeBytes { ByteEncoding.hex($0) }
        try await w.world.remote(for: intruder).registerPushToken(
            PushTokenRegistration(deviceID: intruder.identity.id, token: token))
        let live = SecureBytes(randomCount: 32).withUnsafeBytes { ByteEncoding.hex($0) }
        try await w.world.remote(for: intruder).registerPushToken(
            PushTokenRegistration(
                deviceID: intruder.identity.id, token: live, type: .liveActivity, activityID: "activity-1",
                sessionID: try await w.session))
        _ = try await Coordinator(store: w.desktop.store, remote: try w.world.remote(for: w.desktop))
            .reportRuntimeStatus(sessionID: try await w.session, state: .running)
        #expect(
            !(try await w.world.remote().listOutbox(limit: 1_000).contains { $0.tokenHint == PushTokenText.hint(live) })
        )

        let (task, row) = try await w.ask()
        let (alerts, _) = try await w.outbox(row.id)
        #expect(!alerts.contains { $0.tokenHint == PushTokenText.hint(token) })
        #expect(Set(alerts.map(\.deviceID)) == [w.phone.identity.id, w.tablet.identity.id])
        await #expect {
            _ = try await Self.answer(row, as: intruder, in: w)
        } throws: { ($0 as? RemoteStoreError)?.code == .permissionDenied }
        #expect(try await w.world.remote().approvalRequest(id: row.id)?.status == .pending)
        let answered = try await w.center(w.tablet).answer(w.center(w.tablet).open(row), verdict: .deny)
        #expect(answered.accepted)
        #expect(try await task.value == .denied(by: w.tablet.identity.id))
        #expect(!(try await w.outbox(row.id).clearings.contains { $0.tokenHint == PushTokenText.hint(token) }))
    }

    @Test(
        "a token holder cannot answer under a trusted device's id (42501); a decision the phone's own client records unsigned by it does not end the question: the desktop refuses and reopens it",
        arguments: Backend.available)
    func refusedDecisionReopens(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let refusals = Refusals()
        let (task, row) = try await w.ask(refusals: refusals)
        let opened = try await w.center(w.phone).open(row)
        let forged = ApprovalDecision(
            userID: w.world.user, sessionID: row.sessionID, requestID: row.id, deviceID: w.phone.identity.id,
            verdict: .approve, bodyHash: SHA256.hash(try ByteEncoding.bytes(base64: row.body)), read: opened.read,
            decidedAt: UInt64(Date().timeIntervalSince1970), logHead: try await ApprovalWorld.pinnedHead(w.phone.store)
        ).signed(by: Ed25519PrivateKey())
        // A token holder: a login alone, or with a credential it registered for a device of its
        // own. Neither answers in the phone's name (sequence 1 of issue 64).
        for credential in [nil, DeviceCredential.random(for: UUID())] {
            await #expect {
                _ = try await (w.world.remote(credential: .some(credential)) as any ApprovalRemote).answerApproval(
                    requestID: row.id, deviceID: w.phone.identity.id, verdict: .approve, decisionBody: forged.body,
                    decisionSignature: forged.signature)
            } throws: { ($0 as? RemoteStoreError)?.code == .permissionDenied }
        }
        // The phone's own client under the tablet's id: 42501 too.
        await #expect {
            _ = try await (w.world.remote(for: w.phone) as any ApprovalRemote).answerApproval(
                requestID: row.id, deviceID: w.tablet.identity.id, verdict: .approve, decisionBody: forged.body,
                decisionSignature: forged.signature)
        } throws: { ($0 as? RemoteStoreError)?.code == .permissionDenied }
        // The server cannot check the signature: through the phone's own client, a well-formed
        // decision not signed by the phone is recorded, and the desktop refuses it.
        let recorded = try await (w.world.remote(for: w.phone) as any ApprovalRemote).answerApproval(
            requestID: row.id, deviceID: w.phone.identity.id, verdict: .approve, decisionBody: forged.body,
            decisionSignature: forged.signature)
        #expect(recorded.accepted)
        try await refusals.wait(for: 1)
        // The desktop dropped it: the question is pending again and alerted afresh.
        let remote = try w.world.remote()
        let reopened = try await Waiting.value {
            try await remote.approvalRequest(id: row.id).flatMap { $0.status == .pending ? $0 : nil }
        }
        #expect(reopened?.decisionSignature == nil)
        #expect(try await w.outbox(row.id).alerts.count == 2)
        // The genuine answer is then recorded and counts.
        let answered = try await w.center(w.phone).answer(opened, verdict: .approve)
        #expect(answered.accepted)
        #expect(try await task.value == .approved(by: w.phone.identity.id))
    }

    @Test(
        "only the requesting desktop cancels or reopens: a token holder without the control is refused",
        arguments: Backend.available)
    func onlyTheRequesterCancels(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let (task, row) = try await w.ask()
        let remote = try w.world.remote(for: w.phone) as any ApprovalRemote
        let wrong = ByteEncoding.base64(SecureBytes(randomCount: 32).withUnsafeBytes { [UInt8]($0) })
        for control in [nil, wrong, "not base64"] {
            await #expect {
                _ = try await remote.cancelApproval(requestID: row.id, control: control)
            } throws: { ($0 as? RemoteStoreError)?.code == .permissionDenied }
        }
        await #expect {
            _ = try await remote.reopenApproval(requestID: row.id, decisionSignature: "", control: wrong)
        } throws: { ($0 as? RemoteStoreError)?.code == .permissionDenied }
        // Nor can the coordination call dismiss its prompt everywhere, in any spelling of the id.
        let lower: RemoteStoreError.Code? = try await Self.clearRefusal(row.id.uuidString.lowercased(), w)
        let upper: RemoteStoreError.Code? = try await Self.clearRefusal(row.id.uuidString.uppercased(), w)
        #expect(lower == .permissionDenied && upper == .invalidValue, "an id in another spelling is 22023")
        #expect(try await w.outbox(row.id).clearings.isEmpty)
        #expect(try await w.world.remote().approvalRequest(id: row.id)?.status == .pending)
        // The desktop itself still cancels (its wait cancelled).
        task.cancel()
        _ = try? await task.value
        #expect(try await w.world.remote().approvalRequest(id: row.id)?.status == .cancelled)
    }
}
