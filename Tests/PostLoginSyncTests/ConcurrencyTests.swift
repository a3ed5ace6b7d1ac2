import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Synchronization
import Testing

/// Devices of one user syncing at the same moment (issue 17, item 3): everything converges, and
/// the invariants hold on the remote itself (in SQL on the stack).
@Suite("Concurrent devices")
struct ConcurrencyTests {
    /// The remote's invariants for the world's user: every envelope of a session names that
    /// session's user's device and appears once, and the kept digest equals the rows' (in SQL on
    /// the stack; through the API on the embedded remote). Returns the pairs.
    func invariants(_ world: World, owners: [World.Device]) async throws -> Set<EnvelopePair> {
        let remote = try world.remote()
        let listed = try await remote.listEnvelopePairs()
        #expect(listed.count == Set(listed).count, "no pair twice")
        if world.backend == .postgrest && !world.deployedSchema {
            let stack = try StackEnvironment.require()
            let user = world.user.canonical
            let duplicates = try await stack.sql(
                """
                SELECT count(*) FROM (SELECT s.session_id, s.device_id FROM public.agent_coding_session_secrets s
                JOIN public.agent_coding_sessions c ON c.id = s.session_id WHERE c.user_id = '\(user)'
                GROUP BY 1, 2 HAVING count(*) > 1) d
                """)
            #expect(duplicates == "0")
            let foreign = try await stack.sql(
                """
                SELECT count(*) FROM public.agent_coding_session_secrets s JOIN public.agent_coding_sessions c ON c.id = s.session_id
                JOIN public.devices d ON d.id = s.device_id WHERE c.user_id = '\(user)' AND d.user_id <> c.user_id
                """)
            #expect(foreign == "0", "no envelope for another user's device")
            let drift = try await stack.sql(
                """
                SELECT count(*) FROM (
                    SELECT s.session_id, count(*)::integer AS pairs,
                           bit_xor(('x' || substr(md5(s.session_id::text || ':' || s.device_id::text || ':' || s.ephemeral_public_key), 1, 16))::bit(64)::bigint) AS h1,
                           bit_xor(('x' || substr(md5(s.session_id::text || ':' || s.device_id::text || ':' || s.ephemeral_public_key), 17, 16))::bit(64)::bigint) AS h2
                    FROM public.agent_coding_session_secrets s JOIN public.agent_coding_sessions c ON c.id = s.session_id
                    WHERE c.user_id = '\(user)' GROUP BY s.session_id) r
                FULL JOIN (SELECT d.* FROM public.agent_coding_session_secret_digests d JOIN public.agent_coding_sessions c ON c.id = d.session_id
                           WHERE c.user_id = '\(user)') k ON k.session_id = r.session_id
                WHERE r.pairs IS DISTINCT FROM k.pairs OR r.h1 IS DISTINCT FROM k.h1 OR r.h2 IS DISTINCT FROM k.h2
                """)
            #expect(drift == "0", "the kept digest equals the rows'")
        }
        // Each desktop's ledger says exactly what the remote holds for its sessions.
        let pairs = Set(listed)
        for owner in owners {
            let own = try await owner.store.ownSessionIDs()
            let ledger = Set(
                try await owner.store.ledger().map {
                    EnvelopePair(sessionID: $0.sessionID, deviceID: $0.recipientDeviceID)
                })
            #expect(
                ledger == pairs.filter { own.contains($0.sessionID) },
                "the ledger of \(owner.identity.name) matches the remote")
        }
        return pairs
    }

    @Test(
        "two desktops of one user push at the same moment (shared devices, disjoint sessions) and converge",
        arguments: Backend.variants)
    func twoDesktops(backend: Backend, deployed: Bool) async throws {
        let world = try World(backend, deployedSchema: deployed)
        let phone = try await world.device("phone", role: .mobile)
        _ = try await phone.engine.pull()
        var options = SyncOptions()
        options.sealChunk = 20
        let first = try await world.desktop("desktop-a", sessions: 60, options: options)
        let second = try await world.desktop("desktop-b", sessions: 60, options: options)
        // The first round races: a desktop may list devices before the other's row exists. The
        // second seals what the first could not see.
        for _ in 0..<2 {
            async let a = first.engine.push()
            async let b = second.engine.push()
            let (ra, rb) = try await (a, b)
            #expect(ra.outcome == .success && rb.outcome == .success, "\(ra.errors) \(rb.errors)")
        }
        // A third round of both at once changes nothing.
        async let a = first.engine.push()
        async let b = second.engine.push()
        let (ra, rb) = try await (a, b)
        #expect(ra.envelopesSealed == 0 && rb.envelopesSealed == 0)

        let pairs = try await invariants(world, owners: [first, second])
        let devices = [phone.identity.id, first.identity.id, second.identity.id]
        var expected = Set<EnvelopePair>()
        for desktop in [first, second] {
            for session in try await desktop.store.ownSessionIDs() {
                for device in devices { expected.insert(EnvelopePair(sessionID: session, deviceID: device)) }
            }
        }
        #expect(pairs == expected)
        let pulled = try await phone.engine.pull()
        #expect(pulled.envelopesOpened == 120)
        let both = try await world.secrets(of: first).merging(try await world.secrets(of: second)) { mine, _ in mine }
        #expect(try await world.opened(by: phone) == both)
    }

    @Test(
        "a desktop pushes while a phone pulls and a third device registers; all converge", arguments: Backend.variants)
    func pushPullRegister(backend: Backend, deployed: Bool) async throws {
        let world = try World(backend, deployedSchema: deployed)
        let phone = try await world.device("phone", role: .mobile)
        _ = try await phone.engine.pull()
        var options = SyncOptions()
        options.sealChunk = 15
        let desktop = try await world.desktop(sessions: 50, options: options)
        let tablet = try await world.device("tablet", role: .mobile, type: .iosTablet)

        async let pushed = desktop.engine.push()
        async let pulled = phone.engine.pull()
        async let registered = tablet.engine.pull()
        let (push, pull, register) = try await (pushed, pulled, registered)
        #expect(push.outcome == .success, "\(push.errors)")
        // A viewer can read the sessions of a push whose repositories it read just before they
        // landed: those sessions are skipped, typed, and come with the next pull.
        for viewer in [pull, register] {
            #expect(viewer.outcome != .failure)
            #expect(
                viewer.errors.allSatisfy { $0.code == .missingRepository },
                "\(viewer.errors.map(\.code))")
        }

        // The next round: the desktop now sees the tablet; both viewers get everything.
        let again = try await desktop.engine.push()
        #expect(again.outcome == .success)
        _ = try await phone.engine.pull()
        _ = try await tablet.engine.pull()
        let pairs = try await invariants(world, owners: [desktop])
        let sessions = try await desktop.store.ownSessionIDs()
        #expect(
            pairs
                == Set(
                    sessions.flatMap { session in
                        [phone.identity.id, tablet.identity.id, desktop.identity.id].map {
                            EnvelopePair(sessionID: session, deviceID: $0)
                        }
                    }))
        let secrets = try await world.secrets(of: desktop)
        #expect(try await world.opened(by: phone) == secrets)
        #expect(try await world.opened(by: tablet) == secrets)
        #expect(try await desktop.engine.push().envelopesSealed == 0)
    }

    @Test(
        "a device deleted while a push seals for it: the push ends with typed issues or success, and the next one converges"
    )
    func deviceDeletedMidPush() async throws {
        guard !StackEnvironment.skipped else { return }
        // The project's schema: envelopes reference their device and go with it.
        let world = try World(.postgrest)
        let phone = try await world.device("phone", role: .mobile)
        _ = try await phone.engine.pull()
        var options = SyncOptions()
        options.sealChunk = 10
        let desktop = try await world.desktop(sessions: 150, options: options)
        let stack = try StackEnvironment.require()
        let deleted = Mutex(false)
        let push = Task {
            try await desktop.engine.push { event in
                // Part way through the secrets, the phone's row goes (as another client would delete it).
                // Waited for here, on the push's own thread: the push holds still until the row is gone.
                guard event.phase == .secrets, event.completed >= 60, !deleted.withLock({ $0 }) else { return }
                deleted.withLock { $0 = true }
                _ = try? stack.sqlBlocking("DELETE FROM public.devices WHERE id = '\(phone.identity.id.canonical)'")
            }
        }
        let report = try await push.value
        #expect(deleted.withLock { $0 }, "the device was deleted during the push")
        #expect(report.outcome == .success || report.outcome == .partial)
        // Whatever failed is about the deleted device's envelopes, in the secrets phase.
        #expect(
            report.errors.allSatisfy {
                $0.phase == .secrets && ($0.rowID ?? "").hasSuffix(phone.identity.id.canonical)
            },
            "\(report.errors.map(\.code))")

        let next = try await desktop.engine.push()
        #expect(next.outcome == .success, "\(next.errors)")
        let pairs = try await invariants(world, owners: [desktop])
        #expect(
            pairs
                == Set(
                    try await desktop.store.ownSessionIDs().map {
                        EnvelopePair(sessionID: $0, deviceID: desktop.identity.id)
                    }))
        #expect(
            try await stack.sql(
                "SELECT count(*) FROM public.agent_coding_session_secrets WHERE device_id = '\(phone.identity.id.canonical)'"
            ) == "0")
        #expect(try await desktop.engine.push().envelopesSealed == 0)
    }
}
