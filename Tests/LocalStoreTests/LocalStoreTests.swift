import EnvelopeDigest
import Foundation
import GRDB
import SecretCrypto
import SyncModel
import TestStack
import Testing

@testable import LocalStore

@Suite("DeviceStore: round trips")
struct RoundTripTests {
    @Test("identity and key file survive reopening")
    func identity() async throws {
        let fixture = try await Fixture()
        let reopened = try await DeviceStore.opened(directory: fixture.temporary.store)
        let identity = try #require(try await reopened.identity())
        #expect(
            identity
                == DeviceIdentity(
                    id: fixture.identity.id, userID: fixture.user, name: "test desktop",
                    deviceType: .linuxDesktop, hostname: "box", role: .desktop,
                    publicKey: fixture.identity.publicKey, createdAt: identity.createdAt))
        #expect(try await reopened.deviceKey().publicKey == identity.publicKey)
        let mode = try FileManager.default.attributesOfItem(atPath: reopened.keyPath)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try Data(contentsOf: URL(fileURLWithPath: reopened.keyPath)).count == 32)
    }

    @Test("a sent approval round-trips; copies a day past their expiry are forgotten when the next is kept")
    func sentApprovals() async throws {
        let fixture = try await Fixture()
        let now = UInt64(Date().timeIntervalSince1970)
        let old = SentApproval(
            requestID: UUID(), sessionID: UUID(), body: "AQ==", generation: 3,
            expiresAt: now - DeviceStore.sentApprovalRetention - 1)
        try await fixture.store.recordSentApproval(old)
        #expect(try await fixture.store.sentApproval(requestID: old.requestID)?.generation == 3)
        let recent = SentApproval(
            requestID: UUID(), sessionID: UUID(), body: "Ag==", generation: 1, expiresAt: now + 60)
        try await fixture.store.recordSentApproval(recent)
        #expect(try await fixture.store.sentApproval(requestID: old.requestID) == nil)
        let read = try #require(try await fixture.store.sentApproval(requestID: recent.requestID))
        #expect(read.body == "Ag==" && read.expiresAt == now + 60 && read.sessionID == recent.sessionID)
        await #expect(throws: LocalStoreError.self) { try await fixture.store.recordSentApproval(recent) }
    }

    @Test("a second identity is refused")
    func secondIdentity() async throws {
        let fixture = try await Fixture()
        await #expect(throws: LocalStoreError.self) {
            try await fixture.store.createIdentity(name: "again", deviceType: .iosPhone, role: .mobile)
        }
        #expect(try await fixture.store.identity()?.id == fixture.identity.id)
    }

    @Test("repositories and sessions round-trip every column")
    func content() async throws {
        let fixture = try await Fixture()
        var repository = fixture.repository()
        repository.parentRepositoryID = UUID()
        repository.isWorktree = true
        repository.worktreeBranch = "feature"
        repository.status = .archived
        repository.lastSyncedAt = Date(timeIntervalSince1970: 1_700_000_000.123456)
        try await fixture.store.upsertRepositories([repository])
        #expect(try await fixture.store.repositories() == [repository])

        var session = fixture.session(in: repository)
        session.sessionEndedAt = Date(timeIntervalSince1970: 1_700_000_100.5)
        session.status = .ended
        session.lastHeartbeatAt = Date(timeIntervalSince1970: 1_700_000_050)
        session.isWorktree = true
        session.worktreePath = "/tmp/wt"
        try await fixture.store.upsertSessions([session])
        #expect(try await fixture.store.sessions() == [session])
        #expect(try await fixture.store.session(id: session.id) == session)

        session.title = "renamed"
        try await fixture.store.upsertSessions([session])
        #expect(try await fixture.store.sessions() == [session])
    }

    @Test("changed-since returns only newer rows, in (updated_at, id) order")
    func changedSince() async throws {
        let fixture = try await Fixture()
        let old = Date(timeIntervalSince1970: 1_000)
        let new = Date(timeIntervalSince1970: 2_000)
        var a = fixture.repository()
        a.updatedAt = old
        var b = fixture.repository()
        b.updatedAt = new
        try await fixture.store.upsertRepositories([b, a])
        #expect(try await fixture.store.repositories().map(\.id) == [a.id, b.id])
        #expect(try await fixture.store.repositories(changedSince: old).map(\.id) == [b.id])
    }

    @Test("a desktop session's secret is stored sealed and opens on demand")
    func ownSecret() async throws {
        let fixture = try await Fixture()
        let repository = fixture.repository()
        try await fixture.store.upsertRepositories([repository])
        let session = try await fixture.store.createSession(fixture.session(in: repository))
        let secret = try await fixture.store.openOwnSecret(sessionID: session.id)
        #expect(try await fixture.store.openOwnSecret(sessionID: session.id) == secret)
        // The plaintext text form is nowhere in the database files.
        let text = Data(secret.revealTextForm().utf8)
        for suffix in ["", "-wal"] {
            if let bytes = FileManager.default.contents(atPath: fixture.store.databasePath + suffix) {
                #expect(bytes.range(of: text) == nil)
            }
        }
        #expect(try await fixture.store.ownSealedSecrets().keys.contains(session.id))
        await #expect(throws: LocalStoreError.self) { try await fixture.store.openOwnSecret(sessionID: UUID()) }
    }

    @Test("a phone keeps envelopes as received and opens them on demand")
    func receivedEnvelopes() async throws {
        let fixture = try await Fixture(role: .mobile)
        let repository = fixture.repository(device: UUID())
        let session = fixture.session(in: repository)
        try await fixture.store.applyRepositories([repository], retaining: nil)
        try await fixture.store.applySessions([session], retaining: nil)
        let secret = SessionSecret()
        let sealed = try SecretEnvelope.seal(secret, for: fixture.identity.publicKey, sessionID: SessionID(session.id))
        // Arrives in the bytea \x form; stored exactly so.
        let received = SecretEnvelope(
            ephemeralPublicKey: sealed.ephemeralPublicKey,
            encryptedSecret: "\\x" + ByteEncoding.hex(Array(sealed.encryptedSecret.utf8)))
        try await fixture.store.upsertReceivedEnvelopes([ReceivedEnvelope(sessionID: session.id, envelope: received)])
        #expect(try await fixture.store.receivedEnvelopes().map(\.envelope) == [received])
        #expect(try await fixture.store.openReceivedSecret(sessionID: session.id) == secret)

        // An envelope for another device's key is reported, not crashed on.
        let foreign = try SecretEnvelope.seal(
            secret, for: X25519PrivateKey().publicKey, sessionID: SessionID(session.id))
        try await fixture.store.upsertReceivedEnvelopes([ReceivedEnvelope(sessionID: session.id, envelope: foreign)])
        await #expect {
            try await fixture.store.openReceivedSecret(sessionID: session.id)
        } throws: { ($0 as? LocalStoreError)?.code == .secretUnreadable }
    }

    @Test(
        "the ledger's kept digest equals the digest of its entries after inserts, replacements, deletions and a session removed"
    )
    func keptLedgerDigest() async throws {
        let fixture = try await Fixture()
        let repository = fixture.repository()
        try await fixture.store.upsertRepositories([repository])
        var sessions: [SessionRecord] = []
        for _ in 0..<12 { sessions.append(try await fixture.store.createSession(fixture.session(in: repository))) }
        let recipients = (0..<3).map { _ in UUID() }
        func entry(
            _ session: SessionRecord, _ recipient: UUID, key: String? = X25519PrivateKey().publicKey.base64
        ) -> LedgerEntry {
            LedgerEntry(
                sessionID: session.id, recipientDeviceID: recipient, recipientKeyFingerprint: "fp",
                ephemeralPublicKey: key)
        }
        // Recomputed from the entries, row by row, as the remote's function defines it.
        func expected(buckets: Int) async throws -> [Int: DigestBucket] {
            var result: [Int: DigestBucket] = [:]
            for item in try await fixture.store.ledger() {
                guard let key = item.ephemeralPublicKey else { continue }
                let hash = SecretDigest.rowHash(
                    sessionID: item.sessionID.canonical, deviceID: item.recipientDeviceID.canonical,
                    ephemeralPublicKey: key)
                SecretDigest.add(
                    session: item.sessionID.canonical, pairs: 1, h1: hash.0, h2: hash.1, buckets: buckets, to: &result)
            }
            return result
        }
        func check(_ step: String) async throws {
            for buckets in [1, 4, 65_536] {
                #expect(
                    try await fixture.store.ledgerDigest(buckets: buckets) == expected(buckets: buckets),
                    "\(step), \(buckets) buckets")
            }
        }
        try await fixture.store.recordDistributions(
            sessions.flatMap { session in recipients.map { entry(session, $0) } })
        try await check("inserted")
        #expect(try await fixture.store.ledgerDigest(buckets: 1)[0]?.pairs == 36)
        try await fixture.store.recordDistributions([
            entry(sessions[0], recipients[0]), entry(sessions[1], recipients[1]),
        ])
        try await check("replaced")
        try await fixture.store.deleteLedgerEntries(pairs: [(sessions[2].id, recipients[2])])
        try await fixture.store.deleteLedgerEntries(recipients: [recipients[1]])
        try await check("deleted")
        _ = try await fixture.store.removeSessions(ids: [sessions[3].id])
        try await check("session removed")
        // An entry without a key is outside the digest, and its session is named for listing.
        try await fixture.store.recordDistributions([entry(sessions[4], recipients[1], key: nil)])
        try await check("unhashed entry")
        #expect(try await fixture.store.sessionsWithUnhashedLedgerEntries() == [sessions[4].id])
        try await fixture.store.adoptLedgerKeys([(sessions[4].id, recipients[1], X25519PrivateKey().publicKey.base64)])
        try await check("key adopted")
        #expect(try await fixture.store.sessionsWithUnhashedLedgerEntries().isEmpty)
        #expect(try await fixture.store.ledgerDigest(buckets: 1)[0]?.pairs == 36 - 1 - 12 - 2 + 1)
        let coverage = try await fixture.store.ledgerCoverage()
        #expect(
            Set(coverage) == [
                LedgerCoverage(recipientDeviceID: recipients[0], recipientKeyFingerprint: "fp", sessions: 11),
                LedgerCoverage(recipientDeviceID: recipients[1], recipientKeyFingerprint: "fp", sessions: 1),
                LedgerCoverage(recipientDeviceID: recipients[2], recipientKeyFingerprint: "fp", sessions: 10),
            ])
    }

    @Test(
        "the ledger's kept coverage counts this desktop's sessions per recipient and key through every kind of change")
    func keptLedgerCoverage() async throws {
        let fixture = try await Fixture()
        let repository = fixture.repository()
        try await fixture.store.upsertRepositories([repository])
        var sessions: [SessionRecord] = []
        for _ in 0..<6 { sessions.append(try await fixture.store.createSession(fixture.session(in: repository))) }
        // A session this desktop holds without an own secret (pulled, not started here): its
        // entries are not coverage of this desktop's sessions.
        let foreign = fixture.session(in: repository)
        try await fixture.store.upsertSessions([foreign])
        let recipients = (0..<3).map { _ in UUID() }
        func entry(_ session: UUID, _ recipient: UUID, _ fingerprint: String = "fp1") -> LedgerEntry {
            LedgerEntry(
                sessionID: session, recipientDeviceID: recipient, recipientKeyFingerprint: fingerprint,
                ephemeralPublicKey: X25519PrivateKey().publicKey.base64)
        }
        // Counted from the entries, as the join over every entry did before the counts were kept.
        func check(_ step: String) async throws {
            let own = try await fixture.store.ownSessionIDs()
            var expected: [LedgerCoverage] = []
            let counts = Dictionary(
                try await fixture.store.ledger().filter { own.contains($0.sessionID) }
                    .map { ("\($0.recipientDeviceID.canonical) \($0.recipientKeyFingerprint)", 1) }, uniquingKeysWith: +
            )
            for (key, count) in counts {
                let parts = key.split(separator: " ", maxSplits: 1).map(String.init)
                expected.append(
                    LedgerCoverage(
                        recipientDeviceID: try #require(UUID(uuidString: parts[0])), recipientKeyFingerprint: parts[1],
                        sessions: count))
            }
            #expect(Set(try await fixture.store.ledgerCoverage()) == Set(expected), "\(step)")
        }
        try await fixture.store.recordDistributions(
            (sessions.map(\.id) + [foreign.id]).flatMap { session in recipients.map { entry(session, $0) } })
        try await check("inserted")
        #expect(
            Set(try await fixture.store.ledgerCoverage())
                == Set(
                    recipients.map {
                        LedgerCoverage(recipientDeviceID: $0, recipientKeyFingerprint: "fp1", sessions: 6)
                    }))
        // A recipient's new key: the entries resealed move from one fingerprint to the other.
        try await fixture.store.recordDistributions(
            sessions.prefix(2).map { entry($0.id, recipients[0], "fp2") } + [entry(foreign.id, recipients[0], "fp2")])
        try await check("re-keyed")
        #expect(
            Set(try await fixture.store.ledgerCoverage().filter { $0.recipientDeviceID == recipients[0] })
                == [
                    LedgerCoverage(recipientDeviceID: recipients[0], recipientKeyFingerprint: "fp1", sessions: 4),
                    LedgerCoverage(recipientDeviceID: recipients[0], recipientKeyFingerprint: "fp2", sessions: 2),
                ])
        // The same entry written again changes nothing.
        try await fixture.store.recordDistributions([entry(sessions[3].id, recipients[1])])
        try await check("rewritten")
        try await fixture.store.deleteLedgerEntries(pairs: [
            (sessions[2].id, recipients[2]), (foreign.id, recipients[2]),
        ])
        try await check("pairs deleted")
        try await fixture.store.deleteLedgerEntries(recipients: [recipients[1]])
        try await check("recipient deleted")
        #expect(try await fixture.store.ledgerCoverage().allSatisfy { $0.recipientDeviceID != recipients[1] })
        // A session removed takes its own secret and its entries (cascades, in SQLite's order).
        _ = try await fixture.store.removeSessions(ids: [sessions[0].id, sessions[4].id])
        try await check("sessions removed")
        _ = try await fixture.store.removeSessions(ids: Set(sessions.map(\.id)).union([foreign.id]))
        try await check("all removed")
        #expect(try await fixture.store.ledgerCoverage().isEmpty)
    }

    @Test("a store migrated to kept coverage starts from the counts of the entries it already holds")
    func coverageMigration() async throws {
        let temporary = TemporaryDirectory()
        let path = temporary.url.appendingPathComponent("store.sqlite").path
        let queue = try DatabaseQueue(path: path)
        let session = UUID().canonical, other = UUID().canonical, recipient = UUID().canonical
        try Schema.migrator.migrate(queue, upTo: "v7: ledger digest kept per session")
        try await queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO repositories (id, user_id, device_id, name, local_path, status, created_at, updated_at) VALUES ('\(UUID().canonical)', 'u', 'd', 'r', '/r', 'active', 0, 0);
                    """)
            let repository = try String.fetchOne(db, sql: "SELECT id FROM repositories")!
            for id in [session, other] {
                try db.execute(
                    sql:
                        "INSERT INTO sessions (id, user_id, device_id, repository_id, session_started_at, status, created_at, updated_at) VALUES (?, 'u', 'd', ?, 0, 'active', 0, 0)",
                    arguments: [id, repository])
                try db.execute(
                    sql:
                        "INSERT INTO distribution_ledger (session_id, recipient_device_id, recipient_key_fingerprint, sent_at) VALUES (?, ?, 'fp', 0)",
                    arguments: [id, recipient])
            }
            try db.execute(
                sql:
                    "INSERT INTO own_session_secrets (session_id, ephemeral_public_key, encrypted_secret) VALUES (?, 'k', 's')",
                arguments: [session])
        }
        try Schema.migrator.migrate(queue)
        let rows = try queue.read {
            try Row.fetchAll(
                $0, sql: "SELECT recipient_device_id, recipient_key_fingerprint, sessions FROM ledger_coverage")
        }
        #expect(rows.map { [$0[0] as String, $0[1] as String, String($0[2] as Int)] } == [[recipient, "fp", "1"]])
    }

    @Test("ledger, cursors and the last report round-trip")
    func bookkeeping() async throws {
        let fixture = try await Fixture()
        let repository = fixture.repository()
        try await fixture.store.upsertRepositories([repository])
        let session = try await fixture.store.createSession(fixture.session(in: repository))
        let recipient = UUID()
        let entry = LedgerEntry(
            sessionID: session.id, recipientDeviceID: recipient, recipientKeyFingerprint: "abc",
            sentAt: Date(timeIntervalSince1970: 5))
        try await fixture.store.recordDistributions([entry])
        #expect(try await fixture.store.ledger() == [entry])
        var changed = entry
        changed.recipientKeyFingerprint = "def"
        try await fixture.store.recordDistributions([changed])
        #expect(try await fixture.store.ledger() == [changed])
        #expect(try await fixture.store.deleteLedgerEntries(recipients: [recipient]) == 1)
        #expect(try await fixture.store.ledger().isEmpty)

        let cursor = PullCursor(updatedAt: "2026-01-01T00:00:00.123456+00:00", id: UUID())
        try await fixture.store.setCursor(cursor, for: .sessions)
        #expect(try await fixture.store.cursor(for: .sessions) == cursor)
        #expect(try await fixture.store.cursor(for: .repositories) == nil)
        try await fixture.store.setCursor(nil, for: .sessions)
        #expect(try await fixture.store.cursor(for: .sessions) == nil)

        try await fixture.store.saveLastReport(#"{"ok":true}"#)
        #expect(try await fixture.store.lastReport()?.json == #"{"ok":true}"#)
        let counts = try await fixture.store.counts()
        #expect(
            counts == StoreCounts(repositories: 1, sessions: 1, ownSecrets: 1, receivedEnvelopes: 0, ledgerEntries: 0))
    }
}

@Suite("DeviceStore: keys and constraints")
struct ConstraintTests {
    @Test("two repositories with one (device, path) collide, as remotely; nothing is written")
    func repositoryUniqueKey() async throws {
        let fixture = try await Fixture()
        let first = fixture.repository(path: "/src/app")
        try await fixture.store.upsertRepositories([first])
        let clash = fixture.repository(path: "/src/app")
        let other = fixture.repository(path: "/src/other")
        await #expect {
            try await fixture.store.upsertRepositories([other, clash])
        } throws: { ($0 as? LocalStoreError)?.code == .uniqueViolation }
        #expect(try await fixture.store.repositories() == [first])
    }

    @Test("the same path on two desktops does not collide")
    func samePathTwoDevices() async throws {
        let fixture = try await Fixture(role: .mobile)
        let a = fixture.repository(path: "/Users/q/app", device: UUID())
        let b = fixture.repository(path: "/Users/q/app", device: UUID())
        try await fixture.store.applyRepositories([a, b], retaining: nil)
        #expect(try await fixture.store.repositories().count == 2)
    }

    @Test("a session before its repository fails; the batch is not applied")
    func foreignKey() async throws {
        let fixture = try await Fixture()
        let repository = fixture.repository()
        try await fixture.store.upsertRepositories([repository])
        let good = fixture.session(in: repository)
        let orphan = fixture.session(in: fixture.repository())
        await #expect {
            try await fixture.store.upsertSessions([good, orphan])
        } throws: { ($0 as? LocalStoreError)?.code == .foreignKeyViolation }
        #expect(try await fixture.store.sessions().isEmpty)
    }

    @Test("a pull's apply of a page is all or nothing")
    func bulkApply() async throws {
        let fixture = try await Fixture(role: .mobile)
        let repository = fixture.repository(device: UUID())
        try await fixture.store.applyRepositories([repository], retaining: nil)
        let good = fixture.session(in: repository)
        let orphan = fixture.session(in: fixture.repository(device: UUID()))
        await #expect {
            try await fixture.store.applySessions([good, orphan], retaining: nil)
        } throws: { ($0 as? LocalStoreError)?.code == .foreignKeyViolation }
        #expect(try await fixture.store.sessions().isEmpty)
        try await fixture.store.applySessions([good], retaining: nil)
        #expect(try await fixture.store.sessions().map(\.id) == [good.id])
    }

    @Test("a session id used twice is refused by createSession")
    func duplicateSession() async throws {
        let fixture = try await Fixture()
        let repository = fixture.repository()
        try await fixture.store.upsertRepositories([repository])
        let session = try await fixture.store.createSession(fixture.session(in: repository))
        await #expect {
            try await fixture.store.createSession(session)
        } throws: { ($0 as? LocalStoreError)?.code == .uniqueViolation }
    }

    @Test("deleting rows missing from a set removes exactly those, cascading to sessions and secrets")
    func deleteMissing() async throws {
        let fixture = try await Fixture()
        let keep = fixture.repository()
        let drop = fixture.repository()
        try await fixture.store.upsertRepositories([keep, drop])
        let kept = try await fixture.store.createSession(fixture.session(in: keep))
        let dropped = try await fixture.store.createSession(fixture.session(in: drop))
        let extra = try await fixture.store.createSession(fixture.session(in: keep))
        try await fixture.store.recordDistributions([
            LedgerEntry(sessionID: dropped.id, recipientDeviceID: UUID(), recipientKeyFingerprint: "x")
        ])

        #expect(try await fixture.store.deleteRepositories(notIn: [keep.id]) == 1)
        #expect(Set(try await fixture.store.sessions().map(\.id)) == [kept.id, extra.id])
        #expect(try await fixture.store.deleteSessions(notIn: [kept.id]) == 1)
        #expect(try await fixture.store.sessions().map(\.id) == [kept.id])
        let counts = try await fixture.store.counts()
        #expect(counts.ownSecrets == 1 && counts.ledgerEntries == 0)
        #expect(try await fixture.store.deleteSessions(notIn: []) == 1)
        #expect(try await fixture.store.deleteRepositories(ids: [keep.id]) == 1)
    }

    @Test("a pull applies deletions before upserts, so a freed path can be reused")
    func applyOrder() async throws {
        let fixture = try await Fixture(role: .mobile)
        let device = UUID()
        let old = fixture.repository(path: "/p", device: device)
        try await fixture.store.applyRepositories([old], retaining: nil)
        let replacement = fixture.repository(path: "/p", device: device)
        try await fixture.store.applyRepositories([replacement], retaining: [replacement.id])
        #expect(try await fixture.store.repositories().map(\.id) == [replacement.id])
    }

    @Test("uppercase UUIDs land lowercase")
    func uppercase() async throws {
        let fixture = try await Fixture()
        let upper = "A1B2C3D4-E5F6-4A7B-8C9D-0E1F2A3B4C5D"
        let repository = RepositoryRecord(
            id: try #require(UUID.parse(upper)), userID: fixture.user,
            deviceID: try #require(UUID.parse(upper.replacingOccurrences(of: "A1", with: "B2"))),
            name: "r", localPath: "/x")
        try await fixture.store.upsertRepositories([repository])
        let ids = try await DatabaseQueue(path: fixture.store.databasePath).read { db in
            try String.fetchAll(
                db,
                sql:
                    "SELECT id FROM repositories UNION ALL SELECT device_id FROM repositories UNION ALL SELECT id FROM device_identity"
            )
        }
        #expect(ids.contains(upper.lowercased()))
        #expect(ids.allSatisfy { $0 == $0.lowercased() && $0.count == 36 })
        #expect(try await fixture.store.repository(id: try #require(UUID.parse(upper.lowercased()))) == repository)
    }
}
