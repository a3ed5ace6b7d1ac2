import DeviceTrust
import EmbeddedRemote
import Foundation
import GRDB
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport

@testable import PostLoginSync

/// What the operator of a remote can do to the trust log (no rule applies to the database's
/// owner): raw rows, for staging the threats of trust-log.md.
enum TrustLogStaging {
    /// Runs SQL as the operator: the stack's superuser, or the embedded file itself.
    static func operatorSQL(_ world: World, stack: String, embedded: String? = nil) async throws {
        switch world.backend {
        case .embedded:
            let queue = try world.operatorDatabase()
            try await queue.write { try $0.execute(sql: embedded ?? stack) }
        case .postgrest:
            _ = try await StackEnvironment.require().sql(
                stack, database: world.deployedSchema ? "sync_deployed" : "sync_own")
        }
    }

    static func quoted(_ text: String?) -> String { text.map { "'\($0)'" } ?? "NULL" }

    /// Replaces a row's backup.
    static func updateBackup(_ world: World, epoch: UInt32, seq: UInt64, to backup: String?) async throws {
        try await operatorSQL(
            world,
            stack: "UPDATE public.trust_log SET backup = \(quoted(backup)) WHERE user_id = '\(world.user.canonical)' "
                + "AND epoch = \(epoch) AND seq = \(seq)",
            embedded: "UPDATE trust_log SET backup = \(quoted(backup)) WHERE user_id = '\(world.user.canonical)' "
                + "AND epoch = \(epoch) AND seq = \(seq)")
    }

    /// Replaces a row's entry (the operator altering history).
    static func updateEntry(_ world: World, epoch: UInt32, seq: UInt64, to entry: String) async throws {
        try await operatorSQL(
            world,
            stack: "UPDATE public.trust_log SET entry = '\(entry)' WHERE user_id = '\(world.user.canonical)' "
                + "AND epoch = \(epoch) AND seq = \(seq)",
            embedded: "UPDATE trust_log SET entry = '\(entry)' WHERE user_id = '\(world.user.canonical)' "
                + "AND epoch = \(epoch) AND seq = \(seq)")
    }

    /// Inserts a raw row (no rule checked).
    static func insertRow(_ world: World, epoch: UInt32, seq: UInt64, entry: String, backup: String? = nil) async throws
    {
        let user = world.user.canonical
        try await operatorSQL(
            world,
            stack:
                "INSERT INTO public.trust_log (user_id, epoch, seq, entry, backup) VALUES ('\(user)', \(epoch), \(seq), "
                + "'\(entry)', \(quoted(backup)))",
            embedded:
                "INSERT INTO trust_log (user_id, epoch, seq, entry, backup, created_at) VALUES ('\(user)', \(epoch), "
                + "\(seq), '\(entry)', \(quoted(backup)), '\(Timestamp.format(Date()))')")
    }

    /// Deletes the rows of `epoch` from `seq` on (a truncation).
    static func deleteRows(_ world: World, epoch: UInt32, fromSeq seq: UInt64) async throws {
        let condition = "user_id = '\(world.user.canonical)' AND epoch = \(epoch) AND seq >= \(seq)"
        try await operatorSQL(
            world, stack: "DELETE FROM public.trust_log WHERE \(condition)",
            embedded: "DELETE FROM trust_log WHERE \(condition)")
    }

    /// Replaces a whole epoch with `texts` (seq 0 on).
    static func replaceEpoch(_ world: World, epoch: UInt32, with texts: [String]) async throws {
        try await deleteRows(world, epoch: epoch, fromSeq: 0)
        for (seq, text) in texts.enumerated() {
            try await insertRow(world, epoch: epoch, seq: UInt64(seq), entry: text)
        }
    }

    /// Writes a legacy trust row (user_identity_keys, device_certificates, device_revocations,
    /// identity_key_backups) as the operator.
    static func legacyRow(
        _ world: World, _ table: String, device: UUID? = nil, body: String, signature: String? = nil
    ) async throws {
        let user = world.user.canonical
        switch table {
        case "user_identity_keys":
            try await operatorSQL(
                world,
                stack: "INSERT INTO public.user_identity_keys (user_id, public_key) VALUES ('\(user)', '\(body)') "
                    + "ON CONFLICT (user_id) DO UPDATE SET public_key = excluded.public_key",
                embedded: "INSERT OR REPLACE INTO user_identity_keys (user_id, public_key, created_at) VALUES "
                    + "('\(user)', '\(body)', '\(Timestamp.format(Date()))')")
        case "identity_key_backups":
            try await operatorSQL(
                world,
                stack: "INSERT INTO public.identity_key_backups (user_id, body) VALUES ('\(user)', '\(body)') "
                    + "ON CONFLICT (user_id) DO UPDATE SET body = excluded.body",
                embedded: "INSERT OR REPLACE INTO identity_key_backups (user_id, body, created_at, updated_at) VALUES "
                    + "('\(user)', '\(body)', '\(Timestamp.format(Date()))', '\(Timestamp.format(Date()))')")
        default:
            let id = (device ?? UUID()).canonical
            try await operatorSQL(
                world,
                stack: "INSERT INTO public.\(table) (device_id, user_id, body, signature) VALUES ('\(id)', '\(user)', "
                    + "'\(body)', '\(signature ?? "")') ON CONFLICT (device_id) DO UPDATE SET body = excluded.body, "
                    + "signature = excluded.signature",
                embedded: "INSERT OR REPLACE INTO \(table) (device_id, user_id, body, signature, created_at) VALUES "
                    + "('\(id)', '\(user)', '\(body)', '\(signature ?? "")', '\(Timestamp.format(Date()))')")
        }
    }
}

/// A whole, valid-looking log for the world's user under keys nobody of the user holds.
struct RemoteLogWriterForWorld {
    let texts: [String]

    init(world: World, epoch: UInt32 = 1, priorEpoch: UInt32? = nil, createdAt: UInt64? = nil) throws {
        let root = UUID()
        let certificate = DeviceCertificate(
            userID: world.user, deviceID: root, x25519PublicKey: X25519PrivateKey().publicKey,
            ed25519PublicKey: Ed25519PrivateKey().publicKey, deviceType: "linux-desktop", deviceRole: "trust_root",
            issuedAt: UInt64(Date().timeIntervalSince1970))
        let signing = Ed25519PrivateKey()
        var signed = certificate
        signed.ed25519PublicKey = signing.publicKey
        let writer = try TrustLogWriter.genesis(
            userID: world.user, epoch: epoch, priorEpoch: priorEpoch ?? (epoch == 1 ? 0 : epoch - 1),
            identity: Ed25519PrivateKey(), recoveryKey: nil, certificate: signed, signingKey: signing,
            createdAt: createdAt ?? UInt64(Date().timeIntervalSince1970))
        texts = writer.written.map(\.text)
    }
}
