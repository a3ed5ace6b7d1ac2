import DeviceTrust
import Foundation
import LocalStore
import RemoteStore
import SecretCrypto
import SyncModel

// Pairing by code (trust.md, "Pairing"): a root shows a code whose
// fingerprint is of the identity key in force; the new device walks the log, requires that key,
// pins the log and asks with a MAC only the code's holder can make; the root appends a certify.
extension DeviceTrustManager {
    /// Opens a single-use invite, valid ``inviteLifetime``; the returned code is shown on this
    /// screen (text and QR) and typed or scanned on the new device.
    ///
    /// The certificate the pairing ends with names a device type and a role, and the device's
    /// row (which the server controls) must not decide them: say here what the invite is for,
    /// or have the person confirm the type at approval (``approve(now:confirm:)``).
    ///
    /// - Parameters:
    ///   - deviceType: The kind of device being paired; a device whose row says otherwise is
    ///     refused. `nil`: the person confirms the row's type at approval.
    ///   - role: The role certified: `trusted_executor` (receives secrets) or `temporary_viewer`
    ///     (never does). A device whose row asks for `temporary_viewer` gets that, whatever this says.
    ///   - now: The invite's creation time (it expires ten minutes later).
    /// - Throws: ``SyncError`` `.notTrustRoot`, `.pairingRefused` for the role `trust_root` (a
    ///   root is made by `grantRoot(_:)`), trust-log errors.
    public func invite(
        deviceType: DeviceType? = nil, role: DeviceTrustRole = .trustedExecutor, now: Date = Date()
    ) async throws -> (code: PairingCode, expiresAt: Date) {
        guard role != .trustRoot else {
            throw SyncError(
                code: .pairingRefused,
                message: "an invite cannot make a trust root: pair the device, then `sync-cli trust grant-root DEVICE`")
        }
        let state = try await verifiedLog()
        let key = try await rootKey(state)
        try await local.deleteInvites(expiredBefore: now.addingTimeInterval(-86_400))
        let inviteID = SecureBytes(randomCount: 8).withUnsafeBytes { Array($0) }
        let code = try PairingCode(
            inviteID: inviteID, secret: SecureBytes(randomCount: 16), fingerprint: IdentityFingerprint(key.publicKey))
        let expiresAt = now.addingTimeInterval(Self.inviteLifetime)
        try await local.createInvite(
            PairingInvite(
                id: code.inviteIDText, secret: code.secret, createdAt: now, expiresAt: expiresAt,
                deviceType: deviceType, deviceRole: role))
        return (code, expiresAt)
    }

    /// Joins the user's trust log with a pairing code: walks the log's epochs and verifies the
    /// current one whole, requires the code's fingerprint to be the identity key in force (the
    /// server cannot substitute it), pins the log, and asks a root for a certificate with a
    /// request only the code's holder can make.
    ///
    /// - Returns: The identity's fingerprint.
    /// - Throws: ``SyncError`` `.pairingRefused` (no log, or the code is of another key),
    ///   trust-log errors; remote and local errors. Nothing is pinned when it throws.
    @discardableResult
    public func join(code: PairingCode) async throws -> IdentityFingerprint {
        try await requestJoin(code: code).fingerprint
    }

    /// Joins with `code` and waits for a root's answer: a certify of this device
    /// (``JoinOutcome/certified(_:)``), the request removed without one (refused: the root's
    /// `trust approve` says why; most often the code was mistyped), or nothing before `timeout`.
    ///
    /// A device the pinned log already certifies makes no request
    /// (``JoinOutcome/alreadyCertified(_:)``): running join again is an honest retry, not a replay.
    ///
    /// - Parameters:
    ///   - code: The pairing code as the person typed or scanned it.
    ///   - timeout: How long to wait for the root; the invite lives 10 minutes.
    ///   - pollInterval: Time between looks at the log and the request.
    /// - Throws: As ``join(code:)``; `CancellationError`.
    public func joinAndWait(
        code: PairingCode, timeout: Duration = .seconds(Int64(inviteLifetime)), pollInterval: Duration = .seconds(2)
    ) async throws -> JoinOutcome {
        let (identity, _) = try await signedIn()
        if let snapshot = try? await verified(), snapshot.fingerprint == code.fingerprint,
            snapshot.isTrusted(identity.id)
        {
            return .alreadyCertified(code.fingerprint)
        }
        let (fingerprint, requestID) = try await requestJoin(code: code)
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while true {
            try await Task.sleep(for: pollInterval)
            if try await isCertified(identity.id) { return .certified(fingerprint) }
            let pending = try await remote.listPairingRequests().contains { $0.id == requestID }
            // Gone without a certificate: the root refused it. Looked at once more, since a root
            // appends the certify before it deletes the request.
            if !pending { return try await isCertified(identity.id) ? .certified(fingerprint) : .refused(fingerprint) }
            if clock.now >= deadline { return .timedOut(fingerprint) }
        }
    }

    /// Whether the verified log certifies `deviceID` with its row's key.
    func isCertified(_ deviceID: UUID) async throws -> Bool {
        guard let snapshot = try await verified(),
            let device = try await remote.listDevices().first(where: { $0.id == deviceID })
        else { return false }
        return snapshot.status(of: device) == .verified
    }

    /// Walks and pins the log, then inserts the pairing request; returns its id.
    func requestJoin(code: PairingCode) async throws -> (fingerprint: IdentityFingerprint, requestID: UUID) {
        let (identity, user) = try await signedIn()
        var sync = TrustLogSync(local: local, remote: remote, phase: .secrets, now: options.now())
        guard let walked = try await sync.walk() else {
            throw SyncError(
                code: .pairingRefused,
                message: "this user has no trust log yet: run `sync-cli trust init` on the first desktop (or, with "
                    + "an identity from before the log, let its trust root sync once after a fresh sign-in)")
        }
        let key = walked.state.identityKey
        guard IdentityFingerprint(key) == code.fingerprint else {
            throw SyncError(
                code: .pairingRefused,
                message: "the identity key in force (\(IdentityFingerprint(key))) is not the one in the pairing code "
                    + "(\(code.fingerprint)): it changed since the code was made, or the code is mistyped; ask for a "
                    + "new code; nothing was pinned")
        }
        try await engine.upsertOwnDevice(identity, user: user)
        let signing = try await local.signingKey().publicKey
        let mac = PairingMAC.mac(
            secret: code.secret, inviteID: code.inviteID, userID: user, deviceID: identity.id,
            x25519PublicKey: identity.publicKey, ed25519PublicKey: signing)
        let request = PairingRequestRow(
            userID: user, inviteID: code.inviteIDText, deviceID: identity.id,
            x25519PublicKey: identity.publicKey.base64,
            ed25519PublicKey: signing.base64, mac: ByteEncoding.base64(mac))
        try await remote.insertPairingRequest(request)
        try await sync.pin(walked)
        return (IdentityFingerprint(key), request.id)
    }

    /// Verifies every pairing request for this root's invites and appends a certify for each
    /// device whose request is genuine; refused requests are deleted and reported.
    ///
    /// A request is refused when its invite is unknown, expired or already used (a replay), its
    /// MAC does not verify (compared in constant time), its keys are not the device row's, the
    /// device or its keys were revoked, or its row names another type than the invite was opened
    /// for. A wrong MAC does not use up the invite.
    ///
    /// - Parameters:
    ///   - now: The certificates' issue time.
    ///   - confirm: Asks the person whether to certify a device as the type its row names (for
    ///     an invite opened without a type); without it such a request stays pending.
    /// - Throws: ``SyncError`` `.notTrustRoot`, trust-log errors; remote and local errors.
    public func approve(now: Date = Date(), confirm: PairingConfirmation? = nil) async throws -> ApprovalReport {
        let state = try await verifiedLog()
        _ = try await rootKey(state)
        let requests = try await remote.listPairingRequests()
        guard !requests.isEmpty else { return ApprovalReport() }
        let user = remote.userID
        let devices = try await remote.listDevices().filter { $0.userID == user }
        let remembered = Set(try await local.knownRevocations().map(\.deviceID))
        let checker = PairingChecker(
            invites: Dictionary(try await local.invites().map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first }),
            devices: devices, state: state, remembered: remembered, user: user, now: now, confirm: confirm)
        var report = ApprovalReport()
        var certify: [(PairingRequestRow, DeviceCertificate, PairingInvite)] = []
        for request in requests {
            switch await checker.check(request) {
            case .refuse(let reason):
                report.refused.append(
                    RefusedPairing(
                        requestID: request.id, deviceID: request.deviceID, inviteID: request.inviteID, reason: reason))
                try await remote.deletePairingRequest(id: request.id)
            case .pending(let pending): report.pending.append(pending)
            case .certify(let certificate, let invite):
                guard try await local.useInvite(id: invite.id, by: request.deviceID, at: now) else {
                    let used = try await local.invites().first { $0.id == invite.id } ?? invite
                    report.refused.append(
                        RefusedPairing(
                            requestID: request.id, deviceID: request.deviceID, inviteID: request.inviteID,
                            reason: Self.usedInviteReason(used, requestedBy: request.deviceID)))
                    try await remote.deletePairingRequest(id: request.id)
                    continue
                }
                certify.append((request, certificate, invite))
            }
        }
        guard !certify.isEmpty else { return report }
        let after = try await append { writer, now in
            for (_, certificate, _) in certify { try? writer.append(.certify(certificate), createdAt: now) }
        }
        for (request, certificate, invite) in certify {
            if after.devices[certificate.deviceID]?.certifiedSeq != nil {
                let name = devices.first { $0.id == request.deviceID }?.name ?? ""
                report.approved.append(ApprovedDevice(deviceID: request.deviceID, name: name, inviteID: invite.id))
            } else {
                report.refused.append(
                    RefusedPairing(
                        requestID: request.id, deviceID: request.deviceID, inviteID: request.inviteID,
                        reason: "the log refuses to certify it (its id or a key was revoked, or is another device's)"))
            }
            try await remote.deletePairingRequest(id: request.id)
        }
        return report
    }

    /// Approves until a device joins with this invite, or it expires (`trust invite --wait`).
    ///
    /// - Parameters:
    ///   - inviteID: The invite's id (`PairingCode/inviteIDText`).
    ///   - pollInterval: Time between looks at the pairing requests.
    ///   - confirm: As for ``approve(now:confirm:)``.
    ///   - onRound: Told what each round approved or refused.
    /// - Throws: ``SyncError`` `.pairingRefused` when the invite expires first; `CancellationError`.
    public func waitForJoin(
        inviteID: String, pollInterval: Duration = .seconds(2), confirm: PairingConfirmation? = nil,
        onRound: (@Sendable (ApprovalReport) -> Void)? = nil
    ) async throws -> ApprovalReport {
        var all = ApprovalReport()
        while true {
            try Task.checkCancellation()
            let round = try await approve(confirm: confirm)
            all.approved += round.approved
            all.refused += round.refused
            if !(round.approved.isEmpty && round.refused.isEmpty) { onRound?(round) }
            if round.approved.contains(where: { $0.inviteID == inviteID }) { return all }
            guard let invite = try await local.invites().first(where: { $0.id == inviteID }), invite.expiresAt > Date()
            else {
                throw SyncError(code: .pairingRefused, message: "the invite expired before a device joined with it")
            }
            try await Task.sleep(for: pollInterval)
        }
    }

    /// Why a request for a used invite is refused: the same device asking again (an honest
    /// retry: it was certified with this invite) is not called a replay.
    static func usedInviteReason(_ invite: PairingInvite, requestedBy deviceID: UUID) -> String {
        invite.usedBy == deviceID
            ? "this device already joined with this invite and was certified: a repeated request, removed (nothing to do)"
            : "the invite was already used by another device: a replayed request, or the code was used twice "
                + "(make a new invite for each device)"
    }
}
