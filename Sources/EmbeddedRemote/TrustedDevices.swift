import DeviceTrust
import Foundation
import GRDB
import SyncModel

/// The devices approvals reach and accept answers from, read from the trust log as the
/// PostgreSQL remote reads it (`*_approval_recipients.sql`): in the epoch in force (the current
/// one, or a pending reset whose 72 hours passed), every device a genesis or a certify
/// certifies, less every device a revoke or a succession revokes. A revocation is never undone.
/// An entry that does not parse leaves nobody trusted, and a user without a log trusts nobody
/// (fail closed).
enum TrustedDevices {
    static func of(_ db: Database, user: String) throws -> Set<String> {
        guard let state = try TrustLogServerState.fetch(db, user: user) else { return [] }
        var epoch = state.current
        if let pending = state.pending,
            pending.createdAt + TrustLogEpochs.resetDelay <= EmbeddedRemoteStore.epochSeconds
        {
            epoch = pending.epoch
        }
        guard let epoch, let userID = UUID(uuidString: user) else { return [] }
        let entries = try String.fetchAll(
            db, sql: "SELECT entry FROM trust_log WHERE user_id = ? AND epoch = ? ORDER BY seq",
            arguments: [user, Int64(epoch)])
        var certified: Set<String> = []
        var revoked: Set<String> = []
        for text in entries {
            guard let body = body(text, user: userID) else { return [] }
            switch body {
            case .genesis(let genesis): certified.insert(genesis.certificate.deviceID.canonical)
            case .certify(let certificate):
                if !revoked.contains(certificate.deviceID.canonical) {
                    certified.insert(certificate.deviceID.canonical)
                }
            default: revoked.formUnion(revocations(body).map(\.canonical))
            }
        }
        return certified.subtracting(revoked)
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
