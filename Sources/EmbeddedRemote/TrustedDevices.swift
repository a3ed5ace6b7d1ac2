import DeviceTrust
import Foundation
import GRDB
import RemoteRules
import SyncModel

/// The devices approvals reach and accept answers from, read from the trust log as the
/// PostgreSQL remote reads it (`private.is_trusted_device`): each entry of the epoch in force
/// becomes marks, and ``TrustGateRules`` says whom they certify (a revocation is never undone; an
/// entry that does not parse leaves nobody trusted; a user without a log trusts nobody).
enum TrustedDevices {
    static func of(_ db: Database, user: String) throws -> Set<String> {
        guard let epoch = try TrustLogServerState.fetch(db, user: user)?.inForce, let userID = UUID(uuidString: user)
        else { return [] }
        let entries = try String.fetchAll(
            db, sql: "SELECT entry FROM trust_log WHERE user_id = ? AND epoch = ? ORDER BY seq",
            arguments: [user, Int64(epoch)])
        return TrustGateRules.trustedDevices(
            marks: entries.flatMap { Self.marks(of: $0, epoch: epoch, user: userID) }, inForce: epoch)
    }

    /// What a stored entry says of the devices it names (`private.tl_record_devices`): a
    /// genesis's or a certify's device certified, a revoke's or a succession's revoked; an entry
    /// that does not parse, a mark without a device.
    static func marks(of entry: String, epoch: UInt32, user: UUID) -> [TrustGateRules.Mark] {
        guard let body = body(entry, user: user) else { return [.init(epoch: epoch, device: nil, revokes: true)] }
        switch body {
        case .genesis(let genesis):
            return [.init(epoch: epoch, device: genesis.certificate.deviceID.canonical, revokes: false)]
        case .certify(let certificate):
            return [.init(epoch: epoch, device: certificate.deviceID.canonical, revokes: false)]
        default: return revocations(body).map { .init(epoch: epoch, device: $0.canonical, revokes: true) }
        }
    }

    /// Every device a revoke or a succession of any epoch revoked (`private.trust_log_devices`'
    /// `revoked_seq`): a revocation is never undone, and a device revoked before its credential
    /// was registered never registers one. Entries that do not parse revoke nobody here; they
    /// trust nobody in ``of(_:user:)``. A file without the trust log's table has revoked nobody.
    static func revokedInAnyEpoch(_ db: Database, user: String) throws -> Set<String> {
        guard let userID = UUID(uuidString: user), try db.tableExists("trust_log") else { return [] }
        var revoked: Set<String> = []
        for text in try String.fetchAll(db, sql: "SELECT entry FROM trust_log WHERE user_id = ?", arguments: [user]) {
            revoked.formUnion(body(text, user: userID).map(revocations)?.map(\.canonical) ?? [])
        }
        return revoked
    }

    /// A stored entry's body (base64 of the entry as the log holds it); `nil` when it does not
    /// parse.
    static func body(_ entry: String, user: UUID) -> TrustLogBody? {
        guard let data = Data(base64Encoded: entry), let parsed = try? TrustLogEntry.parse(Array(data)).entry else {
            return nil
        }
        return try? TrustLogBody.parse(parsed.body, of: parsed.type, userID: user)
    }

    /// The devices an entry revokes: a revoke's, a succession's; none for the rest.
    static func revocations(_ body: TrustLogBody) -> [UUID] {
        switch body {
        case .revoke(let revocation): [revocation.deviceID]
        case .succession(let succession): succession.revocations.map(\.deviceID)
        default: []
        }
    }
}
