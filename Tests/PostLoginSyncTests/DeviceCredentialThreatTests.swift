import Foundation
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Synchronization
import Testing

/// A login is not a device (docs/trust.md, "Device credentials"): the sequences a stolen phone's
/// token, or any token of the user's, ran against the remote before device credentials, replayed
/// on the embedded remote and the stack's own schema (the deployed schema has no approvals). The
/// attacker is a **token holder**: a login alone, or a login with a credential it registered for
/// a device id of its own, which is all a login can get.
@Suite("A login is not a device: the token holder's sequences")
struct DeviceCredentialThreatTests {
    static var remotes: [Backend] { Backend.available }

    /// The two clients a token holder can have.
    static func tokenHolders(_ w: ApprovalWorld) throws -> [any CompleteRemote] {
        [try w.world.remote(credential: .some(nil)), try w.world.remote(credential: .some(.random(for: UUID())))]
    }

    static func code(_ body: () async throws -> Void) async -> RemoteStoreError.Code? {
        do {
            try await body()
            return nil
        } catch let error as RemoteStoreError {
            return error.code
        } catch {
            return .storage
        }
    }

    @Test(
        "1. a token holder answering every pending request in the phone's name is refused each time; the phone's genuine approval succeeds meanwhile",
        arguments: remotes)
    func answersBlocked(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let refusals = Refusals()
        let (task, row) = try await w.ask(refusals: refusals)
        let forged = ByteEncoding.base64([UInt8](repeating: 7, count: 29 + 4 * 37 + 1 + 32 + 32 + 8 + 44))
        let signature = ByteEncoding.base64([UInt8](repeating: 9, count: 64))
        let attackers = try Self.tokenHolders(w)
        let codes = Mutex<[RemoteStoreError.Code?]>([])
        let stop = Mutex(false)
        // The attacker polls and answers within milliseconds, as the sequence did.
        let attack = Task {
            while !stop.withLock({ $0 }) {
                for attacker in attackers {
                    let code = await Self.code {
                        _ = try await attacker.answerApproval(
                            requestID: row.id, deviceID: w.phone.identity.id, verdict: .approve,
                            decisionBody: forged, decisionSignature: signature)
                    }
                    codes.withLock { $0.append(code) }
                }
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        while codes.withLock({ $0.count }) < 6 { try await Task.sleep(for: .milliseconds(5)) }
        let opened = try await w.center(w.phone).open(row)
        let answered = try await w.center(w.phone).answer(opened, verdict: .approve)
        stop.withLock { $0 = true }
        await attack.value
        #expect(answered.accepted)
        #expect(try await task.value == .approved(by: w.phone.identity.id))
        #expect(refusals.count == 0, "nothing forged was ever recorded for the desktop to refuse")
        #expect(codes.withLock { $0 }.allSatisfy { $0 == .permissionDenied })
    }

    @Test(
        "2. a revoked phone's own client reads and writes nothing, and what the desktop asks after the revocation is sealed under a generation it never held",
        arguments: remotes)
    func revokedPhoneReadsNothing(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let held = try await w.phone.store.openReceived(sessionID: try await w.session).generation
        let revocation = try await w.root.revoke([w.phone.identity.id])
        #expect(revocation.sessionsRotated > 0 && revocation.rotationProblem == nil)
        #expect(try await w.tablet.engine.pull().outcome == .success)
        let (task, row) = try await w.ask(listedBy: w.tablet)
        #expect(row.generation > held, "asked under the rotated generation")
        let phone = try w.world.remote(for: w.phone)
        for (name, call) in [
            ("requests", { _ = try await phone.approvalRequests(status: nil) }),
            ("envelopes", { _ = try await phone.fetchEnvelopes(addressedTo: w.phone.identity.id) }),
            ("devices", { _ = try await phone.listDevices() }),
            ("outbox", { _ = try await phone.listOutbox(limit: 10) }),
        ] as [(String, () async throws -> Void)] {
            let code = await Self.code(call)
            #expect(code == .permissionDenied, "\(name): \(String(describing: code))")
        }
        task.cancel()
        _ = try? await task.value
        // Its own sync is refused as revoked, and it forgets what it received: the remote will
        // address it nothing more.
        let sessions = Set(try await w.desktop.store.sessions().map(\.id))
        let received = try await w.phone.store.receivedEnvelopes(sessions: sessions).count
        #expect(received == sessions.count)
        let report = try await w.phone.engine.pull()
        let device = report.phases.first { $0.phase == .device }
        #expect(device?.status == .failed && device?.deleted == received)
        #expect(device?.errors.first?.message.contains("this device was revoked") == true)
        #expect(try await w.phone.store.receivedEnvelopes(sessions: sessions).isEmpty)
    }

    @Test(
        "3. the phone shows a request only from the session's desktop and under the newest generation it holds",
        arguments: remotes)
    func believesOnlyTheDesktop(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        // The server names another certified device as the asker of a genuine request.
        let (first, row) = try await w.ask()
        try await w.asServiceRole(
            "UPDATE approval_requests SET requester_device_id = '\(w.tablet.identity.id.canonical)' WHERE id = '\(row.id.canonical)'"
        )
        let renamed = try #require(
            try await w.world.remote(for: w.phone).approvalRequests(status: nil).first { $0.id == row.id })
        await #expect { _ = try await w.center(w.phone).open(renamed) } throws: {
            ($0 as? SyncError)?.code == .untrustedAsker
        }
        first.cancel()
        _ = try? await first.value
        // After a rotation the phone holds generation 2: a request under generation 1 (what a
        // device revoked before it could still seal) is not shown.
        #expect(try await w.root.revoke([w.tablet.identity.id]).sessionsRotated > 0)
        #expect(try await w.phone.engine.pull().outcome == .success)
        let (second, current) = try await w.ask()
        #expect(current.generation == 2)
        try await w.asServiceRole(
            "UPDATE approval_requests SET generation = 1 WHERE id = '\(current.id.canonical)'")
        let old = try #require(
            try await w.world.remote(for: w.phone).approvalRequests(status: nil).first { $0.id == current.id })
        #expect(old.generation == 1)
        await #expect { _ = try await w.center(w.phone).open(old) } throws: {
            ($0 as? SyncError)?.code == .untrustedAsker
        }
        second.cancel()
        _ = try? await second.value
    }

    @Test(
        "4. a token holder reads no device's push token, registers none for another device, and cannot switch the phone's off",
        arguments: remotes)
    func pushTokens(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let phoneToken = try #require(w.tokens[w.phone.identity.id])
        for attacker in try Self.tokenHolders(w) {
            let status = try? await attacker.pushTokenStatus(deviceID: w.phone.identity.id)
            #expect(status == nil || status?.deviceTokenRegistered == false)
            #expect(
                await Self.code {
                    _ = try await attacker.registerPushToken(
                        PushTokenRegistration(
                            deviceID: w.phone.identity.id, token: String(repeating: "ab", count: 32),
                            previousToken: phoneToken))
                } == .permissionDenied)
            // A login alone is refused; a device of its own is told what an unknown token gets.
            let invalidated = try? await attacker.invalidatePushToken(phoneToken)
            #expect(invalidated != true)
        }
        // A device of the token holder's own registering the phone's token: it stays the phone's.
        let own = UUID()
        _ = try? await w.world.remote(credential: .some(.random(for: own))).registerPushToken(
            PushTokenRegistration(deviceID: own, token: phoneToken))
        #expect(
            try await w.world.remote(for: w.phone).pushTokenStatus(deviceID: w.phone.identity.id).deviceTokenRegistered)
        // The approval's alert still reaches the phone's token.
        let (task, row) = try await w.ask()
        #expect(try await w.outbox(row.id).alerts.contains { $0.tokenHint == PushTokenText.hint(phoneToken) })
        task.cancel()
        _ = try? await task.value
    }

    @Test(
        "5. a token holder cannot deactivate or rewrite another device's row", arguments: remotes)
    func deviceRows(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        for attacker in try Self.tokenHolders(w) {
            #expect(
                await Self.code {
                    try await attacker.upsertOwnDevice(
                        OwnDeviceRow(
                            id: w.phone.identity.id, userID: w.world.user, name: "phone", deviceType: .iosPhone,
                            hostname: nil, publicKey: X25519PrivateKey().publicKey.base64))
                } == .permissionDenied)
        }
        let phone = try #require(
            try await w.world.operatorRemote().listDevices().first { $0.id == w.phone.identity.id })
        #expect(phone.isActive && phone.publicKey == w.phone.identity.publicKey.base64)
    }

    @Test(
        "6. only the session's desktop closes its questions or reports activity on it; 8. clear_approval takes one spelling of an id",
        arguments: remotes)
    func desktopOnlyAndSpellings(backend: Backend) async throws {
        let w = try await ApprovalWorld.make(backend)
        let session = try await w.session
        var callers = try Self.tokenHolders(w)
        callers.append(try w.world.remote(for: w.phone))
        for caller in callers {
            #expect(
                await Self.code {
                    _ = try await caller.closeQuestion(questionID: UUID(), status: .cancelled)
                } == .permissionDenied)
            #expect(
                await Self.code {
                    _ = try await caller.touchSessionActivity(sessionID: session, deviceID: w.desktop.identity.id)
                } == .permissionDenied)
        }
        let (task, row) = try await w.ask()
        let id = row.id.canonical
        let desktop = try w.world.remote(for: w.desktop)
        for spelling in [
            " \(id)", "\(id) ", "urn:uuid:\(id)", "\u{00A0}\(id)", "\"\(id)\"", "{\(id)}", id.uppercased(),
            id.replacingOccurrences(of: "-", with: ""),
        ] {
            #expect(
                await Self.code { _ = try await desktop.clearApproval(requestID: spelling, excludingToken: nil) }
                    == .invalidValue, "\(spelling.debugDescription)")
        }
        #expect(try await w.outbox(row.id).clearings.isEmpty)
        task.cancel()
        _ = try? await task.value
    }
}
