import Foundation
import RemoteStore
import SecretCrypto
import SyncModel

/// Which of the user's devices receive session secrets, with the options sync.md names.
public struct RecipientOptions: Sendable, Hashable, Codable {
    /// The trust mode (trust.md); `nil` is the default: `verified` once the store has pinned the
    /// user's identity key, `any` before.
    public var trust: TrustMode?
    /// Seal a copy for this device itself (its backup copy, as deployed daemons do).
    public var includeSelf = true

    /// Also require `is_trusted`: trust mode `flagged` (the old option, kept as an alias).
    public var requireTrusted: Bool {
        get { trust == .flagged }
        set { trust = newValue ? .flagged : (trust == .flagged ? nil : trust) }
    }

    /// Creates options; the defaults are sync.md's default policy, or `verified` with a pinned identity.
    public init(trust: TrustMode? = nil, includeSelf: Bool = true) {
        self.trust = trust
        self.includeSelf = includeSelf
    }

    /// Creates options with the old `requireTrusted` switch.
    public init(requireTrusted: Bool, includeSelf: Bool = true) {
        self.init(trust: requireTrusted ? .flagged : nil, includeSelf: includeSelf)
    }
}

/// A device that receives envelopes, with its validated key.
struct Recipient: Sendable {
    let deviceID: UUID
    let publicKey: X25519PublicKey
    let fingerprint: String
    /// The device advertises envelope version 2.
    let readsVersion2: Bool

    /// The envelope version this device is sealed with: 2 when it reads it and the sealer writes it.
    func version(writingVersion2: Bool) -> Int { writingVersion2 && readsVersion2 ? 2 : 1 }

    /// What the ledger records for an envelope sealed to this device: the key's fingerprint,
    /// prefixed `v2:` for a version-2 envelope, so a change of key or of format makes it stale.
    func ledgerMark(version: Int) -> String { version == 2 ? "v2:" + fingerprint : fingerprint }
}

/// sync.md's recipient policy.
///
/// A device receives when it is active, has a `public_key` that decodes to 32 bytes and is not
/// of low order, is not a web browser, is not a temporary viewer, and (with the option) is
/// trusted. A bad key is reported, never fatal.
public enum RecipientPolicy {
    /// Decides for every device.
    ///
    /// - Parameters:
    ///   - devices: The user's device rows, as the remote listed them.
    ///   - userID: The signed-in user: a row of any other user never receives, whatever the
    ///     remote claims, and is reported as a possible attack.
    ///   - selfID: This device.
    ///   - options: The policy options.
    ///   - trust: The verified trust records, when the store has pinned an identity: revoked
    ///     devices and rows whose key differs from their certificate never receive, and in mode
    ///     `verified` neither do devices without a valid certificate.
    ///   - selfKey: This device's own public key: its row must carry it, or it is a key mismatch.
    /// - Returns: One decision per distinct device id (a second row with an id already seen is
    ///   dropped and reported).
    public static func evaluate(
        _ devices: [RemoteDevice], userID: UUID, selfID: UUID, options: RecipientOptions,
        trust: TrustSnapshot? = nil, selfKey: X25519PublicKey? = nil
    ) -> [DeviceDecision] {
        decide(devices, userID: userID, selfID: selfID, options: options, trust: trust, selfKey: selfKey).map(
            \.decision)
    }

    /// The mode in force: the explicit one, else `verified` with a pinned identity, else `any`.
    public static func mode(_ options: RecipientOptions, hasPinnedIdentity: Bool) -> TrustMode {
        options.trust ?? (hasPinnedIdentity ? .verified : .any)
    }

    static func decide(
        _ devices: [RemoteDevice], userID: UUID, selfID: UUID, options: RecipientOptions,
        trust: TrustSnapshot? = nil, selfKey: X25519PublicKey? = nil
    )
        -> [(decision: DeviceDecision, recipient: Recipient?, issue: SyncIssue?)]
    {
        let mode = mode(options, hasPinnedIdentity: trust != nil)
        // Ids are UUIDs, so two spellings of one id (case) are already one value here; a device
        // listed twice keeps its first row, and the repeat is reported rather than trapping
        // on a duplicate dictionary key later.
        var seen = Set<UUID>()
        return devices.map { device in
            let standing = trust?.status(of: device)
            func no(_ reason: String, issue code: SyncIssue.Code? = nil) -> (DeviceDecision, Recipient?, SyncIssue?) {
                let decision = DeviceDecision(
                    deviceID: device.id, name: device.name, deviceType: device.deviceType?.rawValue,
                    receives: false, reason: reason, keyFingerprint: nil, trust: standing)
                let problem = code.map {
                    SyncIssue(
                        phase: .secrets, code: $0, rowID: device.id.canonical, message: "device skipped: \(reason)")
                }
                return (decision, nil, problem)
            }
            guard seen.insert(device.id).inserted else {
                return no("listed more than once by the remote (possible attack)", issue: .duplicateDevice)
            }
            guard device.userID == userID else {
                return no("belongs to another user than the one signed in (possible attack)", issue: .foreignDevice)
            }
            if device.id == selfID && !options.includeSelf { return no("this device (self copy disabled)") }
            guard device.isActive else { return no("inactive") }
            if standing == .revoked { return no("revoked by the user's identity key", issue: .revokedDevice) }
            if standing == .certificateMismatch {
                return no(
                    "its row names another device type than its certificate (possible attack)",
                    issue: .certificateMismatch)
            }
            // A certified device's type and role are the certificate's: the row is the server's
            // (and a web browser may update its own), the certificate the user's identity key signed.
            let certificate = standing == .verified ? trust?.certificates[device.id] : nil
            let type = certificate.map { DeviceType(rawValue: $0.deviceType) } ?? device.deviceType
            let role = certificate.map { DeviceTrustRole(rawValue: $0.deviceRole) } ?? device.deviceRole
            guard let type else { return no("unknown device type") }
            guard type != .webBrowser else { return no("web browsers never receive secrets") }
            guard role != .temporaryViewer else { return no("temporary viewer") }
            if mode == .flagged && !device.isTrusted { return no("not trusted (trusted devices required)") }
            guard let text = device.publicKey, !text.isEmpty else { return no("no public key yet") }
            guard let key = try? X25519PublicKey(base64: text) else {
                return no("public key is not the base64 of 32 bytes", issue: .invalidPublicKey)
            }
            guard !key.isLowOrder else { return no("public key is a low-order point", issue: .invalidPublicKey) }
            if device.id == selfID, let selfKey, key != selfKey {
                return no(
                    "this device's row carries another key than this device's own (possible attack)",
                    issue: .keyMismatch)
            }
            if standing == .keyMismatch {
                return no("its row's key differs from its certificate's (possible attack)", issue: .keyMismatch)
            }
            if mode == .verified && standing != .verified {
                return no("no valid certificate under the user's identity key (unverified)")
            }
            let fingerprint = key.fingerprint
            let decision = DeviceDecision(
                deviceID: device.id, name: device.name, deviceType: type.rawValue,
                receives: true, reason: nil, keyFingerprint: fingerprint,
                envelopeVersions: device.envelopeVersions.sorted(), trust: standing)
            // A certified device reads version 2 whatever its row's `capabilities` say: only this
            // engine's pairing certifies devices, and it reads version 2, while the column is the
            // server's to rewrite (it must not steer a sealer into the sender-less version 1).
            return (
                decision,
                Recipient(
                    deviceID: device.id, publicKey: key, fingerprint: fingerprint,
                    readsVersion2: device.envelopeVersions.contains(2) || standing == .verified), nil
            )
        }
    }
}
