import Foundation
import SecretCrypto

/// Writes entries as a root (a holder of the identity key in force): each one signed, with its
/// append proof and, while a recovery key is bound, its backup; and each one verified against
/// the state before it is kept, so a writer never produces an entry its own verifier refuses.
public struct TrustLogWriter: Sendable {
    /// One entry to send, with its row's backup.
    public struct Written: Sendable, Hashable {
        public var text: String
        public var hash: [UInt8]
        public var seq: UInt64
        public var backup: String?
    }

    /// The state after the entries written so far.
    public private(set) var state: TrustLogState
    /// The identity key in force after them.
    public private(set) var identity: Ed25519PrivateKey
    /// The device writing.
    public let author: UUID
    /// What was written, in order.
    public private(set) var written: [Written] = []
    /// The append chain of the key in force, made at the first append that needs it.
    var links: SecureBytes?
    /// Ephemeral keys for the seals of grants and backups, used in order (vectors only; random
    /// when empty).
    package var ephemerals: [X25519PrivateKey] = []

    mutating func nextEphemeral() -> X25519PrivateKey? { ephemerals.isEmpty ? nil : ephemerals.removeFirst() }

    /// A writer appending after `state` with `identity`, the key in force.
    ///
    /// - Throws: ``DeviceTrustError`` when `identity` is not the key in force.
    public init(state: TrustLogState, identity: Ed25519PrivateKey, author: UUID) throws(DeviceTrustError) {
        guard identity.publicKey == state.identityKey else {
            throw DeviceTrustError(.malformedLogBytes, "this identity key is not the one in force")
        }
        self.state = state
        self.identity = identity
        self.author = author
    }

    /// Starts an epoch: its genesis, signed by `identity` and by the author's `signingKey`.
    ///
    /// - Parameters:
    ///   - userID: The user.
    ///   - epoch: The epoch it starts (1, or a reset's number).
    ///   - priorEpoch: 0 for epoch 1, else the epoch it resets.
    ///   - identity: The new epoch's identity key.
    ///   - recoveryKey: The recovery key's public key, or `nil` for none.
    ///   - certificate: The author's own certificate (role `trust_root`, a desktop).
    ///   - signingKey: The author's own signing key (the genesis's second signature).
    ///   - createdAt: This device's clock.
    public static func genesis(
        userID: UUID, epoch: UInt32, priorEpoch: UInt32, identity: Ed25519PrivateKey, recoveryKey: X25519PublicKey?,
        certificate: DeviceCertificate, signingKey: Ed25519PrivateKey, createdAt: UInt64
    ) throws -> TrustLogWriter {
        try genesis(
            userID: userID, epoch: epoch, priorEpoch: priorEpoch, identity: identity, recoveryKey: recoveryKey,
            certificate: certificate, signingKey: signingKey, createdAt: createdAt, ephemerals: [])
    }

    /// ``genesis(userID:epoch:priorEpoch:identity:recoveryKey:certificate:signingKey:createdAt:)``
    /// with the seals' ephemeral keys given (vectors only).
    package static func genesis(
        userID: UUID, epoch: UInt32, priorEpoch: UInt32, identity: Ed25519PrivateKey, recoveryKey: X25519PublicKey?,
        certificate: DeviceCertificate, signingKey: Ed25519PrivateKey, createdAt: UInt64,
        ephemerals: [X25519PrivateKey]
    ) throws -> TrustLogWriter {
        let body = Genesis(
            userID: userID, identityKey: identity.publicKey,
            anchor: AppendChain.anchor(seed: identity.seedRepresentation, userID: userID, epoch: epoch),
            priorEpoch: priorEpoch, recoveryKey: recoveryKey, certificate: certificate)
        var entry = TrustLogEntry(
            userID: userID, epoch: epoch, seq: 0, prev: zero32, type: .genesis, createdAt: createdAt,
            author: certificate.deviceID, appendProof: zero32, body: try body.bytes())
        entry.sign(identity: identity, second: signingKey)
        let parsed = try ParsedLogEntry(bytes: entry.bytes())
        let state = try TrustLogState.genesis(parsed, userID: userID, epoch: epoch)
        var writer = try TrustLogWriter(state: state, identity: identity, author: certificate.deviceID)
        writer.ephemerals = ephemerals
        writer.keep(parsed)
        return writer
    }

    /// Appends a certify, revoke, root grant or reset answer.
    ///
    /// - Parameters:
    ///   - body: The entry's body.
    ///   - createdAt: This device's clock; the entry takes the head's time when later.
    /// - Throws: ``DeviceTrustError`` when the entry would not verify (the writer is unchanged).
    public mutating func append(_ body: TrustLogBody, createdAt: UInt64) throws {
        try add(body, createdAt: createdAt, next: identity, second: nil)
    }

    /// Appends a root grant sealing the key in force to `device`'s certified X25519 key.
    public mutating func grantRoot(to device: UUID, createdAt: UInt64) throws {
        let seq = state.headSeq + 1
        let sealed = try SealedSeed.seal(
            identity, to: try certifiedKey(of: device), userID: state.userID, deviceID: device, epoch: state.epoch,
            seq: seq, ephemeral: nextEphemeral())
        try append(
            .rootGrant(RootGrant(userID: state.userID, deviceID: device, sealedSeed: sealed)), createdAt: createdAt)
    }

    /// Appends a succession to `newIdentity`, revoking `revocations` and granting the new seed to
    /// every root that remains but this author.
    public mutating func succeed(
        to newIdentity: Ed25519PrivateKey, reason: SuccessionReason, newRecoveryKey: X25519PublicKey?,
        revocations: [DeviceRevocation], createdAt: UInt64
    ) throws {
        let seq = state.headSeq + 1
        let revoked = Set(revocations.map(\.deviceID))
        var grants: [Succession.Grant] = []
        for root in state.roots where root != author && !revoked.contains(root) {
            let sealed = try SealedSeed.seal(
                newIdentity, to: try certifiedKey(of: root), userID: state.userID, deviceID: root, epoch: state.epoch,
                seq: seq, ephemeral: nextEphemeral())
            grants.append(Succession.Grant(deviceID: root, sealedSeed: sealed))
        }
        let body = Succession(
            userID: state.userID, oldKey: identity.publicKey, newKey: newIdentity.publicKey,
            newAnchor: AppendChain.anchor(
                seed: newIdentity.seedRepresentation, userID: state.userID, epoch: state.epoch),
            reason: reason, newRecoveryKey: newRecoveryKey, revocations: revocations, grants: grants)
        try add(.succession(body), createdAt: createdAt, next: newIdentity, second: newIdentity)
    }

    func certifiedKey(of device: UUID) throws -> X25519PublicKey {
        guard let known = state.devices[device], known.isTrusted else {
            throw DeviceTrustError(.malformedLogBytes, "device \(device.canonical) is not certified")
        }
        return known.x25519
    }

    mutating func add(
        _ body: TrustLogBody, createdAt: UInt64, next: Ed25519PrivateKey, second: Ed25519PrivateKey?
    ) throws {
        let seq = state.headSeq + 1
        let steps = Int(seq - state.identityKeySince)
        let chain =
            links ?? AppendChain.links(seed: identity.seedRepresentation, userID: state.userID, epoch: state.epoch)
        var entry = TrustLogEntry(
            userID: state.userID, epoch: state.epoch, seq: seq, prev: Array(state.headHash), type: body.type,
            createdAt: max(createdAt, state.headCreatedAt), author: author,
            appendProof: AppendChain.proof(links: chain, steps: steps), body: try body.bytes())
        entry.sign(identity: identity, second: second)
        // Read back from its bytes, as every reader will: what this device writes, it verifies.
        let parsed = try ParsedLogEntry(bytes: entry.bytes())
        try state.append(parsed)
        links = next.publicKey == identity.publicKey ? chain : nil
        identity = next
        keep(parsed)
    }

    mutating func keep(_ parsed: ParsedLogEntry) {
        var backup: String?
        if let recovery = state.recoveryKey {
            backup = try? LogBackup.seal(
                identity, entryHash: parsed.hash, to: recovery, userID: state.userID, epoch: state.epoch,
                seq: parsed.entry.seq, ephemeral: nextEphemeral())
        }
        written.append(Written(text: parsed.entry.text, hash: parsed.hash, seq: parsed.entry.seq, backup: backup))
    }
}
