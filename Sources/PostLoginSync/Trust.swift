import DeviceTrust
import EnvelopeDigest
import Foundation
import LocalStore
import RemoteStore
import SecretCrypto
import SyncModel

/// Who receives session secrets (trust.md).
public enum TrustMode: String, Sendable, Codable, CaseIterable {
    /// sync.md's policy: every qualifying active device of the user.
    case any
    /// Also requires the server-side `is_trusted` flag (the old `--require-trusted`).
    case flagged
    /// A recipient must hold a certificate that verifies under the pinned identity key, for its
    /// user, device id and row key, and no verified revocation.
    case verified
}

/// A device's standing under the pinned identity (trust.md).
public enum DeviceTrustStatus: String, Sendable, Codable, Hashable {
    /// A valid certificate that names the device row's key, and no revocation.
    case verified
    /// No valid certificate.
    case unverified
    /// A verified revocation names it.
    case revoked
    /// Its row's key differs from its certificate's (possible attack).
    case keyMismatch = "key-mismatch"
    /// Its row names another device type than its certificate (possible attack: the row is the
    /// server's, the certificate the user's).
    case certificateMismatch = "certificate-mismatch"
}

/// The user's device trust as this device verified it: the pinned identity key, the
/// certificates and revocations that verify under it, and what was refused.
public struct TrustSnapshot: Sendable {
    /// The pinned identity key (the remote publishes the same one: loading checks it).
    public let identityKey: Ed25519PublicKey
    /// Verified certificates by device id.
    public let certificates: [UUID: DeviceCertificate]
    /// Verified revocations by device id (the remote's and the ones this device remembers).
    public let revocations: [UUID: KnownRevocation]
    /// Statements that did not verify: ignored, reported.
    public let problems: [SyncIssue]
    /// The pull feed's `statements` fingerprint of the rows this snapshot was built from
    /// (``statementsDigest(identityKey:rows:)``): while the feed answers the same, nothing
    /// changed and the snapshot still holds.
    let statementsDigest: String

    /// The identity key's fingerprint.
    public var fingerprint: IdentityFingerprint { IdentityFingerprint(identityKey) }

    /// A device row's standing: its certificate must name the row's key, and the row must name
    /// the certificate's device type (a device writes its own type, so a genuine row always
    /// does). The row's role is not compared: the certificate's decides, and users cannot
    /// write `device_role`, so every row keeps the schema's default `trusted_executor` whatever
    /// role was certified.
    public func status(of device: RemoteDevice) -> DeviceTrustStatus {
        if revocations[device.id] != nil { return .revoked }
        guard let certificate = certificates[device.id] else { return .unverified }
        guard let text = device.publicKey, let key = try? X25519PublicKey(base64: text),
            key == certificate.x25519PublicKey
        else {
            return .keyMismatch
        }
        guard device.deviceType?.rawValue == certificate.deviceType else { return .certificateMismatch }
        return .verified
    }

    /// The certified X25519 key of a device that is verified by certificate and not revoked.
    public func certifiedKey(of deviceID: UUID) -> X25519PublicKey? {
        guard revocations[deviceID] == nil else { return nil }
        return certificates[deviceID]?.x25519PublicKey
    }

    /// Loads and verifies the user's trust records, or `nil` when this store has pinned no
    /// identity.
    ///
    /// - Throws: ``SyncError`` `.identityChanged` when the remote publishes another identity key
    ///   than the pinned one, or none, or has lost the tables; remote errors.
    public static func load(
        local: DeviceStore, remote: any SyncRemote, phase: SyncPhase = .secrets
    ) async throws -> TrustSnapshot? {
        guard let pinned = try await local.pinnedIdentityKey() else { return nil }
        let published = try await checkPublishedIdentity(pinned: pinned, remote: remote)
        let user = remote.userID
        var problems: [SyncIssue] = []
        func refused(_ kind: String, _ row: SignedStatementRow, _ why: String) {
            problems.append(
                SyncIssue(
                    phase: phase, code: .invalidStatement, rowID: row.deviceID.canonical,
                    message: "\(kind) ignored: \(why)"))
        }

        // A revocation once verified stays: the remote cannot take it back by deleting the row.
        var revocations = Dictionary(
            try await local.knownRevocations().map { ($0.deviceID, $0) }, uniquingKeysWith: { first, _ in first })
        var fresh: [KnownRevocation] = []
        let revocationRows = try await remote.trustTables().listRevocations()
        for row in revocationRows {
            do {
                guard row.userID == user else { throw TrustStatementError(.wrongUser, "the row names another user") }
                let revocation = try DeviceRevocation.verify(
                    SignedStatement(body: row.body, signature: row.signature),
                    identityKey: pinned, userID: user, deviceID: row.deviceID)
                let known = KnownRevocation(
                    deviceID: revocation.deviceID, x25519PublicKey: revocation.x25519PublicKey,
                    revokedAt: Date(timeIntervalSince1970: TimeInterval(revocation.revokedAt)))
                if revocations[known.deviceID] == nil { fresh.append(known) }
                revocations[known.deviceID] = known
            } catch {
                refused("revocation", row, "\(error)")
            }
        }
        try await local.recordRevocations(fresh)

        var certificates: [UUID: DeviceCertificate] = [:]
        let certificateRows = try await remote.trustTables().listCertificates()
        for row in certificateRows {
            do {
                guard row.userID == user else { throw TrustStatementError(.wrongUser, "the row names another user") }
                certificates[row.deviceID] = try DeviceCertificate.verify(
                    SignedStatement(body: row.body, signature: row.signature),
                    identityKey: pinned, userID: user, deviceID: row.deviceID)
            } catch {
                refused("certificate", row, "\(error)")
            }
        }
        return TrustSnapshot(
            identityKey: pinned, certificates: certificates, revocations: revocations, problems: problems,
            statementsDigest: statementsDigest(
                identityKey: published,
                rows: certificateRows.map { ("c", $0) } + revocationRows.map { ("r", $0) }))
    }

    /// The pull feed's `statements`: MD5 (lowercase hex) of the published identity key, `|`,
    /// and every certificate (`c`) and revocation (`r`) row as `kind:device_id:signature`, in
    /// that order, joined by `,` (`*_pull_feed.sql`).
    static func statementsDigest(identityKey: String, rows: [(String, SignedStatementRow)]) -> String {
        let joined = rows.map { "\($0.0):\($0.1.deviceID.canonical):\($0.1.signature)" }.sorted().joined(separator: ",")
        return MD5.hash(Array((identityKey + "|" + joined).utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// Refuses to go on when the remote's identity key is not the pinned one; the key as published.
    @discardableResult
    static func checkPublishedIdentity(pinned: Ed25519PublicKey, remote: any SyncRemote) async throws -> String {
        let published: String?
        do {
            published = try await remote.trustTables().fetchIdentityKey()
        } catch let error as RemoteStoreError where error.code == .missingTable {
            throw SyncError(
                code: .identityChanged,
                message: "the user's identity key changed: the remote no longer has the device-trust tables, "
                    + "but this device pinned identity \(IdentityFingerprint(pinned)); re-pair with `sync-cli trust join`"
            )
        }
        guard let published else {
            throw SyncError(
                code: .identityChanged,
                message: "the user's identity key changed: the remote publishes none, "
                    + "but this device pinned identity \(IdentityFingerprint(pinned)); re-pair with `sync-cli trust join`"
            )
        }
        guard let key = try? Ed25519PublicKey(base64: published), key == pinned else {
            let shown =
                (try? Ed25519PublicKey(base64: published)).map { "\(IdentityFingerprint($0))" } ?? "an unreadable key"
            throw SyncError(
                code: .identityChanged,
                message: "the user's identity key changed: the remote publishes \(shown), "
                    + "but this device pinned \(IdentityFingerprint(pinned)); nothing was sent. Re-pair with `sync-cli trust join` "
                    + "if the user really made a new identity")
        }
        return published
    }
}
