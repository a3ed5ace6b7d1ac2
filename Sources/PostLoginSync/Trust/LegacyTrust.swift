import DeviceTrust
import Foundation
import LocalStore
import RemoteStore
import SecretCrypto
import SyncModel

/// Legacy read-only mode (trust-log.md, "Migration from the legacy tables" 3): until the user's log exists, a device that
/// pinned the legacy identity key verifies the (now read-only) legacy rows under it, fail closed,
/// and adopts epoch 1 once a root starts it with that key.
extension TrustLogSync {
    mutating func loadLegacy(pinned: Ed25519PublicKey) async throws -> TrustSnapshot {
        var geneses: [TrustLogEpochs.GenesisInfo] = []
        do {
            geneses = readGeneses(try await remote.trustLogGeneses())
        } catch let error as RemoteStoreError where error.code == .missingTable || error.code == .missingFunction {
            // A deployment without the log's migration: legacy mode is all there is.
        } catch let error as RemoteStoreError where error.code == .http && error.status == 404 {}
        if geneses.contains(where: { $0.epoch == 1 }), let adopted = try await adopt(pinned: pinned, geneses: geneses) {
            return adopted
        }
        problems.append(
            note(
                .trustLogMissing,
                "this user has no trust log yet: this device verifies the legacy trust rows until a trust root "
                    + "migrates (its next sync after a fresh sign-in)"))
        // Epoch 1 is empty: a reset of it is judged as of any pinned epoch.
        let (step, pending) = TrustLogEpochs.step(from: 1, answers: .init(), geneses: geneses, now: seconds)
        switch step {
        case .move(let genesis): throw Self.identityReset(at: genesis.createdAt)
        case .forked: throw Self.forked(0, "two resets of the legacy identity are in effect")
        case .truncated(let reference):
            throw Self.truncated(0, "an accepted reset (epoch \(reference.epoch)) is missing")
        case .stay: break
        }
        for reset in pending {
            self.pending.append(PendingReset(epoch: reset.epoch, hash: reset.hash, deadline: reset.vetoDeadline))
            problems.append(
                note(
                    .resetPending,
                    "a reset of this account's identity (epoch \(reset.epoch)) is pending: it takes effect at "
                        + "\(Self.date(reset.vetoDeadline)) unless a trust root migrates first (its migration vetoes it)"
                ))
        }
        return try await legacySnapshot(pinned: pinned)
    }

    /// The legacy rows verified under the pinned key. Fail closed: a revocation row that does not
    /// verify makes the device it names untrusted; every revocation once verified is remembered.
    mutating func legacySnapshot(pinned: Ed25519PublicKey) async throws -> TrustSnapshot {
        try await Self.checkPublishedIdentity(pinned: pinned, tables: remote)
        var revocations = Dictionary(
            try await local.knownRevocations().map { ($0.deviceID, $0) }, uniquingKeysWith: { first, _ in first })
        var untrusted = Set<UUID>()
        var fresh: [KnownRevocation] = []
        for row in try await remote.listRevocations() {
            do {
                guard row.userID == user else { throw DeviceTrustError(.wrongUser, "the row names another user") }
                let revocation = try DeviceRevocation.verify(
                    SignedStatement(body: row.body, signature: row.signature), identityKey: pinned, userID: user,
                    deviceID: row.deviceID)
                let known = KnownRevocation(
                    deviceID: revocation.deviceID, x25519PublicKey: revocation.x25519PublicKey,
                    revokedAt: Date(timeIntervalSince1970: TimeInterval(revocation.revokedAt)))
                if revocations[known.deviceID] == nil { fresh.append(known) }
                revocations[known.deviceID] = known
            } catch {
                untrusted.insert(row.deviceID)
                problems.append(
                    note(
                        .invalidStatement,
                        "revocation row does not verify (\(error)): the device it names stays untrusted",
                        row: row.deviceID.canonical))
            }
        }
        try await local.recordRevocations(fresh)
        var certificates: [UUID: DeviceCertificate] = [:]
        for row in try await remote.listCertificates() {
            do {
                guard row.userID == user else { throw DeviceTrustError(.wrongUser, "the row names another user") }
                let certificate = try DeviceCertificate.verify(
                    SignedStatement(body: row.body, signature: row.signature), identityKey: pinned, userID: user,
                    deviceID: row.deviceID)
                // A certificate of a key this device saw revoked (under any id) stays refused.
                guard !revocations.values.contains(where: { $0.x25519PublicKey == certificate.x25519PublicKey }) else {
                    throw DeviceTrustError(.wrongKey, "it names a key that was revoked")
                }
                certificates[row.deviceID] = certificate
            } catch {
                problems.append(note(.invalidStatement, "certificate ignored: \(error)", row: row.deviceID.canonical))
            }
        }
        let roots = Set(
            certificates.values.filter { $0.deviceRole == DeviceTrustRole.trustRoot.rawValue }.map(\.deviceID))
        if try await local.identityKey() != nil,
            revocations.keys.contains(where: { id in
                certificates[id] == nil || TrustLogState.isDesktop(certificates[id]?.deviceType)
            })
        {
            problems.append(
                note(
                    .rootDuty,
                    "a revoked device may hold the legacy identity key (a desktop, or a device of unknown type, was "
                        + "revoked): migrate to the trust log now, which retires that key (a sync after a fresh sign-in)"
                ))
        }
        return TrustSnapshot(
            identityKey: pinned, certificates: certificates, revocations: revocations, problems: problems, roots: roots,
            source: .legacy, log: nil, untrusted: untrusted, pendingResets: pending)
    }

    /// Adopts epoch 1 when it is the legacy identity's: its genesis key is the pinned one, its
    /// author a legacy root this device does not know as revoked, with the same keys and type,
    /// and seq 1 a succession. Otherwise the device stays in legacy mode (`nil`, reported).
    mutating func adopt(pinned: Ed25519PublicKey, geneses: [TrustLogEpochs.GenesisInfo]) async throws -> TrustSnapshot?
    {
        let rows = try await remote.trustLogRows(epoch: 1, fromSeq: 0)
        guard let first = rows.first, let genesis = try? ParsedLogEntry(text: first.entry),
            case .genesis(let body)? = try? genesis.body.get()
        else { return refuseAdoption("epoch 1's genesis does not parse") }
        guard body.identityKey == pinned else {
            throw SyncError(
                code: .identityChanged,
                message:
                    "the user's trust log starts with another identity key (\(IdentityFingerprint(body.identityKey))) "
                    + "than the one this device pinned (\(IdentityFingerprint(pinned))): re-pair this device")
        }
        let legacy = try await legacySnapshot(pinned: pinned)
        guard let certificate = legacy.certificates[genesis.entry.author],
            legacy.revocations[certificate.deviceID] == nil,
            !legacy.untrusted.contains(certificate.deviceID),
            certificate.x25519PublicKey == body.certificate.x25519PublicKey,
            certificate.ed25519PublicKey == body.certificate.ed25519PublicKey,
            certificate.deviceType == body.certificate.deviceType
        else {
            return refuseAdoption("its author is not a legacy root this device trusts, with the same keys and type")
        }
        guard rows.count > 1, (try? ParsedLogEntry(text: rows[1].entry))?.entry.type == .succession else {
            return refuseAdoption("seq 1 is not a succession")
        }
        let state: TrustLogState, hashes: [[UInt8]]
        do {
            (state, hashes) = try TrustLogVerifier.verify(rows.map(\.entry), userID: user, epoch: 1)
            verified += rows.count
        } catch {
            return refuseAdoption("\(error)")
        }
        var entries = zip(rows, hashes).map { PinnedLogEntry(seq: $0.seq, text: $0.entry, hash: $1) }
        let witnesses = try await remote.trustLogWitnesses(epoch: 1)
        let (final, _) = try await judgeWitnesses(witnesses, state: state, new: &entries, log: remote)
        problems = problems.filter { $0.code != .invalidStatement }
        try await save(final, new: entries, highestEpoch: geneses.map(\.epoch).max() ?? 1, replacing: true)
        try await witness(final)
        try judgeResets(of: final, geneses: geneses)
        return try await snapshot(final)
    }

    mutating func refuseAdoption(_ why: String) -> TrustSnapshot? {
        problems.append(
            note(.trustLogInvalid, "epoch 1 of the trust log is not adopted (\(why)): this device stays in legacy mode")
        )
        return nil
    }

    /// Refuses to go on when the remote's legacy identity key is not the pinned one.
    static func checkPublishedIdentity(pinned: Ed25519PublicKey, tables: any TrustRemote) async throws {
        let published: String?
        do {
            published = try await tables.fetchIdentityKey()
        } catch let error as RemoteStoreError where error.code == .missingTable {
            published = nil
        }
        guard let published, let key = try? Ed25519PublicKey(base64: published), key == pinned else {
            throw SyncError(
                code: .identityChanged,
                message: "the user's identity key changed: the remote does not publish the key this device pinned "
                    + "(\(IdentityFingerprint(pinned))); nothing was sent. Re-pair this device with `sync-cli trust join`"
            )
        }
    }
}
