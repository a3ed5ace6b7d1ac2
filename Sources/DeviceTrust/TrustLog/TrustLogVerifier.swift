import Foundation
import SecretCrypto

// The per-entry check of trust-log.md ("Verification, per entry n"): parse, header, proof,
// signature, time, author, state, in that order; the first that fails names the expected
// position and its step.

extension TrustLogState {
    /// Verifies the genesis of `epoch` (position 0) for `userID` and returns the state after it.
    ///
    /// - Throws: ``DeviceTrustError`` at seq 0.
    public static func genesis(
        _ parsed: ParsedLogEntry, userID: UUID, epoch: UInt32
    ) throws(DeviceTrustError)
        -> TrustLogState
    {
        func fail(_ reason: DeviceTrustError.Step, _ detail: String) -> DeviceTrustError {
            DeviceTrustError.logDoesNotVerify(seq: 0, step: reason, detail)
        }
        let entry = parsed.entry
        let body = try Self.body(parsed, at: 0)
        guard entry.userID == userID else { throw fail(.header, "the entry is for another user") }
        guard entry.epoch == epoch else { throw fail(.header, "the entry is of epoch \(entry.epoch), not \(epoch)") }
        guard entry.seq == 0 else { throw fail(.header, "the entry's seq is \(entry.seq), not 0") }
        guard entry.prev == zero32 else { throw fail(.header, "a genesis's prev is not zero") }
        guard case .genesis(let genesis) = body else { throw fail(.header, "the first entry is not a genesis") }
        guard entry.appendProof == zero32 else { throw fail(.proof, "a genesis's append proof is not zero") }
        guard genesis.identityKey.isValidSignature(entry.identitySignature, for: entry.signatureInput(role: .identity))
        else { throw fail(.signature, "the identity signature does not verify under the genesis's key") }
        guard
            genesis.certificate.ed25519PublicKey.isValidSignature(
                entry.secondSignature, for: entry.signatureInput(role: .author))
        else { throw fail(.signature, "the author's signature does not verify under its certificate's key") }
        guard genesis.certificate.deviceID == entry.author else {
            throw fail(.author, "the genesis's certificate names another device than its author")
        }
        let priorValid = epoch == 1 ? genesis.priorEpoch == 0 : (1..<epoch).contains(genesis.priorEpoch)
        guard priorValid else { throw fail(.state, "the genesis's prior epoch \(genesis.priorEpoch) is not allowed") }
        guard genesis.certificate.deviceRole == TrustLogState.Role.trustRoot else {
            throw fail(.state, "the genesis's certificate does not name the role trust_root")
        }
        guard isDesktop(genesis.certificate.deviceType) else {
            throw fail(.state, "the genesis's author is not a desktop")
        }
        var state = TrustLogState(
            userID: userID, epoch: epoch, priorEpoch: genesis.priorEpoch, genesisHash: Data(parsed.hash),
            genesisCreatedAt: entry.createdAt, headSeq: 0, headHash: Data(parsed.hash), headCreatedAt: entry.createdAt,
            lastProof: Data(genesis.anchor), identityKey: genesis.identityKey,
            identityKeySince: 0, recoveryKey: genesis.recoveryKey)
        state.certify(genesis.certificate, at: 0)
        state.roots = [entry.author]
        return state
    }

    /// Verifies the entry at the next position (`headSeq + 1`) and applies it.
    ///
    /// - Throws: ``DeviceTrustError`` at that position; the state is unchanged.
    public mutating func append(_ parsed: ParsedLogEntry) throws(DeviceTrustError) {
        let n = headSeq + 1
        func fail(_ reason: DeviceTrustError.Step, _ detail: String) -> DeviceTrustError {
            DeviceTrustError.logDoesNotVerify(seq: n, step: reason, detail)
        }
        let entry = parsed.entry
        let body = try Self.body(parsed, at: n)
        // (2) header
        guard entry.userID == userID else { throw fail(.header, "the entry is for another user") }
        guard entry.epoch == epoch else { throw fail(.header, "the entry is of epoch \(entry.epoch), not \(epoch)") }
        guard entry.seq == n else { throw fail(.header, "the entry's seq is \(entry.seq), not \(n)") }
        guard entry.prev == Array(headHash) else {
            throw fail(.header, "the entry's prev is not the hash of seq \(n - 1)")
        }
        guard entry.type != .genesis else { throw fail(.header, "a genesis after seq 0") }
        if n >= TrustLogEntry.reserveStart {
            guard [.revoke, .succession, .resetAnswer].contains(entry.type) || Self.subject(of: body) == entry.author
            else { throw fail(.header, "from seq 9,000 only revocations, successions, reset answers and recovery") }
        }
        guard !isClosed else { throw fail(.header, "an accepted reset closed this epoch") }
        // (3) proof
        guard AppendChain.extends(entry.appendProof, last: Array(lastProof)) else {
            throw fail(.proof, "the append proof does not extend the chain")
        }
        // (4) signatures
        guard identityKey.isValidSignature(entry.identitySignature, for: entry.signatureInput(role: .identity))
        else { throw fail(.signature, "the identity signature does not verify under the key in force") }
        if case .succession(let succession) = body {
            guard
                succession.newKey.isValidSignature(entry.secondSignature, for: entry.signatureInput(role: .successor))
            else { throw fail(.signature, "the successor's signature does not verify under the new key") }
        }
        // (5) time: the server's rule, so any row it stored passes whatever this clock says
        guard entry.createdAt >= headCreatedAt else { throw fail(.time, "created before the entry before it") }
        // (6) author
        guard isRoot(entry.author) || Self.subject(of: body) == entry.author else {
            throw fail(.author, "the author is not a root")
        }
        // (7) state: every check of `apply` runs before it changes anything, so a refusal leaves
        // the state as it was (and a long log is never copied entry by entry).
        do {
            try apply(body, entry: entry)
        } catch {
            throw fail(.state, error.message)
        }
        headSeq = n
        headHash = Data(parsed.hash)
        headCreatedAt = entry.createdAt
        if case .succession(let succession) = body {
            lastProof = Data(succession.newAnchor)
        } else {
            lastProof = Data(entry.appendProof)
        }
    }

    /// The parsed body, or a failure at `n`: (1) parse, or (2) header for an unknown type.
    static func body(_ parsed: ParsedLogEntry, at n: UInt64) throws(DeviceTrustError) -> TrustLogBody {
        guard parsed.hasKnownType else {
            throw DeviceTrustError.logDoesNotVerify(seq: n, step: .header, "unknown entry type \(parsed.typeByte)")
        }
        switch parsed.body {
        case .success(let body): return body
        case .failure(let error): throw DeviceTrustError.logDoesNotVerify(seq: n, step: .parse, error.message)
        }
    }

    /// The device a certify or a root grant is about (`nil` for the other types).
    static func subject(of body: TrustLogBody) -> UUID? {
        switch body {
        case .certify(let certificate): certificate.deviceID
        case .rootGrant(let grant): grant.deviceID
        default: nil
        }
    }

    mutating func certify(_ certificate: DeviceCertificate, at seq: UInt64) {
        devices[certificate.deviceID] = Device(
            id: certificate.deviceID, x25519: certificate.x25519PublicKey, ed25519: certificate.ed25519PublicKey,
            deviceType: certificate.deviceType,
            role: certificate.deviceRole, issuedAt: certificate.issuedAt, certifiedSeq: seq)
        heldX25519.insert(Data(certificate.x25519PublicKey.rawRepresentation))
        heldEd25519.insert(Data(certificate.ed25519PublicKey.rawRepresentation))
    }

    /// Applies a body that verified so far (7, state); the message says what does not hold.
    mutating func apply(_ body: TrustLogBody, entry: TrustLogEntry) throws(DeviceTrustError) {
        switch body {
        case .genesis:
            throw DeviceTrustError(.malformedLogBytes, "a genesis after seq 0")
        case .certify(let certificate):
            try checkCertify(certificate)
            certify(certificate, at: entry.seq)
        case .revoke(let revocation):
            try checkRevocation(revocation, allowRoot: false, author: entry.author)
            revoke(revocation, at: entry.seq)
        case .succession(let succession):
            try succeed(succession, entry: entry)
        case .rootGrant(let grant):
            guard let device = devices[grant.deviceID], device.isTrusted else {
                throw DeviceTrustError(
                    .malformedLogBytes, "the root grant names a device that is not certified, or is revoked")
            }
            guard Self.isDesktop(device.deviceType) else {
                throw DeviceTrustError(.malformedLogBytes, "the root grant names a device that is not a desktop")
            }
            guard !isRoot(grant.deviceID) else {
                throw DeviceTrustError(.malformedLogBytes, "the root grant names a root")
            }
            guard roots.count < Self.maxRoots else { throw DeviceTrustError(.malformedLogBytes, "a tenth root") }
            roots.append(grant.deviceID)
        case .resetAnswer(let answer):
            guard answer.resetEpoch > epoch else {
                throw DeviceTrustError(.malformedLogBytes, "the reset answer names an epoch not after this one")
            }
            let reference = ResetReference(epoch: answer.resetEpoch, genesisHash: answer.resetGenesisHash)
            switch answer.verdict {
            case .veto: vetoes.append(reference)
            case .accept: accepted = reference
            }
        }
    }

    func checkCertify(_ certificate: DeviceCertificate) throws(DeviceTrustError) {
        let role = certificate.deviceRole
        guard role == TrustLogState.Role.trustedExecutor || role == TrustLogState.Role.temporaryViewer else {
            throw DeviceTrustError(.malformedLogBytes, "a certify names the role \(role)")
        }
        guard devices[certificate.deviceID]?.certifiedSeq == nil else {
            throw DeviceTrustError(.malformedLogBytes, "the device is already certified in this epoch")
        }
        let x = Data(certificate.x25519PublicKey.rawRepresentation)
        let e = Data(certificate.ed25519PublicKey.rawRepresentation)
        guard !burnedIDs.contains(certificate.deviceID) else {
            throw DeviceTrustError(.malformedLogBytes, "the device id is burned")
        }
        guard !burnedX25519.contains(x), !burnedEd25519.contains(e) else {
            throw DeviceTrustError(.malformedLogBytes, "a key of the certificate is burned")
        }
        guard !heldX25519.contains(x), !heldEd25519.contains(e) else {
            throw DeviceTrustError(.malformedLogBytes, "a key of the certificate is held by another device")
        }
    }

    /// Checks a revocation against the state (roots allowed only in a succession, never its
    /// author); changes nothing.
    func checkRevocation(_ revocation: DeviceRevocation, allowRoot: Bool, author: UUID) throws(DeviceTrustError) {
        let id = revocation.deviceID
        if let device = devices[id] {
            guard !device.isRevoked else { throw DeviceTrustError(.malformedLogBytes, "the device is already revoked") }
            if device.isCertified, device.x25519 != revocation.x25519PublicKey {
                throw DeviceTrustError(.malformedLogBytes, "the revocation names another key than the certified one")
            }
        }
        guard allowRoot || !isRoot(id) else {
            throw DeviceTrustError(.malformedLogBytes, "a root is revoked only by a succession")
        }
        guard !(allowRoot && id == author) else {
            throw DeviceTrustError(.malformedLogBytes, "a succession revokes its own author")
        }
    }

    mutating func revoke(_ revocation: DeviceRevocation, at seq: UInt64) {
        let id = revocation.deviceID
        var device = devices[id] ?? Device(id: id, x25519: revocation.x25519PublicKey)
        device.revokedSeq = seq
        device.revokedAt = revocation.revokedAt
        devices[id] = device
        burnedIDs.insert(id)
        burnedX25519.insert(Data(revocation.x25519PublicKey.rawRepresentation))
        if let ed25519 = device.ed25519 { burnedEd25519.insert(Data(ed25519.rawRepresentation)) }
        roots.removeAll { $0 == id }
    }

    mutating func succeed(_ succession: Succession, entry: TrustLogEntry) throws(DeviceTrustError) {
        guard succession.oldKey == identityKey else {
            throw DeviceTrustError(.malformedLogBytes, "the succession's old key is not the key in force")
        }
        let new = succession.newKey
        guard !usedIdentityKeys.contains(Data(new.rawRepresentation)) else {
            throw DeviceTrustError(.malformedLogBytes, "the new identity key was used before in this epoch")
        }
        for revocation in succession.revocations {
            try checkRevocation(revocation, allowRoot: true, author: entry.author)
        }
        let revoked = Set(succession.revocations.map(\.deviceID))
        let remaining = Set(roots).subtracting(revoked).subtracting([entry.author])
        guard Set(succession.grants.map(\.deviceID)) == remaining else {
            throw DeviceTrustError(
                .malformedLogBytes, "the succession's grants do not name exactly the roots that remain")
        }
        let recovery = succession.newRecoveryKey
        if let recovery {
            guard recovery != recoveryKey,
                !retiredRecoveryKeys.contains(where: { $0.key == Data(recovery.rawRepresentation) })
            else {
                throw DeviceTrustError(.malformedLogBytes, "the new recovery key was used before")
            }
        }
        for revocation in succession.revocations { revoke(revocation, at: entry.seq) }
        if let recovery {
            if let old = recoveryKey {
                retiredRecoveryKeys.append(
                    RetiredKey(key: Data(old.rawRepresentation), seq: entry.seq, retiredAt: entry.createdAt))
            }
            recoveryKey = recovery
        }
        retiredIdentityKeys.append(
            RetiredKey(key: Data(identityKey.rawRepresentation), seq: entry.seq, retiredAt: entry.createdAt))
        identityKey = new
        identityKeySince = entry.seq
    }
}

/// Verifies rows of one epoch of the trust log (trust-log.md, "Verification").
public enum TrustLogVerifier {
    /// Verifies an epoch's rows from seq 0, in the order given (sorted by seq by the reader).
    ///
    /// - Returns: The state at the last row and every entry's hash, by seq.
    /// - Throws: ``DeviceTrustError`` at the first position that fails.
    public static func verify(
        _ rows: [String], userID: UUID, epoch: UInt32
    ) throws(DeviceTrustError)
        -> (state: TrustLogState, hashes: [[UInt8]])
    {
        guard let first = rows.first else {
            throw DeviceTrustError.logDoesNotVerify(seq: 0, step: .header, "the epoch has no genesis")
        }
        var state = try TrustLogState.genesis(parse(first, at: 0), userID: userID, epoch: epoch)
        var hashes = [Array(state.headHash)]
        hashes.reserveCapacity(rows.count)
        for row in rows.dropFirst() {
            try state.append(parse(row, at: state.headSeq + 1))
            hashes.append(Array(state.headHash))
        }
        return (state, hashes)
    }

    /// Extends a verified state with the rows after its head.
    ///
    /// - Returns: The new state and the new entries' hashes.
    public static func extend(
        _ state: TrustLogState, with rows: [String]
    ) throws(DeviceTrustError)
        -> (state: TrustLogState, hashes: [[UInt8]])
    {
        var state = state
        var hashes: [[UInt8]] = []
        for row in rows {
            try state.append(parse(row, at: state.headSeq + 1))
            hashes.append(Array(state.headHash))
        }
        return (state, hashes)
    }

    /// A row's text parsed, or a parse failure at `n`.
    static func parse(_ text: String, at n: UInt64) throws(DeviceTrustError) -> ParsedLogEntry {
        do {
            return try ParsedLogEntry(text: text)
        } catch {
            throw DeviceTrustError.logDoesNotVerify(seq: n, step: .parse, error.message)
        }
    }
}
