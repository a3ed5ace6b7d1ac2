import DeviceTrust
import Foundation
import GRDB
import RemoteContract
import RemoteRules
import SecretCrypto
import SyncModel

/// The trust log on the embedded remote (trust-log.md, "The remote"): the same tables, the same
/// rules **E** (``TrustLogServerRules``, the function the SQL migration mirrors) and the same
/// SQLSTATEs, each call one SQLite transaction (SQLite runs one writer at a time: the row lock).
extension EmbeddedRemoteStore: TrustLogRemote {
    // MARK: - Reads

    public func trustLogRows(epoch: UInt32, fromSeq: UInt64) async throws -> [TrustLogRow] {
        return try await read("reading the trust log", gate: .registered, else: []) { db in
            return try Row.fetchAll(
                db,
                sql: "SELECT * FROM trust_log WHERE user_id = ? AND epoch = ? AND seq >= ? ORDER BY epoch, seq",
                arguments: [self.me, Int64(epoch), Int64(fromSeq)]
            ).map { try TrustLogRow(json: Self.json($0)) }
        }
    }

    public func trustLogGeneses() async throws -> [TrustLogRow] {
        return try await read("reading the trust log", gate: .registered, else: []) { db in
            return try Row.fetchAll(
                db, sql: "SELECT * FROM trust_log WHERE user_id = ? AND seq = 0 ORDER BY epoch", arguments: [self.me]
            ).map { try TrustLogRow(json: Self.json($0)) }
        }
    }

    public func trustLogWitnesses(epoch: UInt32) async throws -> [TrustLogWitnessRow] {
        return try await read("reading the trust log's witnesses", gate: .registered, else: []) { db in
            return try Row.fetchAll(
                db,
                sql: "SELECT * FROM trust_log_witnesses WHERE user_id = ? AND epoch = ? ORDER BY device_id, seq",
                arguments: [self.me, Int64(epoch)]
            ).map { try TrustLogWitnessRow(json: Self.json($0)) }
        }
    }

    /// The head the feeds carry (`nil` before any genesis).
    func trustLogHead(_ db: Database) throws -> TrustLogHead? {
        guard let state = try TrustLogServerState.fetch(db, user: me), state.highestEpoch > 0 else { return nil }
        let head = try state.current.flatMap { try TrustLogServerState.head(db, user: me, epoch: $0) }
        let pending = state.pendingReset.flatMap { $0.tookEffect ? nil : $0.epoch }
        return TrustLogHead(
            epoch: state.current, seq: head?.seq,
            hash: head.map { $0.hash.map { String(format: "%02x", $0) }.joined() },
            highestEpoch: state.highestEpoch, pendingEpoch: pending)
    }

    // MARK: - Writes

    public func appendTrustEntries(epoch: UInt32, firstSeq: UInt64, _ entries: [TrustLogAppend]) async throws {
        let me = self.me, user = userID
        try await write("appending to the trust log") { db in
            _ = try self.caller(db, trusted: false)
            var state = try TrustLogServerState.settled(db, user: me)
            try Self.refuse(
                TrustLogCallRules.refusal(
                    .append, freshSignIn: false, state: try state.callState(db), entries: entries.count, epoch: epoch,
                    firstSeq: firstSeq))
            try Self.append(db, user: user, state: &state, epoch: epoch, entries[...])
        }
    }

    public func startTrustLog(_ entries: [TrustLogAppend]) async throws {
        let me = self.me, user = userID, fresh = isFreshSignIn
        try await write("starting the trust log") { db in
            _ = try self.caller(db, trusted: false)
            var state = try TrustLogServerState.settled(db, user: me)
            try Self.refuse(
                TrustLogCallRules.refusal(
                    .start, freshSignIn: fresh, state: try state.callState(db), entries: entries.count))
            let genesis = try Self.check(db, user: user, epoch: 1, entries[0], head: nil)
            try Self.refuse(TrustLogCallRules.placementRefusal(.start, prior: genesis.priorEpoch))
            try Self.checkLegacy(db, user: user, genesis: genesis, entries: entries)
            try Self.store(db, user: me, genesis, entries[0])
            state.current = 1
            state.highestEpoch = max(state.highestEpoch, 1)
            try state.save(db)
            try Self.append(db, user: user, state: &state, epoch: 1, entries.dropFirst())
        }
    }

    public func requestIdentityReset(_ genesis: TrustLogAppend, accept: TrustLogAppend?) async throws {
        let me = self.me, user = userID, fresh = isFreshSignIn
        try await write("requesting an identity reset") { db in
            _ = try self.caller(db, trusted: false)
            var state = try TrustLogServerState.settled(db, user: me)
            try Self.refuse(
                TrustLogCallRules.refusal(
                    accept == nil ? .reset : .resetAccept, freshSignIn: fresh, state: try state.callState(db)))
            let epoch = max(2, state.highestEpoch + 1)
            let checked = try Self.check(db, user: user, epoch: epoch, genesis, head: nil)
            try Self.refuse(
                TrustLogCallRules.placementRefusal(
                    .reset, prior: checked.priorEpoch, current: state.current, withAccept: accept != nil))
            // (An accept while no epoch is current was refused above.)
            if let accept, let current = state.current {
                let head = try TrustLogServerState.head(db, user: me, epoch: current)
                let answer = try Self.check(db, user: user, epoch: current, accept, head: head)
                try Self.refuse(Self.placement(.accept, answer.answer, naming: (epoch, checked.hash)))
                try Self.store(db, user: me, answer, accept)
                try Self.store(db, user: me, checked, genesis)
                state.current = epoch
            } else {
                try Self.store(db, user: me, checked, genesis)
                state.pending = .init(epoch: epoch, hash: checked.hash, createdAt: checked.createdAt)
            }
            state.highestEpoch = epoch
            state.lastResetRequest = Self.epochSeconds
            try state.save(db)
        }
    }

    public func publishWitness(deviceID: UUID, body: String, signature: String) async throws {
        let me = self.me, user = userID
        try await write("publishing a witness") { db in
            _ = try self.acting(db, deviceID, trusted: true)
            guard let witness = try? TrustLogWitness.parse(body),
                (try? ByteEncoding.bytes(base64: signature))?.count == 64
            else { throw Self.invalid("the witness is not 155 bytes and a 64-byte signature, in base64") }
            let state = try TrustLogServerState.settled(db, user: me)
            let head = try state.current.flatMap { try TrustLogServerState.head(db, user: me, epoch: $0) }
            let claim = WitnessRules.Claim(
                user: witness.userID.canonical, device: witness.deviceID.canonical, epoch: witness.epoch,
                seq: witness.seq, seenAt: witness.seenAt)
            let verdict = WitnessRules.verdict(
                on: claim, signature: signature, caller: user.canonical, device: deviceID.canonical,
                currentEpoch: state.current, headSeq: head?.seq,
                held: try Self.heldWitnesses(db, user: me, device: deviceID.canonical, epoch: state.current),
                now: Int64(Self.epochSeconds))
            switch verdict {
            case .foreign: throw Self.refused("the witness names another user or another device than the caller")
            case .outOfRange:
                throw Self.invalid(
                    "a witness names the current epoch, a seq up to its head and at least the device's last, and now")
            case .held: return
            case .store(let evicting):
                for old in evicting {
                    try db.execute(
                        sql: """
                            DELETE FROM trust_log_witnesses
                            WHERE user_id = ? AND device_id = ? AND epoch = ? AND seq = ? AND signature = ?
                            """,
                        arguments: [me, deviceID.canonical, Int64(witness.epoch), Int64(witness.seq), old])
                }
                try db.execute(
                    sql: """
                        INSERT INTO trust_log_witnesses (user_id, device_id, epoch, seq, body, signature, created_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        me, deviceID.canonical, Int64(witness.epoch), Int64(witness.seq), body, signature, Self.now,
                    ])
            }
        }
    }

    /// The device's witnesses in the epoch (none without one), with their ages as the rule takes them.
    static func heldWitnesses(
        _ db: Database, user: String, device: String, epoch: UInt32?
    ) throws -> [WitnessRules.Held] {
        guard let epoch else { return [] }
        let now = Date()
        return try Row.fetchAll(
            db,
            sql:
                "SELECT seq, signature, created_at FROM trust_log_witnesses WHERE user_id = ? AND device_id = ? AND epoch = ?",
            arguments: [user, device, Int64(epoch)]
        ).map { row in
            // A stored time that does not parse is the oldest: it gives way first.
            let stored = Timestamp.parse(row["created_at"] as String) ?? .distantPast
            return WitnessRules.Held(
                seq: UInt64(row["seq"] as Int64), signature: row["signature"],
                age: now.timeIntervalSince(stored))
        }
    }

    // MARK: - The rules

    /// What ``TrustLogCallRules/placementRefusal(_:prior:current:withAccept:verdict:namesReset:)``
    /// says of a reset answer, or another entry (`answer` nil), where it goes; `reset`: the one it
    /// must name (this reset for an accept, the pending one for an append; `nil`: none).
    static func placement(
        _ placement: TrustLogCallRules.Placement, _ answer: ResetAnswer?, naming reset: (epoch: UInt32, hash: [UInt8])?
    ) -> TrustLogCallRules.PlacementRefusal? {
        let names = answer.map { answer in
            reset.map { $0.epoch == answer.resetEpoch && $0.hash == answer.resetGenesisHash } ?? false
        }
        return TrustLogCallRules.placementRefusal(
            placement, verdict: answer.map { $0.verdict == .accept ? .accept : .veto }, namesReset: names ?? false)
    }

    static func refusal(_ refusal: DeviceTrustError) -> RemoteStoreError {
        raised(refusal.sqlState, refusal.message)
    }

    /// Rules **E** for one entry of `epoch`.
    static func check(
        _ db: Database, user: UUID, epoch: UInt32, status: TrustLogServerRules.EpochStatus = .open,
        _ item: TrustLogAppend, head: TrustLogServerRules.Head?
    ) throws -> TrustLogServerRules.Checked {
        do {
            return try TrustLogServerRules.check(
                item.entry, backup: item.backup, userID: user, epoch: epoch, epochStatus: status, head: head,
                now: epochSeconds)
        } catch {
            throw refusal(error)
        }
    }

    /// Appends entries after the named epoch's head; a reset answer must veto the pending reset.
    static func append(
        _ db: Database, user: UUID, state: inout TrustLogServerState, epoch: UInt32, _ items: ArraySlice<TrustLogAppend>
    ) throws {
        let me = user.canonical
        let status = TrustLogServerRules.epochStatus(
            named: epoch, current: state.current, pending: state.pending?.epoch,
            hasHead: try TrustLogServerState.head(db, user: me, epoch: epoch) != nil)
        for item in items {
            let head = try TrustLogServerState.head(db, user: me, epoch: epoch)
            let checked = try check(db, user: user, epoch: epoch, status: status, item, head: head)
            try refuse(placement(.append, checked.answer, naming: state.pending.map { ($0.epoch, $0.hash) }))
            if checked.answer != nil, let pending = state.pending {
                state.pending = nil
                try state.save(db)
                try db.execute(
                    sql: "DELETE FROM trust_log_heads WHERE user_id = ? AND epoch = ?",
                    arguments: [me, Int64(pending.epoch)])
            }
            try store(db, user: me, checked, item)
        }
    }

    static func store(
        _ db: Database, user: String, _ checked: TrustLogServerRules.Checked, _ item: TrustLogAppend
    )
        throws
    {
        try db.execute(
            sql: "INSERT INTO trust_log (user_id, epoch, seq, entry, backup, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            arguments: [user, Int64(checked.epoch), Int64(checked.seq), item.entry, item.backup, now])
        try endRevokedDevices(db, user: user, entry: item.entry)
        try db.execute(
            sql: """
                INSERT INTO trust_log_heads (user_id, epoch, seq, hash, created_at, last_proof) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (user_id, epoch) DO UPDATE SET seq = excluded.seq, hash = excluded.hash,
                    created_at = excluded.created_at, last_proof = excluded.last_proof
                """,
            arguments: [
                user, Int64(checked.epoch), Int64(checked.seq), Data(checked.head.hash), Int64(checked.createdAt),
                Data(checked.head.lastProof),
            ])
    }

    /// A legacy identity starts its log with its key, a root the legacy tables certify and do not
    /// revoke (the same keys and type), then a succession.
    static func checkLegacy(
        _ db: Database, user: UUID, genesis: TrustLogServerRules.Checked, entries: [TrustLogAppend]
    ) throws {
        guard try db.tableExists("user_identity_keys"),
            let legacy = try String.fetchOne(
                db, sql: "SELECT public_key FROM user_identity_keys WHERE user_id = ?", arguments: [user.canonical])
        else { return }
        let refused = invalid("a legacy identity starts its log with its key, a certified root, then a succession")
        guard let key = try? ByteEncoding.bytes(base64: legacy), key == genesis.genesisIdentityKey,
            let body = try String.fetchOne(
                db, sql: "SELECT body FROM device_certificates WHERE user_id = ? AND device_id = ?",
                arguments: [user.canonical, genesis.author]),
            try String.fetchOne(
                db, sql: "SELECT device_id FROM device_revocations WHERE user_id = ? AND device_id = ?",
                arguments: [user.canonical, genesis.author]) == nil,
            let row = try? ByteEncoding.bytes(base64: body), let fields = certificateFields(row),
            fields == genesis.genesisCertificate.flatMap(certificateFields), entries.count >= 2,
            let second = try? ByteEncoding.bytes(base64: entries[1].entry), second.count > 102,
            second[102] == TrustLogEntryType.succession.rawValue
        else { throw refused }
    }

    /// A certificate body's device id, keys and type, as the SQL migration compares them.
    static func certificateFields(_ bytes: [UInt8]) -> [UInt8]? {
        let prefix = Array(DeviceCertificate.prefix.utf8) + [0]
        guard bytes.count >= 30 + 37 + 37 + 64 + 2 + 8, Array(bytes[0..<30]) == prefix else { return nil }
        let typeLength = Int(bytes[168])
        guard bytes.count >= 169 + typeLength + 1 else { return nil }
        return Array(bytes[67..<103]) + Array(bytes[104..<168]) + Array(bytes[169..<169 + typeLength])
    }
}
