import EmbeddedRemote
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel

/// The first push with every device on envelope v2 beside the same push with every device on
/// v1, on the embedded remote, alternating in one run: what a v2 world costs.
enum VersionBench {
    static func run(sizeName: String, runs: Int) async throws {
        guard let size = SyncBench.sizes.first(where: { $0.name == sizeName }) else {
            throw SyncBench.CLIFailure("unknown size \(sizeName)")
        }
        print(
            "versions: first push at \(size.name) (\(size.sessions) sessions x \(size.devices) devices), embedded remote, "
                + "every other device advertising v1 or v2; median of \(runs), alternating")
        var times: [Int: [Double]] = [:]
        var peaks: [Int: [Int]] = [:]
        for run in 1...runs {
            for version in run.isMultiple(of: 2) ? [2, 1] : [1, 2] {
                let (elapsed, peak, report) = try await firstPush(size: size, version: version)
                times[version, default: []].append(elapsed)
                if let peak { peaks[version, default: []].append(peak) }
                progress(
                    "  run \(run)/\(runs) v\(version): \(String(format: "%.3f", elapsed)) s, \(report.envelopesSealed) sealed, \(report.requests) requests"
                )
            }
        }
        for version in [1, 2] {
            let peak = peaks[version].map { " peak RSS \(Int(median($0.map(Double.init))) / 1024) MiB" } ?? ""
            print(
                String(format: "  every device v%d: first push %.3f s", version, median(times[version]!)) + peak)
        }
        print(
            String(
                format: "first push v2 / v1 at %@: %.2f (target <= 1.1)", size.name,
                median(times[2]!) / median(times[1]!)))
    }

    static func firstPush(size: SyncBench.Size, version: Int) async throws -> (Double, Int?, SyncReport) {
        let world = try SyncBench.World(size: size, stack: nil)
        defer { world.remove() }
        let desktop = try await world.store("desktop", role: .desktop)
        try await world.desktopData(desktop)
        let remote = try await world.remote(for: desktop)
        for index in 1..<size.devices {
            let id = UUID()
            try await world.remote(.random(for: id)).upsertOwnDevice(
                OwnDeviceRow(
                    id: id, userID: world.user, name: "device-\(index)", deviceType: .iosPhone, hostname: nil,
                    publicKey: X25519PrivateKey().publicKey.base64, envelopeVersions: version == 2 ? [1, 2] : [1]))
        }
        // No copy for the desktop itself: every pair sealed is of the version measured.
        var options = SyncOptions()
        options.recipients = RecipientOptions(trust: nil, includeSelf: false)
        _ = releaseFreedMemory(0)
        let sampler = SyncBench.RSSSampler()
        let start = ContinuousClock.now
        let report = try await SyncEngine(local: desktop, remote: remote, options: options).push()
        let elapsed = ContinuousClock.now - start
        let peak = sampler.stop()
        guard report.outcome == .success, report.envelopesSealed == size.sessions * (size.devices - 1) else {
            throw SyncBench.CLIFailure("the v\(version) push did not seal every pair: \(report.outcome)")
        }
        return (seconds(elapsed), peak, report)
    }
}
