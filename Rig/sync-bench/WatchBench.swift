import Foundation
import PostLoginSync
import RemoteStore
import TestStack

#if canImport(Glibc)
import Glibc
#endif

/// An idle watch: a desktop with a size's dataset, pushed once, and a phone that pulled it, then
/// each watched for a while with nothing changing. What a tick costs (requests, envelopes sealed,
/// time) on each remote, for each role.
enum WatchBench {
    struct Result: Codable, Sendable {
        var remote: String
        var role: String
        var size: String
        var seconds: Double
        var intervalSeconds: Double
        var ticks: Int
        var quietTicks: Int
        var fullTicks: Int
        var failedTicks: Int
        var requests: Int
        var requestsPerTick: Double
        var requestsPerQuietTick: Double
        var sealed: Int
        var medianQuietTickSeconds: Double
        var changeFeed: String
    }

    static func run(sizeName: String, minutes: Double, interval: Double) async throws {
        guard let size = SyncBench.sizes.first(where: { $0.name == sizeName }) else {
            throw SyncBench.CLIFailure("unknown size \(sizeName)")
        }
        let stack = SyncBench.stackEnvironment()
        var remotes: [StackEnvironmentChoice] = [.embedded]
        if let stack, await SyncBench.reachable(stack.url) { remotes.append(.stack) }
        progress(
            "  watch: size \(size.name), \(remotes.count) remotes at once, \(minutes) min each, a tick every \(interval) s..."
        )
        let results = try await withThrowingTaskGroup(of: [Result].self) { group in
            for remote in remotes {
                group.addTask {
                    try await idle(
                        size: size, stack: remote == .stack ? stack : nil, minutes: minutes, interval: interval)
                }
            }
            var results: [Result] = []
            for try await result in group { results += result }
            return results.sorted { ($0.remote, $0.role) < ($1.remote, $1.role) }
        }
        print(
            "Idle watch at \(size.name) (\(size.sessions) sessions, \(size.devices) devices), \(minutes) min, interval \(interval) s, full reconciliation every 10 min:"
        )
        print(
            "remote     role     feed     ticks  quiet  full  failed  requests/tick  requests/quiet tick  sealed  quiet tick (median)"
        )
        for r in results {
            print(
                r.remote.padding(toLength: 11, withPad: " ", startingAt: 0)
                    + r.role.padding(toLength: 9, withPad: " ", startingAt: 0)
                    + r.changeFeed.padding(toLength: 9, withPad: " ", startingAt: 0)
                    + String(
                        format: "%5d  %5d  %4d  %6d  %13.2f  %19.2f  %6d  %.1f ms", r.ticks, r.quietTicks, r.fullTicks,
                        r.failedTicks,
                        r.requestsPerTick, r.requestsPerQuietTick, r.sealed, r.medianQuietTickSeconds * 1000))
        }
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        print("peak RSS of the process (every watch): \(usage.ru_maxrss / 1024) MiB")
        print("target: a quiet phone tick on the stack, at most 2 requests")
    }

    enum StackEnvironmentChoice { case embedded, stack }

    /// One world on one remote: the desktop's watch and the phone's, side by side.
    static func idle(
        size: SyncBench.Size, stack: StackEnvironment?, minutes: Double, interval: Double
    ) async throws -> [Result] {
        let world = try SyncBench.World(size: size, stack: stack)
        defer { world.remove() }
        let desktop = try await world.store("desktop", role: .desktop)
        try await world.desktopData(desktop)
        let phone = try await world.store("phone", role: .mobile)
        let remote = try await world.remote(for: desktop)
        let phoneEngine = SyncEngine(local: phone, remote: try await world.remote(for: phone))
        _ = try await phoneEngine.pull()
        for _ in 0..<(size.devices - 2) { try await world.registerSyntheticDevice() }
        let engine = SyncEngine(local: desktop, remote: remote)
        _ = try await engine.push()
        _ = try await phoneEngine.pull()
        async let desktopTicks = watch(engine, minutes: minutes, interval: interval)
        async let phoneTicks = watch(phoneEngine, minutes: minutes, interval: interval)
        let name = stack == nil ? "embedded" : "postgrest"
        return [
            summary(
                try await desktopTicks, remote: name, role: "desktop", size: size, minutes: minutes, interval: interval),
            summary(
                try await phoneTicks, remote: name, role: "phone", size: size, minutes: minutes, interval: interval),
        ]
    }

    static func watch(_ engine: SyncEngine, minutes: Double, interval: Double) async throws -> [WatchTick] {
        var options = WatchOptions()
        options.interval = .milliseconds(Int64(interval * 1000))
        let deadline = ContinuousClock.now + .milliseconds(Int64(minutes * 60_000))
        var ticks: [WatchTick] = []
        for await tick in engine.watch(options) {
            ticks.append(tick)
            if ContinuousClock.now >= deadline { break }
        }
        return ticks
    }

    static func summary(
        _ ticks: [WatchTick], remote: String, role: String, size: SyncBench.Size, minutes: Double, interval: Double
    ) -> Result {
        let quiet = ticks.filter { $0.action == .quiet }
        let requests = ticks.map(\.requests).reduce(0, +)
        return Result(
            remote: remote, role: role, size: size.name, seconds: minutes * 60,
            intervalSeconds: interval,
            ticks: ticks.count, quietTicks: quiet.count, fullTicks: ticks.filter { $0.action == .full }.count,
            failedTicks: ticks.filter { $0.action == .failed }.count, requests: requests,
            requestsPerTick: Double(requests) / Double(max(1, ticks.count)),
            requestsPerQuietTick: Double(quiet.map(\.requests).reduce(0, +)) / Double(max(1, quiet.count)),
            sealed: ticks.map(\.envelopesSealed).reduce(0, +),
            medianQuietTickSeconds: quiet.isEmpty ? 0 : median(quiet.map(\.durationSeconds)),
            changeFeed: ticks.last?.changeFeed?.rawValue ?? "-")
    }
}
