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

// The floor a push is measured against: crypto on all cores and a direct bulk INSERT.
extension SyncBench {
    /// libsodium envelope v2 seals per second on all cores (every device of the benchmark reads
    /// v2, so the push seals v2): the floor's C loop, one worker per core.
    static func floorSealRate() throws -> Double {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let perWorker = 2_000
        let floor = CryptoBench.FloorV2(try CryptoBench.Fixture())
        let start = ContinuousClock.now
        DispatchQueue.concurrentPerform(iterations: cores) { _ in
            var eph = [CChar](repeating: 0, count: 45)
            var enc = [CChar](repeating: 0, count: 160)
            for _ in 0..<perWorker { floor.seal(&eph, &enc) }
        }
        return Double(cores * perWorker) / seconds(ContinuousClock.now - start)
    }

    /// The process's resident set sampled every 5 ms on a thread of its own, from
    /// `/proc/self/statm` (Linux): the peak while a scenario runs. (Resetting the kernel's peak
    /// mark through `/proc/self/clear_refs` does not work on this machine's kernel.)
    final class RSSSampler: @unchecked Sendable {
        private let lock = NSLock()
        private var peakKiB = 0
        private var running = true

        init() {
            // One sample at once: a scenario shorter than the interval still has its figure.
            peakKiB = Self.residentKiB() ?? 0
            Thread.detachNewThread { [self] in
                while lock.withLock({ running }) {
                    if let current = Self.residentKiB() { lock.withLock { peakKiB = max(peakKiB, current) } }
                    usleep(5_000)
                }
            }
        }

        static func residentKiB() -> Int? {
            guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
                let pages = text.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
            else { return nil }
            return pages * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
        }

        /// Stops sampling; the peak seen, KiB (nil where /proc is missing).
        @discardableResult
        func stop() -> Int? {
            lock.withLock {
                running = false
                return peakKiB > 0 ? peakKiB : nil
            }
        }
    }

    /// CPU time per process from `/proc` (Linux): this process, the test server and PostgreSQL's
    /// processes, so a scenario shows where its cycles went on a machine whose cores the client,
    /// the server and the database share. A PostgreSQL backend that exits during the scenario
    /// takes its time with it (the server keeps its connections, so this is rare).
    struct CPUTimes {
        /// Clock ticks by pid, with the group each pid belongs to.
        var ticks: [Int32: (group: String, ticks: Int)] = [:]

        static func sample() -> CPUTimes {
            var result = CPUTimes()
            let me = getpid()
            guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return result }
            for entry in entries {
                guard let pid = Int32(entry),
                    let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                    let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
                else { continue }
                let name = stat[stat.index(after: open)..<close]
                let group: String
                if pid == me {
                    group = "client"
                } else if name == "postgres" {
                    group = "postgres"
                } else if name.hasPrefix("postgrest-serve") {
                    group = "server"
                } else {
                    continue
                }
                // After the name: state is field 3; utime and stime are fields 14 and 15.
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { continue }
                result.ticks[pid] = (group, user + system)
            }
            return result
        }

        /// Seconds per group spent since `earlier`.
        func since(_ earlier: CPUTimes) -> [String: Double] {
            let perSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
            var seconds: [String: Double] = [:]
            for (pid, now) in ticks {
                seconds[now.group, default: 0] += Double(now.ticks - (earlier.ticks[pid]?.ticks ?? 0)) / perSecond
            }
            return seconds
        }
    }

    /// PostgreSQL inserting the same rows in bulk: multi-row INSERTs over postgres-nio, as the
    /// superuser (no HTTP, no RLS), 1,000 rows per statement.
    static func bulkInsertSeconds(size: Size, stack: StackEnvironment) async throws -> Double {
        let settings = Dictionary(
            uniqueKeysWithValues: (ProcessInfo.processInfo.environment["SYNC_STACK_DB"] ?? "")
                .split(separator: " ").compactMap { part -> (String, String)? in
                    let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
                    return pair.count == 2 ? (pair[0], pair[1]) : nil
                })
        let client = PostgresClient(
            configuration: .init(
                host: settings["host"] ?? "127.0.0.1", port: Int(settings["port"] ?? "25329") ?? 25329,
                username: settings["user"] ?? "postgres", password: nil,
                database: settings["dbname"] ?? "sync_own", tls: .disable))
        return try await withThrowingTaskGroup(of: Double?.self) { group in
            group.addTask {
                await client.run()
                return nil
            }
            let user = UUID().canonical
            let devices = (0..<size.devices).map { _ in UUID().canonical }
            let repositories = (0..<size.repositories).map { _ in UUID().canonical }
            let sessions = (0..<size.sessions).map { _ in UUID().canonical }
            let envelope = String(repeating: "A", count: 104)
            // A usable key: the project's schema refuses device keys that are not (column limits).
            let ephemeral = X25519PrivateKey().publicKey.base64
            func insert(_ table: String, _ columns: [String], _ rows: [[String]]) async throws {
                for start in stride(from: 0, to: rows.count, by: 1000) {
                    var binds = PostgresBindings()
                    var tuples: [String] = []
                    for row in rows[start..<min(start + 1000, rows.count)] {
                        let marks = row.map { value -> String in
                            binds.append(value)
                            return "$\(binds.count)"
                        }
                        tuples.append(
                            "(" + zip(marks, columns).map { "\($0)::\(columnType($1))" }.joined(separator: ",") + ")")
                    }
                    _ = try await client.query(
                        PostgresQuery(
                            unsafeSQL:
                                "INSERT INTO public.\(table) (\(columns.joined(separator: ","))) VALUES \(tuples.joined(separator: ","))",
                            binds: binds))
                }
            }
            let start = ContinuousClock.now
            try await insert(
                "devices", ["id", "user_id", "name", "device_type", "public_key"],
                devices.map { [$0, user, "d", "ios-phone", ephemeral] })
            try await insert(
                "repositories", ["id", "user_id", "device_id", "name", "local_path"],
                repositories.enumerated().map { [$1, user, devices[0], "r\($0)", "/r/\($0)"] })
            try await insert(
                "agent_coding_sessions", ["id", "user_id", "device_id", "repository_id", "session_started_at"],
                sessions.enumerated().map {
                    [$1, user, devices[0], repositories[$0 % repositories.count], "2026-01-01T00:00:00+00:00"]
                })
            try await insert(
                "agent_coding_session_secrets",
                ["session_id", "device_id", "ephemeral_public_key", "encrypted_secret"],
                sessions.flatMap { session in devices.map { [session, $0, ephemeral, envelope] } })
            let elapsed = seconds(ContinuousClock.now - start)
            _ = try await client.query(
                PostgresQuery(unsafeSQL: "DELETE FROM public.repositories WHERE user_id = '\(user)'"))
            _ = try await client.query(PostgresQuery(unsafeSQL: "DELETE FROM public.devices WHERE user_id = '\(user)'"))
            group.cancelAll()
            return elapsed
        }
    }

    static func columnType(_ column: String) -> String {
        switch column {
        case "id", "user_id", "repository_id", "session_id": return "uuid"
        case "device_id": return "uuid"
        case "device_type": return "device_type"
        case "session_started_at": return "timestamptz"
        default: return "text"
        }
    }
}
