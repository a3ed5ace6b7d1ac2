import CSodiumFloor
import EmbeddedRemote
import Foundation
import LocalStore
import Logging
import PostLoginSync
import PostgresNIO
import RemoteStore
import SecretCrypto
import SyncModel
import TestStack

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// glibc's `malloc_trim` (malloc.h is not in the Glibc module): returns freed heap memory to the system.
@_silgen_name("malloc_trim")
func releaseFreedMemory(_ pad: Int) -> Int32

/// Push and pull measured at three sizes on both remotes, beside the design's per-row flow and
/// the floor (crypto on all cores + a direct bulk INSERT), in one run.
enum SyncBench {
    struct Size: Sendable {
        let name: String
        let repositories: Int
        let sessions: Int
        /// Devices of the user, the desktop included; all receive envelopes.
        let devices: Int
        var pairs: Int { sessions * devices }
    }

    static let sizes = [
        Size(name: "S", repositories: 10, sessions: 100, devices: 3),
        Size(name: "M", repositories: 50, sessions: 1_000, devices: 10),
        Size(name: "L", repositories: 200, sessions: 10_000, devices: 10),
        Size(name: "XL", repositories: 1_000, sessions: 100_000, devices: 10),
    ]

    static let scenarios = [
        "first push", "no-change push", "push after new device", "first pull", "no-change pull", "incremental pull",
    ]

    /// One measured operation.
    struct Measure: Codable, Sendable {
        var seconds: Double
        var requests: Int
        var bytesSent: Int
        var bytesReceived: Int
        var sealed: Int
        var opened: Int
        var outcome: String
        /// Seconds per phase, from the report.
        var phaseSeconds: [String: Double] = [:]
        /// The process's peak resident set while this scenario ran (sampled every 5 ms), KiB.
        var peakRSSKiB: Int?
        /// The resident set when the scenario started (after freed memory was handed back to
        /// the system), KiB: what the worker held for the world it built, not for the scenario.
        var startRSSKiB: Int?
        /// CPU seconds (user + system) spent while this scenario ran, by process: "client" (this
        /// worker), "server" (the test PostgREST server), "postgres" (every PostgreSQL process).
        var cpuSeconds: [String: Double]?
    }

    /// What one worker process reports.
    struct WorkerResult: Codable, Sendable {
        var size: String
        var remote: String
        var runs: Int
        /// Scenario -> one measure per run.
        var measures: [String: [Measure]]
        var baseline: Measure?
        var floorCryptoSeconds: Double?
        var floorInsertSeconds: Double?
        var peakRSSKiB: Int
    }

    // MARK: - The parent: one child process per (size, remote)

    static func run(runs: Int, sizeNames: [String], remoteNames: [String], jsonPath: String) async throws {
        let stack = stackEnvironment()
        var remotes = remoteNames.filter { $0 == "embedded" }
        if remoteNames.contains("postgrest") {
            if let stack, await reachable(stack.url) {
                remotes.append("postgrest")
            } else {
                print("sync: PostgreSQL stack not reachable (start it with `make stack`); not measuring it")
            }
        }
        var results: [WorkerResult] = []
        for size in sizes where sizeNames.contains(size.name) {
            for remote in remotes {
                progress("  sync: size \(size.name) on \(remote) (\(runs) runs)...")
                results.append(try runWorker(size: size.name, remote: remote, runs: runs))
            }
        }
        print(table(results, runs: runs))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let machine =
            "\(ProcessInfo.processInfo.activeProcessorCount) cores, \(ProcessInfo.processInfo.physicalMemory / 1_073_741_824) GiB, \(ProcessInfo.processInfo.operatingSystemVersionString)"
        let document: [String: AnyEncodable] = [
            "machine": AnyEncodable(machine), "runs": AnyEncodable(runs), "results": AnyEncodable(results),
        ]
        try encoder.encode(document).write(to: URL(fileURLWithPath: jsonPath))
        print("JSON written to \(jsonPath)")
    }

    struct AnyEncodable: Encodable {
        let value: any Encodable
        init(_ value: any Encodable) { self.value = value }
        func encode(to encoder: Encoder) throws { try value.encode(to: encoder) }
    }

    static func runWorker(size: String, remote: String, runs: Int) throws -> WorkerResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
        process.arguments = ["worker", size, remote, String(runs)]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, let result = try? JSONDecoder().decode(WorkerResult.self, from: data)
        else {
            throw CLIFailure("worker for \(size)/\(remote) failed with status \(process.terminationStatus)")
        }
        return result
    }

    struct CLIFailure: Error, CustomStringConvertible {
        let description: String
        init(_ message: String) { description = message }
    }

    static func stackEnvironment() -> StackEnvironment? {
        if let current = StackEnvironment.current { return current }
        // `make stack` writes its environment here.
        guard let text = try? String(contentsOfFile: "/tmp/session-sync-stack/stack.env", encoding: .utf8) else {
            return nil
        }
        for line in text.split(separator: "\n") where line.hasPrefix("export ") {
            let pair = line.dropFirst(7).split(separator: "=", maxSplits: 1).map(String.init)
            if pair.count == 2 { setenv(pair[0], pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")), 1) }
        }
        return StackEnvironment.current
    }

    static func reachable(_ url: URL) async -> Bool {
        guard let (_, response) = try? await URLSession.shared.data(from: url.appendingPathComponent("rest/v1/devices"))
        else { return false }
        return (response as? HTTPURLResponse) != nil
    }

    // MARK: - A worker: one size on one remote

    static func worker(size name: String, remote: String, runs: Int) async throws {
        guard let size = sizes.first(where: { $0.name == name }) else { throw CLIFailure("unknown size \(name)") }
        let stack = remote == "postgrest" ? stackEnvironment() : nil
        if remote == "postgrest" && stack == nil { throw CLIFailure("no stack") }
        var result = WorkerResult(size: name, remote: remote, runs: runs, measures: [:], peakRSSKiB: 0)
        for run in 1...runs {
            let world = try World(size: size, stack: stack)
            defer { world.remove() }
            for (scenario, measure) in try await world.scenarios() {
                result.measures[scenario, default: []].append(measure)
            }
            progress("    run \(run)/\(runs) done")
        }
        if size.pairs <= 10_000 {
            let world = try World(size: size, stack: stack)
            defer { world.remove() }
            result.baseline = try await world.perRowBaseline()
        }
        if let stack {
            result.floorCryptoSeconds = Double(size.pairs) / (try floorSealRate())
            result.floorInsertSeconds = try await bulkInsertSeconds(size: size, stack: stack)
        }
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        result.peakRSSKiB = Int(usage.ru_maxrss)
        FileHandle.standardOutput.write(try JSONEncoder().encode(result))
    }

    /// One user's world: a desktop with the dataset, a phone, and synthetic other devices.
    struct World {
        let size: Size
        let stack: StackEnvironment?
        let user = UUID()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sync-bench-\(UUID().canonical)")

        init(size: Size, stack: StackEnvironment?) throws {
            self.size = size
            self.stack = stack
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        }

        func remove() { try? FileManager.default.removeItem(at: directory) }

        /// The remote acting for the device of `credential` (every request carries it, as the
        /// product's clients do).
        func remote(_ credential: DeviceCredential, batchRows: Int = 500) -> any CompleteRemote {
            if let stack {
                let user = self.user
                var configuration = PostgRESTConfiguration(projectURL: stack.url, apiKey: stack.anonKey, userID: user) {
                    _ in stack.token(for: user)
                }
                configuration.maxRowsPerBatch = batchRows
                configuration.deviceCredential = credential
                return PostgRESTRemoteStore(configuration: configuration)
            }
            // Signed in just now: a trust root's log calls want a recent sign-in.
            return try! EmbeddedRemoteStore(
                path: directory.appendingPathComponent("remote.sqlite").path, userID: user, signedInAt: Date(),
                credential: credential)
        }

        /// The remote as `store`'s device sees it.
        func remote(for store: DeviceStore, batchRows: Int = 500) async throws -> any CompleteRemote {
            remote(try await store.deviceCredential(), batchRows: batchRows)
        }

        func store(_ name: String, role: SyncRole) async throws -> DeviceStore {
            let store = try await DeviceStore.opened(directory: directory.appendingPathComponent(name))
            try await store.createIdentity(
                name: name, deviceType: role == .desktop ? .linuxDesktop : .iosPhone, role: role)
            try await store.setUserID(user)
            return store
        }

        /// A device row written by that device (its own credential).
        func registerSyntheticDevice() async throws {
            let id = UUID()
            try await remote(.random(for: id)).upsertOwnDevice(
                OwnDeviceRow(
                    id: id, userID: user, name: "tablet", deviceType: .iosTablet,
                    hostname: nil, publicKey: X25519PrivateKey().publicKey.base64))
        }

        func desktopData(_ desktop: DeviceStore) async throws {
            let identity = try await desktop.requireIdentity()
            let repositories = (0..<size.repositories).map { i in
                RepositoryRecord(
                    userID: user, deviceID: identity.id, name: "repo-\(i)", localPath: "/src/repo-\(i)",
                    remoteURL: "git@example.com:team/repo-\(i).git", defaultBranch: "main")
            }
            try await desktop.upsertRepositories(repositories)
            try await desktop.createSessions(
                (0..<size.sessions).map { i in
                    SessionRecord(
                        userID: user, deviceID: identity.id, repositoryID: repositories[i % repositories.count].id,
                        title: "session \(i)", sessionPID: 10_000 + i, currentBranch: "main",
                        workingDirectory: "/src/repo-\(i % repositories.count)")
                })
        }

        /// first push, no-change push, push after a new device, first pull, no-change pull.
        ///
        /// At XL only the three scenarios issue 14 names (first push, no-change push, first
        /// pull), and three of the ten devices are phones: each pulls once, so one world (one
        /// push of 1,000,000 pairs) gives three first pulls.
        func scenarios() async throws -> [(String, Measure)] {
            let all = size.pairs <= 100_000
            let desktop = try await store("desktop", role: .desktop)
            var phones: [DeviceStore] = []
            for index in 1...(all ? 1 : 3) { phones.append(try await store("phone-\(index)", role: .mobile)) }
            try await desktopData(desktop)
            let remote = try await self.remote(for: desktop)
            // Each phone's own remote (its credential), made once as an app makes it: it
            // registers with the phone's first request, here the device row.
            var phoneRemotes: [any CompleteRemote] = []
            for phone in phones { phoneRemotes.append(try await self.remote(for: phone)) }
            for (phone, phoneRemote) in zip(phones, phoneRemotes) {
                let identity = try await phone.requireIdentity()
                try await phoneRemote.upsertOwnDevice(
                    OwnDeviceRow(
                        id: identity.id, userID: user, name: identity.name,
                        deviceType: .iosPhone, hostname: nil, publicKey: identity.publicKey.base64,
                        envelopeVersions: [1, 2]))
            }
            for _ in 0..<(size.devices - 1 - phones.count) { try await registerSyntheticDevice() }
            let desktopSync = SyncEngine(local: desktop, remote: remote)

            var out: [(String, Measure)] = []
            func run(_ scenario: String, _ body: () async throws -> SyncReport) async throws {
                let measured = try await measure(body)
                progress("      \(scenario): \(String(format: "%.3f", measured.seconds)) s")
                out.append((scenario, measured))
            }
            try await run("first push") { try await desktopSync.push() }
            try await run("no-change push") { try await desktopSync.push() }
            if all {
                try await registerSyntheticDevice()
                try await run("push after new device") { try await desktopSync.push() }
            }
            if all {
                for (phone, phoneRemote) in zip(phones, phoneRemotes) {
                    try await run("first pull") { try await SyncEngine(local: phone, remote: phoneRemote).pull() }
                }
            } else {
                // At XL each phone pulls in a process of its own, as a phone app would: its peak
                // resident set is the pull's alone, not this worker's after building the world.
                for phone in phones {
                    let measured = try pullInProcess(phone)
                    progress("      first pull (own process): \(String(format: "%.3f", measured.seconds)) s")
                    out.append(("first pull", measured))
                }
            }
            if all {
                try await run("no-change pull") {
                    try await SyncEngine(local: phones[0], remote: phoneRemotes[0]).pull()
                }
                // One session started on the desktop and pushed (not measured): what the phone's
                // next pull reads.
                let identity = try await desktop.requireIdentity()
                guard let repository = try await desktop.repositories().first else {
                    throw CLIFailure("the desktop has no repository")
                }
                _ = try await desktop.createSession(
                    SessionRecord(
                        userID: user, deviceID: identity.id, repositoryID: repository.id, title: "one more",
                        sessionPID: 1, currentBranch: "main", workingDirectory: repository.localPath))
                _ = try await desktopSync.push()
                try await run("incremental pull") {
                    try await SyncEngine(local: phones[0], remote: phoneRemotes[0]).pull()
                }
            }
            return out
        }

        /// The environment a `sync-cli` process of this world runs with: its remote and token.
        func cliEnvironment() -> [String: String] {
            var environment = ProcessInfo.processInfo.environment
            if let stack {
                environment["SYNC_REMOTE"] = stack.url.absoluteString
                environment["SUPABASE_ANON_KEY"] = stack.anonKey
                environment["SYNC_ACCESS_TOKEN"] = stack.token(for: user)
            } else {
                environment["SYNC_REMOTE"] = "embedded:" + directory.appendingPathComponent("remote.sqlite").path
            }
            return environment
        }

        /// A phone's pull by the real `sync-cli pull` process (built beside this one): its wall
        /// time, its report's counts, and its peak resident set as the kernel counted it.
        func pullInProcess(_ phone: DeviceStore) throws -> Measure {
            let (wall, peak, report) = try ColdStartBench.runCLI(
                ColdStartBench.cliPath(), ["pull", "--store", phone.directory.path, "--json"], cliEnvironment())
            return Measure(
                seconds: wall, requests: report.requests, bytesSent: report.bytesSent,
                bytesReceived: report.bytesReceived, sealed: report.envelopesSealed, opened: report.envelopesOpened,
                outcome: report.outcome.rawValue,
                phaseSeconds: Dictionary(
                    uniqueKeysWithValues: report.phases.map { ($0.phase.rawValue, $0.durationSeconds) }),
                peakRSSKiB: peak)
        }

        func measure(_ body: () async throws -> SyncReport) async throws -> Measure {
            // Memory the setup freed goes back to the system first, so the peak is the
            // scenario's and not the world-building's high-water mark.
            _ = releaseFreedMemory(0)
            let startRSS = RSSSampler.residentKiB()
            let sampler = RSSSampler()
            defer { sampler.stop() }
            let cpuBefore = CPUTimes.sample()
            let start = ContinuousClock.now
            let report = try await body()
            let cpu = CPUTimes.sample().since(cpuBefore)
            // A figure from a sync that did not succeed measures something else: say why.
            if report.outcome != .success {
                let problems = Set(report.errors.map { "\($0.phase.rawValue): \($0.code) \($0.message)" }).sorted()
                FileHandle.standardError.write(
                    Data(
                        "sync-bench: a measured sync ended \(report.outcome.rawValue): \(problems.joined(separator: "; "))\n"
                            .utf8))
            }
            return Measure(
                seconds: seconds(ContinuousClock.now - start), requests: report.requests, bytesSent: report.bytesSent,
                bytesReceived: report.bytesReceived, sealed: report.envelopesSealed, opened: report.envelopesOpened,
                outcome: report.outcome.rawValue,
                phaseSeconds: Dictionary(
                    uniqueKeysWithValues: report.phases.map { ($0.phase.rawValue, $0.durationSeconds) }),
                peakRSSKiB: sampler.stop(), startRSSKiB: startRSS,
                cpuSeconds: stack == nil ? ["client": cpu["client"] ?? 0] : cpu)
        }

        /// What the design's sequence diagram does at every login: one request per device,
        /// repository, session and secret row, re-sealing every pair, one after the other.
        func perRowBaseline() async throws -> Measure {
            let desktop = try await store("desktop", role: .desktop)
            try await desktopData(desktop)
            for _ in 0..<(size.devices - 1) { try await registerSyntheticDevice() }
            let remote = try await self.remote(for: desktop, batchRows: 1)
            let identity = try await desktop.requireIdentity()
            let key = try await desktop.deviceKey()
            let start = ContinuousClock.now
            try await remote.upsertOwnDevice(
                OwnDeviceRow(
                    id: identity.id, userID: user, name: "desktop", deviceType: .linuxDesktop,
                    hostname: nil, publicKey: identity.publicKey.base64))
            let devices = try await remote.listDevices().compactMap { device in
                device.publicKey.flatMap { try? X25519PublicKey(base64: $0) }.map { (device.id, $0) }
            }
            for repository in try await desktop.repositories() {
                _ = try await remote.upsertRepositories([repository], onBatchAccepted: nil)
            }
            let sessions = try await desktop.sessions()
            for session in sessions { _ = try await remote.upsertSessions([session], onBatchAccepted: nil) }
            var sealed = 0
            for session in sessions {
                let secret = try await desktop.openOwnSecret(sessionID: session.id, using: key)
                for (device, publicKey) in devices {
                    let envelope = try SecretEnvelope.seal(secret, for: publicKey, sessionID: SessionID(session.id))
                    _ = try await remote.upsertEnvelopes(
                        [
                            EnvelopeRecord(
                                sessionID: session.id, deviceID: device,
                                ephemeralPublicKey: envelope.ephemeralPublicKey,
                                encryptedSecret: envelope.encryptedSecret)
                        ], onBatchAccepted: nil)
                    sealed += 1
                }
            }
            let metrics = remote.metrics()
            return Measure(
                seconds: seconds(ContinuousClock.now - start), requests: metrics.requests, bytesSent: metrics.bytesSent,
                bytesReceived: metrics.bytesReceived, sealed: sealed, opened: 0, outcome: "success")
        }
    }
}
