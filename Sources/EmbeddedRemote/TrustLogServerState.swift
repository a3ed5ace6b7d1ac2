import DeviceTrust
import Foundation
import GRDB
import RemoteRules

/// The embedded remote's private trust-log state of one user (trust-log.md, "The remote"): the
/// current epoch, the highest used, the pending reset and the last reset request.
struct TrustLogServerState: Sendable {
    struct Pending: Sendable, Hashable {
        var epoch: UInt32
        var hash: [UInt8]
        var createdAt: UInt64
    }

    let user: String
    var current: UInt32?
    var highestEpoch: UInt32
    var pending: Pending?
    /// Unix seconds.
    var lastResetRequest: UInt64?

    static func fetch(_ db: Database, user: String) throws -> TrustLogServerState? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM trust_log_state WHERE user_id = ?", arguments: [user])
        else { return nil }
        var pending: Pending?
        if let epoch = row["pending_epoch"] as Int64?, let hash = row["pending_hash"] as Data?,
            let created = row["pending_created_at"] as Int64?
        {
            pending = Pending(epoch: UInt32(epoch), hash: Array(hash), createdAt: UInt64(created))
        }
        return TrustLogServerState(
            user: user, current: (row["current_epoch"] as Int64?).map(UInt32.init),
            highestEpoch: UInt32(row["highest_epoch"] as Int64), pending: pending,
            lastResetRequest: (row["last_reset_request"] as Double?).map { UInt64(max(0, $0)) })
    }

    /// The pending reset as ``TrustGateRules`` reads it: its age now.
    var pendingReset: TrustGateRules.PendingReset? {
        pending.map {
            .init(
                epoch: $0.epoch, age: Int64(clamping: EmbeddedRemoteStore.epochSeconds) - Int64(clamping: $0.createdAt))
        }
    }

    /// The epoch whose entries say who is trusted (``TrustGateRules/epochInForce(current:pending:)``).
    var inForce: UInt32? { TrustGateRules.epochInForce(current: current, pending: pendingReset) }

    /// The state, a pending reset whose 72 hours passed made current first (its prior epoch is
    /// then closed: only the current epoch takes appends).
    static func settled(_ db: Database, user: String) throws -> TrustLogServerState {
        var state = try fetch(db, user: user) ?? TrustLogServerState(user: user, highestEpoch: 0)
        if let reset = state.pendingReset, reset.tookEffect {
            state.current = reset.epoch
            state.pending = nil
            try state.save(db)
        }
        return state
    }

    func save(_ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO trust_log_state (user_id, current_epoch, highest_epoch, pending_epoch, pending_hash,
                    pending_created_at, last_reset_request) VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (user_id) DO UPDATE SET current_epoch = excluded.current_epoch,
                    highest_epoch = excluded.highest_epoch, pending_epoch = excluded.pending_epoch,
                    pending_hash = excluded.pending_hash, pending_created_at = excluded.pending_created_at,
                    last_reset_request = excluded.last_reset_request
                """,
            arguments: [
                user, current.map { Int64($0) }, Int64(highestEpoch), pending.map { Int64($0.epoch) },
                pending.map { Data($0.hash) }, pending.map { Int64($0.createdAt) }, lastResetRequest.map { Double($0) },
            ])
    }

    /// The state as ``TrustLogCallRules`` reads it: with whether the user has a legacy identity
    /// key, the seconds since the last reset request and the current epoch's head seq.
    func callState(_ db: Database) throws -> TrustLogCallRules.State {
        let legacy =
            try Bool.fetchOne(
                db, sql: "SELECT EXISTS (SELECT 1 FROM user_identity_keys WHERE user_id = ?)", arguments: [user])
            ?? false
        let head = try current.flatMap { try Self.head(db, user: user, epoch: $0) }
        return TrustLogCallRules.State(
            current: current, highestEpoch: highestEpoch, pending: pending != nil, legacyIdentity: legacy,
            lastResetAge: lastResetRequest.map { Int64(EmbeddedRemoteStore.epochSeconds) - Int64($0) },
            headSeq: head?.seq)
    }

    /// An epoch's head, or `nil` when it has no rows.
    static func head(_ db: Database, user: String, epoch: UInt32) throws -> TrustLogServerRules.Head? {
        guard
            let row = try Row.fetchOne(
                db, sql: "SELECT * FROM trust_log_heads WHERE user_id = ? AND epoch = ?",
                arguments: [user, Int64(epoch)])
        else { return nil }
        return TrustLogServerRules.Head(
            seq: UInt64(row["seq"] as Int64), hash: Array(row["hash"] as Data),
            createdAt: UInt64(row["created_at"] as Int64), lastProof: Array(row["last_proof"] as Data))
    }
}
