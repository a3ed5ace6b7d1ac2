import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel
import Synchronization
import TestStack
import Testing

/// The first day, round 2, as an app sees the library: a session started while a push runs,
/// the app-shaped calls that add a repository and start a session, and progress with counts.
@Suite("The first day: the library")
struct FirstDayLibraryTests {
    @Test(
        "a session started while a push seals is left to the next push: nothing refused, nothing partial",
        arguments: Backend.available)
    func sessionStartedDuringAPush(backend: Backend) async throws {
        let world = try World(backend)
        let phone = try await world.device("phone", role: .mobile)
        _ = try await phone.engine.pull()
        let desktop = try await world.desktop(repositories: 1, sessions: 3)
        let repository = try #require(try await desktop.store.repositories().first)
        let started = Shared<UUID?>(nil)
        let store = desktop.store
        // Between the session rows going up and the secrets being sealed, as `session start`
        // in another process would. The progress handler is synchronous: it waits for the write,
        // which runs off the cooperative pool (the handler may hold one of its threads).
        let report = try await desktop.engine.push { event in
            guard event.phase == .secrets, event.completed == 0, started.value.withLock({ $0 == nil }) else { return }
            let session = waitingOffThePool {
                try? await store.startSession(repositoryID: repository.id, title: "late")
            }
            started.value.withLock { $0 = session?.id }
        }
        let late = try #require(started.value.withLock { $0 })
        #expect(report.outcome == .success, "\(report.errors)")
        #expect(report.errors.isEmpty)
        #expect(report.envelopesSealed == 3 * 2, "the three uploaded sessions, to the phone and the desktop")
        let remote = try world.remote()
        #expect(try await remote.listIDs(.sessions, deviceID: nil).contains(late) == false)

        let next = try await desktop.engine.push()
        #expect(next.outcome == .success, "\(next.errors)")
        #expect(next.envelopesSealed == 2, "the late session, now uploaded, to both")
        _ = try await phone.engine.pull()
        #expect(try await world.opened(by: phone) == world.secrets(of: desktop))
    }

    @Test("an app adds a repository and starts a session with the ids the store already knows")
    func appShapedCalls() async throws {
        let world = try World(.embedded)
        let desktop = try await world.device("desktop", role: .desktop)
        let repository = try await desktop.store.addRepository(
            name: "api", localPath: "/src/api", remoteURL: "https://user:pw@example.com/api.git", defaultBranch: "main")
        #expect(repository.userID == world.user)
        #expect(repository.deviceID == desktop.identity.id)
        #expect(repository.remoteURL?.contains("pw") == false, "credentials never stored")
        let renamed = try await desktop.store.addRepository(name: "api-server", localPath: "/src/api")
        #expect(renamed.id == repository.id, "the same path is the same repository")
        #expect(renamed.defaultBranch == "main", "what is not given is kept")
        #expect(try await desktop.store.repositories().count == 1)

        let session = try await desktop.store.startSession(
            repositoryID: repository.id, title: "Fix the login bug", branch: "fix-login", processID: 4242)
        #expect(session.userID == world.user)
        #expect(session.deviceID == desktop.identity.id)
        #expect(session.workingDirectory == "/src/api")
        #expect(session.currentBranch == "fix-login")
        _ = try await desktop.store.openOwnSecret(sessionID: session.id)

        await #expect { _ = try await desktop.store.startSession(repositoryID: UUID()) } throws: {
            ($0 as? LocalStoreError)?.code == .notFound
        }
        let phone = try await world.device("phone", role: .mobile)
        await #expect { _ = try await phone.store.addRepository(name: "x", localPath: "/x") } throws: {
            ($0 as? LocalStoreError)?.code == .wrongRole
        }
        let unsigned = try await DeviceStore.opened(directory: world.directory.appendingPathComponent("unsigned"))
        try await unsigned.createIdentity(name: "new", deviceType: .macDesktop, role: .desktop)
        await #expect { _ = try await unsigned.addRepository(name: "x", localPath: "/x") } throws: {
            ($0 as? LocalStoreError)?.code == .userMissing
        }
    }

    @Test("progress messages carry the counts")
    func progressCounts() async throws {
        let world = try World(.embedded)
        let phone = try await world.device("phone", role: .mobile)
        _ = try await phone.engine.pull()
        let desktop = try await world.desktop(repositories: 2, sessions: 5)
        let messages = Shared<[String]>([])
        _ = try await desktop.engine.push { event in messages.value.withLock { $0.append(event.message) } }
        let seen = messages.value.withLock { $0 }
        #expect(seen.contains("Syncing sessions: 5 of 5"), "\(seen)")
        #expect(seen.contains("Syncing secrets: 10 of 10"), "\(seen)")
        #expect(seen.contains("Syncing device..."), "\(seen)")
        let pulled = Shared<[String]>([])
        _ = try await phone.engine.pull { event in pulled.value.withLock { $0.append(event.message) } }
        #expect(
            pulled.value.withLock { $0 }.contains { $0.hasPrefix("Syncing sessions: 5") },
            "\(pulled.value.withLock { $0 })")
    }
}

/// A value several tasks read and write, behind a lock.
final class Shared<Value: Sendable>: Sendable {
    let value: Mutex<Value>
    init(_ initial: Value) { value = Mutex(initial) }
}
