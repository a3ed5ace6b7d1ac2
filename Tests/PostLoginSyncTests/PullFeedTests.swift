import DeviceTrust
import Foundation
import GRDB
import SecretCrypto
import SyncModel
import SyncTestSupport
import Synchronization
import Testing

@testable import LocalStore
@testable import PostLoginSync
@testable import RemoteStore

/// The pull feed (docs/sync.md, "The pull feed"): a phone's pull that asks what changed in one
/// request, and reads only what the digests say differs.
@Suite("Pull feed")
struct PullFeedTests {
    /// A client of `user` on the stack, with small pages read in three ranges at once.
    static func smallPages(
        _ stack: StackEnvironment, user: UUID, credential: DeviceCredential = .random(for: UUID())
    ) -> PostgRESTRemoteStore {
        var configuration = PostgRESTConfiguration(projectURL: stack.url, apiKey: stack.anonKey, userID: user) {
            _ in stack.token(for: user)
        }
        configuration.pageSize = 7
        configuration.listingStreams = 3
        configuration.deviceCredential = credential
        return PostgRESTRemoteStore(configuration: configuration)
    }

    /// Requests of each pull phase, by name.
    static func requests(_ report: SyncReport) -> [SyncPhase: Int] {
        Dictionary(uniqueKeysWithValues: report.phases.map { ($0.phase, $0.requests) })
    }

    static func phase(_ report: SyncReport, _ phase: SyncPhase) -> PhaseReport? {
        report.phases.first { $0.phase == phase }
    }

    /// A phone whose feed cursor is not moved back: these tests push and pull within the default
    /// two seconds of overlap, which would make every pull read again the rows just pushed (as
    /// it should, for rows committed late), and the counts here are of what is new.
    static var exact: SyncOptions {
        var options = SyncOptions()
        options.cursorOverlap = 0
        return options
    }

    @Test(
        "nothing new costs the device row and the feed; one new session costs one more request and reads only it",
        arguments: Backend.available)
    func quietAndIncremental(backend: Backend) async throws {
        let world = try World(backend)
        let phone = try await world.device("phone", role: .mobile, options: Self.exact)
        _ = try await phone.engine.pull()
        let desktop = try await world.desktop(sessions: 40)
        #expect(try await desktop.engine.push().outcome == .success)
        let first = try await phone.engine.pull()
        #expect(first.outcome == .success, "\(first.errors)")
        #expect(try await world.opened(by: phone) == (try await world.secrets(of: desktop)))

        // Nothing new: the device row and the feed, whatever the size; nothing written.
        let quiet = try await phone.engine.pull()
        #expect(quiet.outcome == .success)
        #expect(quiet.requests == 2, "\(Self.requests(quiet))")
        #expect(quiet.phases.allSatisfy { $0.phase == .device || ($0.applied == 0 && $0.deleted == 0) })

        // One new session: it and its envelope come with the feed; the devices are listed once to
        // resolve the envelope's (version 2) sender.
        let repository = try #require(try await desktop.store.repositories().first)
        let started = try await desktop.store.createSession(
            SessionRecord(
                userID: world.user, deviceID: desktop.identity.id, repositoryID: repository.id, title: "new",
                sessionPID: 999, workingDirectory: repository.localPath))
        #expect(try await desktop.engine.push().outcome == .success)
        let one = try await phone.engine.pull()
        #expect(one.outcome == .success, "\(one.errors)")
        #expect(one.requests == 3, "\(Self.requests(one))")
        #expect(Self.phase(one, .sessions)?.applied == 1)
        #expect(Self.phase(one, .envelopes)?.applied == 1)
        #expect(one.bytesReceived < first.bytesReceived / 4 || backend == .embedded)
        #expect(try await world.opened(by: phone)[started.id] == (try await world.secrets(of: desktop))[started.id])
    }

    @Test(
        "more changed rows than the feed carries are paged into the store; a deletion is found by the digest",
        arguments: Backend.available)
    func pagedAndDeleted(backend: Backend) async throws {
        let world = try World(backend)
        var options = Self.exact
        options.pullFeedRowLimit = 5
        options.openChunk = 7
        let phone = try await world.device("phone", role: .mobile, options: options)
        _ = try await phone.engine.pull()
        let desktop = try await world.desktop(sessions: 23)
        #expect(try await desktop.engine.push().outcome == .success)
        let first = try await phone.engine.pull()
        #expect(first.outcome == .success, "\(first.errors)")
        #expect(Self.phase(first, .sessions)?.applied == 23)
        #expect(Self.phase(first, .envelopes)?.applied == 23)
        #expect(try await world.opened(by: phone) == (try await world.secrets(of: desktop)))

        // A session deleted on the desktop and on the remote: the digest of session ids differs,
        // the ids are listed, and the session and its envelope go.
        let gone = try #require(try await desktop.store.sessions().first)
        #expect(try await desktop.store.removeSessions(ids: [gone.id]) == 1)
        #expect(try await desktop.engine.push().outcome == .success)
        let after = try await phone.engine.pull()
        #expect(after.outcome == .success, "\(after.errors)")
        #expect(Self.phase(after, .sessions)?.deleted == 1)
        #expect(try await phone.store.session(id: gone.id) == nil)
        #expect(!(try await phone.store.receivedEnvelopeSessionIDs().contains(gone.id)))
        #expect(try await phone.engine.pull().requests == 2)
    }

    @Test(
        "an envelope sealed again without any session changing is found by the digest; only its bucket is read",
        arguments: Backend.available)
    func resealedEnvelope(backend: Backend) async throws {
        let world = try World(backend)
        let phone = try await world.device("phone", role: .mobile, options: Self.exact)
        _ = try await phone.engine.pull()
        let desktop = try await world.desktop(sessions: 600)
        #expect(try await desktop.engine.push().outcome == .success)
        #expect(try await phone.engine.pull().outcome == .success)
        let target = try #require(try await desktop.store.sessions().last)
        let before = try await phone.store.receivedEnvelope(sessionID: target.id)

        // The phone's envelope for one session goes; the desktop's next push seals it again with
        // a new ephemeral key. No session row changed. (The operator deletes it.)
        let remote = try world.operatorRemote()
        try await remote.deleteEnvelopes(.pairs([EnvelopePair(sessionID: target.id, deviceID: phone.identity.id)]))
        #expect(try await desktop.engine.push().envelopesSealed == 1)
        let report = try await phone.engine.pull()
        #expect(report.outcome == .success, "\(report.errors)")
        // The device row, the feed, the recipient digest, the envelopes of the differing bucket, and
        // the devices (to resolve the envelope's sender).
        #expect(report.requests == 5, "\(Self.requests(report))")
        #expect(Self.phase(report, .envelopes)?.applied == 1)
        let now = try await phone.store.receivedEnvelope(sessionID: target.id)
        #expect(now.envelope != before.envelope)
        #expect(try await world.opened(by: phone) == (try await world.secrets(of: desktop)))
        #expect(try await phone.engine.pull().requests == 2)
    }

    @Test("a store that has no record of envelope rows (one written before it) lists them once")
    func unrecordedRows() async throws {
        let world = try World(.embedded)
        let phone = try await world.device("phone", role: .mobile)
        _ = try await phone.engine.pull()
        let desktop = try await world.desktop(sessions: 12)
        #expect(try await desktop.engine.push().outcome == .success)
        #expect(try await phone.engine.pull().outcome == .success)
        let held = try await phone.store.receivedEnvelopes()
        // As a store of the version before the record: the envelopes, no record.
        try await phone.store.pool.write { try $0.execute(sql: "DELETE FROM envelope_rows") }
        #expect(try await phone.store.envelopeRowsDigest() == RowSetDigest())
        let report = try await phone.engine.pull()
        #expect(report.outcome == .success)
        #expect(Self.phase(report, .envelopes)?.applied == 0, "what is held is not stored again")
        #expect(try await phone.store.receivedEnvelopes() == held)
        #expect(try await phone.engine.pull().requests == 2)
    }

    @Test(
        "sync_pull_envelopes pages every row addressed to the device once, in ranges; another user's device is refused")
    func envelopeListing() async throws {
        guard !StackEnvironment.skipped else { return }
        let stack = try StackEnvironment.require()
        let world = try World(.postgrest)
        let phone = try await world.device("phone", role: .mobile)
        _ = try await phone.engine.pull()
        let desktop = try await world.desktop(sessions: 61)
        #expect(try await desktop.engine.push().outcome == .success)
        func remote(as user: UUID) -> PostgRESTRemoteStore {
            Self.smallPages(stack, user: user, credential: user == world.user ? phone.credential : .random(for: UUID()))
        }
        let rows = Mutex<[EnvelopeRecord]>([])
        try await remote(as: world.user).fetchEnvelopes(addressedTo: phone.identity.id) { page in
            rows.withLock { $0 += page }
        }
        let listed = rows.withLock { $0 }
        #expect(listed.count == 61)
        #expect(Set(listed.map(\.sessionID)) == Set(try await desktop.store.sessions().map(\.id)))
        #expect(listed.allSatisfy { $0.deviceID == phone.identity.id })

        // Another user naming the phone: refused, not an empty listing.
        await #expect {
            try await remote(as: UUID()).fetchEnvelopes(addressedTo: phone.identity.id) { _ in }
        } throws: {
            ($0 as? RemoteStoreError)?.code == .permissionDenied
        }
    }

    @Test(
        "every session listed without a cursor comes once, each page in id order, in ranges; after a cursor only the later rows; another user lists none"
    )
    func sessionListing() async throws {
        guard !StackEnvironment.skipped else { return }
        let stack = try StackEnvironment.require()
        let world = try World(.postgrest)
        let desktop = try await world.desktop(sessions: 61)
        #expect(try await desktop.engine.push().outcome == .success)
        func remote(as user: UUID) -> PostgRESTRemoteStore {
            Self.smallPages(
                stack, user: user, credential: user == world.user ? desktop.credential : .random(for: UUID()))
        }
        func list(as user: UUID, after cursor: PullCursor?) async throws -> [[Versioned<SessionRecord>]] {
            let pages = Mutex<[[Versioned<SessionRecord>]]>([])
            try await remote(as: user).fetchSessions(after: cursor) { page in pages.withLock { $0.append(page) } }
            return pages.withLock { $0 }
        }
        let pages = try await list(as: world.user, after: nil)
        let listed = pages.flatMap { $0 }
        #expect(listed.count == 61)
        #expect(Set(listed.map(\.record.id)) == Set(try await desktop.store.sessions().map(\.id)))
        #expect(pages.count >= 9, "pages of 7, read in ranges")
        #expect(
            pages.allSatisfy { page in
                zip(page, page.dropFirst()).allSatisfy { $0.record.id.canonical < $1.record.id.canonical }
            })

        // After a cursor: the rows after it, each page in (updated_at, id) order.
        let ordered = listed.sorted {
            ($0.updatedAt, $0.record.id.canonical) < ($1.updatedAt, $1.record.id.canonical)
        }
        let cut = ordered[40]
        let later = try await list(as: world.user, after: PullCursor(updatedAt: cut.updatedAt, id: cut.record.id))
        #expect(Set(later.flatMap { $0 }.map(\.record.id)) == Set(ordered[41...].map(\.record.id)))
        #expect(try await list(as: UUID(), after: nil).flatMap { $0 }.isEmpty)
    }

    @Test(
        "a paired phone's watch verifies nothing while the log's head is its pin: a quiet tick is the device row and the feed; a revocation appended meanwhile is verified at the next tick",
        arguments: Backend.available)
    func verifiedQuietTicks(backend: Backend) async throws {
        let p = try await TrustThreatTests.paired(backend, false)
        var options = WatchOptions()
        options.interval = .milliseconds(10)
        var ticks = p.phone.engine.watch(options).makeAsyncIterator()
        let first = try #require(await ticks.next())
        #expect(first.failure == nil, "\(first.json())")
        // At its pin the log is not read, only its witnesses (one request: trust-log.md, "A frozen
        // view"), and this device's own witness is published if it has none of the head yet.
        #expect(first.report?.trust?.entriesVerified == 0)
        #expect((1...2).contains(first.report?.trust?.requests ?? 0), "\(first.json())")
        for _ in 0..<3 {
            let tick = try #require(await ticks.next())
            #expect(tick.action == .quiet, "\(tick.json())")
            #expect(tick.requests == 2, "\(tick.json())")
            #expect(tick.report?.trust?.mode == .verified)
        }
        // A tablet is paired and then revoked: the statements change, the next tick verifies again.
        let tablet = try await p.world.device("tablet", role: .mobile, type: .iosTablet)
        try await TrustThreatTests.join(tablet, world: p.world, root: p.root)
        _ = try await p.root.revoke([tablet.identity.id])
        let seen = try #require(await ticks.next())
        #expect((seen.report?.trust?.requests ?? 0) >= 3, "\(seen.json())")
        #expect(seen.report?.trust?.entriesVerified == 2, "\(seen.json())")
        #expect(try await p.phone.store.knownRevocations().contains { $0.deviceID == tablet.identity.id })
        let quiet = try #require(await ticks.next())
        #expect(quiet.requests == 2, "\(quiet.json())")
    }
}

@Suite("Pull feed answers")
struct PullFeedAnswerTests {
    static let digest = #"{"count":0,"h1":0,"h2":0}"#

    static func answer(_ members: String) -> Data {
        Data(
            (#"{"server_time":"2026-11-25T10:00:00.123456+00:00","repository_ids":\#(digest),"session_ids":\#(digest),"envelope_rows":\#(digest)"#
                + (members.isEmpty ? "" : "," + members) + "}").utf8)
    }

    @Test("a well-formed answer without rows says: too many, page through")
    func nullLists() throws {
        let changes = try PostgRESTRemoteStore.decodePullChanges(
            Self.answer(#""repositories":null,"sessions":null,"envelopes":null"#), maxRows: 10, table: "feed")
        #expect(changes.repositories == nil && changes.sessions == nil && changes.envelopes == nil)
        #expect(changes.cursor.since == "2026-11-25T10:00:00.123456+00:00")
        #expect(changes.envelopeRows == RowSetDigest())
    }

    @Test(
        "answers that are not a change set are refused as malformed, naming no value",
        arguments: [
            #"{"repository_ids":{"count":0,"h1":0,"h2":0}}"#,
            String(decoding: answer(#""sessions":null,"envelopes":[]"#), as: UTF8.self),
            String(decoding: answer(#""sessions":"everything""#), as: UTF8.self),
            #"{"server_time":"yesterday","repository_ids":{"count":0,"h1":0,"h2":0},"session_ids":{"count":0,"h1":0,"h2":0},"envelope_rows":{"count":0,"h1":0,"h2":0}}"#,
            #"{"server_time":"2026-11-25T10:00:00+00:00","repository_ids":{"count":-1,"h1":0,"h2":0},"session_ids":{"count":0,"h1":0,"h2":0},"envelope_rows":{"count":0,"h1":0,"h2":0}}"#,
            #"{"server_time":"2026-11-25T10:00:00+00:00","session_ids":{"count":0,"h1":0,"h2":0},"envelope_rows":{"count":0,"h1":0,"h2":0}}"#,
            #"[1,2,3]"#,
        ])
    func malformed(text: String) throws {
        #expect {
            _ = try PostgRESTRemoteStore.decodePullChanges(Data(text.utf8), maxRows: 10, table: "feed")
        } throws: {
            ($0 as? RemoteStoreError)?.code == .malformedResponse
        }
    }

    @Test("a list longer than asked for is refused as it is read")
    func tooManyRows() throws {
        let rows = (0..<11).map { _ in
            #"{"session_id":"\#(UUID().canonical)","device_id":"\#(UUID().canonical)","ephemeral_public_key":"k","encrypted_secret":"AA=="}"#
        }
        let text = Self.answer(#""sessions":[],"envelopes":[\#(rows.joined(separator: ","))]"#)
        #expect {
            _ = try PostgRESTRemoteStore.decodePullChanges(text, maxRows: 10, table: "feed")
        } throws: {
            ($0 as? RemoteStoreError)?.code == .malformedResponse
        }
    }
}

@Suite("Pull feed digests kept on PostgreSQL")
struct KeptPullDigestTests {
    /// Every kept digest beside the same digest computed from the rows, as text, for comparison.
    static let compare = """
        WITH fresh AS (
            SELECT 'repositories' AS kind, r.user_id AS owner, count(*)::bigint AS pairs,
                   bit_xor(('x' || substr(md5(r.id::text), 1, 16))::bit(64)::bigint) AS h1,
                   bit_xor(('x' || substr(md5(r.id::text), 17, 16))::bit(64)::bigint) AS h2
            FROM public.repositories r GROUP BY r.user_id
            UNION ALL
            SELECT 'sessions', c.user_id, count(*), bit_xor(('x' || substr(md5(c.id::text), 1, 16))::bit(64)::bigint),
                   bit_xor(('x' || substr(md5(c.id::text), 17, 16))::bit(64)::bigint)
            FROM public.agent_coding_sessions c GROUP BY c.user_id
            UNION ALL
            SELECT 'envelopes', s.device_id, count(*),
                   bit_xor(('x' || substr(md5(s.session_id::text || ':' || s.device_id::text || ':' || s.ephemeral_public_key), 1, 16))::bit(64)::bigint),
                   bit_xor(('x' || substr(md5(s.session_id::text || ':' || s.device_id::text || ':' || s.ephemeral_public_key), 17, 16))::bit(64)::bigint)
            FROM public.agent_coding_session_secrets s GROUP BY s.device_id
        )
        SELECT count(*) FROM fresh f FULL JOIN private.pull_digests d ON d.kind = f.kind AND d.owner = f.owner
        WHERE f.pairs IS DISTINCT FROM d.pairs OR f.h1 IS DISTINCT FROM d.h1 OR f.h2 IS DISTINCT FROM d.h2
        """

    @Test("inserts, re-seals, deletions and cascades keep every digest equal to the rows")
    func keptEqualsComputed() async throws {
        guard !StackEnvironment.skipped else { return }
        let stack = try StackEnvironment.require()
        let world = try World(.postgrest)
        let phone = try await world.device("phone", role: .mobile)
        _ = try await phone.engine.pull()
        let desktop = try await world.desktop(repositories: 3, sessions: 40)
        #expect(try await desktop.engine.push().outcome == .success)
        #expect(try await stack.sql(Self.compare) == "0")
        // A re-seal (an update of the row's key), a session deleted (its envelopes cascade), a
        // repository deleted (its sessions and their envelopes cascade), a device deleted.
        // Deletions made remotely: the operator's hand.
        let remote = try world.operatorRemote()
        let sessions = try await desktop.store.sessions()
        try await remote.deleteEnvelopes(.pairs([EnvelopePair(sessionID: sessions[0].id, deviceID: phone.identity.id)]))
        #expect(try await desktop.engine.push().envelopesSealed == 1)
        #expect(try await remote.deleteRows(.sessions, ids: [sessions[1].id]) == 1)
        let repository = try #require(try await desktop.store.repositories().last)
        #expect(try await remote.deleteRows(.repositories, ids: [repository.id]) == 1)
        #expect(try await stack.sql(Self.compare) == "0")
        _ = try await stack.sql("DELETE FROM public.devices WHERE id = '\(phone.identity.id.canonical)'")
        _ = try await stack.sql(
            "UPDATE public.agent_coding_sessions SET id = gen_random_uuid() WHERE id = '\(sessions[2].id.canonical)'")
        #expect(try await stack.sql(Self.compare) == "0")
        #expect(
            try await stack.sql(
                "SELECT count(*) FROM private.pull_digests WHERE owner = '\(phone.identity.id.canonical)'")
                == "0", "a device's digest goes with its last envelope row")
    }
}
