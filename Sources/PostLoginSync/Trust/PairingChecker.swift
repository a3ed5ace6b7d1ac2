import DeviceTrust
import Foundation
import LocalStore
import RemoteStore
import SecretCrypto
import SyncModel

/// What a root decides of one pairing request (trust.md, "Pairing", step 4): refuse it (and
/// say why), leave it for a person to confirm the device's type, or certify it.
struct PairingChecker {
    enum Verdict {
        case refuse(String)
        case pending(PendingPairing)
        case certify(DeviceCertificate, PairingInvite)
    }

    let invites: [String: PairingInvite]
    let devices: [RemoteDevice]
    let state: TrustLogState
    /// Devices this device remembers as revoked.
    let remembered: Set<UUID>
    let user: UUID
    let now: Date
    let confirm: PairingConfirmation?

    func check(_ request: PairingRequestRow) async -> Verdict {
        guard request.userID == user else { return .refuse("the request names another user") }
        // Fields are read in the encodings this engine writes (hex invite id, base64 keys and
        // MAC) and in the other common one; the MAC decides either way.
        guard let inviteID = DeviceTrustManager.bytes(request.inviteID, count: 8) else {
            return .refuse("the request's invite id is not 8 bytes of hex or base64")
        }
        guard let invite = invites[ByteEncoding.hex(inviteID)] else {
            return .refuse(
                "no invite of this trust root has this id: the code was mistyped, or made by another trust root")
        }
        guard invite.expiresAt > now || invite.usedAt != nil else {
            return .refuse("the invite expired (invites live 10 minutes): make a new one with `trust invite`")
        }
        guard
            let x25519 = DeviceTrustManager.bytes(request.x25519PublicKey, count: 32).flatMap({
                try? X25519PublicKey(rawRepresentation: $0)
            }), x25519.isCanonicalAndNotLowOrder,
            let ed25519 = DeviceTrustManager.bytes(request.ed25519PublicKey, count: 32).flatMap({
                try? Ed25519PublicKey(rawRepresentation: $0)
            }), ed25519.isCanonicalAndNotSmallOrder,
            let mac = DeviceTrustManager.bytes(request.mac, count: 32)
        else { return .refuse("the request's keys or MAC are malformed") }
        guard
            PairingMAC.isValid(
                mac, secret: invite.secret, inviteID: inviteID, userID: user, deviceID: request.deviceID,
                x25519PublicKey: x25519, ed25519PublicKey: ed25519)
        else {
            return .refuse(
                "the MAC does not verify: the request was not made with this invite's code (mistyped, or forged)")
        }
        guard invite.usedAt == nil else {
            return .refuse(DeviceTrustManager.usedInviteReason(invite, requestedBy: request.deviceID))
        }
        guard let device = devices.first(where: { $0.id == request.deviceID }) else {
            return .refuse("the device has no row")
        }
        guard let text = device.publicKey, let rowKey = try? X25519PublicKey(base64: text), rowKey == x25519 else {
            return .refuse("the request's key is not the device row's")
        }
        guard !remembered.contains(device.id), state.devices[device.id]?.isRevoked != true,
            !state.burnedIDs.contains(device.id), !state.burnedX25519.contains(Data(x25519.rawRepresentation)),
            !state.burnedEd25519.contains(Data(ed25519.rawRepresentation))
        else { return .refuse("the device, or one of its keys, was revoked") }
        // Never more than the row asks for: a row that asks to be a viewer is certified as one.
        let role: DeviceTrustRole =
            device.deviceRole == .temporaryViewer ? .temporaryViewer : (invite.deviceRole ?? .trustedExecutor)
        let type: DeviceType
        if let expected = invite.deviceType {
            guard device.deviceType == expected else {
                return .refuse(
                    "the device's row says \(device.deviceType?.rawValue ?? "no type"), but the invite was opened for "
                        + "\(expected.rawValue) (the row is the server's: possible attack)")
            }
            type = expected
        } else {
            guard let named = device.deviceType else { return .refuse("the device's row names no device type") }
            guard let confirm else {
                return .pending(
                    PendingPairing(
                        requestID: request.id, deviceID: device.id, name: device.name, deviceType: named, role: role,
                        inviteID: invite.id))
            }
            guard await confirm(PairingCandidate(deviceID: device.id, name: device.name, deviceType: named, role: role))
            else { return .refuse("the person did not confirm the device") }
            type = named
        }
        return .certify(
            DeviceCertificate(
                userID: user, deviceID: device.id, x25519PublicKey: x25519, ed25519PublicKey: ed25519,
                deviceType: type.rawValue, deviceRole: role.rawValue,
                issuedAt: UInt64(max(0, now.timeIntervalSince1970))),
            invite)
    }
}
