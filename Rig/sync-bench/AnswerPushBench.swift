import DeviceTrust
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SyncModel
import TestStack

/// Answering from the lock screen (notifications-2.md): the real `sync-cli approval answer-push
/// PAYLOAD.json approve` as a cold process, as an app's notification action runs it: exec to
/// exit, and the call's own `elapsedMs`. A desktop asks, the phone's alert payload is taken
/// from the outbox as APNs would hand it over, the process answers it; `--rounds` times.
enum AnswerPushBench {
    static func run(rounds: Int) async throws {
        let cli = try ColdStartBench.cliPath()
        let stack = SyncBench.stackEnvironment()
        var remotes: [StackEnvironment?] = [nil]
        if let stack, await SyncBench.reachable(stack.url) { remotes.append(stack) }
        print("answer-push: the real `sync-cli approval answer-push` from a cold process, \(rounds) rounds each")
        print("remote     exec-to-exit median   p95        max        the call (elapsedMs) median")
        for stack in remotes {
            let (walls, calls) = try await measure(stack: stack, rounds: rounds, cli: cli)
            print(
                (stack == nil ? "embedded" : "postgrest").padding(toLength: 11, withPad: " ", startingAt: 0)
                    + String(
                        format: "%9.0f ms %9.0f ms %9.0f ms %9.0f ms", median(walls) * 1000,
                        ApprovalBench.percentile(walls, 0.95) * 1000, (walls.max() ?? 0) * 1000, median(calls)))
        }
        print("target: median under 1 s from a cold process on loopback")
    }

    static func measure(stack: StackEnvironment?, rounds: Int, cli: String) async throws -> ([Double], [Double]) {
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
        let root = DeviceTrustManager(local: desktop, remote: try await world.remote(for: desktop))
        try await root.initialize()
        let (code, _) = try await root.invite(deviceType: .iosPhone)
        try await DeviceTrustManager(local: phone, remote: try await world.remote(for: phone)).join(
            code: PairingCode(parsing: code.revealText()))
        _ = try await root.approve()
        _ = try await SyncEngine(local: desktop, remote: try await world.remote(for: desktop)).push()
        _ = try await SyncEngine(local: phone, remote: try await world.remote(for: phone)).pull()
        let token = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let coordination = try await world.remote(for: phone)
        _ = try await Coordinator(store: phone, remote: coordination).registerPushToken(token)

        let asking = ApprovalCenter(local: desktop, remote: try await world.remote(for: desktop))
        let environment = world.cliEnvironment()
        let store = world.directory.appendingPathComponent("phone").path
        let file = world.directory.appendingPathComponent("payload.json")
        var walls: [Double] = []
        var calls: [Double] = []
        var answered = Set<String>()
        for round in 0..<rounds {
            let task = Task {
                try await asking.request(
                    session: session, tool: "Bash", summary: "round \(round)", pollInterval: .milliseconds(200))
            }
            var payload: String?
            while payload == nil {
                payload = try await coordination.listOutbox(limit: 20).first { entry in
                    entry.tokenHint == PushTokenText.hint(token) && entry.pushType == "alert"
                        && !answered.contains(entry.payload)
                }?.payload
                if payload == nil { try await Task.sleep(for: .milliseconds(5)) }
            }
            answered.insert(payload!)
            try Data(payload!.utf8).write(to: file)
            let (wall, status, output) = try spawn(
                cli, ["approval", "answer-push", "--store", store, file.path, "approve", "--json"], environment)
            guard status == 0,
                let object = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any],
                object["accepted"] as? Bool == true, let elapsed = object["elapsedMs"] as? Int
            else { throw SyncBench.CLIFailure("answer-push round \(round): status \(status): \(output.prefix(300))") }
            guard case .approved = try await task.value else {
                throw SyncBench.CLIFailure("round \(round): the desktop did not hear approved")
            }
            walls.append(wall)
            calls.append(Double(elapsed))
            progress("  answer-push round \(round + 1)/\(rounds): \(String(format: "%.0f", wall * 1000)) ms")
        }
        return (walls, calls)
    }

    /// Runs a process to its end: wall time, exit status and standard output.
    static func spawn(
        _ path: String, _ arguments: [String], _ environment: [String: String]
    ) throws -> (Double, Int32, String) {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("answer-\(UUID().canonical).json")
        defer { try? FileManager.default.removeItem(at: output) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, output.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv + envp { free(pointer) }
        }
        var pid = pid_t()
        let start = ContinuousClock.now
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, envp)
        guard spawned == 0 else { throw SyncBench.CLIFailure("cannot start \(path): errno \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let elapsed = seconds(ContinuousClock.now - start)
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        return (elapsed, (status >> 8) & 0xff, text)
    }
}
