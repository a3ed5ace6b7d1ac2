import Foundation
import GRDB
import SecretCrypto
import SyncModel

/// The trust log as this device verified it (trust-log.md, "Verification"): the epoch, its head, the
/// verifier's state after the head (opaque here: the engine encodes it), the highest epoch the
/// server reported, and the seq this device last witnessed.
public struct TrustLogPin: Sendable, Hashable {
    public var epoch: UInt32
    public var headSeq: UInt64
    public var headHash: [UInt8]
    /// The verifier's state after the head, as the engine encoded it.
    public var state: Data
    /// The highest epoch the remote reported when the pin was written.
    public var highestEpoch: UInt32
    /// The seq of this device's last published witness in the epoch.
    public var witnessedSeq: UInt64?

    public init(
        epoch: UInt32, headSeq: UInt64, headHash: [UInt8], state: Data, highestEpoch: UInt32, witnessedSeq: UInt64?
    ) {
        self.epoch = epoch
        self.headSeq = headSeq
        self.headHash = headHash
        self.state = state
        self.highestEpoch = highestEpoch
        self.witnessedSeq = witnessedSeq
    }
}

/// One verified entry of the pinned epoch: its stored text and `entry_hash`.
public struct PinnedLogEntry: Sendable, Hashable {
    public var seq: UInt64
    public var text: String
    public var hash: [UInt8]

    public init(seq: UInt64, text: String, hash: [UInt8]) {
        self.seq = seq
        self.text = text
        self.hash = hash
    }
}

extension DeviceStore {
    /// The pin, or `nil` when this device has verified no trust log.
    public func trustLogPin() async throws -> TrustLogPin? {
        try await mapErrors("reading the trust log's pin") {
            try await pool.read { db in
                guard let row = try Row.fetchOne(db, sql: "SELECT * FROM trust_log_pin") else { return nil }
                return TrustLogPin(
                    epoch: UInt32(row["epoch"] as Int64), headSeq: UInt64(row["head_seq"] as Int64),
                    headHash: Array(row["head_hash"] as Data), state: row["state"],
                    highestEpoch: UInt32(row["highest_epoch"] as Int64),
                    witnessedSeq: (row["witnessed_seq"] as Int64?).map { UInt64($0) })
            }
        }
    }

    /// Saves a pin and the entries verified since the last one, in one transaction. With
    /// `replacing`, the entries of every other epoch go (a new pin: join, recovery).
    public func saveTrustLogPin(_ pin: TrustLogPin, entries: [PinnedLogEntry], replacing: Bool) async throws {
        try await mapErrors("saving the trust log's pin") {
            try await pool.write { db in
                if replacing {
                    try db.execute(sql: "DELETE FROM trust_log_entries WHERE epoch <> ?", arguments: [Int64(pin.epoch)])
                }
                let insert = try db.makeStatement(
                    sql: "INSERT OR REPLACE INTO trust_log_entries (epoch, seq, entry, hash) VALUES (?, ?, ?, ?)")
                for entry in entries {
                    try insert.execute(arguments: [Int64(pin.epoch), Int64(entry.seq), entry.text, Data(entry.hash)])
                }
                try db.execute(
                    sql: """
                        INSERT OR REPLACE INTO trust_log_pin
                            (singleton, epoch, head_seq, head_hash, state, highest_epoch, witnessed_seq, updated_at)
                        VALUES (1, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        Int64(pin.epoch), Int64(pin.headSeq), Data(pin.headHash), pin.state, Int64(pin.highestEpoch),
                        pin.witnessedSeq.map { Int64($0) }, Date().epoch,
                    ])
            }
        }
    }

    /// The `entry_hash` this device verified at (`epoch`, `seq`), or `nil`.
    public func trustLogEntryHash(epoch: UInt32, seq: UInt64) async throws -> [UInt8]? {
        try await mapErrors("reading the trust log") {
            try await pool.read { db in
                try
                    (Data.fetchOne(
                        db, sql: "SELECT hash FROM trust_log_entries WHERE epoch = ? AND seq = ?",
                        arguments: [Int64(epoch), Int64(seq)])).map(Array.init)
            }
        }
    }

    /// The verified entries of `epoch` from `seq` on, in order.
    public func trustLogEntries(epoch: UInt32, fromSeq seq: UInt64 = 0) async throws -> [PinnedLogEntry] {
        try await mapErrors("reading the trust log") {
            try await pool.read { db in
                try Row.fetchAll(
                    db, sql: "SELECT * FROM trust_log_entries WHERE epoch = ? AND seq >= ? ORDER BY seq",
                    arguments: [Int64(epoch), Int64(seq)]
                ).map {
                    PinnedLogEntry(seq: UInt64($0["seq"] as Int64), text: $0["entry"], hash: Array($0["hash"] as Data))
                }
            }
        }
    }

    /// Records the seq this device witnessed in the pinned epoch.
    public func setWitnessedSeq(_ seq: UInt64) async throws {
        try await mapErrors("saving the trust log's pin") {
            try await pool.write { db in
                try db.execute(sql: "UPDATE trust_log_pin SET witnessed_seq = ?", arguments: [Int64(seq)])
            }
        }
    }

    /// Forgets the pin and the entries (before a new pairing of this device).
    public func removeTrustLogPin() async throws {
        try await mapErrors("removing the trust log's pin") {
            try await pool.write { db in
                try db.execute(sql: "DELETE FROM trust_log_pin")
                try db.execute(sql: "DELETE FROM trust_log_entries")
            }
        }
    }

    // MARK: - The identity keys of a root

    /// `identity.next.key` in the default ``FileKeyStore``: a succession's new seed, or one
    /// `trust recover` opened, written before the append and moved over `identity.key` once it
    /// is accepted.
    public var nextIdentityKeyPath: String {
        directory.appendingPathComponent(DeviceKeyName.nextIdentity.fileName).path
    }

    /// Stores a seed under `name` (atomic, refused when one is there).
    public func writeIdentitySeed(_ key: Ed25519PrivateKey, to name: DeviceKeyName) throws {
        try keys.createKey(name, key.seedRepresentation)
    }

    /// The seed under `name`, or `nil` when there is none.
    ///
    /// - Throws: When the key store holds one it cannot use (for files: too open, a symlink, the
    ///   wrong size or another user's).
    public func identitySeed(at name: DeviceKeyName) throws -> Ed25519PrivateKey? {
        try keys.key(name).map { try Ed25519PrivateKey(seed: $0) }
    }

    /// Moves the seed under `name` over the identity key (the key in force changed, and was accepted).
    public func promoteIdentitySeed(from name: DeviceKeyName) throws {
        try keys.moveKey(name, to: .identity)
    }

    /// Removes a seed (a refused append, a vetoed reset, a retired key).
    public func removeIdentitySeed(at name: DeviceKeyName) {
        try? keys.removeKey(name)
    }

    // MARK: - A new recovery key until it is shown

    /// Keeps a new recovery key's 32 bytes, 0600, before the append that binds it; replaces one
    /// kept before.
    public func stageRecoveryKey(_ bytes: SecureBytes) throws {
        try? keys.removeKey(.unshownRecoveryKey)
        try keys.createKey(.unshownRecoveryKey, bytes)
    }

    /// The recovery key kept until shown, or `nil`.
    ///
    /// - Throws: When the key store holds one it cannot use.
    public func unshownRecoveryKey() throws -> SecureBytes? {
        try keys.key(.unshownRecoveryKey)
    }

    /// Forgets the recovery key kept until shown (shown, refused, or replaced since).
    public func removeUnshownRecoveryKey() {
        try? keys.removeKey(.unshownRecoveryKey)
    }

    /// `recovery.unshown.key` in the default ``FileKeyStore``.
    public var unshownRecoveryKeyPath: String {
        directory.appendingPathComponent(DeviceKeyName.unshownRecoveryKey.fileName).path
    }

    /// The epoch of every reset seed held, ascending.
    public func resetIdentitySeedEpochs() -> [UInt32] {
        (try? keys.resetEpochs()) ?? []
    }
}
