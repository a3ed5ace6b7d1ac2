import ConformanceVectors
import DeviceTrust
import Foundation
import SecretCrypto

/// Produces `testvectors/trust-log-v1.json` reproducibly (trust-log.md): logs that verify and
/// logs that fail at a known position and step, the server's append rules with their SQLSTATEs,
/// backups, sealed root seeds, witnesses, the recovery key's agreement key, the append chain and
/// what each kind of entry says to the server's trust gate.
///
/// Every key, id and ephemeral key is HKDF-SHA256 of a fixed seed and a label; Ed25519 is
/// deterministic, so the same file comes out on every run.
public enum TrustLogVectorGenerator {
    struct OutputTest: Encodable {
        var tcId = 0
        var comment = ""
        var flags: [String] = []
        var result = "valid"
        var userId: String?
        var epoch: UInt32?
        var seq: UInt64?
        var entries: [String]?
        var headSeq: UInt64?
        var headHash: String?
        var identityPublicKey: String?
        var recoveryPublicKey: String?
        var roots: [String]?
        var certified: [String]?
        var revoked: [String]?
        var failureSeq: UInt64?
        var failureReason: String?
        var entry: String?
        var backup: String?
        var head: Head?
        var newHead: Head?
        var now: UInt64?
        var sqlState: String?
        var recoveryKey: String?
        var expected: String?
        var entryHash: String?
        var recipientPrivateKey: String?
        var ephemeralPrivateKey: String?
        var deviceId: String?
        var sealed: String?
        var body: String?
        var signature: String?
        var publicKey: String?
        var seed: String?
        var anchor: String?
        var proofs: [String]?
    }

    struct Head: Encodable {
        var seq: UInt64
        var hash: String
        var createdAt: UInt64
        var lastProof: String
    }

    static let source = VectorSeed("unbound-trust-log-v1 test vectors, seed 1")
    static let start: UInt64 = 1_800_000_000

    static func hex(_ bytes: some Collection<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
    static func id(_ uuid: UUID) -> String { uuid.uuidString.lowercased() }

    /// A device of the vectors: its id and keys, all from the seed.
    struct Device {
        let id: UUID
        let x25519: X25519PrivateKey
        let ed25519: Ed25519PrivateKey
        let type: String

        init(id: UUID, x25519: X25519PrivateKey, ed25519: Ed25519PrivateKey, type: String) {
            self.id = id
            self.x25519 = x25519
            self.ed25519 = ed25519
            self.type = type
        }

        init(_ label: String, type: String) throws {
            id = try source.uuid("device:" + label)
            x25519 = try X25519PrivateKey(rawRepresentation: source.derive("x25519:" + label))
            ed25519 = try Ed25519PrivateKey(seed: source.derive("ed25519:" + label))
            self.type = type
        }
    }

    static func identity(_ label: String) throws -> Ed25519PrivateKey {
        try Ed25519PrivateKey(seed: source.derive("identity:" + label))
    }

    static func ephemerals(_ label: String) throws -> [X25519PrivateKey] {
        try (0..<64).map { try X25519PrivateKey(rawRepresentation: source.derive("ephemeral:\(label):\($0)")) }
    }

    static func certificate(_ user: UUID, _ device: Device, role: String, at time: UInt64) -> DeviceCertificate {
        DeviceCertificate(
            userID: user, deviceID: device.id, x25519PublicKey: device.x25519.publicKey,
            ed25519PublicKey: device.ed25519.publicKey, deviceType: device.type, deviceRole: role, issuedAt: time)
    }

    static func revocation(_ user: UUID, _ device: Device, at time: UInt64) -> DeviceRevocation {
        DeviceRevocation(userID: user, deviceID: device.id, x25519PublicKey: device.x25519.publicKey, revokedAt: time)
    }

    /// An entry at the writer's next position, signed as the writer would, after `change`.
    static func craft(
        _ writer: TrustLogWriter, _ type: TrustLogEntryType, body: [UInt8], author: UUID? = nil,
        identity: Ed25519PrivateKey? = nil, second: Ed25519PrivateKey? = nil,
        change: (inout TrustLogEntry) -> Void = { _ in }
    ) -> String {
        let state = writer.state
        let seq = state.headSeq + 1
        var entry = TrustLogEntry(
            userID: state.userID, epoch: state.epoch, seq: seq, prev: Array(state.headHash), type: type,
            createdAt: state.headCreatedAt + 1, author: author ?? writer.author,
            appendProof: AppendChain.proof(
                seed: writer.identity.seedRepresentation, userID: state.userID, epoch: state.epoch,
                steps: Int(seq - state.identityKeySince)),
            body: body)
        change(&entry)
        entry.sign(identity: identity ?? writer.identity, second: second)
        return entry.text
    }

    /// The JSON text of the vector file, ending in a newline.
    public static func generate() throws -> Data {
        var builder = Builder()
        try TrustLogVectorCases.verify(&builder)
        try TrustLogVectorCases.append(&builder)
        try TrustLogVectorCases.secrets(&builder)
        try TrustLogVectorCases.decisions(&builder)
        try TrustLogVectorCases.marks(&builder)
        return try GeneratedVectorFile.encode(
            algorithm: .trustLogV1,
            header: [
                "The trust log of docs/trust-log.md (entries, verification, the server's append rules, backups, grants, witnesses).",
                "Generated by `sync-vectors generate --kind trustlog`; every key, id and ephemeral key is HKDF-SHA256(seed, label).",
                "Byte fields are lowercase hex unless named base64 (entries, backups, bodies, signatures, identityPublicKey, publicKey).",
                "TrustLogVerify: verify `entries` from seq 0 for userId and epoch. valid: headSeq, headHash, identityPublicKey (the key",
                "  in force), recoveryPublicKey, roots, certified (and not revoked) and revoked are exactly these; invalid: the first",
                "  failure is at failureSeq (the expected position) in step failureReason (parse, header, proof, signature, time, author, state).",
                "TrustLogAppend: the server's rules E for `entry` and `backup` after `head` (absent: an empty epoch) at server time `now`",
                "  (absent: no clock window); valid: accepted with newHead; invalid: refused with sqlState.",
                "TrustLogBackupOpen: open `backup` of row (epoch, seq) with the recovery key's agreement key; valid: seed `expected` and entryHash.",
                "RootSeedOpen: open `sealed` with recipientPrivateKey; valid: seed `expected` of identityPublicKey, re-sealed with ephemeralPrivateKey.",
                "TrustLogWitnessVerify: parse `body`, verify `signature` under publicKey; valid: deviceId, epoch, seq and entryHash match.",
                "RecoveryKeyAgreement: X25519(HKDF(R, user_id, \"unbound-recovery-x25519-v1\"), 9) is `expected`.",
                "AppendChain: for `seed`, userId and epoch: `anchor` = H^10000(c), proofs = [H^9999(c), H^9998(c)].",
                "TrustLogMarks: what the stored `entry` says to the server's trust gate for userId (private.tl_record_devices,",
                "  TrustLogMarks); valid: the devices it certifies (`certified`) and revokes (`revoked`), exactly; invalid: it does",
                "  not parse, or names another user, and the gate trusts nobody in its epoch.",
            ],
            groups: builder.groups.map { ($0.0, $0.1) })
    }

    /// Collects tests by group, numbering them in order.
    struct Builder {
        var groups: [(String, [OutputTest])] = []
        var count = 0

        mutating func add(_ group: String, _ comment: String, _ flags: [String], valid: Bool, _ test: OutputTest) {
            var test = test
            count += 1
            test.tcId = count
            test.comment = comment
            test.flags = flags
            test.result = valid ? "valid" : "invalid"
            if let index = groups.firstIndex(where: { $0.0 == group }) {
                groups[index].1.append(test)
            } else {
                groups.append((group, [test]))
            }
        }
    }
}
