import DeviceTrust
import Foundation
import LocalStore
import Logging
import RemoteStore
import SecretCrypto
import SyncModel

/// Pairing, status and revocation (trust.md), as library calls a desktop app can make from its
/// own UI; `sync-cli trust` is a thin layer over them.
///
/// The trust root is the device that created the user's identity key and holds `identity.key`;
/// every other device pins the identity's public key when it joins with a pairing code.
public struct DeviceTrustManager: Sendable {
    public let local: DeviceStore
    public let remote: any SyncRemote
    /// The options this device syncs with (its own row is upserted with them: the envelope
    /// versions it advertises stay what its syncs advertise).
    public let options: SyncOptions
    let logger: Logger?

    /// How long an invite is valid.
    public static let inviteLifetime: TimeInterval = 600

    /// Creates the manager for this device's store and the signed-in remote.
    public init(local: DeviceStore, remote: any SyncRemote, options: SyncOptions = SyncOptions(), logger: Logger? = nil)
    {
        self.local = local
        self.remote = remote
        self.options = options
        self.logger = logger
    }

    // MARK: - trust init

    /// The user's other devices that receive secrets today (mode `any`) and will stop receiving
    /// them once this device pins an identity, until each is paired: what ``initialize(now:recoveryKey:)``
    /// cuts off, to tell the person before it runs. Deployed apps that cannot pair yet are among
    /// them; `--trust any` keeps them receiving.
    public func devicesThatWillNeedPairing() async throws -> [DeviceDecision] {
        let identity = try await local.requireIdentity()
        let decisions = RecipientPolicy.evaluate(
            try await remote.listDevices(), userID: remote.userID, selfID: identity.id,
            options: RecipientOptions(trust: .any, includeSelf: false), trust: nil, selfKey: identity.publicKey)
        return decisions.filter(\.receives)
    }

    /// Makes this device the trust root: creates the user's identity key, publishes its public
    /// key, pins it, and certifies this device. With `recoveryKey`, also stores the identity's
    /// encrypted backup under it (recovery.md); show the key to the person once, after this
    /// returns.
    ///
    /// - Returns: The identity's fingerprint.
    /// - Throws: ``SyncError`` `.identityExists` when the user already has an identity key (join
    ///   instead), `.trustUnavailable` without the device-trust tables, `.notLoggedIn`,
    ///   `.userMismatch`, `.noRecoveryBackup` when a backup was asked for and the remote has no
    ///   table for it (the identity is set up; run again without one, or after the migration);
    ///   remote and local errors.
    @discardableResult
    public func initialize(now: Date = Date(), recoveryKey: RecoveryKey? = nil) async throws -> IdentityFingerprint {
        let (identity, user) = try await signedIn()
        let published = try await publishedIdentityKey()
        let existing = try await local.identityKey()
        if let pinned = try await local.pinnedIdentityKey(), published != pinned.base64 {
            throw SyncError(
                code: .identityChanged,
                message: "the user's identity key changed: the remote publishes "
                    + "\(published.map(Self.fingerprint) ?? "none"), but this device pinned \(IdentityFingerprint(pinned))"
            )
        }
        if let published {
            // A retry after a run that published but did not finish certifying is allowed.
            guard let existing, existing.publicKey.base64 == published else {
                throw SyncError(
                    code: .identityExists,
                    message: "the user already has an identity key (\(Self.fingerprint(published))); "
                        + "pair this device with `sync-cli trust join CODE` using a code from the trust root")
            }
        }
        let key: Ed25519PrivateKey
        if let existing { key = existing } else { key = try await local.createIdentityKey() }
        if published == nil {
            do {
                try await remote.trustTables().publishIdentityKey(key.publicKey.base64)
            } catch let error as RemoteStoreError where error.code == .conflict {
                if existing == nil { try local.removeIdentityKey() }
                throw SyncError(
                    code: .identityExists,
                    message: "another device published the user's identity key first; join it instead")
            }
        }
        try await local.pinIdentityKey(key.publicKey)
        try await engine.upsertOwnDevice(identity, user: user)
        // The root certifies what it knows of itself, never what its row says: its own type, and
        // the role of a root.
        let certificate = DeviceCertificate(
            userID: user, deviceID: identity.id, x25519PublicKey: identity.publicKey,
            ed25519PublicKey: try await local.signingKey().publicKey,
            deviceType: identity.deviceType.rawValue, deviceRole: DeviceTrustRole.trustRoot.rawValue,
            issuedAt: UInt64(max(0, now.timeIntervalSince1970)))
        try await publish(certificate, signedBy: key)
        logger?.notice("this device is the trust root of identity \(IdentityFingerprint(key.publicKey))")
        if let recoveryKey { try await storeBackup(of: key, user: user, under: recoveryKey) }
        return IdentityFingerprint(key.publicKey)
    }

    // MARK: - Recovery (recovery.md)

    /// The remote's identity backups, or what a deployment without them answers.
    func backups() throws -> any IdentityBackupRemote {
        guard let remote = remote as? any IdentityBackupRemote else {
            throw SyncError(code: .noRecoveryBackup, message: "this remote keeps no identity backups")
        }
        return remote
    }

    func storeBackup(of identity: Ed25519PrivateKey, user: UUID, under recoveryKey: RecoveryKey) async throws {
        let body = try IdentityBackup.seal(identity, userID: user, recoveryKey: recoveryKey)
        do {
            try await backups().storeIdentityBackup(body)
        } catch let error as RemoteStoreError where error.code == .missingTable {
            throw SyncError(
                code: .noRecoveryBackup,
                message: "this remote has no identity_key_backups table (supabase/migrations/*_identity_backups.sql)")
        }
    }

    /// Whether the user's identity backup exists on the remote; `nil` when the remote keeps none.
    public func hasRecoveryBackup() async throws -> Bool? {
        do {
            return try await backups().fetchIdentityBackup() != nil
        } catch let error as RemoteStoreError where error.code == .missingTable {
            return nil
        } catch let error as SyncError where error.code == .noRecoveryBackup {
            return nil
        }
    }

    /// On a root: a fresh recovery key, the backup replaced under it. The old key stops opening
    /// the stored backup (a copy of the old backup kept elsewhere still opens with it: the seed
    /// is the same).
    ///
    /// - Throws: ``SyncError`` `.notTrustRoot`, `.identityChanged`, `.noRecoveryBackup`.
    public func newRecoveryKey() async throws -> RecoveryKey {
        let (_, user) = try await signedIn()
        let key = try await trustRootKey()
        let recoveryKey = RecoveryKey()
        try await storeBackup(of: key, user: user, under: recoveryKey)
        logger?.notice("the identity backup was replaced under a new recovery key")
        return recoveryKey
    }

    /// The last resort when the identity cannot be recovered (recovery.md): removes the user's
    /// identity, certificates, revocations, pairing requests and backup from the remote, then
    /// makes this desktop the trust root of a new identity (with a backup under `recoveryKey`).
    /// Every other device then reports `identityChanged` until it is paired again, so ask the
    /// person to confirm first (`sync-cli trust reset` asks for their email).
    ///
    /// - Returns: The new identity's fingerprint.
    /// - Throws: ``SyncError`` `.wrongRole` on a phone, `.noRecoveryBackup` without the
    ///   function on the remote.
    @discardableResult
    public func reset(recoveryKey: RecoveryKey?, now: Date = Date()) async throws -> IdentityFingerprint {
        let (identity, _) = try await signedIn()
        guard identity.role == .desktop else {
            throw SyncError(code: .wrongRole, message: "only a desktop can become the trust root of a new identity")
        }
        do {
            try await backups().resetIdentity()
        } catch let error as RemoteStoreError where error.code == .missingFunction {
            throw SyncError(
                code: .noRecoveryBackup,
                message: "this remote cannot reset an identity (supabase/migrations/*_identity_backups.sql)")
        }
        try local.removeIdentityKey()
        try await local.unpinIdentityKey()
        logger?.notice("the user's identity was reset; creating a new one")
        return try await initialize(now: now, recoveryKey: recoveryKey)
    }

    /// Recovers the identity on this desktop with the person's recovery key: opens the user's
    /// backup, checks that its seed is the published identity key (and the pinned one, where
    /// this store pinned one), stores `identity.key`, pins it and certifies this device as a
    /// trust root. Other devices see no change: the identity is the same.
    ///
    /// - Returns: The identity's fingerprint.
    /// - Throws: `RecoveryError/doesNotOpen` for a key that does not open this account's
    ///   backup (or a backup of another user or identity, or a tampered one), with nothing
    ///   written; ``SyncError`` `.identityChanged` when this store pinned another identity,
    ///   `.noIdentity` when the user has none, `.noRecoveryBackup`, `.wrongRole` on a phone.
    @discardableResult
    public func recover(with recoveryKey: RecoveryKey, now: Date = Date()) async throws -> IdentityFingerprint {
        let (identity, user) = try await signedIn()
        guard identity.role == .desktop else {
            throw SyncError(code: .wrongRole, message: "only a desktop can become a trust root")
        }
        guard let published = try await publishedIdentityKey() else {
            throw SyncError(
                code: .noIdentity, message: "the user has no identity key to recover; run `sync-cli trust init`")
        }
        guard let publishedKey = try? Ed25519PublicKey(base64: published) else {
            throw SyncError(code: .identityChanged, message: "the remote publishes an identity key that is not Ed25519")
        }
        if let pinned = try await local.pinnedIdentityKey(), pinned != publishedKey {
            throw SyncError(
                code: .identityChanged,
                message: "the user's identity key changed: the remote publishes \(IdentityFingerprint(publishedKey)), "
                    + "but this device pinned \(IdentityFingerprint(pinned))")
        }
        let stored: String?
        do {
            stored = try await backups().fetchIdentityBackup()
        } catch let error as RemoteStoreError where error.code == .missingTable {
            throw SyncError(code: .noRecoveryBackup, message: "this remote keeps no identity backups")
        }
        guard let stored else {
            throw SyncError(
                code: .noRecoveryBackup,
                message: "this account has no identity backup (its root ran `trust init --no-recovery-key`)")
        }
        let key = try IdentityBackup.open(
            stored, userID: user, identityPublicKey: publishedKey, recoveryKey: recoveryKey)
        try await local.storeIdentityKey(key)
        try await local.pinIdentityKey(key.publicKey)
        try await engine.upsertOwnDevice(identity, user: user)
        let certificate = DeviceCertificate(
            userID: user, deviceID: identity.id, x25519PublicKey: identity.publicKey,
            ed25519PublicKey: try await local.signingKey().publicKey,
            deviceType: identity.deviceType.rawValue, deviceRole: DeviceTrustRole.trustRoot.rawValue,
            issuedAt: UInt64(max(0, now.timeIntervalSince1970)))
        try await publish(certificate, signedBy: key)
        logger?.notice("recovered identity \(IdentityFingerprint(key.publicKey)); this device is a trust root")
        return IdentityFingerprint(key.publicKey)
    }

    // MARK: - trust invite

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
    /// - Throws: ``SyncError`` `.notTrustRoot`, `.identityChanged`, `.pairingRefused` for the
    ///   role `trust_root` (a root certifies itself, by `trust init` or recovery).
    public func invite(
        deviceType: DeviceType? = nil, role: DeviceTrustRole = .trustedExecutor,
        now: Date = Date()
    ) async throws -> (code: PairingCode, expiresAt: Date) {
        guard role != .trustRoot else {
            throw SyncError(
                code: .pairingRefused,
                message: "an invite cannot make a trust root: a root certifies itself (trust init, or recovery)")
        }
        let key = try await trustRootKey()
        try await TrustSnapshot.checkPublishedIdentity(pinned: key.publicKey, remote: remote)
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

    // MARK: - trust join

    /// Joins the user's identity with a pairing code: checks the published identity key against
    /// the code's fingerprint (the server cannot substitute it), pins it, and asks the trust root
    /// for a certificate with a request only the code's holder can make.
    ///
    /// - Returns: The pinned identity's fingerprint.
    /// - Throws: ``SyncError`` `.pairingRefused` (no identity published, or not the code's),
    ///   `.trustUnavailable`; remote and local errors. Nothing is pinned when it throws.
    @discardableResult
    public func join(code: PairingCode) async throws -> IdentityFingerprint {
        try await requestJoin(code: code).fingerprint
    }

    /// Joins with `code` and waits for the trust root's answer: a certificate for this device
    /// (``JoinOutcome/certified(_:)``), the request removed without one (refused: the root's
    /// `trust approve` says why; most often the code was mistyped), or nothing before `timeout`.
    ///
    /// A device that already holds a valid certificate of the code's identity makes no request
    /// (``JoinOutcome/alreadyCertified(_:)``): running join again is an honest retry, not a replay.
    ///
    /// - Parameters:
    ///   - code: The pairing code as the person typed or scanned it.
    ///   - timeout: How long to wait for the root; the invite lives 10 minutes.
    ///   - pollInterval: Time between looks at the certificates and the request.
    /// - Throws: As ``join(code:)``; `CancellationError`.
    public func joinAndWait(
        code: PairingCode, timeout: Duration = .seconds(Int64(inviteLifetime)), pollInterval: Duration = .seconds(2)
    ) async throws -> JoinOutcome {
        let (identity, _) = try await signedIn()
        if let pinned = try await local.pinnedIdentityKey(), IdentityFingerprint(pinned) == code.fingerprint,
            try await isCertified(identity.id)
        {
            return .alreadyCertified(code.fingerprint)
        }
        let (fingerprint, requestID) = try await requestJoin(code: code)
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while true {
            try await Task.sleep(for: pollInterval)
            if try await isCertified(identity.id) { return .certified(fingerprint) }
            let pending = try await remote.trustTables().listPairingRequests().contains { $0.id == requestID }
            // Gone without a certificate: the root refused it. Looked at once more, since a root
            // publishes the certificate before it deletes the request.
            if !pending {
                return try await isCertified(identity.id) ? .certified(fingerprint) : .refused(fingerprint)
            }
            if clock.now >= deadline { return .timedOut(fingerprint) }
        }
    }

    /// Whether `deviceID` holds a valid certificate of the pinned identity that matches its row.
    func isCertified(_ deviceID: UUID) async throws -> Bool {
        guard let snapshot = try await TrustSnapshot.load(local: local, remote: remote),
            let device = try await remote.listDevices().first(where: { $0.id == deviceID })
        else { return false }
        return snapshot.status(of: device) == .verified
    }

    /// Pins the code's identity and inserts the pairing request; returns its id.
    func requestJoin(code: PairingCode) async throws -> (fingerprint: IdentityFingerprint, requestID: UUID) {
        let (identity, user) = try await signedIn()
        guard let published = try await publishedIdentityKey() else {
            throw SyncError(
                code: .pairingRefused,
                message: "the user has no identity key yet: run `sync-cli trust init` on the first device")
        }
        guard let key = try? Ed25519PublicKey(base64: published), IdentityFingerprint(key) == code.fingerprint else {
            throw SyncError(
                code: .pairingRefused,
                message: "the identity key the remote publishes (\(Self.fingerprint(published))) is not the one "
                    + "in the pairing code (\(code.fingerprint)): it was substituted, or the code is mistyped; nothing was pinned"
            )
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
        try await remote.trustTables().insertPairingRequest(request)
        try await local.pinIdentityKey(key)
        return (IdentityFingerprint(key), request.id)
    }

    // MARK: - trust approve

    /// Verifies every pairing request for this trust root's invites and certifies the devices
    /// whose requests are genuine; refused requests are deleted and reported.
    ///
    /// A request is refused when its invite is unknown, expired or already used (a replay), its
    /// MAC does not verify (compared in constant time), its keys are not the device row's, the
    /// device was revoked, or its row names another type than the invite was opened for. A
    /// wrong MAC does not use up the invite.
    ///
    /// The certificate names the type the invite was opened for; for an invite opened without
    /// one, the type the row names once `confirm` (the person, shown the device) accepts it.
    /// Without `confirm` such a request stays pending, untouched, for an approval that can ask.
    ///
    /// - Parameters:
    ///   - now: The certificates' issue time.
    ///   - confirm: Asks the person whether to certify a device as the type its row names;
    ///     `false` refuses the request.
    /// - Throws: ``SyncError`` `.notTrustRoot`, `.identityChanged`; remote and local errors.
    public func approve(now: Date = Date(), confirm: PairingConfirmation? = nil) async throws -> ApprovalReport {
        let key = try await trustRootKey()
        try await TrustSnapshot.checkPublishedIdentity(pinned: key.publicKey, remote: remote)
        let user = remote.userID
        let invites = Dictionary(try await local.invites().map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let revoked = Set(try await local.knownRevocations().map(\.deviceID))
        let requests = try await remote.trustTables().listPairingRequests()
        guard !requests.isEmpty else { return ApprovalReport() }
        let devices = try await remote.listDevices().filter { $0.userID == user }
        var report = ApprovalReport()
        for request in requests {
            func refuse(_ reason: String) async throws {
                report.refused.append(
                    RefusedPairing(
                        requestID: request.id, deviceID: request.deviceID, inviteID: request.inviteID, reason: reason))
                try await remote.trustTables().deletePairingRequest(id: request.id)
            }
            guard request.userID == user else {
                try await refuse("the request names another user")
                continue
            }
            // Fields are read in the encodings this engine writes (hex invite id, base64 keys and
            // MAC) and in the other common one, so a client that wrote hex keys still pairs; the
            // MAC decides either way.
            guard let inviteID = Self.bytes(request.inviteID, count: 8) else {
                try await refuse("the request's invite id is not 8 bytes of hex or base64")
                continue
            }
            guard let invite = invites[ByteEncoding.hex(inviteID)] else {
                try await refuse(
                    "no invite of this trust root has this id: the code was mistyped, or made by another trust root")
                continue
            }
            guard invite.expiresAt > now || invite.usedAt != nil else {
                try await refuse("the invite expired (invites live 10 minutes): make a new one with `trust invite`")
                continue
            }
            guard
                let x25519 = Self.bytes(request.x25519PublicKey, count: 32).flatMap({
                    try? X25519PublicKey(rawRepresentation: $0)
                }), !x25519.isLowOrder,
                let ed25519 = Self.bytes(request.ed25519PublicKey, count: 32).flatMap({
                    try? Ed25519PublicKey(rawRepresentation: $0)
                }),
                let mac = Self.bytes(request.mac, count: 32)
            else {
                try await refuse("the request's keys or MAC are malformed")
                continue
            }
            guard
                PairingMAC.isValid(
                    mac, secret: invite.secret, inviteID: inviteID, userID: user, deviceID: request.deviceID,
                    x25519PublicKey: x25519, ed25519PublicKey: ed25519)
            else {
                try await refuse(
                    "the MAC does not verify: the request was not made with this invite's code (mistyped, or forged)")
                continue
            }
            guard invite.usedAt == nil else {
                try await refuse(Self.usedInviteReason(invite, requestedBy: request.deviceID))
                continue
            }
            guard let device = devices.first(where: { $0.id == request.deviceID }) else {
                try await refuse("the device has no row")
                continue
            }
            guard let text = device.publicKey, let rowKey = try? X25519PublicKey(base64: text), rowKey == x25519 else {
                try await refuse("the request's key is not the device row's")
                continue
            }
            guard !revoked.contains(device.id) else {
                try await refuse("the device was revoked")
                continue
            }
            // Never more than the row asks for: a row that asks to be a viewer is certified as one.
            let role: DeviceTrustRole =
                device.deviceRole == .temporaryViewer ? .temporaryViewer : (invite.deviceRole ?? .trustedExecutor)
            let type: DeviceType
            if let expected = invite.deviceType {
                guard device.deviceType == expected else {
                    try await refuse(
                        "the device's row says \(device.deviceType?.rawValue ?? "no type"), but the invite was opened for "
                            + "\(expected.rawValue) (the row is the server's: possible attack)")
                    continue
                }
                type = expected
            } else {
                guard let named = device.deviceType else {
                    try await refuse("the device's row names no device type")
                    continue
                }
                guard let confirm else {
                    report.pending.append(
                        PendingPairing(
                            requestID: request.id, deviceID: device.id, name: device.name, deviceType: named,
                            role: role, inviteID: invite.id))
                    continue
                }
                guard
                    await confirm(
                        PairingCandidate(deviceID: device.id, name: device.name, deviceType: named, role: role))
                else {
                    try await refuse("the person did not confirm the device")
                    continue
                }
                type = named
            }
            guard try await local.useInvite(id: invite.id, by: device.id, at: now) else {
                let used = try await local.invites().first { $0.id == invite.id } ?? invite
                try await refuse(Self.usedInviteReason(used, requestedBy: device.id))
                continue
            }
            let certificate = DeviceCertificate(
                userID: user, deviceID: device.id, x25519PublicKey: x25519, ed25519PublicKey: ed25519,
                deviceType: type.rawValue, deviceRole: role.rawValue,
                issuedAt: UInt64(max(0, now.timeIntervalSince1970)))
            try await publish(certificate, signedBy: key)
            try await remote.trustTables().deletePairingRequest(id: request.id)
            report.approved.append(ApprovedDevice(deviceID: device.id, name: device.name, inviteID: invite.id))
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

    // MARK: - trust status

    /// The identity, this device's certificate and every device's standing.
    ///
    /// - Throws: ``SyncError`` `.identityChanged` when the remote publishes another identity
    ///   than the pinned one; remote errors.
    public func status() async throws -> TrustStatus {
        let (identity, user) = try await signedIn()
        let devices = try await remote.listDevices().filter { $0.userID == user }
        var status = TrustStatus(deviceID: identity.id, isTrustRoot: try await local.identityKey() != nil)
        guard let snapshot = try await TrustSnapshot.load(local: local, remote: remote) else {
            do {
                status.remoteHasIdentity = try await remote.trustTables().fetchIdentityKey() != nil
            } catch let error as RemoteStoreError where error.code == .missingTable {
                status.remoteHasTrustTables = false
            }
            status.devices = devices.map {
                TrustStatus.Device(
                    deviceID: $0.id, name: $0.name, deviceType: $0.deviceType?.rawValue,
                    isActive: $0.isActive, status: nil, isThisDevice: $0.id == identity.id)
            }
            return status
        }
        status.remoteHasIdentity = true
        status.identityFingerprint = snapshot.fingerprint.description
        status.problems = snapshot.problems.map(\.description)
        var listed = Set<UUID>()
        status.devices = devices.map { device in
            listed.insert(device.id)
            var state = snapshot.status(of: device)
            if device.id == identity.id, state == .verified, device.publicKey != identity.publicKey.base64 {
                state = .keyMismatch
            }
            var listedDevice = TrustStatus.Device(
                deviceID: device.id, name: device.name, deviceType: device.deviceType?.rawValue,
                isActive: device.isActive, status: state, isThisDevice: device.id == identity.id)
            listedDevice.isRoot =
                state == .verified && snapshot.certificates[device.id]?.deviceRole == DeviceTrustRole.trustRoot.rawValue
            return listedDevice
        }
        // Revoked devices whose row is gone are still shown.
        for (id, _) in snapshot.revocations where !listed.contains(id) {
            status.devices.append(
                TrustStatus.Device(
                    deviceID: id, name: "(no device row)", deviceType: nil, isActive: false,
                    status: .revoked, isThisDevice: id == identity.id))
        }
        status.thisDevice = status.devices.first { $0.isThisDevice }?.status ?? .unverified
        status.recoveryBackup = try await hasRecoveryBackup()
        return status
    }

    // MARK: - trust revoke

    /// Revokes devices: signs and publishes each revocation, deletes its certificate and every
    /// envelope addressed to it, and marks its row inactive. Each desktop's next push then
    /// rotates the secrets the device had received.
    ///
    /// - Parameters:
    ///   - deviceIDs: Devices of the user; this device itself cannot be revoked here.
    ///   - now: The revocations' time.
    /// - Throws: ``SyncError`` `.notTrustRoot`, `.identityChanged`, `.unknownDevice`.
    public func revoke(_ deviceIDs: Set<UUID>, now: Date = Date()) async throws -> RevocationReport {
        let key = try await trustRootKey()
        let (identity, user) = try await signedIn()
        guard let snapshot = try await TrustSnapshot.load(local: local, remote: remote) else {
            throw SyncError(code: .noIdentity, message: "this store has pinned no identity")
        }
        guard !deviceIDs.contains(identity.id) else {
            throw SyncError(code: .unknownDevice, message: "the trust root cannot revoke itself")
        }
        let devices = Dictionary(
            try await remote.listDevices().filter { $0.userID == user }.map { ($0.id, $0) },
            uniquingKeysWith: { a, _ in a })
        var targets: [(UUID, X25519PublicKey)] = []
        for id in deviceIDs.sorted(by: { $0.canonicallyPrecedes($1) }) {
            if let certified = snapshot.certificates[id]?.x25519PublicKey {
                targets.append((id, certified))
            } else if let text = devices[id]?.publicKey, let rowKey = try? X25519PublicKey(base64: text) {
                targets.append((id, rowKey))
            } else if let known = snapshot.revocations[id] {
                targets.append((id, known.x25519PublicKey))
            } else {
                throw SyncError(
                    code: .unknownDevice,
                    message: "device \(id.canonical) is not one of the user's devices (or has no key to revoke)")
            }
        }
        var report = RevocationReport()
        for (id, x25519) in targets {
            let revocation = DeviceRevocation(
                userID: user, deviceID: id, x25519PublicKey: x25519,
                revokedAt: UInt64(max(0, now.timeIntervalSince1970)))
            let signed = revocation.signed(by: key)
            try await remote.trustTables().publishRevocation(
                SignedStatementRow(deviceID: id, userID: user, body: signed.body, signature: signed.signature))
            try await local.recordRevocations([KnownRevocation(deviceID: id, x25519PublicKey: x25519, revokedAt: now)])
            try await remote.trustTables().deleteCertificate(deviceID: id)
            report.envelopesDeleted += try await remote.deleteEnvelopes(recipients: [id]) ?? 0
            if devices[id] != nil { try await remote.trustTables().setDeviceActive(id, isActive: false) }
            report.revoked.append(id)
        }
        return report
    }

    /// Revokes every device of the user but this one that is not revoked yet. Not a sign-out:
    /// the devices keep the user's login (end it with `SupabaseAuth.logout(accessToken:scope:)`
    /// and scope `others`, where the auth server offers it).
    public func revokeAllOthers(now: Date = Date()) async throws -> RevocationReport {
        let (identity, user) = try await signedIn()
        let known = Set(try await local.knownRevocations().map(\.deviceID))
        let others = Set(
            try await remote.listDevices().filter {
                $0.userID == user && $0.id != identity.id && !known.contains($0.id)
            }.map(\.id))
        guard !others.isEmpty else { return RevocationReport() }
        return try await revoke(others, now: now)
    }

    // MARK: - Helpers

    var engine: SyncEngine { SyncEngine(local: local, remote: remote, options: options, logger: logger) }

    func signedIn() async throws -> (DeviceIdentity, UUID) {
        let identity = try await local.requireIdentity()
        guard let user = identity.userID else {
            throw SyncError(code: .notLoggedIn, message: "this store is not logged in; run `sync-cli login` first")
        }
        guard user == remote.userID else {
            throw SyncError(
                code: .userMismatch,
                message:
                    "this store belongs to user \(user.canonical), but the remote is signed in as \(remote.userID.canonical)"
            )
        }
        return (identity, user)
    }

    /// The identity key of this trust root, checked against the pin.
    func trustRootKey() async throws -> Ed25519PrivateKey {
        guard let key = try await local.identityKey() else {
            throw SyncError(
                code: .notTrustRoot,
                message:
                    "this device is not the trust root (it has no identity.key); run this on the device where `trust init` ran"
            )
        }
        guard let pinned = try await local.pinnedIdentityKey(), pinned == key.publicKey else {
            throw SyncError(
                code: .identityChanged, message: "identity.key does not match the identity this store pinned")
        }
        return key
    }

    /// The published identity key's text, or `nil`; `.trustUnavailable` without the tables.
    func publishedIdentityKey() async throws -> String? {
        do {
            return try await remote.trustTables().fetchIdentityKey()
        } catch let error as RemoteStoreError where error.code == .missingTable {
            throw SyncError(
                code: .trustUnavailable,
                message: "verified trust needs the device-trust migration "
                    + "(supabase/migrations/20261122001200_device_trust.sql); this remote has none of its tables")
        }
    }

    func publish(_ certificate: DeviceCertificate, signedBy key: Ed25519PrivateKey) async throws {
        let signed = try certificate.signed(by: key)
        try await remote.trustTables().publishCertificate(
            SignedStatementRow(
                deviceID: certificate.deviceID, userID: certificate.userID,
                body: signed.body, signature: signed.signature))
    }

    /// Why a request for a used invite is refused: the same device asking again (an honest
    /// retry: it was certified with this invite) is not called a replay.
    static func usedInviteReason(_ invite: PairingInvite, requestedBy deviceID: UUID) -> String {
        invite.usedBy == deviceID
            ? "this device already joined with this invite and was certified: a repeated request, removed (nothing to do)"
            : "the invite was already used by another device: a replayed request, or the code was used twice "
                + "(make a new invite for each device)"
    }

    /// `count` bytes from hex (either case) or standard, URL-safe or unpadded base64; `nil` otherwise.
    static func bytes(_ text: String, count: Int) -> [UInt8]? {
        if text.count == count * 2, let bytes = try? ByteEncoding.bytes(hex: text) { return bytes }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let bytes = try? ByteEncoding.bytes(base64: base64), bytes.count == count else { return nil }
        return bytes
    }

    static func fingerprint(_ published: String) -> String {
        (try? Ed25519PublicKey(base64: published)).map { IdentityFingerprint($0).description } ?? "an unreadable key"
    }
}

/// How ``DeviceTrustManager/joinAndWait(code:timeout:pollInterval:)`` ended; each names the
/// identity pinned.
public enum JoinOutcome: Sendable, Hashable {
    /// The trust root certified this device.
    case certified(IdentityFingerprint)
    /// This device already held a valid certificate of this identity: no request was made.
    case alreadyCertified(IdentityFingerprint)
    /// The trust root removed the request without certifying: the code was mistyped (a wrong
    /// invite id or pairing secret), the invite expired or was used, or the device row does not
    /// match; the root's `trust approve` printed which.
    case refused(IdentityFingerprint)
    /// No answer before the timeout: nobody ran `trust approve` (or `trust invite --wait`).
    case timedOut(IdentityFingerprint)
}

/// What `approve` did.
public struct ApprovalReport: Sendable, Codable, Hashable {
    public var approved: [ApprovedDevice] = []
    public var refused: [RefusedPairing] = []
    /// Genuine requests for invites opened without a device type, left for an approval that
    /// can ask the person (nothing was certified or deleted).
    public var pending: [PendingPairing] = []
    public init() {}
}

/// Asks the person whether to certify a device that joined with an invite opened without a
/// device type; `true` certifies it as ``PairingCandidate/deviceType``.
public typealias PairingConfirmation = @Sendable (PairingCandidate) async -> Bool

/// A device whose pairing request verified, shown to the person before it is certified.
public struct PairingCandidate: Sendable, Hashable {
    public var deviceID: UUID
    public var name: String
    /// The type its row names (the server's word): what the certificate will say if confirmed.
    public var deviceType: DeviceType
    /// The role the certificate will grant.
    public var role: DeviceTrustRole
}

/// A genuine pairing request that waits for the person to confirm the device's type.
public struct PendingPairing: Sendable, Codable, Hashable {
    public var requestID: UUID
    public var deviceID: UUID
    public var name: String
    public var deviceType: DeviceType
    public var role: DeviceTrustRole
    public var inviteID: String
}

/// A device certified by `approve`.
public struct ApprovedDevice: Sendable, Codable, Hashable {
    public var deviceID: UUID
    public var name: String
    public var inviteID: String
}

/// A pairing request `approve` refused (and deleted).
public struct RefusedPairing: Sendable, Codable, Hashable {
    public var requestID: UUID
    public var deviceID: UUID
    public var inviteID: String
    public var reason: String
}

/// What `revoke` did.
public struct RevocationReport: Sendable, Codable, Hashable {
    public var revoked: [UUID] = []
    /// Envelopes addressed to the revoked devices that were deleted.
    public var envelopesDeleted = 0
    public init() {}
}

/// `trust status`.
public struct TrustStatus: Sendable, Codable, Hashable {
    /// One of the user's devices.
    public struct Device: Sendable, Codable, Hashable {
        public var deviceID: UUID
        public var name: String
        public var deviceType: String?
        public var isActive: Bool
        /// `nil` when this device has pinned no identity.
        public var status: DeviceTrustStatus?
        public var isThisDevice: Bool
        /// Verified, and certified as a trust root (it holds the identity key).
        public var isRoot = false
    }

    public var deviceID: UUID
    /// This device holds `identity.key`.
    public var isTrustRoot: Bool
    /// The pinned identity's fingerprint (8 groups of 4 hex digits), or `nil` before init/join.
    public var identityFingerprint: String?
    /// This device's own standing (`nil` before init/join).
    public var thisDevice: DeviceTrustStatus?
    /// The remote publishes an identity key for the user.
    public var remoteHasIdentity = false
    /// The remote has the device-trust tables.
    public var remoteHasTrustTables = true
    public var devices: [Device] = []
    /// Certificates or revocations that did not verify.
    public var problems: [String] = []
    /// Whether the user's identity backup exists (`nil`: unknown, the remote keeps none); with
    /// `false` the identity cannot be recovered if its roots are lost.
    public var recoveryBackup: Bool?
}
