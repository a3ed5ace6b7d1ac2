import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Testing

/// A user with a desktop, a phone, a repository and a session, on a remote that coordinates.
struct CoordinationActor {
    let actor: Actor
    let phone = UUID()
    let session: SessionRecord
    var store: any CoordinationRemote { actor.store }
    var user: UUID { actor.user }
    var desktop: UUID { actor.desktop }
    /// The phone's own client: the remote acts for the device whose credential calls.
    let phoneStore: any CoordinationRemote & SyncRemote

    init(_ harness: any RemoteHarness) async throws {
        actor = try await Actor(harness)
        phoneStore = try await harness.store(for: actor.user, credential: .random(for: phone))
        try await phoneStore.upsertOwnDevice(
            OwnDeviceRow(
                id: phone, userID: actor.user, name: "phone", deviceType: .iosPhone,
                hostname: nil, publicKey: X25519PrivateKey().publicKey.base64))
        let repository = actor.repository()
        session = actor.session(repository)
        #expect(try await actor.store.upsertRepositories([repository], onBatchAccepted: nil).rejected.isEmpty)
        #expect(try await actor.store.upsertSessions([session], onBatchAccepted: nil).rejected.isEmpty)
    }

    /// A fresh token text.
    static func token() -> String { UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased() }

    /// The outbox rows for one session's handoff, or one approval.
    func outbox(collapse: String) async throws -> [OutboxEntry] {
        try await store.listOutbox(limit: 1000).filter { $0.collapseID == collapse }
    }
}

/// Whether `error` is a RemoteStoreError of `code`.
func isRemote(_ error: any Error, _ code: RemoteStoreError.Code) -> Bool { (error as? RemoteStoreError)?.code == code }

/// The coordination operations (coordination.md) on the embedded remote and on the stack with
/// the project's schema: each case runs against both.
@Suite("Coordination contract")
struct CoordinationContractTests {
    static var kinds: [RemoteKind] { RemoteKind.available.filter { $0 != .postgrestDeployedSchema } }

    @Test(
        "claiming: first holder, refresh, handoff to the previous device's valid device tokens only", arguments: kinds)
    func claim(kind: RemoteKind) async throws {
        let harness = try kind.harness()
        let me = try await CoordinationActor(harness)
        let store = me.store
        let desktopTokens = [CoordinationActor.token(), CoordinationActor.token()]
        for token in desktopTokens {
            try await store.registerPushToken(PushTokenRegistration(deviceID: me.desktop, token: token))
        }
        let invalid = CoordinationActor.token()
        try await store.registerPushToken(PushTokenRegistration(deviceID: me.desktop, token: invalid))
        #expect(try await store.invalidatePushToken(invalid))
        try await store.registerPushToken(
            PushTokenRegistration(
                deviceID: me.desktop, token: CoordinationActor.token(), type: .liveActivity,
                activityID: "activity-1", sessionID: me.session.id))

        let first = try await store.claimSessionActivity(
            sessionID: me.session.id, deviceID: me.desktop, clientType: .desktop)
        #expect(first == SessionClaim(handedOff: false))
        let again = try await store.claimSessionActivity(
            sessionID: me.session.id, deviceID: me.desktop, clientType: .desktop)
        #expect(again == SessionClaim(handedOff: false))
        #expect(try await me.outbox(collapse: "handoff-\(me.session.id.canonical)").isEmpty)

        let takeover = try await me.phoneStore.claimSessionActivity(
            sessionID: me.session.id, deviceID: me.phone, clientType: .ios)
        #expect(
            takeover
                == SessionClaim(
                    handedOff: true, previousDeviceID: me.desktop, previousClientType: "desktop", notified: 2))
        let queued = try await me.outbox(collapse: "handoff-\(me.session.id.canonical)")
        #expect(Set(queued.map(\.tokenHint)) == Set(desktopTokens.map(PushTokenText.hint)))
        for entry in queued {
            #expect(
                entry.deviceID == me.desktop && entry.pushType == "background" && entry.priority == 5
                    && entry.deliveredAt == nil)
            let payload = try #require(
                try JSONSerialization.jsonObject(with: Data(entry.payload.utf8)) as? [String: Any])
            #expect(payload.keys.sorted() == ["aps", "handedOffTo", "sessionId", "type"])
            #expect((payload["aps"] as? [String: Any])?["content-available"] as? Int == 1)
            #expect(payload["type"] as? String == "session_handoff" && payload["handedOffTo"] as? String == "ios")
            #expect(payload["sessionId"] as? String == me.session.id.canonical)
        }
        // Back to the desktop: the phone has no token, so nothing is queued, but it is a handoff.
        let back = try await store.claimSessionActivity(
            sessionID: me.session.id, deviceID: me.desktop, clientType: .desktop)
        #expect(
            back == SessionClaim(handedOff: true, previousDeviceID: me.phone, previousClientType: "ios", notified: 0))
        #expect(try await me.outbox(collapse: "handoff-\(me.session.id.canonical)").count == 2)
    }

    @Test("two devices claiming one session at once: one holder, exactly one handoff to the other", arguments: kinds)
    func concurrentClaims(kind: RemoteKind) async throws {
        let harness = try kind.harness()
        let me = try await CoordinationActor(harness)
        let desktopToken = CoordinationActor.token(), phoneToken = CoordinationActor.token()
        try await me.store.registerPushToken(PushTokenRegistration(deviceID: me.desktop, token: desktopToken))
        try await me.phoneStore.registerPushToken(PushTokenRegistration(deviceID: me.phone, token: phoneToken))
        // Each device through its own client, as two devices would be.
        let desktopStore: any CoordinationRemote = try await harness.store(
            for: me.user, credential: me.actor.credential)
        let phoneStore = me.phoneStore
        for round in 0..<12 {
            var session = me.actor.session(me.actor.repository())
            session.repositoryID = me.session.repositoryID
            #expect(try await me.store.upsertSessions([session], onBatchAccepted: nil).rejected.isEmpty)
            let sessionID = session.id, desktopID = me.desktop, phoneID = me.phone
            async let byDesktop = desktopStore.claimSessionActivity(
                sessionID: sessionID, deviceID: desktopID, clientType: .desktop)
            async let byPhone = phoneStore.claimSessionActivity(
                sessionID: sessionID, deviceID: phoneID, clientType: .ios)
            let (desktop, phone) = try await (byDesktop, byPhone)
            #expect([desktop, phone].filter(\.handedOff).count == 1, "round \(round): \(desktop) \(phone)")
            let loser = desktop.handedOff ? me.phone : me.desktop
            let winner = desktop.handedOff ? desktop : phone
            #expect(winner.previousDeviceID == loser && winner.notified == 1)
            let queued = try await me.outbox(collapse: "handoff-\(session.id.canonical)")
            #expect(queued.count == 1 && queued.first?.deviceID == loser)
            #expect(queued.first?.tokenHint == PushTokenText.hint(loser == me.desktop ? desktopToken : phoneToken))
        }
    }

    @Test(
        "tokens: rotation leaves one valid token; another user's valid token never moves, and the answer does not say so",
        arguments: kinds)
    func tokens(kind: RemoteKind) async throws {
        let harness = try kind.harness()
        let me = try await CoordinationActor(harness)
        let store = me.store
        let old = CoordinationActor.token(), new = CoordinationActor.token()
        var registered = try await me.phoneStore.registerPushToken(
            PushTokenRegistration(deviceID: me.phone, token: old, environment: .development))
        #expect(!registered.previousInvalidated)
        #expect(try await me.phoneStore.pushTokenStatus(deviceID: me.phone).deviceTokenRegistered)
        registered = try await me.phoneStore.registerPushToken(
            PushTokenRegistration(deviceID: me.phone, token: new, previousToken: old))
        #expect(registered.previousInvalidated)
        // Exactly one valid device token now: an approval reaches exactly it.
        let cleared = try await store.clearApproval(requestID: UUID().canonical, excludingToken: nil)
        #expect(cleared.devicesNotified == 1)
        #expect(try await store.listOutbox(limit: 10).first?.tokenHint == PushTokenText.hint(new))

        // Live-activity tokens appear in the status, device tokens do not.
        try await me.phoneStore.registerPushToken(
            PushTokenRegistration(
                deviceID: me.phone, token: CoordinationActor.token(), type: .liveActivity,
                activityID: "act-7", sessionID: me.session.id))
        let status = try await me.phoneStore.pushTokenStatus(deviceID: me.phone)
        #expect(status.deviceTokenRegistered && status.liveActivityTokens.count == 1)
        #expect(
            status.liveActivityTokens.first?.activityId == "act-7"
                && status.liveActivityTokens.first?.sessionId == me.session.id)
        #expect(
            try await store.pushTokenStatus(deviceID: me.desktop)
                == PushTokenStatus(deviceTokenRegistered: false, liveActivityTokens: []))

        // Another user registers the same token for their phone (finding 6: a takeover): it stays
        // the first user's, and the answer is the one a fresh registration gets.
        let other = try await CoordinationActor(harness)
        #expect(try await other.store.invalidatePushToken(new) == false, "another user cannot invalidate it")
        let unknown = CoordinationActor.token()
        let fresh = try await other.phoneStore.registerPushToken(
            PushTokenRegistration(deviceID: other.phone, token: unknown))
        let taken = try await other.phoneStore.registerPushToken(
            PushTokenRegistration(deviceID: other.phone, token: new))
        #expect(taken == fresh, "the answer must not tell whether another user holds the token")
        #expect(try await me.phoneStore.pushTokenStatus(deviceID: me.phone).deviceTokenRegistered)
        let approval = try await store.clearApproval(requestID: UUID().canonical, excludingToken: nil)
        let queued = try await store.listOutbox(limit: 10)
        #expect(approval.devicesNotified == 1 && queued.first?.tokenHint == PushTokenText.hint(new))
        #expect(try await other.store.listOutbox(limit: 10).allSatisfy { $0.tokenHint != PushTokenText.hint(new) })

        // Once its owner gives it up (signs out), it moves to whoever registers it.
        #expect(try await me.phoneStore.invalidatePushToken(new))
        try await other.phoneStore.registerPushToken(PushTokenRegistration(deviceID: other.phone, token: new))
        #expect(try await me.phoneStore.pushTokenStatus(deviceID: me.phone).deviceTokenRegistered == false)
        #expect(try await other.phoneStore.pushTokenStatus(deviceID: other.phone).deviceTokenRegistered)
        #expect(try await me.phoneStore.invalidatePushToken(new) == false, "the first user no longer owns it")
    }

    @Test(
        "a registration is refused for a wrong argument whether or not another device holds its token",
        arguments: kinds)
    func refusalWhateverTheHolder(kind: RemoteKind) async throws {
        let harness = try kind.harness()
        let me = try await CoordinationActor(harness)
        let other = try await CoordinationActor(harness)
        let mine = CoordinationActor.token(), theirs = CoordinationActor.token()
        try await me.store.registerPushToken(PushTokenRegistration(deviceID: me.desktop, token: mine))
        try await other.phoneStore.registerPushToken(PushTokenRegistration(deviceID: other.phone, token: theirs))
        // Held by my desktop, by another user's phone, by nobody: one answer each time, or the
        // answer would tell anyone signed in whether a token string is registered.
        for token in [mine, theirs, CoordinationActor.token()] {
            for (registration, code) in [
                (PushTokenRegistration(deviceID: me.phone, token: token, platform: "iOS"), .invalidValue),
                (PushTokenRegistration(deviceID: me.phone, token: token, previousToken: "not a token"), .invalidValue),
                (PushTokenRegistration(deviceID: me.phone, token: token, activityID: "a"), .invalidValue),
                (
                    PushTokenRegistration(
                        deviceID: me.phone, token: token, type: .liveActivity, activityID: "a",
                        sessionID: other.session.id), .permissionDenied
                ),
            ] as [(PushTokenRegistration, RemoteStoreError.Code)] {
                await #expect("\(code) for a token held or not") {
                    try await me.phoneStore.registerPushToken(registration)
                } throws: { isRemote($0, code) }
            }
        }
        // Both held tokens stayed where they were.
        #expect(try await me.store.pushTokenStatus(deviceID: me.desktop).deviceTokenRegistered)
        #expect(try await other.phoneStore.pushTokenStatus(deviceID: other.phone).deviceTokenRegistered)
        #expect(try await me.phoneStore.pushTokenStatus(deviceID: me.phone).deviceTokenRegistered == false)
    }

    @Test("approval clearing: each token once however often, never the excluded or an invalid one", arguments: kinds)
    func approvals(kind: RemoteKind) async throws {
        let harness = try kind.harness()
        let me = try await CoordinationActor(harness)
        let store = me.store
        let desktop = CoordinationActor.token(), phone = CoordinationActor.token(), stale = CoordinationActor.token()
        try await store.registerPushToken(PushTokenRegistration(deviceID: me.desktop, token: desktop))
        try await me.phoneStore.registerPushToken(PushTokenRegistration(deviceID: me.phone, token: phone))
        try await me.phoneStore.registerPushToken(PushTokenRegistration(deviceID: me.phone, token: stale))
        #expect(try await me.phoneStore.invalidatePushToken(stale))
        try await me.phoneStore.registerPushToken(
            PushTokenRegistration(
                deviceID: me.phone, token: CoordinationActor.token(), type: .liveActivity,
                activityID: "a", sessionID: me.session.id))
        let request = UUID().canonical
        let first = try await store.clearApproval(requestID: request, excludingToken: phone)
        #expect(first == ApprovalClearing(success: true, devicesNotified: 1))
        let second = try await store.clearApproval(requestID: request, excludingToken: phone)
        #expect(second == first)
        let queued = try await me.outbox(collapse: "approval-\(request)")
        #expect(queued.map(\.tokenHint) == [PushTokenText.hint(desktop)])
        let entry = try #require(queued.first)
        let payload = try #require(try JSONSerialization.jsonObject(with: Data(entry.payload.utf8)) as? [String: Any])
        #expect(
            payload["clearApprovalId"] as? String == request
                && payload["reason"] as? String == "approved_on_other_device")
        #expect((payload["aps"] as? [String: Any])?["content-available"] as? Int == 1 && payload.count == 3)
        // Without an exclusion both valid device tokens are reached; the desktop's only once.
        let all = try await store.clearApproval(requestID: request, excludingToken: nil)
        #expect(all.devicesNotified == 2)
        #expect(
            try await me.outbox(collapse: "approval-\(request)").map(\.tokenHint).sorted()
                == [desktop, phone].map(PushTokenText.hint).sorted())
        // Another user's clearing reaches none of these tokens.
        let other = try await CoordinationActor(harness)
        #expect(try await other.store.clearApproval(requestID: request, excludingToken: nil).devicesNotified == 0)
        #expect(try await other.store.listOutbox(limit: 100).isEmpty)
    }

    @Test("bad input is refused with a typed error and changes nothing", arguments: kinds)
    func refusals(kind: RemoteKind) async throws {
        let harness = try kind.harness()
        let me = try await CoordinationActor(harness)
        let other = try await CoordinationActor(harness)
        let store = me.store
        let token = CoordinationActor.token()
        try await me.phoneStore.registerPushToken(PushTokenRegistration(deviceID: me.phone, token: token))
        let before = try await store.listOutbox(limit: 1000)

        await #expect {
            _ = try await store.claimSessionActivity(
                sessionID: other.session.id, deviceID: me.desktop, clientType: .desktop)
        } throws: { isRemote($0, .permissionDenied) }
        await #expect {
            _ = try await store.claimSessionActivity(
                sessionID: me.session.id, deviceID: other.desktop, clientType: .desktop)
        } throws: { isRemote($0, .permissionDenied) }
        await #expect {
            _ = try await store.claimSessionActivity(sessionID: UUID(), deviceID: me.desktop, clientType: .desktop)
        } throws: { isRemote($0, .permissionDenied) }
        for bad in ["", "has space", "new\nline", String(repeating: "a", count: 513), "é"] {
            await #expect {
                try await me.phoneStore.registerPushToken(PushTokenRegistration(deviceID: me.phone, token: bad))
            } throws: { isRemote($0, .invalidValue) }
        }
        await #expect {
            try await me.phoneStore.registerPushToken(
                PushTokenRegistration(deviceID: me.phone, token: "x1", type: .liveActivity, activityID: "a"))
        } throws: { isRemote($0, .invalidValue) }
        await #expect {
            try await me.phoneStore.registerPushToken(
                PushTokenRegistration(deviceID: me.phone, token: "x2", type: .liveActivity, sessionID: me.session.id))
        } throws: { isRemote($0, .invalidValue) }
        await #expect {
            try await me.phoneStore.registerPushToken(
                PushTokenRegistration(deviceID: me.phone, token: "x3", activityID: "a"))
        } throws: { isRemote($0, .invalidValue) }
        await #expect {
            try await me.phoneStore.registerPushToken(
                PushTokenRegistration(deviceID: me.phone, token: "x4", platform: "iOS"))
        } throws: { isRemote($0, .invalidValue) }
        await #expect {
            try await store.registerPushToken(PushTokenRegistration(deviceID: other.phone, token: "x5"))
        } throws: { isRemote($0, .permissionDenied) }
        await #expect {
            try await me.phoneStore.registerPushToken(
                PushTokenRegistration(
                    deviceID: me.phone, token: "x6", type: .liveActivity,
                    activityID: "a", sessionID: other.session.id))
        } throws: { isRemote($0, .permissionDenied) }
        // A refused rotation does not invalidate the previous token either.
        await #expect {
            try await store.registerPushToken(
                PushTokenRegistration(deviceID: other.phone, token: "x7", previousToken: token))
        } throws: { isRemote($0, .permissionDenied) }
        #expect(try await me.phoneStore.pushTokenStatus(deviceID: me.phone).deviceTokenRegistered)
        await #expect { _ = try await store.pushTokenStatus(deviceID: other.phone) } throws: {
            isRemote($0, .permissionDenied)
        }
        for bad in ["", "line\u{7}bell", String(repeating: "r", count: 201)] {
            await #expect { _ = try await store.clearApproval(requestID: bad, excludingToken: nil) } throws: {
                isRemote($0, .invalidValue)
            }
        }
        let status = RuntimeStatus(
            state: .running, deviceID: other.desktop.canonical, sessionID: other.session.id, updatedAtMilliseconds: 1)
        await #expect { try await store.setRuntimeStatus(status) } throws: { isRemote($0, .permissionDenied) }
        #expect(try await other.store.fetchSessions(after: nil).first?.record.runtimeStatus == nil)
        #expect(try await other.phoneStore.pushTokenStatus(deviceID: other.phone).deviceTokenRegistered == false)
        #expect(try await store.listOutbox(limit: 1000) == before)
    }

    @Test(
        "runtime status: set by the desktop, read with the session, kept by later pushes",
        arguments: RemoteKind.available)
    func runtimeStatus(kind: RemoteKind) async throws {
        let harness = try kind.harness()
        let me = try await Actor(harness)
        let store = me.store
        let repository = me.repository()
        let session = me.session(repository)
        _ = try await store.upsertRepositories([repository], onBatchAccepted: nil)
        _ = try await store.upsertSessions([session], onBatchAccepted: nil)
        let cursorRow = try #require(try await store.fetchSessions(after: nil).first)
        let cursor = PullCursor(updatedAt: cursorRow.updatedAt, id: session.id)
        try await Task.sleep(for: .milliseconds(5))
        let status = RuntimeStatus(
            state: .error, deviceID: me.desktop.canonical, sessionID: session.id,
            updatedAtMilliseconds: 1_795_000_000_123, errorMessage: "tool \"x\" failed\n")
        let stored = try await store.setRuntimeStatus(status)
        #expect(stored.reportedAt != nil)
        // A phone pulling after its cursor sees the session again, with the status.
        let changed = try await store.fetchSessions(after: cursor)
        #expect(changed.map(\.record.id) == [session.id])
        var read = try #require(changed.first?.record.runtimeStatus)
        #expect(read.reportedAt != nil)
        read.reportedAt = nil
        #expect(read == status)
        // The next push of the session row leaves the status alone.
        var edited = session
        edited.title = "renamed"
        _ = try await store.upsertSessions([edited], onBatchAccepted: nil)
        #expect(try await store.fetchSessions(after: nil).first?.record.runtimeStatus?.state == .error)
    }

    @Test("a deployment without the coordination migration answers missingFunction")
    func deployedWithoutFunctions() async throws {
        guard !StackEnvironment.skipped else { return }
        let harness = try RemoteKind.postgrestDeployedSchema.harness()
        let me = try await Actor(harness)
        let store = me.store
        await #expect { _ = try await store.clearApproval(requestID: "r", excludingToken: nil) } throws: {
            isRemote($0, .missingFunction)
        }
        await #expect { _ = try await store.pushTokenStatus(deviceID: me.desktop) } throws: {
            isRemote($0, .missingFunction)
        }
    }
}

/// What only the stack can be sent: raw values the typed API cannot express.
@Suite("Coordination on the stack, raw requests", .enabled(if: !StackEnvironment.skipped))
struct CoordinationStackTests {
    @Test("the runtime_status CHECKs refuse every malformed status, and an unknown client type is refused")
    func checks() async throws {
        let stack = try StackEnvironment.require()
        let me = try await CoordinationActor(try PostgRESTHarness(deployedVariant: false))
        let token = stack.token(for: me.user)
        let id = me.session.id.canonical
        let good =
            #"{"schema_version":"1","coding_session":{"status":"running"},"device_id":"d","session_id":"\#(id)","updated_at_ms":1}"#
        let bad = [
            #"{"schema_version":"2","coding_session":{"status":"running"},"device_id":"d","session_id":"\#(id)","updated_at_ms":1}"#,
            #"{"schema_version":1,"coding_session":{"status":"running"},"device_id":"d","session_id":"\#(id)","updated_at_ms":1}"#,
            #"{"schema_version":"1","coding_session":{"status":"bogus"},"device_id":"d","session_id":"\#(id)","updated_at_ms":1}"#,
            #"{"schema_version":"1","coding_session":{"status":"running"},"device_id":7,"session_id":"\#(id)","updated_at_ms":1}"#,
            #"{"schema_version":"1","coding_session":{"status":"running"},"device_id":"d","session_id":"\#(UUID().canonical)","updated_at_ms":1}"#,
            #"{"schema_version":"1","coding_session":{"status":"running"},"device_id":"d","session_id":"\#(id)","updated_at_ms":"1"}"#,
            #"{"schema_version":"1","coding_session":{"status":"running"},"device_id":"d","session_id":"\#(id)","updated_at_ms":1,"error_message":5}"#,
            #"["not an object"]"#,
        ]
        for body in bad {
            let response = try await stack.request(
                "PATCH", "/rest/v1/agent_coding_sessions?id=eq.\(id)", token: token,
                headers: me.actor.credential.headers,
                body: #"{"runtime_status":\#(body),"runtime_status_updated_at":"2026-11-22T00:00:00Z"}"#)
            #expect(response.status == 400 && response.body.contains("23514"), "\(body): \(response.status)")
            // The engine's reader drops the same values.
            #expect(RuntimeStatus(json: body, sessionID: me.session.id, reportedAt: nil) == nil, "\(body)")
        }
        let untimed = try await stack.request(
            "PATCH", "/rest/v1/agent_coding_sessions?id=eq.\(id)", token: token, headers: me.actor.credential.headers,
            body: #"{"runtime_status":\#(good)}"#)
        #expect(
            untimed.status == 400 && untimed.body.contains("23514"), "runtime_status without runtime_status_updated_at")
        let accepted = try await stack.request(
            "PATCH", "/rest/v1/agent_coding_sessions?id=eq.\(id)", token: token, headers: me.actor.credential.headers,
            body: #"{"runtime_status":\#(good),"runtime_status_updated_at":"2026-11-22T00:00:00Z"}"#)
        #expect(accepted.status == 204)
        #expect(RuntimeStatus(json: good, sessionID: me.session.id, reportedAt: nil)?.state == .running)
        // A count written as 2.5 or 2.0 shows as 2, as the engine's reader takes it, while a
        // phone has a live activity open: the status write and the activity's update both go.
        try await me.phoneStore.registerPushToken(
            PushTokenRegistration(
                deviceID: me.phone, token: CoordinationActor.token(), type: .liveActivity, activityID: "act-1",
                sessionID: me.session.id))
        for (count, stamp) in [("2.5", "2026-11-22T00:00:01Z"), ("2.0", "2026-11-22T00:00:02Z")] {
            let body =
                #"{"schema_version":"1","coding_session":{"status":"running","todo_progress":{"completed":\#(count),"total":4}},"device_id":"d","session_id":"\#(id)","updated_at_ms":1}"#
            let response = try await stack.request(
                "PATCH", "/rest/v1/agent_coding_sessions?id=eq.\(id)", token: token,
                headers: me.actor.credential.headers,
                body: #"{"runtime_status":\#(body),"runtime_status_updated_at":"\#(stamp)"}"#)
            #expect(response.status == 204, "completed \(count): \(response.status) \(response.body)")
            #expect(RuntimeStatus(json: body, sessionID: me.session.id, reportedAt: nil)?.todoProgress?.completed == 2)
            let update = try await me.store.listOutbox(limit: 100).last { $0.pushType == "liveactivity" }
            let payload = try update.map { try JSONSerialization.jsonObject(with: Data($0.payload.utf8)) }
            let state = ((payload as? [String: Any])?["aps"] as? [String: Any])?["content-state"] as? [String: Any]
            #expect(
                (state?["todoProgress"] as? [String: Any])?["completed"] as? Int == 2,
                "\(count): \(String(describing: state))")
        }

        let client = try await stack.request(
            "POST", "/rest/v1/rpc/claim_session_activity", token: token, headers: me.actor.credential.headers,
            body: #"{"session_id":"\#(id)","device_id":"\#(me.desktop.canonical)","client_type":"android"}"#)
        #expect(client.status == 400 && client.body.contains("22023"))
        let anonymous = try await stack.request(
            "POST", "/rest/v1/rpc/clear_approval", body: #"{"request_id":"r","exclude_device_token":null}"#)
        #expect(anonymous.status == 401)
        // Users cannot write the tables directly: only the functions do.
        let direct = try await stack.request(
            "POST", "/rest/v1/push_outbox", token: token, headers: me.actor.credential.headers,
            body: #"{"user_id":"\#(me.user.canonical)","token":"t","push_type":"alert","priority":10,"payload":{}}"#)
        #expect(direct.status == 403 || direct.status == 401)
        let steal = try await stack.request(
            "POST", "/rest/v1/push_tokens", token: token, headers: me.actor.credential.headers,
            body: #"{"user_id":"\#(me.user.canonical)","device_id":"\#(me.phone.canonical)","token":"t"}"#)
        #expect(steal.status == 403 || steal.status == 401)
    }
}
