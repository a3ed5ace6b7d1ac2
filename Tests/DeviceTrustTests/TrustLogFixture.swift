import DeviceTrust
import Foundation
import SecretCrypto

/// A user's trust log built with the writer, with the keys to craft any entry after it.
struct LogFixture {
    struct Device {
        let id: UUID
        let x25519: X25519PrivateKey
        let ed25519: Ed25519PrivateKey
        let type: String
    }

    let user = UUID()
    let root: Device
    var writer: TrustLogWriter
    var devices: [UUID: Device] = [:]
    /// The time the next entry is written at.
    var clock: UInt64 = 1_800_000_000
    let recovery: RecoveryKey?

    init(recovery: RecoveryKey? = RecoveryKey(), epoch: UInt32 = 1, priorEpoch: UInt32 = 0) throws {
        root = Device(id: UUID(), x25519: X25519PrivateKey(), ed25519: Ed25519PrivateKey(), type: "linux-desktop")
        self.recovery = recovery
        let user = self.user
        let certificate = DeviceCertificate(
            userID: user, deviceID: root.id, x25519PublicKey: root.x25519.publicKey,
            ed25519PublicKey: root.ed25519.publicKey, deviceType: root.type, deviceRole: "trust_root",
            issuedAt: clock)
        writer = try TrustLogWriter.genesis(
            userID: user, epoch: epoch, priorEpoch: priorEpoch, identity: Ed25519PrivateKey(),
            recoveryKey: recovery?.agreementKey(userID: user).publicKey, certificate: certificate,
            signingKey: root.ed25519, createdAt: clock)
        devices[root.id] = root
    }

    var texts: [String] { writer.written.map(\.text) }
    var state: TrustLogState { writer.state }

    func certificate(_ device: Device, role: String = "trusted_executor", type: String? = nil) -> DeviceCertificate {
        DeviceCertificate(
            userID: user, deviceID: device.id, x25519PublicKey: device.x25519.publicKey,
            ed25519PublicKey: device.ed25519.publicKey, deviceType: type ?? device.type, deviceRole: role,
            issuedAt: clock)
    }

    /// A new device, certified by the log.
    @discardableResult
    mutating func certify(type: String = "ios-phone", role: String = "trusted_executor") throws -> Device {
        let device = Device(id: UUID(), x25519: X25519PrivateKey(), ed25519: Ed25519PrivateKey(), type: type)
        clock += 1
        try writer.append(.certify(certificate(device, role: role)), createdAt: clock)
        devices[device.id] = device
        return device
    }

    func revocation(_ device: Device) -> DeviceRevocation {
        DeviceRevocation(userID: user, deviceID: device.id, x25519PublicKey: device.x25519.publicKey, revokedAt: clock)
    }

    mutating func revoke(_ device: Device) throws {
        clock += 1
        try writer.append(.revoke(revocation(device)), createdAt: clock)
    }

    mutating func grantRoot(_ device: Device) throws {
        clock += 1
        try writer.grantRoot(to: device.id, createdAt: clock)
    }

    /// A succession to a fresh key; returns it.
    @discardableResult
    mutating func succeed(
        reason: SuccessionReason = .seedSuspected, recovery: X25519PublicKey? = nil, revoking: [Device] = []
    ) throws -> Ed25519PrivateKey {
        let next = Ed25519PrivateKey()
        clock += 1
        try writer.succeed(
            to: next, reason: reason, newRecoveryKey: recovery, revocations: revoking.map(revocation), createdAt: clock)
        return next
    }

    /// An entry at the next position signed as the writer would, after `change` edits it:
    /// for staging what the verifier must refuse.
    func craft(
        _ type: TrustLogEntryType, body: [UInt8], identity: Ed25519PrivateKey? = nil, second: Ed25519PrivateKey? = nil,
        author: UUID? = nil, change: (inout TrustLogEntry) -> Void = { _ in }
    ) -> String {
        let state = writer.state
        let seq = state.headSeq + 1
        var entry = TrustLogEntry(
            userID: user, epoch: state.epoch, seq: seq, prev: Array(state.headHash), type: type,
            createdAt: max(clock + 1, state.headCreatedAt), author: author ?? root.id,
            appendProof: AppendChain.proof(
                seed: writer.identity.seedRepresentation, userID: user, epoch: state.epoch,
                steps: Int(seq - state.identityKeySince)),
            body: body)
        change(&entry)
        entry.sign(identity: identity ?? writer.identity, second: second)
        return entry.text
    }
}

extension TrustLogVerifier {
    /// The failure verifying `rows` gives, or `nil`.
    static func failure(_ rows: [String], user: UUID, epoch: UInt32 = 1) -> DeviceTrustError? {
        do {
            _ = try verify(rows, userID: user, epoch: epoch)
            return nil
        } catch {
            return error
        }
    }
}
