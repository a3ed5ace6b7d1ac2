import DeviceTrust
import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Synchronization
import TestStack
import Testing

@testable import LocalStore
@testable import PostLoginSync

/// The six sequences the trust-log issue found against the mutable trust tables, replayed
/// against the log: each must now fail (on the embedded remote and the stack's two variants).
@Suite("The trust log: the six sequences that broke the trust tables")
struct TrustLogSequenceTests {
    static var remotes: [(Backend, Bool)] { Backend.variants }

    /// What a token holder can send to the stack's REST API (PostgREST's statuses): each write
    /// on the log or the legacy trust rows is refused.
    static func tokenHolderWrites(_ w: LogWorld, deployed: Bool) async throws {
        guard w.world.backend == .postgrest else { return }
        let stack = try StackEnvironment.require()
        let base = deployed ? stack.deployedURL : stack.url
        let token = stack.token(for: w.world.user)
        let user = w.world.user.canonical
        let phone = w.phone.identity.id.canonical
        let attempts: [(String, String, String?)] = [
            ("POST", "/rest/v1/rpc/reset_identity", "{}"),
            ("PATCH", "/rest/v1/trust_log?user_id=eq.\(user)", #"{"entry":"AAAA"}"#),
            ("DELETE", "/rest/v1/trust_log?user_id=eq.\(user)", nil),
            ("POST", "/rest/v1/trust_log", #"{"user_id":"\#(user)","epoch":1,"seq":99,"entry":"AAAA"}"#),
            ("PATCH", "/rest/v1/device_revocations?device_id=eq.\(phone)", #"{"body":"AAAA"}"#),
            ("DELETE", "/rest/v1/device_revocations?device_id=eq.\(phone)", nil),
            ("POST", "/rest/v1/user_identity_keys", #"{"user_id":"\#(user)","public_key":"AAAA"}"#),
            ("PATCH", "/rest/v1/identity_key_backups?user_id=eq.\(user)", #"{"body":"AAAA"}"#),
            ("DELETE", "/rest/v1/trust_log_witnesses?user_id=eq.\(user)", nil),
        ]
        for (method, path, body) in attempts {
            for key in [token, stack.serviceKey] {
                let answer = try await stack.request(
                    method, path, base: base, token: key, headers: ["Prefer": "return=representation"], body: body)
                let refused = [401, 403, 404].contains(answer.status) || answer.body == "[]"
                #expect(refused, "\(method) \(path): \(answer.status) \(answer.body)")
            }
        }
    }

    @Test(
        "1. a stolen, revoked phone cannot un-revoke itself: a desktop recovered later lists it revoked, seals nothing to it, refuses its answer",
        arguments: remotes)
    func stolenPhone(backend: Backend, deployed: Bool) async throws {
        let w = try await LogWorld.make(backend, deployed)
        let saved = try await w.rows()
        try await w.manager(w.root).revoke([w.phone.identity.id])
        // The thief, with the phone's login: the REST writes (reset_identity, UPDATE or DELETE of
        // the revocation, the log, the legacy rows), its saved certify appended again (its row
        // it can no longer touch: the revocation ended its credential).
        try await Self.tokenHolderWrites(w, deployed: deployed)
        // Its own client (its credential) is refused by everything now.
        let remote = try w.world.remote(for: w.phone)
        let head = UInt64(try await w.rows().count)
        #expect(
            await LogWorld.code {
                try await remote.appendTrustEntries(
                    epoch: 1, firstSeq: head, [TrustLogAppend(entry: saved[1].entry, backup: saved[1].backup)])
            } != nil)
        // The root is lost; the spare desktop recovers with the recovery key.
        try FileManager.default.removeItem(at: w.world.directory.appendingPathComponent("desktop"))
        #expect(try await w.manager(w.spare).recover(with: w.recoveryKey) { _ in true } != nil)
        let status = try await w.manager(w.spare).status()
        #expect(status.devices.first { $0.deviceID == w.phone.identity.id }?.status == .revoked)
        let push = try await w.spare.engine.push()
        #expect(push.outcome == .success, "\(push.errors)")
        #expect(push.recipients.first { $0.deviceID == w.phone.identity.id }?.receives == false)
        #expect(try await w.world.addressed(to: w.phone.identity.id).isEmpty)
        // Its answer to the recovered desktop's question is refused: the question stays open.
        guard backend == .embedded || !deployed else { return } // the deployed schema has no approvals
        let center = ApprovalCenter(local: w.spare.store, remote: try w.world.remote(for: w.spare))
        let session = try #require(try await w.spare.store.sessions().first).id
        let refusals = Mutex<[String]>([])
        let asking = Task {
            try await center.request(
                session: session, tool: "Bash", summary: "rm -rf", detail: "", timeout: .seconds(600),
                pollInterval: .milliseconds(100)
            ) { refusal in refusals.withLock { $0.append(refusal.reason) } }
        }
        let spare = try w.world.remote(for: w.spare) as any ApprovalRemote
        let row = try #require(
            try await Waiting.value { try await spare.approvalRequests(status: .pending).first },
            "hang: the request never reached the remote")
        // The phone cannot open it (it never received the new session's secret): it signs a guess.
        let decision = ApprovalDecision(
            userID: w.world.user, sessionID: row.sessionID, requestID: row.id, deviceID: w.phone.identity.id,
            verdict: .approve, bodyHash: SHA256.hash(try ByteEncoding.bytes(base64: row.body)),
            read: [UInt8](repeating: 0, count: 32), decidedAt: UInt64(Date().timeIntervalSince1970),
            logHead: try await ApprovalWorld.pinnedHead(w.phone.store)
        ).signed(by: try await w.phone.store.signingKey())
        // A remote that reads the trust log refuses the answer itself (approvals.md: only a
        // certified, unrevoked device answers) and the question stays open; any other remote
        // records it, and the desktop refuses it.
        var refusedByServer = false
        do {
            _ = try await (w.world.remote(for: w.phone) as any ApprovalRemote).answerApproval(
                requestID: row.id, deviceID: w.phone.identity.id, verdict: .approve, decisionBody: decision.body,
                decisionSignature: decision.signature)
        } catch {
            refusedByServer = true
            #expect((error as? RemoteStoreError)?.code == .permissionDenied)
            #expect(
                try await (w.world.remote(for: w.spare) as any ApprovalRemote).approvalRequest(id: row.id)?.status
                    == .pending)
        }
        if !refusedByServer {
            _ = try await Waiting.until { !refusals.withLock { $0.isEmpty } }
        }
        asking.cancel()
        #expect((try? await asking.value) == nil, "the desktop was not told approved")
        #expect(
            refusedByServer
                || refusals.withLock { $0.contains { $0.contains("revoked") || $0.contains("certificate") } })
    }

    @Test(
        "2. a token holder cannot lock the user out: no new identity, a reset is vetoed, the recovery key still recovers",
        arguments: remotes)
    func noLockOut(backend: Backend, deployed: Bool) async throws {
        let w = try await LogWorld.make(backend, deployed)
        let thief = try await w.world.desktop("thief", repositories: 1, sessions: 1)
        // Without the password: no fresh sign-in.
        let stale = SyncOptions()
        let staleRemote = try w.world.remote(signedIn: nil)
        #expect(
            await LogWorld.code {
                _ = try await DeviceTrustManager(local: thief.store, remote: staleRemote, options: stale).reset(
                    recovery: .none)
            } == "freshSignInRequired")
        // With it: pending, then vetoed by the root's next sync.
        let outcome = try await w.manager(thief).reset(recovery: .none)
        #expect(!outcome.inEffect)
        #expect(try await w.root.engine.push().outcome == .success)
        #expect(try await w.phone.engine.pull().outcome == .success)
        // The veto is in the log, so 72 hours later the reset has not taken effect anywhere.
        let last = try ParsedLogEntry(text: try #require(try await w.rows().last).entry)
        #expect(last.entry.type == .resetAnswer)
        let later = try await w.engine(w.phone, options: LogWorld.clock(259_200 + 700)).pull()
        #expect(later.outcome == .success && later.trust?.reports.contains { $0.code == .resetPending } == false)
        // Nothing was lost: the recovery key still recovers the identity on the spare.
        #expect(try await w.manager(w.spare).recover(with: w.recoveryKey) { _ in true } != nil)
    }

    @Test("3. a replaced recovery key says \"replaced\", even with an old backup written back", arguments: remotes)
    func replacedKey(backend: Backend, deployed: Bool) async throws {
        let w = try await LogWorld.make(backend, deployed)
        let old = try await w.rows()
        let fresh = try await w.manager(w.root).newRecoveryKey()
        let rows = try await w.rows()
        // The operator writes the genesis's backup (the old key's) into the newest row.
        try await TrustLogStaging.updateBackup(w.world, epoch: 1, seq: UInt64(rows.count - 1), to: old[0].backup)
        await #expect { try await w.manager(w.spare).recover(with: w.recoveryKey) { _ in true } } throws: {
            ($0 as? SyncError)?.code == .recoveryKeyRetired
        }
        try await RecoveryWorldCheck.nothingWritten(w, on: w.spare)
        // The new key skips the copied row and opens the succession's own backup.
        try await TrustLogStaging.updateBackup(w.world, epoch: 1, seq: UInt64(rows.count - 1), to: rows.last?.backup)
        #expect(try await w.manager(w.spare).recover(with: fresh) { _ in true } != nil)
    }

    @Test(
        "4. a revoked root's certify under its old key: refused by the server (no proof), and by every device when raw-inserted",
        arguments: remotes)
    func revokedRoot(backend: Backend, deployed: Bool) async throws {
        let w = try await LogWorld.make(backend, deployed)
        let second = try await w.world.desktop("second", repositories: 1, sessions: 1)
        _ = try await w.secondRoot(second)
        let stolen = try #require(try await second.store.identityKey())
        let report = try await w.manager(w.root).revoke([second.identity.id])
        #expect(report.identityKeyReplaced && report.recoveryKey != nil)
        let rows = try await w.rows()
        let state = try TrustLogVerifier.verify(rows.map(\.entry), userID: w.world.user, epoch: 1).state
        #expect(state.identityKey != stolen.publicKey)
        // The thief on the revoked root writes a certify of its own device under the old key, with
        // every proof of the old key's chain it can compute.
        let certificate = DeviceCertificate(
            userID: w.world.user, deviceID: UUID(), x25519PublicKey: X25519PrivateKey().publicKey,
            ed25519PublicKey: Ed25519PrivateKey().publicKey, deviceType: "ios-phone", deviceRole: "trusted_executor",
            issuedAt: 1)
        let seq = state.headSeq + 1
        var entry = TrustLogEntry(
            userID: w.world.user, epoch: 1, seq: seq, prev: Array(state.headHash), type: .certify,
            createdAt: UInt64(Date().timeIntervalSince1970), author: second.identity.id,
            appendProof: AppendChain.proof(seed: stolen.seedRepresentation, userID: w.world.user, epoch: 1, steps: 1),
            body: try certificate.body())
        var refusals: [String?] = []
        for steps in [1, Int(seq)] {
            entry.appendProof = AppendChain.proof(
                seed: stolen.seedRepresentation, userID: w.world.user, epoch: 1, steps: steps)
            entry.sign(identity: stolen)
            refusals.append(
                await LogWorld.code {
                    try await w.world.remote().appendTrustEntries(
                        epoch: 1, firstSeq: seq, [TrustLogAppend(entry: entry.text, backup: nil)])
                })
        }
        #expect(refusals == ["22023", "22023"])
        // Raw-inserted by the operator: every device refuses it at its position (its proof is of
        // the retired key's chain, checked before its signature by that retired key).
        try await TrustLogStaging.insertRow(w.world, epoch: 1, seq: seq, entry: entry.text)
        let pull = try await w.phone.engine.pull()
        #expect(LogWorld.failed(pull, with: "trustLogInvalid"))
        #expect(pull.errors.contains { $0.message.contains("seq \(seq) (proof)") })
        // And the revoked root cannot open the new seed: no grant names it.
        #expect(
            try await TrustLogRoot(local: second.store, logger: nil).newestGrant(state, to: second.identity.id) == nil
                || !state.isRoot(second.identity.id))
    }

    @Test("5. trust init on a root is refused and changes nothing: the recovery key still works", arguments: remotes)
    func initOnRoot(backend: Backend, deployed: Bool) async throws {
        let w = try await LogWorld.make(backend, deployed)
        let before = try await w.rows()
        await #expect { try await w.manager(w.root).initialize() } throws: {
            ($0 as? SyncError)?.code == .identityExists
        }
        #expect(try await w.rows() == before)
        #expect(try await w.manager(w.spare).recover(with: w.recoveryKey) { _ in true } != nil)
    }
}
