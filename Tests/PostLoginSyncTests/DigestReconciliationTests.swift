import EnvelopeDigest
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Testing

/// The secrets step checks the remote with one digest instead of listing every pair (sync.md,
/// "Reconciliation that scales"), and still finds every way the remote can drift.
@Suite("Reconciliation by digest")
struct DigestReconciliationTests {
    @Test(
        "a quiet push asks one digest and lists nothing; rows deleted, replaced or added remotely are found and repaired",
        arguments: Backend.available)
    func repairs(backend: Backend) async throws {
        let world = try World(backend)
        let phone = try await world.device("phone", role: .mobile)
        _ = try await phone.engine.pull()
        // Four rows a bucket (32 buckets for these 80 pairs), so that a repair lists a few
        // buckets out of many.
        var options = SyncOptions()
        options.rowsPerDigestBucket = 4
        let desktop = try await world.desktop(repositories: 2, sessions: 40, options: options)
        let first = try await desktop.engine.push()
        #expect(first.outcome == .success && first.envelopesSealed == 80, "\(first.errors)")
        #expect(first.reconciliation?.buckets == 32)
        #expect(first.reconciliation?.method == .digest)

        let quiet = try await desktop.engine.push()
        #expect(quiet.envelopesSealed == 0)
        #expect(
            quiet.reconciliation
                == Reconciliation(
                    method: .digest, buckets: quiet.reconciliation?.buckets ?? 0, bucketsListed: 0, rowsListed: 0))
        let secretsPhase = try #require(quiet.phases.first { $0.phase == .secrets })
        #expect(
            secretsPhase.requests <= 3, "the device listing (and, on PostgREST, its empty closing page) and the digest")

        // Rows changed behind the desktop's back: the operator's hand.
        let remote = try world.operatorRemote()
        let sessions = try await desktop.store.sessions().map(\.id).sorted { $0.canonical < $1.canonical }
        // Deleted remotely.
        try await remote.deleteEnvelopes(.pairs([EnvelopePair(sessionID: sessions[0], deviceID: phone.identity.id)]))
        // Replaced remotely by another writer: a valid envelope of another secret for the phone.
        let forged = try SecretEnvelope.seal(
            SessionSecret(), for: phone.identity.publicKey, sessionID: SessionID(sessions[1]))
        _ = try await remote.upsertEnvelopes(
            [
                EnvelopeRecord(
                    sessionID: sessions[1], deviceID: phone.identity.id,
                    ephemeralPublicKey: forged.ephemeralPublicKey, encryptedSecret: forged.encryptedSecret)
            ],
            onBatchAccepted: nil)
        // Added remotely for a device that does not qualify.
        let browser = UUID()
        let browserKey = X25519PrivateKey().publicKey
        try await remote.upsertOwnDevice(
            OwnDeviceRow(
                id: browser, userID: world.user, name: "browser", deviceType: .webBrowser,
                hostname: nil, publicKey: browserKey.base64))
        let planted = try SecretEnvelope.seal(SessionSecret(), for: browserKey, sessionID: SessionID(sessions[2]))
        _ = try await remote.upsertEnvelopes(
            [
                EnvelopeRecord(
                    sessionID: sessions[2], deviceID: browser,
                    ephemeralPublicKey: planted.ephemeralPublicKey, encryptedSecret: planted.encryptedSecret)
            ],
            onBatchAccepted: nil)

        let repair = try await desktop.engine.push()
        #expect(repair.outcome == .success, "\(repair.errors)")
        #expect(repair.envelopesSealed == 2, "the deleted and the replaced row")
        #expect(repair.phases.first { $0.phase == .secrets }?.deleted == 1, "the planted row")
        let listed = try #require(repair.reconciliation)
        #expect(listed.method == .digest && (1...3).contains(listed.bucketsListed) && listed.rowsListed < 80)

        // The operator sees every user's rows: this user's sessions only.
        let pairs = Set(try await remote.listEnvelopePairs().filter { sessions.contains($0.sessionID) })
        let expected = Set(
            sessions.flatMap {
                [
                    EnvelopePair(sessionID: $0, deviceID: phone.identity.id),
                    EnvelopePair(sessionID: $0, deviceID: desktop.identity.id),
                ]
            })
        #expect(pairs == expected)
        let pulled = try await phone.engine.pull()
        #expect(pulled.envelopesOpened == 40)
        #expect(try await world.opened(by: phone) == world.secrets(of: desktop))

        let after = try await desktop.engine.push()
        #expect(after.envelopesSealed == 0 && after.reconciliation?.bucketsListed == 0)
    }

    @Test(
        "the remote's digest, kept per session by triggers, equals the digest of its rows after upserts, replacements, deletions and cascades",
        arguments: Backend.available)
    func keptDigest(backend: Backend) async throws {
        let world = try World(backend)
        let phone = try await world.device("phone", role: .mobile)
        _ = try await phone.engine.pull()
        let desktop = try await world.desktop(repositories: 2, sessions: 30)
        _ = try await desktop.engine.push()
        // The desktop's own client: it keeps the digest of the envelopes it writes.
        let remote = try world.remote(for: desktop)
        // Recomputed from the rows, row by row, as sync.md defines it.
        func check(_ step: String) async throws {
            let sessions = Set(try await desktop.store.sessions().map(\.id))
            let rows = try await remote.listEnvelopeKeys(sessions: sessions, atMost: nil)
            for buckets in [1, 8, 65_536] {
                var expected: [Int: DigestBucket] = [:]
                for row in rows {
                    let hash = SecretDigest.rowHash(
                        sessionID: row.pair.sessionID.canonical, deviceID: row.pair.deviceID.canonical,
                        ephemeralPublicKey: row.ephemeralPublicKey)
                    SecretDigest.add(
                        session: row.pair.sessionID.canonical, pairs: 1, h1: hash.0, h2: hash.1, buckets: buckets,
                        to: &expected)
                }
                let kept = try await remote.secretDigest(ownerDeviceID: desktop.identity.id, buckets: buckets)
                #expect(kept == expected.values.sorted { $0.bucket < $1.bucket }, "\(step), \(buckets) buckets")
            }
        }
        try await check("pushed")
        let sessions = try await desktop.store.sessions().map(\.id).sorted { $0.canonical < $1.canonical }
        // Replaced in place (an upsert's UPDATE) and inserted in the same request.
        let tablet = UUID()
        let tabletKey = X25519PrivateKey().publicKey
        try await world.plantDevice(
            OwnDeviceRow(
                id: tablet, userID: world.user, name: "tablet", deviceType: .iosTablet,
                hostname: nil, publicKey: tabletKey.base64))
        let replaced = try SecretEnvelope.seal(
            SessionSecret(), for: phone.identity.publicKey, sessionID: SessionID(sessions[0]))
        let added = try SecretEnvelope.seal(SessionSecret(), for: tabletKey, sessionID: SessionID(sessions[1]))
        _ = try await remote.upsertEnvelopes(
            [
                EnvelopeRecord(
                    sessionID: sessions[0], deviceID: phone.identity.id,
                    ephemeralPublicKey: replaced.ephemeralPublicKey, encryptedSecret: replaced.encryptedSecret),
                EnvelopeRecord(
                    sessionID: sessions[1], deviceID: tablet, ephemeralPublicKey: added.ephemeralPublicKey,
                    encryptedSecret: added.encryptedSecret),
            ], onBatchAccepted: nil)
        try await check("replaced and inserted")
        try await remote.deleteEnvelopes(.pairs([EnvelopePair(sessionID: sessions[2], deviceID: desktop.identity.id)]))
        _ = try await remote.deleteEnvelopes(.recipients([phone.identity.id]))
        try await check("deleted")
        // A session deleted: its envelopes cascade.
        _ = try await desktop.store.removeSessions(ids: [sessions[3]])
        _ = try await desktop.engine.push()
        try await check("session deleted, envelopes cascaded, the phone's resealed")
        let final = try await remote.secretDigest(ownerDeviceID: desktop.identity.id, buckets: 1)
        #expect(final.first?.pairs == 29 * 3, "the desktop, the phone and the tablet for each of the 29 sessions left")
    }

    @Test("a deployment without the digest function falls back to listing every pair")
    func fallback() async throws {
        guard !StackEnvironment.skipped else { return }
        let world = try World(.postgrest, deployedSchema: true)
        let phone = try await world.device("phone", role: .mobile)
        _ = try await phone.engine.pull()
        let desktop = try await world.desktop(repositories: 1, sessions: 3)
        let first = try await desktop.engine.push()
        #expect(first.outcome == .success && first.envelopesSealed == 6, "\(first.errors)")
        #expect(first.reconciliation == Reconciliation(method: .listing, rowsListed: 0))
        let second = try await desktop.engine.push()
        #expect(second.envelopesSealed == 0 && second.reconciliation == Reconciliation(method: .listing, rowsListed: 6))
    }

    @Test("the digest's bucket and row hash are the spec's: MD5, big-endian, signed")
    func definition() {
        let session = UUID(uuidString: "cccccccc-0000-0000-0000-000000000001")!
        // Computed with PostgreSQL's md5() and Python's hashlib.
        #expect(SecretDigest.bucket(of: session, buckets: 65_536) == 22_268)
        #expect(SecretDigest.bucket(of: session, buckets: 16) == 22_268 % 16)
        let hash = SecretDigest.rowHash(
            sessionID: session.canonical, deviceID: "aaaaaaaa-0000-0000-0000-000000000001", ephemeralPublicKey: "k")
        #expect(hash.0 == -1_711_658_670_441_683_434 && hash.1 == 1_680_519_733_139_644_437)
        #expect(
            SecretDigest.rowHash(sessionID: "s", deviceID: "d", ephemeralPublicKey: "k") == (
                -5_179_887_269_718_603_891, 2_389_276_972_656_703_777
            ))
        #expect([1, 2, 1024, 65_536].allSatisfy(SecretDigest.isValidBucketCount))
        #expect(![0, 3, 65_537, 131_072, -2].contains(where: SecretDigest.isValidBucketCount))
        #expect(SecretDigest.bucketCount(forPairs: 0) == 1 && SecretDigest.bucketCount(forPairs: 100_000) == 512)
        #expect(
            SecretDigest.bucketCount(forPairs: 10_000_000) == 65_536
                && SecretDigest.bucketCount(forPairs: 1_000_000) == 4096)
        #expect(SecretDigest.bucketCount(forPairs: 100_000, rowsPerBucket: 16) == 8192)
    }

    @Test("canonical ids are Foundation's, lowercased")
    func canonical() {
        for uuid in (0..<1000).map({ _ in UUID() }) + [
            UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
            UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255)),
        ] {
            #expect(uuid.canonical == uuid.uuidString.lowercased())
        }
    }

    @Test("MD5 matches RFC 1321's test suite")
    func md5() {
        let suite: [(String, String)] = [
            ("", "d41d8cd98f00b204e9800998ecf8427e"), ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"), ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            ("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
            ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"),
            (String(repeating: "1234567890", count: 8), "57edf4a22be3c955ac49da2e2107b67a"),
        ]
        for (message, digest) in suite {
            #expect(MD5.hash(Array(message.utf8)).map { String(format: "%02x", $0) }.joined() == digest, "\(message)")
        }
    }
}
