import EnvelopeDigest
import Foundation
import GRDB
import SecretCrypto
import SyncModel
import TestStack
import Testing

@testable import LocalStore

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
