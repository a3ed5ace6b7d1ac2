import Foundation

// sync-bench: the project's benchmarks, figures printed, never asserted.
//
//   sync-bench [crypto|localstore|sync|all] [--iterations N] [--runs R] [--sessions N] [--sizes S,M,L,XL] [--remotes embedded,postgrest] [--sync-runs R] [--json PATH]
//   sync-bench watch [--size M] [--minutes 10] [--interval 5]
//   sync-bench approval [--rounds 20]
//   sync-bench answerpush [--rounds 50]
//   sync-bench agenthooks [--rounds 100]
//   sync-bench coldstart [--sizes M,L] [--remotes embedded,postgrest] [--sync-runs 3]
//   sync-bench versions [--size L] [--sync-runs 3]
//   sync-bench trustlog [--runs 5]
//   sync-bench backends [--iterations N] [--runs R]

struct Options {
    var mode = "all"
    var iterations: Int?
    var runs = 5
    var sessions = 10_000
    var syncRuns = 3
    var sizes = ["S", "M", "L"]
    var remotes = ["embedded", "postgrest"]
    var json = ".build/sync-bench.json"
    var worker: [String] = []
    var watchSize = "M"
    var watchMinutes = 10.0
    var watchInterval = 5.0
    var rounds = 20
    var sizeGiven = false
    var sizesGiven = false

    init(_ arguments: [String]) {
        var rest = arguments.dropFirst()
        while let argument = rest.popFirst() {
            switch argument {
            case "crypto", "localstore", "sync", "all", "watch", "approval", "coldstart", "versions", "trustlog",
                "backends", "answerpush", "agenthooks":
                mode = argument
            case "--rounds": rounds = max(1, Int(rest.popFirst() ?? "") ?? rounds)
            case "--size":
                watchSize = rest.popFirst() ?? watchSize
                sizeGiven = true
            case "--minutes": watchMinutes = Double(rest.popFirst() ?? "") ?? watchMinutes
            case "--interval": watchInterval = Double(rest.popFirst() ?? "") ?? watchInterval
            case "worker":
                mode = "worker"
                worker = Array(rest)
                rest = []
            case "--sizes":
                sizes = (rest.popFirst() ?? "").split(separator: ",").map(String.init)
                sizesGiven = true
            case "--remotes": remotes = (rest.popFirst() ?? "").split(separator: ",").map(String.init)
            case "--sync-runs": syncRuns = Int(rest.popFirst() ?? "") ?? syncRuns
            case "--json": json = rest.popFirst() ?? json
            case "--iterations": iterations = Int(rest.popFirst() ?? "")
            case "--runs": runs = Int(rest.popFirst() ?? "") ?? runs
            case "--sessions": sessions = max(1, Int(rest.popFirst() ?? "") ?? sessions)
            case "-h", "--help":
                print(
                    """
                    usage: sync-bench [crypto|backends|localstore|sync|watch|approval|answerpush|agenthooks|coldstart|versions|trustlog|all] [options]
                      crypto      envelope v1 and v2 seals/s and opens/s on one core and on all cores, beside
                                  the libsodium floor (the same calls in C); --iterations N operations
                                  per worker (default 5000), median of --runs R (default 5)
                      backends    libsodium and swift-crypto side by side, one core: envelope v1 and v2
                                  seal and open, Ed25519 sign and verify; --iterations N per figure
                                  (default 2000), median of --runs R (default 5)
                      localstore  apply --sessions N sessions (default 10,000) and 100 repositories
                                  to a fresh store as a pull does, and read them back, median of
                                  --runs R
                      sync        push and pull at sizes S, M, L (--sizes S,M,L; XL, 1,000,000 pairs, only
                                  when named) on the embedded remote and, when reachable, the PostgreSQL
                                  stack ($SYNC_STACK_URL or the one `make stack` started): first push,
                                  no-change push, push after a new device, first pull, no-change pull,
                                  incremental pull (one new session); at XL the first push, the no-change
                                  push and three phones' first pulls, each by the real `sync-cli pull` in
                                  a process of its own (the median of 3); median of --sync-runs R (default 3);
                                  peak RSS per scenario; the per-row baseline on S and M; the floor
                                  (envelope v2 crypto + direct bulk INSERT); JSON to --json PATH
                                  (default .build/sync-bench.json); --remotes embedded,postgrest picks
                                  the remotes (default both)
                      watch       an idle watch: a desktop at --size (default M) pushed once, then watched
                                  for --minutes (default 10) with a tick every --interval seconds (default
                                  5), on the embedded remote and the stack at once: ticks, requests per
                                  tick, envelopes sealed, median quiet tick. Not part of `all`.
                      approval    a desktop asks, a paired phone answers, --rounds N times (default 20), on
                                  the embedded remote and the stack: the time from the phone's answer to
                                  the desktop's verified outcome (median, p90, max). Not part of `all`.
                      answerpush  the real `sync-cli approval answer-push` (beside sync-bench) answering
                                  the phone's alert payload from a cold process, --rounds N times (default
                                  20), on both remotes: exec to exit (median, p95, max) and the call's own
                                  elapsedMs. Not part of `all`.
                      agenthooks  the real `sync-cli agent hook claude-code` (beside sync-bench), a cold
                                  process per event on a paired desktop, --rounds N times (default 20;
                                  100 for SessionEnd's p99): each non-waiting event's blocking handler
                                  (median, p95, p99) and a permission answered on the phone (answer
                                  recorded to decision printed). Not part of `all`.
                      coldstart   the real `sync-cli sync` process (beside sync-bench) on a desktop that
                                  pushed before, at --sizes (default M,L) on both remotes: no change and
                                  one new session, exec to exit beside the report's own time; median of
                                  --sync-runs R after one warm-up run. Not part of `all`.
                      versions    the first push at --size (default L) with every other device on envelope
                                  v1, then on v2, on the embedded remote, alternating; the v2/v1 ratio.
                                  Not part of `all`.
                      trustlog    a 10,000-entry trust log verified from scratch on one core (target
                                  under 1 s) and extended by one entry, median of --runs R (default 5);
                                  then a phone's two pulls against it on the embedded remote: the first
                                  reads and verifies every entry, the next (head unchanged) none. Not
                                  part of `all`.
                      all         crypto, localstore and sync (default)
                    Build with -c release (`make bench`).
                    """)
                exit(0)
            default:
                FileHandle.standardError.write(Data("sync-bench: unknown argument \(argument); see --help\n".utf8))
                exit(64)
            }
        }
    }
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
}

func progress(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

let options = Options(CommandLine.arguments)
#if DEBUG
if options.mode != "worker" { print("warning: debug build; run `swift run -c release sync-bench` for real figures") }
#endif
if let unknown = options.remotes.first(where: { !["embedded", "postgrest"].contains($0) }) {
    FileHandle.standardError.write(
        Data("sync-bench: unknown remote \(unknown); the remotes are embedded and postgrest\n".utf8))
    exit(64)
}
if options.mode == "crypto" || options.mode == "all" {
    await CryptoBench.run(iterations: options.iterations ?? 5_000, runs: options.runs)
}
if options.mode == "backends" || options.mode == "all" {
    try BackendBench.run(iterations: options.iterations ?? 2_000, runs: options.runs)
}
if options.mode == "localstore" || options.mode == "all" {
    try await LocalStoreBench.run(runs: options.runs, sessions: options.sessions)
}
if options.mode == "sync" || options.mode == "all" {
    try await SyncBench.run(
        runs: options.syncRuns, sizeNames: options.sizes, remoteNames: options.remotes, jsonPath: options.json)
}
if options.mode == "watch" {
    try await WatchBench.run(
        sizeName: options.watchSize, minutes: options.watchMinutes, interval: options.watchInterval)
}
if options.mode == "coldstart" {
    try await ColdStartBench.run(
        sizeNames: options.sizesGiven ? options.sizes : ["M", "L"], remoteNames: options.remotes,
        runs: options.syncRuns)
}
if options.mode == "versions" {
    try await VersionBench.run(sizeName: options.sizeGiven ? options.watchSize : "L", runs: options.syncRuns)
}
if options.mode == "trustlog" {
    try await TrustLogBench.run(runs: options.runs)
}
if options.mode == "approval" {
    try await ApprovalBench.run(rounds: options.rounds)
}
if options.mode == "agenthooks" {
    try await AgentHooksBench.run(rounds: options.rounds)
}
if options.mode == "answerpush" {
    try await AnswerPushBench.run(rounds: options.rounds)
}
if options.mode == "worker" {
    let arguments = options.worker
    try await SyncBench.worker(size: arguments[0], remote: arguments[1], runs: Int(arguments[2]) ?? 3)
}
