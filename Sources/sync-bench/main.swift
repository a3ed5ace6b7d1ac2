import Foundation

// sync-bench: the project's benchmarks, figures printed, never asserted.
//
//   sync-bench [crypto|localstore|all] [--iterations N] [--runs R]

struct Options {
    var mode = "all"
    var iterations: Int?
    var runs = 5

    init(_ arguments: [String]) {
        var rest = arguments.dropFirst()
        while let argument = rest.popFirst() {
            switch argument {
            case "crypto", "localstore", "all": mode = argument
            case "--iterations": iterations = Int(rest.popFirst() ?? "")
            case "--runs": runs = Int(rest.popFirst() ?? "") ?? runs
            case "-h", "--help":
                print("""
                    usage: sync-bench [crypto|localstore|all] [--iterations N] [--runs R]
                      crypto      envelope v1 seals/s and opens/s on one core and on all cores, beside
                                  the libsodium floor (the same calls in C); N operations per worker
                                  (default 5000)
                      localstore  apply 10,000 sessions and 100 repositories to a fresh store and read
                                  them back
                      all         both (default)
                    Figures are medians of R runs (default 5). Build with -c release.
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
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
}

func progress(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

let options = Options(CommandLine.arguments)
#if DEBUG
print("warning: debug build; run `swift run -c release sync-bench` for real figures")
#endif
if options.mode == "crypto" || options.mode == "all" {
    await CryptoBench.run(iterations: options.iterations ?? 5_000, runs: options.runs)
}
if options.mode == "localstore" || options.mode == "all" {
    try await LocalStoreBench.run(runs: options.runs)
}
