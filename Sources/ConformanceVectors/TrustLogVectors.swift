import DeviceTrust
import Foundation
import SecretCrypto

/// `UNBOUND-TRUST-LOG-V1` (trust-log.md): groups of `type`
/// - `TrustLogVerify`: verify `entries` (stored base64, seq 0 on) for `userId` and `epoch`;
///   valid: the head (`headSeq`, `headHash`), the key in force, the recovery key, the roots and
///   the certified and revoked devices are exactly the expected ones; invalid: the first failure
///   is at `failureSeq` with step `failureReason`.
/// - `TrustLogAppend`: the server's rules **E** for `entry` (and `backup`) after `head` (none:
///   an empty epoch) at server time `now`; valid: accepted, the new head is `newHead`; invalid:
///   refused with `sqlState`.
/// - `TrustLogBackupOpen`: open `backup` (row `epoch`, `seq`) with the recovery key's derived
///   key; valid: the seed `expected` and the entry hash `entryHash`; invalid: it does not open.
/// - `RootSeedOpen`: open `sealed` with `recipientPrivateKey` for the grant's fields; valid: the
///   seed `expected` whose public key is `identityPublicKey` (and re-sealing with
///   `ephemeralPrivateKey` gives `sealed`); invalid: refused.
/// - `TrustLogWitnessVerify`: parse `body` and verify `signature` under `publicKey`; valid: the
///   fields match; invalid: refused.
/// - `RecoveryKeyAgreement`: the recovery key's X25519 public key for `userId` is `expected`.
/// - `AppendChain`: for `seed`, `userId` and `epoch`, the `anchor` and the first two proofs.
/// - `TrustLogMarks`: what the stored `entry` says to the server's trust gate for `userId`
///   (`TrustLogMarks`); valid: the devices it certifies and revokes are exactly `certified` and
///   `revoked`; invalid: it does not parse, or names another user.
public struct TrustLogGroup: VectorGroup {
    public enum Kind: String, Decodable, Sendable {
        case verify = "TrustLogVerify"
        case append = "TrustLogAppend"
        case backup = "TrustLogBackupOpen"
        case rootSeed = "RootSeedOpen"
        case witness = "TrustLogWitnessVerify"
        case recoveryKey = "RecoveryKeyAgreement"
        case chain = "AppendChain"
        case marks = "TrustLogMarks"
    }

    /// A server head: `{seq, hash, createdAt, lastProof}`.
    public struct Head: Decodable, Sendable, Hashable {
        public let seq: UInt64
        public let hash: HexBytes
        public let createdAt: UInt64
        public let lastProof: HexBytes
    }

    public let type: Kind
    public let tests: [Test]

    public struct Test: VectorTest {
        public let tcId: Int
        public let comment: String
        public let result: ExpectedResult
        public let userId: String?
        public let epoch: UInt32?
        public let seq: UInt64?
        public let entries: [String]?
        public let headSeq: UInt64?
        public let headHash: HexBytes?
        public let identityPublicKey: String?
        public let recoveryPublicKey: HexBytes?
        public let roots: [String]?
        public let certified: [String]?
        public let revoked: [String]?
        public let failureSeq: UInt64?
        public let failureReason: String?
        public let entry: String?
        public let backup: String?
        public let head: Head?
        public let newHead: Head?
        public let now: UInt64?
        public let sqlState: String?
        public let recoveryKey: String?
        public let expected: HexBytes?
        public let entryHash: HexBytes?
        public let recipientPrivateKey: HexBytes?
        public let ephemeralPrivateKey: HexBytes?
        public let deviceId: String?
        public let sealed: HexBytes?
        public let body: String?
        public let signature: String?
        public let publicKey: String?
        public let seed: HexBytes?
        public let anchor: HexBytes?
        public let proofs: [HexBytes]?
    }
}

enum TrustLogVectorCheck {
    static func check(_ kind: TrustLogGroup.Kind, _ test: TrustLogGroup.Test) -> String? {
        guard let user = test.userId.flatMap(UUID.init(uuidString:)) else { return "the test has no userId" }
        switch kind {
        case .verify: return verify(test, user: user)
        case .append: return append(test, user: user)
        case .backup: return backup(test, user: user)
        case .rootSeed: return rootSeed(test, user: user)
        case .witness: return witness(test, user: user)
        case .marks: return marks(test, user: user)
        case .recoveryKey:
            guard let text = test.recoveryKey, let key = try? RecoveryKey(text: text) else {
                return VectorVerifier.judge(test.result, nil)
            }
            return VectorVerifier.judge(
                test.result, key.agreementKey(userID: user).publicKey.rawRepresentation == test.expected?.bytes)
        case .chain:
            guard let seed = test.seed?.bytes, let epoch = test.epoch else { return "the test has no seed" }
            let secure = SecureBytes(copying: seed)
            let proofs = (1...2).map { AppendChain.proof(seed: secure, userID: user, epoch: epoch, steps: $0) }
            return VectorVerifier.judge(
                test.result,
                AppendChain.anchor(seed: secure, userID: user, epoch: epoch) == test.anchor?.bytes
                    && proofs == test.proofs?.map(\.bytes))
        }
    }

    static func ids(_ list: [String]?) -> Set<String> { Set(list ?? []) }

    static func verify(_ test: TrustLogGroup.Test, user: UUID) -> String? {
        guard let entries = test.entries, let epoch = test.epoch else { return "the test has no entries" }
        do {
            let (state, _) = try TrustLogVerifier.verify(entries, userID: user, epoch: epoch)
            let roots = Set(state.roots.map { $0.uuidString.lowercased() })
            let certified = Set(state.devices.values.filter(\.isTrusted).map { $0.id.uuidString.lowercased() })
            let revoked = Set(state.devices.values.filter(\.isRevoked).map { $0.id.uuidString.lowercased() })
            let matches =
                state.headSeq == test.headSeq && Array(state.headHash) == test.headHash?.bytes
                && state.identityKey.base64 == test.identityPublicKey
                && state.recoveryKey?.rawRepresentation == test.recoveryPublicKey?.bytes && roots == ids(test.roots)
                && certified == ids(test.certified) && revoked == ids(test.revoked)
            return VectorVerifier.judge(test.result, matches)
        } catch {
            let seq = error.seq.map(String.init) ?? "?"
            let step = error.step?.rawValue ?? error.code.description
            guard test.result == .invalid else { return "rejected at seq \(seq) (\(step))" }
            guard error.seq == test.failureSeq, error.step?.rawValue == test.failureReason else {
                return "rejected at seq \(seq) (\(step)), expected seq "
                    + "\(test.failureSeq.map(String.init) ?? "?") (\(test.failureReason ?? "?"))"
            }
            return nil
        }
    }

    static func head(_ head: TrustLogGroup.Head?) -> TrustLogServerRules.Head? {
        head.map {
            TrustLogServerRules.Head(
                seq: $0.seq, hash: $0.hash.bytes, createdAt: $0.createdAt, lastProof: $0.lastProof.bytes)
        }
    }

    static func append(_ test: TrustLogGroup.Test, user: UUID) -> String? {
        guard let entry = test.entry, let epoch = test.epoch else { return "the test has no entry" }
        do {
            let checked = try TrustLogServerRules.check(
                entry, backup: test.backup, userID: user, epoch: epoch, head: head(test.head), now: test.now)
            // An invalid test names the refusal it expects: accepting the entry fails it, whatever
            // head the acceptance gives.
            guard test.result == .valid else { return "accepted, expected a refusal with \(test.sqlState ?? "?")" }
            return VectorVerifier.judge(test.result, checked.head == head(test.newHead))
        } catch {
            guard test.result == .invalid else { return "refused with \(error.sqlState ?? "?"): \(error.message)" }
            return error.sqlState == test.sqlState
                ? nil : "refused with \(error.sqlState ?? "?"), expected \(test.sqlState ?? "?")"
        }
    }

    static func backup(_ test: TrustLogGroup.Test, user: UUID) -> String? {
        guard let text = test.recoveryKey, let backup = test.backup, let epoch = test.epoch, let seq = test.seq else {
            return "the test has no backup"
        }
        guard let key = try? RecoveryKey(text: text),
            let opened = LogBackup.open(
                backup, with: key.agreementKey(userID: user), userID: user, epoch: epoch, seq: seq)
        else { return VectorVerifier.judge(test.result, nil) }
        let seed = opened.identity.seedRepresentation.withUnsafeBytes { Array($0) }
        return VectorVerifier.judge(
            test.result, seed == test.expected?.bytes && opened.entryHash == test.entryHash?.bytes)
    }

    static func rootSeed(_ test: TrustLogGroup.Test, user: UUID) -> String? {
        guard let device = test.deviceId.flatMap(UUID.init(uuidString:)), let epoch = test.epoch, let seq = test.seq,
            let sealed = test.sealed?.bytes, let recipient = test.recipientPrivateKey?.bytes,
            let key = try? X25519PrivateKey(rawRepresentation: SecureBytes(copying: recipient)),
            let identity = test.identityPublicKey.flatMap({ try? Ed25519PublicKey(base64: $0) })
        else { return "the test lacks a field" }
        guard
            let opened = try? SealedSeed.open(
                sealed, with: key, userID: user, deviceID: device, epoch: epoch, seq: seq, identityKey: identity)
        else { return VectorVerifier.judge(test.result, nil) }
        var matches = opened.seedRepresentation.withUnsafeBytes { Array($0) } == test.expected?.bytes
        if let ephemeral = test.ephemeralPrivateKey?.bytes,
            let resealed = try? SealedSeed.seal(
                opened, to: key.publicKey, userID: user, deviceID: device, epoch: epoch, seq: seq,
                ephemeral: X25519PrivateKey(rawRepresentation: SecureBytes(copying: ephemeral)))
        {
            matches = matches && resealed == sealed
        }
        return VectorVerifier.judge(test.result, matches)
    }

    static func witness(_ test: TrustLogGroup.Test, user: UUID) -> String? {
        guard let body = test.body, let signature = test.signature,
            let key = test.publicKey.flatMap({ try? Ed25519PublicKey(base64: $0) })
        else { return "the test lacks a field" }
        guard let witness = try? TrustLogWitness.parse(body), witness.userID == user,
            TrustLogWitness.verifies(body: body, signature: signature, key: key)
        else { return VectorVerifier.judge(test.result, nil) }
        let matches =
            witness.deviceID.uuidString.lowercased() == test.deviceId && witness.epoch == test.epoch
            && witness.seq == test.seq && witness.entryHash == test.entryHash?.bytes
        return VectorVerifier.judge(test.result, matches)
    }

    static func marks(_ test: TrustLogGroup.Test, user: UUID) -> String? {
        guard let entry = test.entry else { return "the test has no entry" }
        guard let named = TrustLogMarks.of(entry, userID: user) else { return VectorVerifier.judge(test.result, nil) }
        // An entry the gate reads, whatever it names, fails a test that expects it unreadable.
        guard test.result == .valid else { return "read, expected an entry the gate cannot read" }
        let certified = Set(named.filter { !$0.revokes }.map { $0.deviceID.uuidString.lowercased() })
        let revoked = Set(named.filter(\.revokes).map { $0.deviceID.uuidString.lowercased() })
        return VectorVerifier.judge(test.result, certified == ids(test.certified) && revoked == ids(test.revoked))
    }
}
