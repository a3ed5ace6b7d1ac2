import Foundation
import FuzzTargets

#if FUZZING
// Built by `scripts/fuzz.sh` with `-sanitize=fuzzer` and `-DFUZZING`: libFuzzer supplies
// `main`, and the target is named by SYNC_FUZZ_TARGET.
let selected: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["SYNC_FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget(rawValue: name) else {
        FileHandle.standardError.write(
            Data(
                "SYNC_FUZZ_TARGET must be one of: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))\n".utf8
            ))
        exit(2)
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    _ = selected.run(size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
#else
/// `sync-fuzz`: lists the fuzz targets, replays inputs through one (no fuzzer needed), and
/// writes the seed corpora. Fuzzing itself is `make fuzz SECONDS=N`.
@main
enum SyncFuzz {
    static let usage = """
        usage: sync-fuzz list
               sync-fuzz replay <target> <file-or-directory>...
               sync-fuzz seed <testvectors-directory> <corpus-directory>

        list     prints every target's name
        replay   runs each file (each file of a directory) through <target>; prints how many
                 the parser accepted and refused. A broken invariant stops with a crash.
        seed     writes the seed corpora built from the vector files, one directory per target
        Fuzzing: make fuzz SECONDS=N (scripts/fuzz.sh)
        """

    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            switch arguments.first {
            case "list":
                for target in FuzzTarget.allCases { print(target.rawValue) }
            case "replay" where arguments.count >= 3:
                guard let target = FuzzTarget(rawValue: arguments[1]) else {
                    fail("unknown target \(arguments[1]); see `sync-fuzz list`")
                }
                var accepted = 0, rejected = 0
                for path in arguments.dropFirst(2) {
                    for file in try files(at: path) {
                        switch target.run(Array(try Data(contentsOf: URL(fileURLWithPath: file)))) {
                        case .accepted: accepted += 1
                        case .rejected: rejected += 1
                        }
                    }
                }
                print("\(target.rawValue): \(accepted + rejected) inputs, \(accepted) accepted, \(rejected) refused")
            case "seed" where arguments.count == 3:
                let seeds = try FuzzSeeds.generate(vectors: URL(fileURLWithPath: arguments[1]))
                for (target, list) in seeds.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                    let directory = URL(fileURLWithPath: arguments[2]).appendingPathComponent(target.rawValue)
                    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                    for seed in list { try Data(seed.bytes).write(to: directory.appendingPathComponent(seed.name)) }
                    print("\(target.rawValue): \(list.count) seeds")
                }
            case "-h", "--help", "help":
                print(usage)
            default:
                fail(usage)
            }
        } catch {
            fail("\(error.localizedDescription)")
        }
    }

    static func files(at path: String) throws -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            fail("no such file or directory: \(path)")
        }
        guard isDirectory.boolValue else { return [path] }
        return try FileManager.default.contentsOfDirectory(atPath: path).sorted().map { path + "/" + $0 }
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("sync-fuzz: \(message)\n".utf8))
        exit(2)
    }
}
#endif
