import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import TestStack
import Testing

/// The remote's per-user limits (docs/push-worker.md, docs/approvals.md): one account cannot fill
/// the token table or the push outbox. On the stack with the project's schema.
@Suite("Delivery limits")
struct DeliveryLimitsTests {
    static var kinds: [RemoteKind] { RemoteKind.available.filter { $0 == .postgrest } }

    static func register(_ store: any CoordinationRemote, device: UUID, _ token: String) async throws {
        _ = try await store.registerPushToken(
            PushTokenRegistration(deviceID: device, token: token))
    }

    @Test("a device keeps its newest 5 device tokens valid; a user holds at most 50", arguments: kinds)
    func tokenCaps(kind: RemoteKind) async throws {
        let harness = try kind.harness()
        let me = try await CoordinationActor(harness)
        var tokens: [String] = []
        for _ in 0..<7 {
            let token = CoordinationActor.token()
            tokens.append(token)
            try await Self.register(me.phoneStore, device: me.phone, token)
            try await Task.sleep(for: .milliseconds(2))
        }
        // The clearing call queues one push per valid device token: the newest five.
        let probe = UUID().canonical
        #expect(try await me.store.clearApproval(requestID: probe, excludingToken: nil).devicesNotified == 5)
        let queued = Set(try await me.outbox(collapse: "approval-\(probe)").map(\.tokenHint))
        #expect(queued == Set(tokens.suffix(5).map(PushTokenText.hint)))

        // 50 valid tokens across ten devices; the 51st registration is refused and names the limit.
        for index in 0..<9 {
            let device = UUID()
            let deviceStore: any CoordinationRemote & SyncRemote = try await harness.store(
                for: me.user, credential: .random(for: device))
            try await deviceStore.upsertOwnDevice(
                OwnDeviceRow(
                    id: device, userID: me.user, name: "device \(index)", deviceType: .iosPhone, hostname: nil,
                    publicKey: X25519PrivateKey().publicKey.base64))
            for _ in 0..<5 { try await Self.register(deviceStore, device: device, CoordinationActor.token()) }
        }
        await #expect {
            try await Self.register(me.store, device: me.desktop, CoordinationActor.token())
        } throws: {
            isRemote($0, .limitExceeded) && String(reflecting: $0).contains("50 valid device tokens")
        }
    }

    @Test("a token holder cannot queue another user's approval clearing, nor flood the outbox", arguments: kinds)
    func clearingIsOwnedAndRateLimited(kind: RemoteKind) async throws {
        let harness = try kind.harness()
        let me = try await CoordinationActor(harness)
        let other = try await CoordinationActor(harness)
        for _ in 0..<5 { try await Self.register(me.phoneStore, device: me.phone, CoordinationActor.token()) }
        try await Self.register(other.phoneStore, device: other.phone, CoordinationActor.token())
        // The other user's real approval request: its id is refused to me.
        let request = UUID()
        let body = Data([1, 0, 0, 0, 1] + (0..<60).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let expires = UInt64(Date().timeIntervalSince1970) + 300
        let approvals = other.actor.store
        _ = try await approvals.requestApproval(
            sessionID: other.session.id, requestID: request, requesterDeviceID: other.desktop, body: body,
            generation: 1, expiresAt: expires)
        await #expect {
            _ = try await me.store.clearApproval(requestID: request.canonical, excludingToken: nil)
        } throws: { isRemote($0, .permissionDenied) }

        // 600 pushes a minute per user. The budget is spent directly (590, dated ahead so that it
        // stays in the window), so the test does not depend on how fast a loaded machine makes
        // its calls: 590, then my request's 5 alerts, then one clearing of 5 tokens; the next is
        // refused.
        let stack = try StackEnvironment.require()
        // Approval pushes go only to devices the trust log certifies: the server's reading of a
        // log that certifies my desktop and phone (this test is about limits, not the log).
        _ = try await stack.sql(
            """
            INSERT INTO private.trust_log_state (user_id, current_epoch, highest_epoch) VALUES ('\(me.user.canonical)', 1, 1);
            INSERT INTO private.trust_log_devices (user_id, epoch, device_id, certified_seq)
                VALUES ('\(me.user.canonical)', 1, '\(me.desktop.canonical)', 0), ('\(me.user.canonical)', 1, '\(me.phone.canonical)', 1)
            """)
        try await DeliveryBudgetTests.spend(me.user, "push", 590)
        let mine = UUID()
        let myApprovals = me.actor.store
        _ = try await myApprovals.requestApproval(
            sessionID: me.session.id, requestID: mine, requesterDeviceID: me.desktop, body: body, generation: 1,
            expiresAt: expires)
        #expect(try await me.store.clearApproval(requestID: UUID().canonical, excludingToken: nil).devicesNotified == 5)
        await #expect {
            _ = try await me.store.clearApproval(requestID: UUID().canonical, excludingToken: nil)
        } throws: { isRemote($0, .limitExceeded) && String(reflecting: $0).contains("600 pushes a minute") }
        // At the limit, cancelling my own request still commits: its clearing is not counted.
        let cancelled = try await myApprovals.cancelApproval(requestID: mine)
        #expect(cancelled.cancelled && cancelled.devicesNotified == 5)
        // Another user is not limited by it.
        #expect(
            try await other.store.clearApproval(requestID: UUID().canonical, excludingToken: nil).devicesNotified == 1)
    }

    @Test("pending approval requests: at most 5 per session", arguments: kinds)
    func pendingApprovalCap(kind: RemoteKind) async throws {
        let me = try await CoordinationActor(try kind.harness())
        let approvals = me.actor.store
        let expires = UInt64(Date().timeIntervalSince1970) + 300
        func ask() async throws {
            let body = Data([1, 0, 0, 0, 1] + (0..<60).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            _ = try await approvals.requestApproval(
                sessionID: me.session.id, requestID: UUID(), requesterDeviceID: me.desktop, body: body, generation: 1,
                expiresAt: expires)
        }
        for _ in 0..<5 { try await ask() }
        await #expect { try await ask() } throws: {
            isRemote($0, .limitExceeded) && String(reflecting: $0).contains("5 pending approval requests")
        }
    }
}
