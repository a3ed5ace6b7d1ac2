import Foundation

/// The suite's two tiers (docs/testing.md). `make test` runs the soak suites (kill rounds,
/// fault-proxy rounds) at a small count with a fixed seed, so a failure there replays exactly;
/// `make soak` (`SESSION_SYNC_SOAK=1`) runs them at their full counts with a fresh seed, printed,
/// which `SESSION_SYNC_SOAK_SEED=N` replays.
public enum Soak {
    static var environment: [String: String] { ProcessInfo.processInfo.environment }

    /// Whether this run is `make soak`.
    public static var enabled: Bool { environment["SESSION_SYNC_SOAK"] == "1" }

    /// `quick` rounds in `make test`, `soak` in `make soak`.
    public static func rounds(quick: Int, soak: Int) -> Int { enabled ? soak : quick }

    /// The seed of a soak suite: `SESSION_SYNC_SOAK_SEED` when given; else `fixed` in `make
    /// test` and a fresh one in `make soak`. Printed whenever it is not `fixed`, with how to replay it.
    public static func seed(_ fixed: UInt64, suite: String) -> UInt64 {
        let seed: UInt64
        if let given = environment["SESSION_SYNC_SOAK_SEED"].flatMap(UInt64.init) {
            seed = given
        } else if enabled {
            seed = UInt64.random(in: 1...UInt64(UInt32.max))
        } else {
            return fixed
        }
        print("soak: \(suite) seed \(seed) (replay: SESSION_SYNC_SOAK_SEED=\(seed) make soak)")
        return seed
    }
}
