import DeviceTrust
import Foundation
import RemoteStore
import SyncModel
import SyncTestSupport
import TestStack
import Testing

@testable import LocalStore
@testable import PostLoginSync

/// An operator who shows a device the log as it was (issue 65, item 2; trust-log.md, "A frozen
/// view"): a desktop that is not a root seals nothing once no root has vouched for its head
/// within 72 hours, and a pull at an unchanged head still reads the witnesses.
@Suite("A frozen view of the trust log is bounded in time")
struct FrozenViewTests {
    static var remotes: [(Backend, Bool)] { Backend.variants }

    static func clock(hoursAhead hours: Double) -> SyncOptions { LogWorld.clock(hours * 3_600) }

    @Test(
        "a desktop that is not a root seals nothing once no root vouched for its head in 72 hours, and says why",
        arguments: remotes)
    func staleDesktopSealsNothing(backend: Backend, deployed: Bool) async throws {
        let w = try await LogWorld.make(backend, deployed)
        try await TrustThreatTests.join(w.spare, world: w.world, root: w.manager(w.root))
        let fresh = try await w.spare.engine.push()
        #expect(fresh.outcome == .success, "\(fresh.errors)")
        // 71 hours on, the root's word (its head entry, its witness) is still within the bound.
        let within = try await w.engine(w.spare, options: Self.clock(hoursAhead: 71)).push()
        #expect(within.outcome == .success, "\(within.errors)")
        // A session started 73 hours on, while the root said nothing: not sealed, and why.
        let session = try await w.spare.store.createSession(
            SessionRecord(
                userID: w.world.user, deviceID: w.spare.identity.id,
                repositoryID: try #require(try await w.spare.store.repositories().first).id))
        let stale = try await w.engine(w.spare, options: Self.clock(hoursAhead: 73)).push()
        let problem = try #require(stale.errors.first { $0.code.rawValue == SyncError.Code.trustLogStale.rawValue })
        #expect(problem.message.contains("72 hours") && problem.message.contains("trust root"))
        _ = try await w.phone.engine.pull()
        #expect(try await w.phone.store.secretGenerations(sessionID: session.id).isEmpty)
        // A root is its own witness: the same clock does not stop it.
        let root = try await w.engine(w.root, options: Self.clock(hoursAhead: 73)).push()
        #expect(!root.errors.contains { $0.code.rawValue == SyncError.Code.trustLogStale.rawValue })
    }

    @Test(
        "a root witnesses an unchanged head again once its last witness is an hour old; four a seq, the oldest giving way",
        arguments: [false, true])
    func rootWitnessesAgain(deployed: Bool) async throws {
        let stack = try StackEnvironment.require()
        let w = try await LogWorld.make(.postgrest, deployed)
        let database = deployed ? "sync_deployed" : "sync_own"
        let state = try await w.manager(w.root).verifiedLog()
        let (user, root) = (w.world.user, w.root.identity.id)
        let remote = try w.world.remote(for: w.root)
        func own() async throws -> [TrustLogWitness] {
            try await remote.trustLogWitnesses(epoch: 1).filter { $0.deviceID == root }
                .compactMap { try? TrustLogWitness.parse($0.body) }.filter { $0.seq == state.headSeq }
        }
        // The root's witnesses of its head as if it had published one an hour for four hours
        // (written as the superuser: the server takes only a seen_at within 600 s of its clock).
        let key = try await w.root.store.signingKey()
        let now = UInt64(Date().timeIntervalSince1970)
        var statements = [
            "DELETE FROM public.trust_log_witnesses WHERE user_id = '\(user.canonical)' AND device_id = '\(root.canonical)';"
        ]
        for hours in [4, 3, 2, 1] as [UInt64] {
            let seenAt = now - hours * 3_600 - 60
            let (body, signature) = TrustLogWitness(
                userID: user, deviceID: root, epoch: 1, seq: state.headSeq, entryHash: Array(state.headHash),
                seenAt: seenAt
            ).signed(by: key)
            statements.append(
                "INSERT INTO public.trust_log_witnesses (user_id, device_id, epoch, seq, body, signature, created_at) "
                    + "VALUES ('\(user.canonical)', '\(root.canonical)', 1, \(state.headSeq), '\(body)', '\(signature)', "
                    + "to_timestamp(\(seenAt)));")
        }
        _ = try await stack.sql(statements.joined(separator: "\n"), database: database)
        let oldest = try await own().map(\.seenAt).min()
        #expect(try await own().count == 4)
        _ = try await w.root.engine.push()
        let after = try await own()
        #expect(after.count == 4, "at most 4 rows a seq")
        #expect(after.map(\.seenAt).max()! + 600 >= now, "the root did not witness its head again")
        #expect(!after.map(\.seenAt).contains(oldest!), "the oldest row did not give way")
        // Within the hour: nothing new.
        _ = try await w.root.engine.push()
        #expect(try await own().map(\.seenAt).sorted() == after.map(\.seenAt).sorted())
    }

    @Test(
        "a device keeps four witnesses of a seq, the oldest giving way to the newest; the same witness again changes nothing",
        arguments: remotes)
    func fourWitnessesASeq(backend: Backend, deployed: Bool) async throws {
        let w = try await LogWorld.make(backend, deployed)
        let state = try await w.manager(w.root).verifiedLog()
        let (user, root) = (w.world.user, w.root.identity.id)
        let remote = try w.world.remote(for: w.root)
        func own() async throws -> Set<String> {
            Set(
                try await remote.trustLogWitnesses(epoch: 1).filter {
                    $0.deviceID == root && (try? TrustLogWitness.parse($0.body))?.seq == state.headSeq
                }.map(\.signature))
        }
        let before = try await own()
        #expect(!before.isEmpty, "the root has not witnessed its head")
        let key = try await w.root.store.signingKey()
        let now = UInt64(Date().timeIntervalSince1970)
        var published: [(body: String, signature: String)] = []
        for ago in [50, 40, 30, 20, 10] as [UInt64] {
            let witness = TrustLogWitness(
                userID: user, deviceID: root, epoch: 1, seq: state.headSeq, entryHash: Array(state.headHash),
                seenAt: now - ago)
            published.append(witness.signed(by: key))
            try await remote.publishWitness(
                deviceID: root, body: published.last!.body, signature: published.last!.signature)
        }
        let after = try await own()
        #expect(after.count == 4, "\(after.count) rows of one seq")
        #expect(after.contains(published.last!.signature), "the newest was not kept")
        #expect(after.isDisjoint(with: before), "the oldest did not give way")
        try await remote.publishWitness(
            deviceID: root, body: published.last!.body, signature: published.last!.signature)
        #expect(try await own() == after, "the same witness again changed the rows")
    }

    @Test("a pull at an unchanged head reads the witnesses: one the operator forgot to hide shows the cut")
    func unchangedHeadReadsWitnesses() async throws {
        let stack = try StackEnvironment.require()
        let w = try await LogWorld.make(.postgrest, false)
        // The root certifies a tablet (seq 2) and witnesses it; the phone has not seen it yet.
        let tablet = try await w.world.device("tablet", role: .mobile, type: .iosTablet)
        try await TrustThreatTests.join(tablet, world: w.world, root: w.manager(w.root))
        _ = try await w.root.engine.push()
        // The operator rolls the log and its head back to seq 1 for everyone, and forgets the
        // root's witness of seq 2: the phone's feed reports the head it already holds.
        let user = w.world.user.canonical
        #expect(try await w.rows().count == 3)
        _ = try await stack.sql(
            """
            DELETE FROM public.trust_log WHERE user_id = '\(user)' AND epoch = 1 AND seq = 2;
            UPDATE private.trust_log_heads h SET seq = 1,
                hash = sha256(convert_to('unbound-trust-log-hash-v1', 'UTF8') || '\\x00'::bytea || decode(t.entry, 'base64')),
                created_at = private.tl_u64(decode(t.entry, 'base64'), 103)::bigint,
                last_proof = substring(decode(t.entry, 'base64') FROM 149 FOR 32)
            FROM public.trust_log t
            WHERE t.user_id = '\(user)' AND t.epoch = 1 AND t.seq = 1 AND h.user_id = '\(user)' AND h.epoch = 1;
            """)
        let pull = try await w.phone.engine.pull()
        #expect(
            pull.errors.contains { $0.code.rawValue == SyncError.Code.trustLogTruncated.rawValue }, "\(pull.errors)")
    }
}
