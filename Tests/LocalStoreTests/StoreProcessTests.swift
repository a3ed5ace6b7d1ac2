import EnvelopeDigest
import Foundation
import GRDB
import SecretCrypto
import SyncModel
import TestStack
import Testing

@testable import LocalStore

@Suite("DeviceStore: processes")
struct ProcessTests {
    @Test("a second process's lease request waits, then fails naming the holder; it succeeds once released")
    func leaseContention() async throws {
        let fixture = try await Fixture()
        // The child holds the lease until told to let go: a fixed hold could end before this
        // process asks on a busy machine (it did, once, under load).
        let child = try Helper(["hold-lease", fixture.temporary.store.path])
        #expect(try await child.wait(for: "held"))
        await #expect {
            _ = try await fixture.store.acquireSyncLease(purpose: "push", timeout: .milliseconds(300))
        } throws: { error in
            let error = error as? LocalStoreError
            return error?.code == .storeBusy && error!.description.contains("pid \(child.child.pid)")
                && error!.description.contains("test helper")
        }
        // It waits: asked with room to wait while the child holds the lease, it gets it once the
        // child lets go (a request that did not wait would fail busy at once).
        let waiting = Task {
            try await fixture.store.acquireSyncLease(purpose: "push", timeout: Waiting.ceiling)
        }
        try await Task.sleep(for: .milliseconds(200))
        try child.input.close()
        let lease = try await waiting.value
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
