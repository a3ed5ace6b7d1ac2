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
        let rows = try await queue.read {
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

@Suite("DeviceStore: refusing bad files")
struct BadFileTests {
    @Test(
        "a key file readable by group or others is refused, as ssh does",
        arguments: [0o640, 0o604, 0o644, 0o660, 0o666, 0o700])
    func tooOpen(mode: Int) async throws {
        let fixture = try await Fixture()
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: fixture.store.keyPath)
        let allowed = mode & 0o077 == 0
        if allowed {
            _ = try await fixture.store.deviceKey()
        } else {
            await #expect {
                try await fixture.store.deviceKey()
            } throws: { error in
                let error = error as? LocalStoreError
                return error?.code == .keyFileTooOpen && error!.description.contains("too open")
            }
        }
    }

    @Test("a malformed key file is refused", arguments: [0, 31, 33, 64])
    func malformedKey(size: Int) async throws {
        let fixture = try await Fixture()
        try Data(repeating: 7, count: size).write(to: URL(fileURLWithPath: fixture.store.keyPath))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: fixture.store.keyPath)
        await #expect {
            try await fixture.store.deviceKey()
        } throws: { ($0 as? LocalStoreError)?.code == .keyFileMalformed }
    }

    @Test("a key that is not this identity's, a missing key and a symlinked key are refused")
    func wrongKey() async throws {
        let fixture = try await Fixture()
        let path = fixture.store.keyPath
        try FileManager.default.removeItem(atPath: path)
        await #expect { try await fixture.store.deviceKey() } throws: {
            ($0 as? LocalStoreError)?.code == .keyFileMissing
        }
        try DeviceKeyFile.create(X25519PrivateKey(), at: path)
        await #expect { try await fixture.store.deviceKey() } throws: { ($0 as? LocalStoreError)?.code == .keyMismatch }
        let elsewhere = fixture.temporary.url.appendingPathComponent("other.key").path
        try FileManager.default.moveItem(atPath: path, toPath: elsewhere)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: elsewhere)
        await #expect { try await fixture.store.deviceKey() } throws: {
            ($0 as? LocalStoreError)?.code == .keyFileMalformed
        }
    }

    @Test("a file that is not a SQLite database is refused and left byte-for-byte intact")
    func notADatabase() throws {
        let temporary = TemporaryDirectory()
        try FileManager.default.createDirectory(at: temporary.store, withIntermediateDirectories: true)
        let path = temporary.store.appendingPathComponent("store.sqlite")
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try garbage.write(to: path)
        #expect { try DeviceStore(directory: temporary.store) } throws: {
            ($0 as? LocalStoreError)?.code == .notADatabase
        }
        #expect(try Data(contentsOf: path) == garbage)
    }

    @Test("a database with a corrupted page fails clearly")
    func corruptedPage() async throws {
        let fixture = try await Fixture()
        let repositories = (0..<300).map { _ in fixture.repository() }
        try await fixture.store.upsertRepositories(repositories)
        let path = fixture.store.databasePath
        // Checkpoint the WAL into the main file, then overwrite pages after the header.
        try await DatabaseQueue(path: path).writeWithoutTransaction {
            try $0.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try handle.seek(toOffset: 4096)
        handle.write(Data(repeating: 0xA5, count: 4096 * 8))
        try handle.close()
        await #expect(throws: LocalStoreError.self) {
            let store = try await DeviceStore.opened(directory: fixture.temporary.store)
            _ = try await store.repositories()
        }
    }

    @Test("a store written by a newer schema is refused and not modified")
    func newerSchema() async throws {
        let fixture = try await Fixture()
        let path = fixture.store.databasePath
        try await DatabaseQueue(path: path).write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99: from the future')")
        }
        let before = try await DatabaseQueue(path: path).read {
            try String.fetchAll($0, sql: "SELECT identifier FROM grdb_migrations")
        }
        await #expect {
            try await DeviceStore.opened(directory: fixture.temporary.store)
        } throws: { error in
            let error = error as? LocalStoreError
            return error?.code == .schemaTooNew && error!.description.contains("newer version")
        }
        let after = try await DatabaseQueue(path: path).read {
            try String.fetchAll($0, sql: "SELECT identifier FROM grdb_migrations")
        }
        #expect(before == after)
    }

    @Test("the default directory follows XDG_DATA_HOME, else ~/.local/share")
    func defaultDirectory() {
        #expect(
            DeviceStore.defaultDirectory(environment: ["XDG_DATA_HOME": "/x/data", "HOME": "/h"]).path
                == "/x/data/session-sync")
        #expect(DeviceStore.defaultDirectory(environment: ["HOME": "/h"]).path == "/h/.local/share/session-sync")
        #expect(
            DeviceStore.defaultDirectory(environment: ["XDG_DATA_HOME": "relative", "HOME": "/h"]).path
                == "/h/.local/share/session-sync")
    }
}

@Suite("DeviceStore: processes")
struct ProcessTests {
    @Test("a second process's lease request waits, then fails naming the holder; it succeeds once released")
    func leaseContention() async throws {
        let fixture = try await Fixture()
        // The child holds the lease until told to let go: a fixed hold could end before this
        // process asks on a busy machine (it did, once, under load).
        let child = try Helper(["hold-lease", fixture.temporary.store.path])
        #expect(try await child.wait(for: "held"))
        let started = ContinuousClock.now
        await #expect {
            _ = try await fixture.store.acquireSyncLease(purpose: "push", timeout: .milliseconds(300))
        } throws: { error in
            let error = error as? LocalStoreError
            return error?.code == .storeBusy && error!.description.contains("pid \(child.child.pid)")
                && error!.description.contains("test helper")
        }
        #expect(ContinuousClock.now - started >= .milliseconds(300))
        // Waiting long enough gets the lease when the child exits.
        try child.input.close()
        let lease = try await fixture.store.acquireSyncLease(purpose: "push", timeout: Waiting.ceiling)
        #expect(lease.holder.contains("push"))
        lease.release()
        _ = try await child.exited()
    }

    @Test("two leases conflict within one process too")
    func leaseInProcess() async throws {
        let fixture = try await Fixture()
        let first = try await fixture.store.acquireSyncLease(purpose: "push")
        await #expect { _ = try await fixture.store.acquireSyncLease(purpose: "pull") } throws: {
            ($0 as? LocalStoreError)?.code == .storeBusy
        }
        first.release()
        let second = try await fixture.store.acquireSyncLease(purpose: "pull")
        second.release()
    }

    @Test("a process killed with SIGKILL in the middle of a bulk write leaves the previous state intact")
    func killMidWrite() async throws {
        let fixture = try await Fixture()
        let repository = fixture.repository()
        try await fixture.store.upsertRepositories([repository])
        var previous: [SessionRecord] = []
        for _ in 0..<10 { previous.append(try await fixture.store.createSession(fixture.session(in: repository))) }
        let before = try await fixture.store.sessions()

        let child = try Helper(["bulk-write", fixture.temporary.store.path, repository.id.canonical, "5000"])
        #expect(try await child.wait(for: "writing"))
        try await child.kill()
        #expect(try await child.endedBy())

        let reopened = try await DeviceStore.opened(directory: fixture.temporary.store)
        #expect(try await reopened.sessions() == before)
        #expect(try await reopened.counts().sessions == 10)
        #expect(
            try await reopened.openOwnSecret(sessionID: previous[0].id)
                == fixture.store.openOwnSecret(sessionID: previous[0].id))
        // And the store still takes writes.
        try await reopened.upsertSessions([fixture.session(in: repository)])
        #expect(try await reopened.counts().sessions == 11)
    }

    @Test("a bulk load of sessions killed before it built the indexes again leaves them to the next open of the store")
    func bulkLoadKilled() async throws {
        let fixture = try await Fixture(role: .mobile)
        let repository = fixture.repository()
        try await fixture.store.applyRepositories([repository], retaining: nil)
        let migrated = try await sessionIndexDefinitions(fixture.store)
        let child = try Helper(["bulk-load", fixture.temporary.store.path, repository.id.canonical, "500"])
        #expect(try await child.wait(for: "loading"))
        #expect(try await sessionIndexDefinitions(fixture.store).isEmpty)
        try await child.kill()
        #expect(try await child.endedBy())

        let reopened = try await DeviceStore.opened(directory: fixture.temporary.store)
        #expect(try await sessionIndexDefinitions(reopened) == migrated)
        #expect(try await reopened.counts().sessions == 500)
    }
}

/// The sessions table's own indexes (not the primary key's), by name, as the schema holds them.
func sessionIndexDefinitions(_ store: DeviceStore) async throws -> [String: String] {
    try await store.pool.read { db in
        Dictionary(
            uniqueKeysWithValues: try Row.fetchAll(
                db,
                sql:
                    "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'sessions' AND sql IS NOT NULL"
            ).map { ($0[0] as String, $0[1] as String) })
    }
}

@Suite("DeviceStore: what a pull compares")
struct PullDigestTests {
    @Test(
        "a bulk load of sessions drops the table's indexes only when it starts empty, and builds them again as the migrations made them, also when it throws"
    )
    func bulkLoad() async throws {
        let fixture = try await Fixture(role: .mobile)
        let store = fixture.store
        let repository = fixture.repository()
        try await store.applyRepositories([repository], retaining: nil)
        let migrated = try await sessionIndexDefinitions(store)
        #expect(Set(migrated.keys) == ["sessions_repository", "sessions_updated", "sessions_change_seq"])
        let sessions = (0..<50).map { _ in fixture.session(in: repository) }
        let during = try await store.loadingSessionsInBulk {
            #expect(try await store.applySessions(PreparedSessions(sessions)).changed == 50)
            return try await sessionIndexDefinitions(store)
        }
        #expect(during.isEmpty)
        #expect(try await sessionIndexDefinitions(store) == migrated)
        #expect(Set(try await store.sessions().map(\.id)) == Set(sessions.map(\.id)))
        #expect(try await store.sessionIDsDigest() == SecretDigest.digest(ofIDs: Set(sessions.map(\.id))))
        // A table that holds rows keeps its indexes.
        #expect(try await store.loadingSessionsInBulk { try await sessionIndexDefinitions(store) } == migrated)
        // A load that throws leaves them built again.
        _ = try await store.applySessions([], retaining: [])
        struct Stop: Error {}
        await #expect(throws: Stop.self) {
            try await store.loadingSessionsInBulk {
                #expect(try await sessionIndexDefinitions(store).isEmpty)
                throw Stop()
            }
        }
        #expect(try await sessionIndexDefinitions(store) == migrated)
    }

    @Test(
        "the kept id digests equal the digests of the ids through inserts, updates, cascades and deletions; a row without its hash falls back to reading every id"
    )
    func idDigests() async throws {
        let fixture = try await Fixture(role: .mobile)
        let store = fixture.store
        let repositories = (0..<3).map { _ in fixture.repository() }
        let sessions = (0..<20).map { fixture.session(in: repositories[$0 % 3]) }
        try await store.applyRepositories(repositories, retaining: nil)
        try await store.applySessions(sessions, retaining: nil)
        func check() async throws {
            #expect(try await store.sessionIDsDigest() == SecretDigest.digest(ofIDs: try await store.sessionIDs()))
            #expect(
                try await store.repositoryIDsDigest() == SecretDigest.digest(ofIDs: try await store.repositoryIDs()))
        }
        try await check()
        #expect(try await store.sessionIDsDigest().count == 20)
        // Updated rows (equal ones are not even written), a repository deleted with its sessions,
        // sessions retained.
        var renamed = sessions[0]
        renamed.title = "renamed"
        #expect(try await store.applySessions([renamed, sessions[1]], retaining: nil).changed == 1)
        try await check()
        try await store.applyRepositories([], retaining: Set(repositories.dropFirst().map(\.id)))
        try await check()
        let before = try await store.sessionIDs()
        let kept = Set(before.prefix(3))
        #expect(try await store.applySessions([], retaining: kept).deleted == before.count - 3)
        try await check()
        #expect(try await store.sessionIDsDigest().count == 3)
        // A row written without its hash (by hand): the kept digest no longer counts every row.
        try await store.pool.write { db in
            try db.execute(
                sql: "UPDATE sessions SET id_h1 = NULL, id_h2 = NULL WHERE id = ?", arguments: [kept.first!.canonical])
        }
        try await check()
    }

    @Test(
        "the record of envelope rows keeps its digest, replaces a session's row, and gives back what differs from the envelope stored"
    )
    func envelopeRows() async throws {
        let fixture = try await Fixture(role: .mobile)
        let store = fixture.store
        let me = fixture.identity.id
        let repository = fixture.repository()
        let sessions = (0..<5).map { _ in fixture.session(in: repository) }
        try await store.applyRepositories([repository], retaining: nil)
        try await store.applySessions(sessions, retaining: nil)
        let rows = sessions.map {
            EnvelopeRecord(
                sessionID: $0.id, deviceID: me, ephemeralPublicKey: "k-\($0.id.canonical)", encryptedSecret: "AA==")
        }
        try await store.recordEnvelopeRows(rows)
        var expected = RowSetDigest()
        for row in rows {
            expected.add(
                SecretDigest.rowHash(
                    sessionID: row.sessionID.canonical, deviceID: me.canonical,
                    ephemeralPublicKey: row.ephemeralPublicKey))
        }
        #expect(try await store.envelopeRowsDigest() == expected)
        #expect(try await store.pendingEnvelopeRows(after: nil, limit: 100).count == 5)
        #expect(try await store.pendingEnvelopeRows(after: nil, limit: 2).count == 2)
        // A session's rows replaced: the one given stays, the other sessions named lose theirs.
        var changed = rows[0]
        changed.ephemeralPublicKey = "new"
        try await store.recordEnvelopeRows([changed], replacingSessions: [rows[0].sessionID, rows[1].sessionID])
        expected.add(
            SecretDigest.rowHash(
                sessionID: rows[0].sessionID.canonical, deviceID: me.canonical,
                ephemeralPublicKey: "k-\(rows[0].sessionID.canonical)"),
            removing: true)
        expected.add(
            SecretDigest.rowHash(
                sessionID: rows[0].sessionID.canonical, deviceID: me.canonical, ephemeralPublicKey: "new"))
        expected.add(
            SecretDigest.rowHash(
                sessionID: rows[1].sessionID.canonical, deviceID: me.canonical,
                ephemeralPublicKey: "k-\(rows[1].sessionID.canonical)"),
            removing: true)
        #expect(try await store.envelopeRowsDigest() == expected)
        #expect(
            try await store.envelopeRowsDigest(buckets: 1).first.map {
                RowSetDigest(count: $0.pairs, h1: $0.h1, h2: $0.h2)
            } == expected)
        #expect(try await store.deleteEnvelopeRows(notIn: [rows[0].sessionID]) == 3)
        #expect(try await store.envelopeRowsDigest().count == 1)
    }

    @Test(
        "a row stored keeps only its hash and is no longer pending; a stored envelope that goes takes its row's record with it"
    )
    func storedRows() async throws {
        let fixture = try await Fixture(role: .mobile)
        let store = fixture.store
        let me = fixture.identity.id
        let repository = fixture.repository()
        let sessions = (0..<3).map { _ in fixture.session(in: repository) }
        try await store.applyRepositories([repository], retaining: nil)
        try await store.applySessions(sessions, retaining: nil)
        let rows = sessions.map {
            EnvelopeRecord(
                sessionID: $0.id, deviceID: me, ephemeralPublicKey: "k-\($0.id.canonical)", encryptedSecret: "AA==")
        }
        let stored = ReceivedEnvelope(
            sessionID: rows[0].sessionID,
            envelope: SecretEnvelope(ephemeralPublicKey: rows[0].ephemeralPublicKey, encryptedSecret: "AA=="),
            fetchedAt: Date(), senderDeviceID: nil, senderPublicKey: nil, generation: 1, authenticated: false)
        try await store.recordEnvelopeRows(rows, storing: [stored])
        let digest = try await store.envelopeRowsDigest()
        #expect(digest.count == 3)
        #expect(
            Set(try await store.pendingEnvelopeRows(after: nil, limit: 10).map(\.sessionID))
                == Set(rows.dropFirst().map(\.sessionID)))
        #expect(try await store.receivedEnvelope(sessionID: rows[0].sessionID).envelope == stored.envelope)
        let whole = try await store.pool.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM envelope_rows WHERE encrypted_secret IS NOT NULL")
        }
        #expect(whole == 2)
        // Recording the same rows again changes nothing; a pending row stored later is settled.
        try await store.recordEnvelopeRows(rows)
        #expect(try await store.envelopeRowsDigest() == digest)
        #expect(try await store.pendingEnvelopeRows(after: nil, limit: 10).count == 2)
        let later = ReceivedEnvelope(
            sessionID: rows[1].sessionID,
            envelope: SecretEnvelope(ephemeralPublicKey: rows[1].ephemeralPublicKey, encryptedSecret: "AA=="),
            fetchedAt: Date(), senderDeviceID: nil, senderPublicKey: nil, generation: 1, authenticated: false)
        try await store.recordEnvelopeRows([rows[1]], storing: [later])
        #expect(try await store.envelopeRowsDigest() == digest)
        #expect(
            try await store.pendingEnvelopeRows(after: nil, limit: 10).map(\.sessionID) == [rows[2].sessionID])
        // A row that changed, recorded and stored at once, keeps only its hash too.
        var replaced = rows[2]
        replaced.ephemeralPublicKey = "k2-\(rows[2].sessionID.canonical)"
        let replacing = ReceivedEnvelope(
            sessionID: replaced.sessionID,
            envelope: SecretEnvelope(ephemeralPublicKey: replaced.ephemeralPublicKey, encryptedSecret: "AA=="),
            fetchedAt: Date(), senderDeviceID: nil, senderPublicKey: nil, generation: 1, authenticated: false)
        try await store.recordEnvelopeRows([replaced], storing: [replacing])
        #expect(try await store.pendingEnvelopeRows(after: nil, limit: 10).isEmpty)
        let stillWhole = try await store.pool.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM envelope_rows WHERE encrypted_secret IS NOT NULL")
        }
        #expect(stillWhole == 0)
        // The session of the stored envelope goes: its row's record goes with it.
        _ = try await store.applySessions([], retaining: Set(sessions.dropFirst().map(\.id)))
        #expect(try await store.envelopeRowsDigest().count == 2)
    }
}
