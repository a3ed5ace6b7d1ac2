import Foundation
import LocalStore
import SyncModel

/// LocalStore bulk speed: apply 10,000 sessions and 100 repositories to a fresh store (each
/// table one transaction), then read them all back.
enum LocalStoreBench {
    static func run(runs: Int) async throws {
        print("localstore: 100 repositories + 10,000 sessions into a fresh store, median of \(runs) runs")
        var applies: [Double] = []
        var reads: [Double] = []
        for run in 1...runs {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sync-bench-\(UUID().canonical)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let store = try LocalStore(directory: directory)
            let user = UUID()
            let device = UUID()
            let repositories = (0..<100).map { i in
                RepositoryRecord(userID: user, deviceID: device, name: "repo-\(i)", localPath: "/src/repo-\(i)",
                                 remoteURL: "git@example.com:team/repo-\(i).git", defaultBranch: "main")
            }
            let sessions = (0..<10_000).map { i in
                SessionRecord(userID: user, deviceID: device, repositoryID: repositories[i % 100].id, title: "session \(i)",
                              sessionPID: 1000 + i, currentBranch: "main", workingDirectory: "/src/repo-\(i % 100)")
            }
            var start = ContinuousClock.now
            try await store.upsertRepositories(repositories)
            try await store.upsertSessions(sessions)
            applies.append(seconds(ContinuousClock.now - start))

            start = ContinuousClock.now
            let readRepositories = try await store.repositories()
            let readSessions = try await store.sessions()
            reads.append(seconds(ContinuousClock.now - start))
            precondition(readRepositories.count == 100 && readSessions.count == 10_000)
            progress("  localstore run \(run)/\(runs): apply \(String(format: "%.3f", applies.last!)) s, read \(String(format: "%.3f", reads.last!)) s")
        }
        print(String(format: "apply (write) median %.3f s   [target < 0.5 s]", median(applies)))
        print(String(format: "read back     median %.3f s   [target < 0.2 s]", median(reads)))
    }
}
