import Foundation
import SecretCrypto

/// What the server checks of every entry it stores (trust-log.md, "The remote", **E**), without
/// signatures: shapes, the user, positions, times and the append chain. The embedded remote
/// runs exactly this; the SQL migration runs the same steps; a client runs it (without the
/// clock window) to count a reset's answers "by the chain" in an epoch that does not verify.
public enum TrustLogServerRules {
    /// What the epoch a call names is, for step (c); the raw value is the SQL's `epoch_status`.
    public enum EpochStatus: Int, Sendable, Hashable {
        /// The epoch the call may write.
        case open = 0
        /// Pending or closed: 55000.
        case pendingOrClosed = 1
        /// Neither current nor pending nor closed: 22023.
        case notCurrent = 2
    }

    /// What an append's named epoch is (`private.rule_trust_epoch_status`): open when it is the
    /// current one; pending or closed when it is the pending reset's, before the current one, or
    /// has rows; otherwise not current.
    ///
    /// - Parameters:
    ///   - named: The epoch the append names.
    ///   - current: The current epoch (`nil` before a log, or while none is current).
    ///   - pending: The pending reset's epoch, if one waits.
    ///   - hasHead: Whether the named epoch has rows (a head).
    public static func epochStatus(named: UInt32, current: UInt32?, pending: UInt32?, hasHead: Bool) -> EpochStatus {
        if named == current { return .open }
        if named == pending || current.map({ named < $0 }) == true || hasHead { return .pendingOrClosed }
        return .notCurrent
    }

    /// An epoch's head as the server keeps it.
    public struct Head: Sendable, Hashable, Codable {
        public var seq: UInt64
        public var hash: [UInt8]
        public var createdAt: UInt64
        /// The proof the next entry's `append_proof` must hash to.
        public var lastProof: [UInt8]

        public init(seq: UInt64, hash: [UInt8], createdAt: UInt64, lastProof: [UInt8]) {
            self.seq = seq
            self.hash = hash
            self.createdAt = createdAt
            self.lastProof = lastProof
        }
    }

    /// What the server reads of an entry: the header, and the bodies it parses.
    public struct Checked: Sendable, Hashable {
        public var epoch: UInt32
        public var seq: UInt64
        public var type: UInt8
        public var createdAt: UInt64
        public var hash: [UInt8]
        /// A genesis's prior epoch.
        public var priorEpoch: UInt32?
        /// A reset answer's.
        public var answer: ResetAnswer?
        /// A genesis's identity key and certificate bytes (for the legacy checks of `start_trust_log`).
        public var genesisIdentityKey: [UInt8]?
        public var genesisCertificate: [UInt8]?
        /// The header's author, as text (the server does not parse it further).
        public var author: String
        /// The head after this entry.
        public var head: Head
    }

    static let tbsPrefix = Array(TrustLogEntry.prefix.utf8) + [0]
    static let genesisPrefix = Array(Genesis.prefix.utf8) + [0]

    /// Checks one entry and its backup in the order **E** gives, the first failure deciding the
    /// code.
    ///
    /// - Parameters:
    ///   - text: The entry as stored (base64).
    ///   - backup: The row's backup, or `nil`.
    ///   - userID: `auth.uid()`.
    ///   - epoch: The epoch the function names.
    ///   - epochStatus: (c): what the named epoch is.
    ///   - head: The named epoch's head, `nil` when it has no rows.
    ///   - now: The server's clock; `nil` skips the ±600 s window (a client counting answers).
    public static func check(
        _ text: String, backup: String?, userID: UUID, epoch: UInt32, epochStatus: EpochStatus = .open, head: Head?,
        now: UInt64?
    ) throws(DeviceTrustError) -> Checked {
        // (a) shape
        let (bytes, body, parsed, bodyUser) = try shape(text)
        var checked = parsed
        let type = checked.type
        let me = Array(userID.canonical.utf8)
        // (b) the user
        guard Array(bytes[21..<57]) == me, bodyUser == nil || bodyUser == me else {
            throw DeviceTrustError.refused("42501", "the entry names another user")
        }
        // (c) the epoch
        if epochStatus == .pendingOrClosed { throw DeviceTrustError.refused("55000", "the epoch is pending or closed") }
        guard epochStatus == .open, checked.epoch == epoch else {
            throw .invalid("the entry names another epoch than the current one")
        }
        // (d) the chain's position
        let prev = Array(bytes[70..<102])
        let proof = Array(bytes[148..<180])
        if let head {
            guard checked.seq == head.seq + 1, prev == head.hash else {
                throw DeviceTrustError.refused(
                    "40001", "the entry is not at the head (seq \(head.seq + 1)): read again and rebuild")
            }
        } else {
            guard checked.seq == 0, prev == zero32, proof == zero32 else {
                throw DeviceTrustError.refused("40001", "the epoch is empty: the entry must be its genesis at seq 0")
            }
        }
        // (e) the bound
        guard checked.seq < TrustLogEntry.maxEntries else { throw .invalid("an epoch holds at most 10,000 entries") }
        // (f) types by position
        guard checked.seq == 0 ? type == 0x01 : (0x02...0x06).contains(type) else {
            throw .invalid("entry type \(type) is not allowed at seq \(checked.seq)")
        }
        if checked.seq >= TrustLogEntry.reserveStart, ![0x03, 0x04, 0x06].contains(type) {
            let author = Array(bytes[111..<147])
            let offset = type == 0x02 ? 67 : 59
            guard [0x02, 0x05].contains(type), body.count >= offset + 36, Array(body[offset..<offset + 36]) == author
            else {
                throw DeviceTrustError.refused(
                    "55000", "from seq 9,000 only revocations, successions, reset answers and recovery")
            }
        }
        // (g) time
        if let now {
            guard checked.createdAt >= (now >= 600 ? now - 600 : 0), checked.createdAt <= now + 600 else {
                throw .invalid("created_at is more than 600 s from the server's clock")
            }
        }
        if let head, checked.createdAt < head.createdAt { throw .invalid("created_at is before the head's") }
        // (h) the append chain
        if let head {
            guard SHA256.hash(proof) == head.lastProof else {
                throw .invalid("the append proof does not extend the chain")
            }
        }
        // (i) the backup
        if let backup, !LogBackup.hasShape(backup) { throw .invalid("the backup is not 152 characters of a v2 backup") }
        let last: [UInt8]
        switch type {
        case 0x01: last = Array(body[98..<130])
        case 0x04:
            guard body.count >= 164 else { throw .invalid("the succession body is too short") }
            last = Array(body[132..<164])
        default: last = proof
        }
        checked.head = Head(seq: checked.seq, hash: checked.hash, createdAt: checked.createdAt, lastProof: last)
        return checked
    }

    /// Rule (a): the entry's shape, parsed: its bytes, its body, what is read from them, and the
    /// user a genesis or reset answer names in its body.
    static func shape(
        _ text: String
    ) throws(DeviceTrustError) -> (bytes: [UInt8], body: [UInt8], checked: Checked, bodyUser: [UInt8]?) {
        guard let bytes = try? LogText.decode(text, what: "an entry", maxBytes: TrustLogEntry.maxEntryBytes),
            bytes.count >= TrustLogEntry.headerBytes, Array(bytes[0..<21]) == tbsPrefix, bytes[57] == 0, bytes[147] == 0
        else { throw .invalid("the entry is not canonical base64 of a trust-log entry") }
        let length = Int(bytes[180]) << 8 | Int(bytes[181])
        let type = bytes[102]
        let signatures = type == 0x01 || type == 0x04 ? 128 : 64
        guard (1...TrustLogEntry.maxBodyBytes).contains(length),
            bytes.count == TrustLogEntry.headerBytes + length + signatures
        else { throw .invalid("the entry's length is not the one its body and type give") }
        // A UUID the entry names is canonical lowercase, or the entry does not parse: an uppercase
        // copy of the caller's own id is refused here (22023), not taken for another user (42501).
        guard isCanonicalUUID(bytes[21..<57]), isCanonicalUUID(bytes[111..<147]) else {
            throw .invalid("the entry's user or author is not a canonical lowercase UUID")
        }
        let body = Array(bytes[182..<182 + length])
        var checked = Checked(
            epoch: read32(bytes, 58), seq: read64(bytes, 62), type: type, createdAt: read64(bytes, 103),
            hash: TrustLogEntry.hash(of: bytes), author: String(decoding: bytes[111..<147], as: UTF8.self),
            head: Head(seq: 0, hash: [], createdAt: 0, lastProof: []))
        var bodyUser: [UInt8]?
        if type == 0x01 {
            guard body.count >= 168, Array(body[0..<29]) == genesisPrefix, isCanonicalUUID(body[29..<65]),
                body[65] == 0, Int(body[166]) << 8 | Int(body[167]) == body.count - 168
            else { throw .invalid("the genesis body does not parse") }
            bodyUser = Array(body[29..<65])
            checked.priorEpoch = read32(body, 130)
            checked.genesisIdentityKey = Array(body[66..<98])
            checked.genesisCertificate = Array(body[168...])
        } else if type == 0x06 {
            guard let answer = try? ResetAnswer.parse(body) else { throw .invalid("the reset answer does not parse") }
            bodyUser = Array(body[24..<60])
            checked.answer = answer
        }
        return (bytes, body, checked, bodyUser)
    }

    /// Whether `bytes` are 36 bytes of a UUID in canonical form: lowercase hex, hyphens at 8,
    /// 13, 18 and 23.
    static func isCanonicalUUID(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard bytes.count == 36 else { return false }
        for (offset, byte) in bytes.enumerated() {
            let valid =
                [8, 13, 18, 23].contains(offset)
                ? byte == 0x2D : (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte)
            if !valid { return false }
        }
        return true
    }

    /// The reset answers an epoch's rows hold "by the chain" (trust-log.md, "Epochs and resets"): those
    /// from seq 0 up to the first row that fails **E** without its clock window, as the server
    /// would have stored them; and the head's `created_at` of that prefix.
    public static func answers(
        _ rows: [(entry: String, backup: String?)], userID: UUID, epoch: UInt32
    )
        -> (vetoes: [ResetReference], accepts: [ResetReference], headCreatedAt: UInt64?)
    {
        var head: Head?
        var vetoes: [ResetReference] = []
        var accepts: [ResetReference] = []
        for row in rows {
            guard
                let checked = try? check(
                    row.entry, backup: row.backup, userID: userID, epoch: epoch, head: head, now: nil)
            else { break }
            head = checked.head
            if let answer = checked.answer {
                let reference = ResetReference(epoch: answer.resetEpoch, genesisHash: answer.resetGenesisHash)
                if answer.verdict == .veto { vetoes.append(reference) } else { accepts.append(reference) }
            }
        }
        return (vetoes, accepts, head?.createdAt)
    }

    static func read32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        bytes[at..<at + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    static func read64(_ bytes: [UInt8], _ at: Int) -> UInt64 {
        bytes[at..<at + 8].reduce(0) { $0 << 8 | UInt64($1) }
    }
}

extension DeviceTrustError {
    /// A refusal `22023`: an argument outside what the server's rules allow.
    static func invalid(_ message: String) -> DeviceTrustError { .refused("22023", message) }
}
