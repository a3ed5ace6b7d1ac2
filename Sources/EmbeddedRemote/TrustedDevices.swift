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

    /// What a stored entry says of the devices it names (``TrustLogMarks``, as
    /// `private.tl_record_devices` reads it); an entry that does not parse, a mark without a device.
    static func marks(of entry: String, epoch: UInt32, user: UUID) -> [TrustGateRules.Mark] {
        guard let named = TrustLogMarks.of(entry, userID: user) else {
            return [.init(epoch: epoch, device: nil, revokes: true)]
        }
        return named.map { .init(epoch: epoch, device: $0.deviceID.canonical, revokes: $0.revokes) }
    }

    /// Every device a revoke or a succession of any epoch revoked (`private.trust_log_devices`'
    /// `revoked_seq`): a revocation is never undone, and a device revoked before its credential
    /// was registered never registers one. Entries that do not parse revoke nobody here; they
    /// trust nobody in ``of(_:user:)``. A file without the trust log's table has revoked nobody.
    static func revokedInAnyEpoch(_ db: Database, user: String) throws -> Set<String> {
        guard let userID = UUID(uuidString: user), try db.tableExists("trust_log") else { return [] }
        let entries = try String.fetchAll(db, sql: "SELECT entry FROM trust_log WHERE user_id = ?", arguments: [user])
        return Set(entries.flatMap { revoked(by: $0, user: userID) }.map(\.canonical))
    }

    /// The devices a stored entry revokes (a revoke's, a succession's); none for the rest, or
    /// when it does not parse.
    static func revoked(by entry: String, user: UUID) -> [UUID] {
        (TrustLogMarks.of(entry, userID: user) ?? []).filter(\.revokes).map(\.deviceID)
    }
}
