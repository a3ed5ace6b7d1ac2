import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SyncModel
import TestStack

#if canImport(Glibc)
import Glibc
#endif

/// What a person waits for at login, and what the process costs: the real `sync-cli sync`
/// process, from exec to exit, beside the sync's own time from its report (the difference is
/// starting the process, opening the store, checking trust), with the process's peak resident
/// set as the kernel counted it (`wait4`). Per run a fresh world: the first push, then no
/// change, one new session, and a push after a new device.
enum ColdStartBench {
    static let scenarios = ["first push", "no change", "one new session", "push after new device"]

    struct Sample {
        var wall: [Double] = []
        var inside: [Double] = []
        var requests: [Double] = []
        var peakKiB: [Double] = []
    }

    /// The `sync-cli` beside this `sync-bench`.
    static func cliPath() throws -> String {
        let cli = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("sync-cli").path
        guard FileManager.default.isExecutableFile(atPath: cli) else {
            throw SyncBench.CLIFailure("no sync-cli beside sync-bench (\(cli)): build both (`make bench`)")
        }
        return cli
    }

    static func run(sizeNames: [String], remoteNames: [String], runs: Int) async throws {
        let cli = try cliPath()
        let stack = SyncBench.stackEnvironment()
        var remotes = remoteNames.filter { $0 == "embedded" }
        if remoteNames.contains("postgrest") {
            if let stack, await SyncBench.reachable(stack.url) {
                remotes.append("postgrest")
            } else {
                print("coldstart: PostgreSQL stack not reachable (start it with `make stack`); not measuring it")
            }
        }
        print(
            "coldstart: the real `sync-cli sync --json` on a desktop with 10 devices; median of \(runs) runs, a fresh world each"
        )
        print(
            "remote    size scenario               exec-to-exit  sync (report)  outside the sync  requests  peak RSS")
        for size in SyncBench.sizes where sizeNames.contains(size.name) {
            for remote in remotes {
                var samples: [String: Sample] = [:]
                for run in 1...runs {
                    let measured = try await world(
                        size: size, stack: remote == "postgrest" ? stack : nil, cli: cli)
                    for (scenario, sample) in measured {
                        samples[scenario, default: Sample()].wall += sample.wall
                        samples[scenario, default: Sample()].inside += sample.inside
                        samples[scenario, default: Sample()].requests += sample.requests
                        samples[scenario, default: Sample()].peakKiB += sample.peakKiB
                    }
                    progress("  coldstart \(size.name) on \(remote): run \(run)/\(runs) done")
                }
                for scenario in scenarios {
                    guard let sample = samples[scenario] else { continue }
                    let name = remote == "postgrest" ? "stack" : remote
                    print(
                        name.padding(toLength: 10, withPad: " ", startingAt: 0)
                            + size.name.padding(toLength: 5, withPad: " ", startingAt: 0)
                            + scenario.padding(toLength: 23, withPad: " ", startingAt: 0)
                            + String(
                                format: "%9.3f s %12.3f s %14.3f s %9.0f %6.0f MiB", median(sample.wall),
                                median(sample.inside), median(sample.wall) - median(sample.inside),
                                median(sample.requests), median(sample.peakKiB) / 1024))
                }
            }
        }
        print(
            "targets: no change at L on the stack, exec to exit < 0.5 s; peak RSS of the first push and of the push after a new device at L < 90 MiB"
        )
    }

    /// One fresh world: the four scenarios, each once.
    static func world(size: SyncBench.Size, stack: StackEnvironment?, cli: String) async throws -> [String: Sample] {
        let world = try SyncBench.World(size: size, stack: stack)
        defer { world.remove() }
        let desktop = try await world.store("desktop", role: .desktop)
        try await world.desktopData(desktop)
        _ = try await world.remote(for: desktop)
        for _ in 0..<(size.devices - 1) { try await world.registerSyntheticDevice() }
        let environment = world.cliEnvironment()
        let store = world.directory.appendingPathComponent("desktop").path
        let repository = try await desktop.repositories()[0]
        let identity = try await desktop.requireIdentity()
        var out: [String: Sample] = [:]
        for scenario in scenarios {
            switch scenario {
            case "one new session":
                try await desktop.createSessions([
                    SessionRecord(
                        userID: world.user, deviceID: identity.id, repositoryID: repository.id, title: "new",
                        sessionPID: 99_000, currentBranch: "main", workingDirectory: repository.localPath)
                ])
            case "push after new device":
                try await world.registerSyntheticDevice()
            default:
                break
            }
            let (wall, peak, report) = try runCLI(cli, ["sync", "--store", store, "--json"], environment)
            guard report.outcome == .success else {
                throw SyncBench.CLIFailure("sync-cli sync (\(scenario)): \(report.outcome)")
            }
            out[scenario] = Sample(
                wall: [wall], inside: [report.durationSeconds], requests: [Double(report.requests)],
                peakKiB: [Double(peak)])
        }
        return out
    }

    /// Runs `sync-cli` by `posix_spawn`, polling it every millisecond: its wall time, its peak RSS (KiB) and the
    /// report it printed.
    static func runCLI(
        _ path: String, _ arguments: [String], _ environment: [String: String]
    ) throws -> (
        Double, Int, SyncReport
    ) {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("coldstart-\(UUID().canonical).json")
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
        // The peak is the child's own high-water mark (VmHWM), read until it exits. Not wait4's
        // ru_maxrss: a child started by posix_spawn shares this process's memory until exec, and
        // the kernel counts this process's high-water mark into the child's.
        var status: Int32 = 0
        var peak = 0
        while true {
            if let hwm = highWaterKiB(pid) { peak = max(peak, hwm) }
            let waited = waitpid(pid, &status, WNOHANG)
            if waited == pid || (waited == -1 && errno != EINTR) { break }
            usleep(1000)
        }
        let elapsed = seconds(ContinuousClock.now - start)
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        guard let report = SyncReport.decode(text) else {
            throw SyncBench.CLIFailure("sync-cli printed no report (wait status \(status))")
        }
        return (elapsed, peak, report)
    }

    /// `VmHWM` of process `pid` in KiB (its peak resident set so far), or nil once it is gone.
    /// Read with `read(2)`: a file of /proc has no size for Foundation to read up to.
    static func highWaterKiB(_ pid: pid_t) -> Int? {
        let fd = open("/proc/\(pid)/status", O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 4096)
        var count = 0
        while count < bytes.count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
            if n <= 0 { break }
            count += n
        }
        let text = String(decoding: bytes[..<count], as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return nil }
        return Int(line.dropFirst("VmHWM:".count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
    }
}
