import Foundation
import RemoteStore
import SecretCrypto
import SyncModel

/// Which of the user's devices receive session secrets, with the options sync.md names.
public struct RecipientOptions: Sendable, Hashable, Codable {
    /// Also require `is_trusted`.
    public var requireTrusted = false
    /// Seal a copy for this device itself (its backup copy, as deployed daemons do).
    public var includeSelf = true

    /// Creates options; the defaults are sync.md's default policy.
    public init(requireTrusted: Bool = false, includeSelf: Bool = true) {
        self.requireTrusted = requireTrusted
        self.includeSelf = includeSelf
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
    /// - Returns: One decision per distinct device id (a second row with an id already seen is
    ///   dropped and reported).
    public static func evaluate(_ devices: [RemoteDevice], userID: UUID, selfID: UUID, options: RecipientOptions) -> [DeviceDecision] {
        decide(devices, userID: userID, selfID: selfID, options: options).map(\.decision)
    }

    static func decide(_ devices: [RemoteDevice], userID: UUID, selfID: UUID, options: RecipientOptions)
        -> [(decision: DeviceDecision, recipient: Recipient?, issue: SyncIssue?)] {
        // Ids are UUIDs, so two spellings of one id (case) are already one value here; a device
        // listed twice keeps its first row, and the repeat is reported rather than trapping
        // on a duplicate dictionary key later.
        var seen = Set<UUID>()
        return devices.map { device in
            func no(_ reason: String, issue code: SyncIssue.Code? = nil) -> (DeviceDecision, Recipient?, SyncIssue?) {
                let decision = DeviceDecision(deviceID: device.id, name: device.name, deviceType: device.deviceType?.rawValue,
                                              receives: false, reason: reason, keyFingerprint: nil)
                let problem = code.map {
                    SyncIssue(phase: .secrets, code: $0, rowID: device.id.canonical, message: "device skipped: \(reason)")
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
            guard let type = device.deviceType else { return no("unknown device type") }
            guard type != .webBrowser else { return no("web browsers never receive secrets") }
            guard device.deviceRole != .temporaryViewer else { return no("temporary viewer") }
            if options.requireTrusted && !device.isTrusted { return no("not trusted (trusted devices required)") }
            guard let text = device.publicKey, !text.isEmpty else { return no("no public key yet") }
            guard let key = try? X25519PublicKey(base64: text) else {
                return no("public key is not the base64 of 32 bytes", issue: .invalidPublicKey)
            }
            guard !key.isLowOrder else { return no("public key is a low-order point", issue: .invalidPublicKey) }
            let fingerprint = key.fingerprint
            let decision = DeviceDecision(deviceID: device.id, name: device.name, deviceType: type.rawValue,
                                          receives: true, reason: nil, keyFingerprint: fingerprint,
                                          envelopeVersions: device.envelopeVersions.sorted())
            return (decision, Recipient(deviceID: device.id, publicKey: key, fingerprint: fingerprint,
                                        readsVersion2: device.envelopeVersions.contains(2)), nil)
        }
    }
}
