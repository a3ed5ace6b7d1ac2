import DeviceTrust
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel

/// The trust log's verification cost (trust-log.md, "Verification"): a 10,000-entry epoch
/// (a genesis, 8,998 certifies, then the reserve's revocations and a succession up to seq 9,999)
/// verified from scratch by the client's verifier on one core, then extended by one entry; and
/// a phone's real pulls against that log on the embedded remote: the first one reads and verifies
/// every entry, the next one with the head unchanged verifies none (the report's count).
enum TrustLogBench {
    static func run(runs: Int) async throws {
        progress("  building a 10,000-entry log ...")
        let (user, texts) = try buildLog(entries: 10_000)
        var scratch: [Double] = []
        var extend: [Double] = []
        for run in 0..<runs {
            let start = ContinuousClock.now
            let (state, _) = try TrustLogVerifier.verify(texts, userID: user, epoch: 1)
            scratch.append(seconds(ContinuousClock.now - start))
            let prefix = try TrustLogVerifier.verify(Array(texts.dropLast()), userID: user, epoch: 1).state
            let one = ContinuousClock.now
            let (extended, _) = try TrustLogVerifier.extend(prefix, with: [texts.last!])
            extend.append(seconds(ContinuousClock.now - one))
            guard state.headSeq == 9_999, extended.headHash == state.headHash else {
                throw SyncBench.CLIFailure("the benchmark's log did not verify to seq 9,999")
            }
            progress("  run \(run + 1)/\(runs): \(String(format: "%.3f", scratch.last!)) s")
        }
        print("Trust log verification (one core, \(texts.count) entries, median of \(runs) runs):")
        print(String(format: "  from scratch        %8.3f s   (target < 1 s)", median(scratch)))
        print(String(format: "  one more entry      %8.3f ms", median(extend) * 1000))
        try await pulls()
    }

    /// A user's epoch 1 with `entries` entries, every one a real signed entry with its proof.
    static func buildLog(entries: Int) throws -> (UUID, [String]) {
        let user = UUID()
        let root = UUID()
        let rootKey = Ed25519PrivateKey()
        let certificate = DeviceCertificate(
            userID: user, deviceID: root, x25519PublicKey: X25519PrivateKey().publicKey,
            ed25519PublicKey: rootKey.publicKey, deviceType: "linux-desktop", deviceRole: "trust_root",
            issuedAt: 1_800_000_000)
        var writer = try TrustLogWriter.genesis(
            userID: user, epoch: 1, priorEpoch: 0, identity: Ed25519PrivateKey(),
            recoveryKey: RecoveryKey().agreementKey(userID: user).publicKey, certificate: certificate,
            signingKey: rootKey, createdAt: 1_800_000_000)
        try fill(&writer, to: UInt64(entries - 1), clock: 1_800_000_000)
        return (user, writer.written.map(\.text))
    }

    /// Certifies phones up to seq 8,998, a succession at 8,999, then revokes phones to `last`.
    static func fill(_ writer: inout TrustLogWriter, to last: UInt64, clock: UInt64) throws {
        let user = writer.state.userID
        var phones: [(UUID, X25519PublicKey)] = []
        while writer.state.headSeq < min(last, TrustLogEntry.reserveStart - 2) {
            let phone = (UUID(), X25519PrivateKey().publicKey)
            try writer.append(
                .certify(
                    DeviceCertificate(
                        userID: user, deviceID: phone.0, x25519PublicKey: phone.1,
                        ed25519PublicKey: Ed25519PrivateKey().publicKey, deviceType: "ios-phone",
                        deviceRole: "trusted_executor", issuedAt: clock)),
                createdAt: clock)
            phones.append(phone)
        }
        if writer.state.headSeq < last {
            try writer.succeed(
                to: Ed25519PrivateKey(), reason: .seedSuspected, newRecoveryKey: nil, revocations: [], createdAt: clock)
        }
        while writer.state.headSeq < last, let phone = phones.popLast() {
            try writer.append(
                .revoke(DeviceRevocation(userID: user, deviceID: phone.0, x25519PublicKey: phone.1, revokedAt: clock)),
                createdAt: clock)
        }
    }

    /// A desktop starts the log and pairs a phone; the log is filled to 10,000 entries on the
    /// embedded remote; the phone pulls twice.
    static func pulls() async throws {
        let world = try SyncBench.World(size: SyncBench.sizes[0], stack: nil)
        defer { world.remove() }
        let desktop = try await world.store("desktop", role: .desktop)
        let phone = try await world.store("phone", role: .mobile)
        let root = DeviceTrustManager(local: desktop, remote: try await world.remote(for: desktop))
        try await root.initialize()
        let (code, _) = try await root.invite(deviceType: .iosPhone)
        try await DeviceTrustManager(local: phone, remote: try await world.remote(for: phone)).join(
            code: PairingCode(parsing: code.revealText()))
        _ = try await root.approve()
        let log = try await world.remote(for: desktop)
        guard let identity = try await desktop.identityKey(), let author = try await desktop.identity()?.id else {
            throw SyncBench.CLIFailure("the desktop has no identity key")
        }
        let rows = try await log.trustLogRows(epoch: 1, fromSeq: 0)
        let state = try TrustLogVerifier.verify(rows.map(\.entry), userID: world.user, epoch: 1).state
        var writer = try TrustLogWriter(state: state, identity: identity, author: author)
        try fill(&writer, to: 9_999, clock: UInt64(Date().timeIntervalSince1970))
        for start in stride(from: 0, to: writer.written.count, by: 8) {
            let batch = writer.written[start..<min(start + 8, writer.written.count)]
            try await log.appendTrustEntries(
                epoch: 1, firstSeq: batch.first!.seq, batch.map { TrustLogAppend(entry: $0.text, backup: $0.backup) })
        }
        print("A phone's pull against that log (embedded remote, the real engine):")
        for label in ["first pull (reads and verifies the log)", "next pull, head unchanged"] {
            let start = ContinuousClock.now
            let report = try await SyncEngine(local: phone, remote: try await world.remote(for: phone)).pull()
            let elapsed = seconds(ContinuousClock.now - start)
            print(
                "  " + label.padding(toLength: 42, withPad: " ", startingAt: 0)
                    + String(
                        format: "%7.3f s   entries verified: %d, rows read: %d", elapsed,
                        report.trust?.entriesVerified ?? -1, report.trust?.entriesRead ?? -1))
        }
    }
}
