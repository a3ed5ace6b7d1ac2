import DeviceTrust
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SyncModel
import TestStack

/// An approval's round trip: a desktop asks and waits (polling the request once a second, the
/// library's default and the most approvals.md allows), a paired phone opens and answers; what
/// is measured is the time from the phone starting its answer (signing and the `answer_approval`
/// call) to the desktop's `request` returning the verified outcome. Twice: the phone answering at
/// once (just after the desktop's first poll: the worst phase, close to a whole interval), and
/// after a person's random 0-2 s (any phase).
enum ApprovalBench {
    static func run(rounds: Int) async throws {
        let stack = SyncBench.stackEnvironment()
        var remotes: [StackEnvironment?] = [nil]
        if let stack, await SyncBench.reachable(stack.url) { remotes.append(stack) }
        print(
            "Approval answered on the phone -> verified outcome on the desktop (\(rounds) rounds each, poll every 1 s):"
        )
        print("remote     phone answers        median     p90        max        ask -> phone sees it (median)")
        for stack in remotes {
            for think in [false, true] {
                let (answer, listed) = try await latencies(stack: stack, rounds: rounds, think: think)
                print(
                    (stack == nil ? "embedded" : "postgrest").padding(toLength: 11, withPad: " ", startingAt: 0)
                        + (think ? "after 0-2 s" : "at once").padding(toLength: 21, withPad: " ", startingAt: 0)
                        + String(
                            format: "%6.0f ms  %6.0f ms  %6.0f ms  %6.0f ms", median(answer) * 1000,
                            percentile(answer, 0.9) * 1000, (answer.max() ?? 0) * 1000, median(listed) * 1000))
            }
        }
    }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
    }

    static func latencies(stack: StackEnvironment?, rounds: Int, think: Bool) async throws -> ([Double], [Double]) {
        let world = try SyncBench.World(size: SyncBench.sizes[0], stack: stack)
        defer { world.remove() }
        let desktop = try await world.store("desktop", role: .desktop)
        let phone = try await world.store("phone", role: .mobile)
        let identity = try await desktop.requireIdentity()
        let repository = RepositoryRecord(
            userID: world.user, deviceID: identity.id, name: "repo", localPath: "/src/repo", defaultBranch: "main")
        try await desktop.upsertRepositories([repository])
        try await desktop.createSession(
            SessionRecord(userID: world.user, deviceID: identity.id, repositoryID: repository.id, title: "bench"))
        let session = try await desktop.sessions()[0].id

        // Pair the phone with the desktop, then push and pull the session's secret.
        let root = DeviceTrustManager(local: desktop, remote: try await world.remote(for: desktop))
        try await root.initialize()
        let (code, _) = try await root.invite(deviceType: .iosPhone)
        try await DeviceTrustManager(local: phone, remote: try await world.remote(for: phone)).join(
            code: PairingCode(parsing: code.revealText()))
        _ = try await root.approve()
        _ = try await SyncEngine(local: desktop, remote: try await world.remote(for: desktop)).push()
        _ = try await SyncEngine(local: phone, remote: try await world.remote(for: phone)).pull()

        let asking = ApprovalCenter(local: desktop, remote: try await world.remote(for: desktop))
        let answering = ApprovalCenter(local: phone, remote: try await world.remote(for: phone))
        var answerLatency: [Double] = []
        var listLatency: [Double] = []
        for round in 0..<rounds {
            let asked = ContinuousClock.now
            let task = Task {
                let outcome = try await asking.request(session: session, tool: "Bash", summary: "round \(round)")
                return (outcome, ContinuousClock.now)
            }
            var row: ApprovalRequestRow?
            while row == nil {
                row = try await answering.pending().first
                if row == nil { try await Task.sleep(for: .milliseconds(5)) }
            }
            listLatency.append(seconds(ContinuousClock.now - asked))
            let opened = try await answering.open(row!)
            if think { try await Task.sleep(for: .milliseconds(Int.random(in: 0...2_000))) }
            let start = ContinuousClock.now
            _ = try await answering.answer(opened, verdict: .approve)
            let (outcome, end) = try await task.value
            guard case .approved = outcome else { throw SyncBench.CLIFailure("round \(round) ended \(outcome)") }
            answerLatency.append(seconds(end - start))
            progress(
                "  approval round \(round + 1)/\(rounds): \(String(format: "%.0f", seconds(end - start) * 1000)) ms")
        }
        return (answerLatency, listLatency)
    }
}
