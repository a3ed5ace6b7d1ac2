import DeviceTrust
import Foundation
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Testing

@testable import LocalStore
@testable import PostLoginSync

/// What a new user met while pairing (docs/cli.md): a join that ended before the answer, a
/// mistyped code nobody called mistyped, a retry called a replay, and one message for three
/// reasons a secret is missing.
@Suite("Device trust: the first day")
struct FirstDayTrustTests {
    /// A desktop that is the trust root, with one session, and a phone that is not paired.
    struct Setup {
        let world: World
        let desktop: World.Device
        let phone: World.Device
        let root: DeviceTrustManager
        let joiner: DeviceTrustManager
    }

    static func setup(_ backend: Backend) async throws -> Setup {
        let world = try World(backend)
        let desktop = try await world.desktop(sessions: 1)
        let phone = try await world.device("phone", role: .mobile)
        let root = DeviceTrustManager(local: desktop.store, remote: try world.remote(for: desktop))
        try await root.initialize()
        root.recoveryKeyShown()
        return Setup(
            world: world, desktop: desktop, phone: phone, root: root,
            joiner: DeviceTrustManager(local: phone.store, remote: try world.remote(for: phone)))
    }

    /// Approves every 30 ms until a round approves or refuses something (what `trust invite
    /// --wait` does on the root), at most 20 s.
    static func approveOnce(_ root: DeviceTrustManager) async throws -> ApprovalReport {
        for _ in 0..<650 {
            let round = try await root.approve()
            if !(round.approved.isEmpty && round.refused.isEmpty) { return round }
            try await Task.sleep(for: .milliseconds(30))
        }
        Issue.record("no pairing request reached the root")
        return ApprovalReport()
    }

    @Test("join waits for the root: certified; again: already certified, no request", arguments: Backend.available)
    func joinWaitsForTheAnswer(backend: Backend) async throws {
        let s = try await Self.setup(backend)
        let (code, _) = try await s.root.invite(deviceType: .iosPhone)
        let parsed = try PairingCode(parsing: code.revealText())
        let joiner = s.joiner
        let joining = Task { try await joiner.joinAndWait(code: parsed, pollInterval: .milliseconds(50)) }
        let round = try await Self.approveOnce(s.root)
        #expect(round.approved.map(\.deviceID) == [s.phone.identity.id])
        #expect(try await joining.value == .certified(parsed.fingerprint))

        // The same code again (an honest retry): no request is made, nothing is called a replay.
        #expect(try await s.joiner.joinAndWait(code: parsed) == .alreadyCertified(parsed.fingerprint))
        #expect(try await s.root.remote.listPairingRequests().isEmpty)
    }

    @Test("a mistyped code: the root says mistyped, the joiner hears refused", arguments: Backend.available)
    func mistypedCodeIsRefused(backend: Backend) async throws {
        let s = try await Self.setup(backend)
        let (code, _) = try await s.root.invite(deviceType: .iosPhone)
        // One byte of the pairing secret wrong: the fingerprint still matches, so join pins and asks.
        var secret = code.secret.withUnsafeBytes { Array($0) }
        secret[3] ^= 0x10
        let typo = try PairingCode(
            inviteID: code.inviteID, secret: SecureBytes(copying: secret), fingerprint: code.fingerprint)
        let joiner = s.joiner
        let joining = Task { try await joiner.joinAndWait(code: typo, pollInterval: .milliseconds(50)) }
        let round = try await Self.approveOnce(s.root)
        #expect(round.approved.isEmpty && round.refused.first?.reason.contains("mistyped") == true)
        #expect(try await joining.value == .refused(code.fingerprint))

        // A wrong invite id: "no invite of this trust root", also said to be a likely typo.
        var inviteID = code.inviteID
        inviteID[0] ^= 0x01
        let other = try PairingCode(inviteID: inviteID, secret: code.secret, fingerprint: code.fingerprint)
        let second = Task { try await joiner.joinAndWait(code: other, pollInterval: .milliseconds(50)) }
        let refused = try await Self.approveOnce(s.root)
        #expect(
            refused.refused.first?.reason.contains("no invite of this trust root has this id: the code was mistyped")
                == true)
        #expect(try await second.value == .refused(code.fingerprint))

        // Nobody answers: timed out, and the request is still there for the root.
        #expect(
            try await s.joiner.joinAndWait(
                code: try PairingCode(parsing: code.revealText()), timeout: .milliseconds(200),
                pollInterval: .milliseconds(50))
                == .timedOut(code.fingerprint))
        #expect(try await s.root.remote.listPairingRequests().count == 1)
    }

    @Test("a used code: the same device is a repeated join, another device a replay", arguments: Backend.available)
    func usedCodeWording(backend: Backend) async throws {
        let s = try await Self.setup(backend)
        let (code, _) = try await s.root.invite(deviceType: .iosPhone)
        let parsed = try PairingCode(parsing: code.revealText())
        // Two requests from the phone before the root looks (join run twice): one certifies,
        // the other is the same device asking again.
        try await s.joiner.join(code: parsed)
        try await s.joiner.join(code: parsed)
        let round = try await s.root.approve()
        #expect(round.approved.map(\.deviceID) == [s.phone.identity.id])
        #expect(
            round.refused.map(\.reason) == [
                DeviceTrustManager.usedInviteReason(
                    PairingInvite(
                        id: code.inviteIDText, secret: code.secret, createdAt: Date(), expiresAt: Date(),
                        usedBy: s.phone.identity.id),
                    requestedBy: s.phone.identity.id)
            ])
        #expect(round.refused.first?.reason.contains("replay") == false)

        // Another device with the same code: called what it is.
        let tablet = try await s.world.device("tablet", role: .mobile, type: .iosPhone)
        try await DeviceTrustManager(local: tablet.store, remote: try s.world.remote(for: tablet)).join(code: parsed)
        let replay = try await s.root.approve()
        #expect(replay.approved.isEmpty && replay.refused.first?.reason.contains("used by another device") == true)
    }

    @Test("no envelope: not paired, not pushed yet, refused by the pull, each said apart", arguments: Backend.available)
    func missingEnvelopeReasons(backend: Backend) async throws {
        // Not pushed yet: the phone registered after the desktop's push (trust any).
        let world = try World(backend)
        let desktop = try await world.desktop(sessions: 2)
        #expect(try await desktop.engine.push().outcome == .success)
        let phone = try await world.device("phone", role: .mobile)
        #expect(try await phone.engine.pull().outcome == .success)
        let sessions = try await phone.store.sessions().map(\.id).sorted { $0.canonical < $1.canonical }
        #expect(sessions.count == 2)
        let phoneTrust = DeviceTrustManager(local: phone.store, remote: try world.remote(for: phone))
        guard case .notPushedYet(let lastPull) = try await phoneTrust.missingEnvelopeReason(sessionID: sessions[0])
        else {
            Issue.record("expected not pushed yet")
            return
        }
        #expect(lastPull != nil)

        // Refused: a v1 envelope (no sender) planted for the phone, pulled with authenticated
        // envelopes required.
        let planted = try SecretEnvelope.seal(
            SessionSecret(), for: phone.identity.publicKey, sessionID: SessionID(sessions[1]))
        _ = try await world.remote().upsertEnvelopes(
            [
                EnvelopeRecord(
                    sessionID: sessions[1], deviceID: phone.identity.id, ephemeralPublicKey: planted.ephemeralPublicKey,
                    encryptedSecret: planted.encryptedSecret)
            ], onBatchAccepted: nil)
        var strict = SyncOptions()
        strict.requireAuthenticated = true
        _ = try await SyncEngine(local: phone.store, remote: try world.remote(for: phone), options: strict).pull()
        guard case .refused(let code, let message) = try await phoneTrust.missingEnvelopeReason(sessionID: sessions[1])
        else {
            Issue.record("expected refused")
            return
        }
        #expect(code == .unauthenticatedEnvelope && message.contains("version 1"))
        #expect(MissingEnvelopeReason.refused(code, message).explanation(sessionID: sessions[1]).contains("refused"))

        // Not paired: the desktop pins an identity; its push seals nothing to the phone.
        try await DeviceTrustManager(local: desktop.store, remote: try world.remote(for: desktop)).initialize()
        #expect(try await desktop.engine.push().outcome == .success)
        _ = try await phone.engine.pull()
        let reason = try await phoneTrust.missingEnvelopeReason(sessionID: sessions[0])
        #expect(reason == .notPaired(.unverified))
        // The hint names the form the help recommends (it asks for the code), never the code as
        // an argument, which stays in the shell's history and the process list.
        let hint = reason.explanation(sessionID: sessions[0])
        #expect(hint.contains("`sync-cli trust join`") && !hint.contains("trust join CODE"))
        let revoked = MissingEnvelopeReason.notPaired(.revoked).explanation(sessionID: sessions[0])
        // A revoked device is never certified again: pair a new store, not this one.
        #expect(
            revoked.contains("`sync-cli trust join`") && revoked.contains("new store")
                && !revoked.contains("trust join CODE"))
    }
}
