import Foundation
import LocalStore
import SyncModel

/// DeviceStore bulk speed: apply `count` sessions (10,000 unless told) and 100 repositories to
/// a fresh store as a pull does (each table one transaction), then read them all back.
enum LocalStoreBench {
    static func run(runs: Int, sessions count: Int) async throws {
        print("localstore: 100 repositories + \(count) sessions into a fresh store, median of \(runs) runs")
        var applies: [Double] = []
        var reads: [Double] = []
        for run in 1...runs {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "sync-bench-\(UUID().canonical)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let store = try await DeviceStore.opened(directory: directory)
            let user = UUID()
            let device = UUID()
            let repositories = (0..<100).map { i in
                RepositoryRecord(
                    userID: user, deviceID: device, name: "repo-\(i)", localPath: "/src/repo-\(i)",
                    remoteURL: "git@example.com:team/repo-\(i).git", defaultBranch: "main")
            }
            let sessions = (0..<count).map { i in
                SessionRecord(
                    userID: user, deviceID: device, repositoryID: repositories[i % 100].id, title: "session \(i)",
                    sessionPID: 1000 + i, currentBranch: "main", workingDirectory: "/src/repo-\(i % 100)")
            }
            var start = ContinuousClock.now
            try await store.applyRepositories(repositories, retaining: nil)
            try await store.applySessions(sessions, retaining: nil)
            applies.append(seconds(ContinuousClock.now - start))

            start = ContinuousClock.now
            let readRepositories = try await store.repositories()
            let readSessions = try await store.sessions()
            reads.append(seconds(ContinuousClock.now - start))
            precondition(readRepositories.count == 100 && readSessions.count == count)
            progress(
                "  localstore run \(run)/\(runs): apply \(String(format: "%.3f", applies.last!)) s, read \(String(format: "%.3f", reads.last!)) s"
            )
        }
        // The targets are for 10,000 sessions.
        let targets = count == 10_000 ? ["   [target < 0.5 s]", "   [target < 0.2 s]"] : ["", ""]
        print(String(format: "apply (write) median %.3f s", median(applies)) + targets[0])
        print(String(format: "read back     median %.3f s", median(reads)) + targets[1])
    }
}
