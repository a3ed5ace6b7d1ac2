import Foundation
import FuzzTargets
import TestStack
import Testing

/// The fuzz targets without the fuzzer: every committed corpus input and every crash found
/// (`fuzz/regressions/`) runs through its target on each `make test`, so a crash once found
/// stays fixed. A broken invariant stops the test process, which fails the run.
@Suite struct FuzzCorpusTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func inputs(_ folder: String, _ target: FuzzTarget) throws -> [URL] {
        let directory = root.appendingPathComponent(folder).appendingPathComponent(target.rawValue)
        guard FileManager.default.fileExists(atPath: directory.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    @Test(
        "each target's corpus replays, and reaches both the accepting and the refusing path",
        arguments: FuzzTarget.allCases)
    func corpus(_ target: FuzzTarget) throws {
        let files = try Self.inputs("fuzz/corpus", target)
        #expect(!files.isEmpty, "no seeds for \(target.rawValue)")
        var outcomes: [FuzzOutcome] = []
        for file in files + (try Self.inputs("fuzz/regressions", target)) {
            outcomes.append(target.run(Array(try Data(contentsOf: file))))
        }
        #expect(
            outcomes.contains(.accepted),
            "no seed of \(target.rawValue) is accepted: the target never reaches the parser's success path")
        #expect(outcomes.contains(.rejected), "no seed of \(target.rawValue) is refused")
    }

    @Test("the two key-file targets run at once without reading each other's input")
    func keyFilesAtOnce() async {
        // They shared one scratch path per process: an input of 31 bytes could load the 32 bytes
        // another task had just written (a broken invariant, which stops the test process), or
        // a 32-byte input read a file another task had just truncated.
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    let target: FuzzTarget = worker % 2 == 0 ? .deviceKeyFile : .signingKeyFile
                    for round in 0..<300 {
                        let length = (worker + round) % 2 == 0 ? 32 : 31
                        let outcome = target.run([UInt8](repeating: UInt8(1 + round % 200), count: length))
                        #expect(
                            outcome == (length == 32 ? .accepted : .rejected), "\(target.rawValue), \(length) bytes")
                    }
                }
            }
        }
    }

    @Test("the committed seeds are exactly what the generator makes from testvectors/")
    func seedsAreReproducible() throws {
        let seeds = try FuzzSeeds.generate(vectors: Self.root.appendingPathComponent("testvectors"))
        #expect(Set(seeds.keys) == Set(FuzzTarget.allCases))
        for (target, list) in seeds {
            for seed in list {
                let file = Self.root.appendingPathComponent("fuzz/corpus/\(target.rawValue)/\(seed.name)")
                let committed = try? Data(contentsOf: file)
                #expect(
                    committed == Data(seed.bytes),
                    "fuzz/corpus/\(target.rawValue)/\(seed.name) differs from the generator's; run `sync-fuzz seed testvectors fuzz/corpus`"
                )
            }
        }
    }

    @Test("the SQL oracle refuses request text outside bind parameters and unlisted identifiers")
    func sqlOracle() {
        #expect(FuzzTarget.sqlProblem(#"_t."id" = $1::uuid OR NOT (_t."title"::text LIKE $2)"#) == nil)
        #expect(FuzzTarget.sqlProblem(#"_t."updated_at" > $1::timestamp with time zone"#) == nil)
        #expect(FuzzTarget.sqlProblem(#"_t."id" = 'x'; DROP TABLE t"#) != nil)
        #expect(FuzzTarget.sqlProblem(#"_t."a""b" = $1"#) != nil)
        #expect(FuzzTarget.sqlProblem(#"_t."unterminated"#) != nil)
        #expect(FuzzTarget.sqlProblem(#"_t."a-b" = $1"#) != nil)
    }

    @Test("sync-fuzz replay runs a corpus as a child process and refuses an unknown target")
    func replayCommand() async throws {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(
            "sync-fuzz")
        let fallback = Self.root.appendingPathComponent(".build/debug/sync-fuzz")
        let path = FileManager.default.isExecutableFile(atPath: binary.path) ? binary : fallback
        func run(_ arguments: [String]) async throws -> (Int32, String) {
            let child = try SpawnedChild(path.path, arguments, environment: ProcessInfo.processInfo.environment)
            let status = SpawnedChild.exitCode(try await child.exited())
            return (status, child.output + child.errors)
        }
        let corpus = Self.root.appendingPathComponent("fuzz/corpus/envelope-v1").path
        let (status, text) = try await run(["replay", "envelope-v1", corpus])
        #expect(status == 0)
        #expect(text.contains("envelope-v1:") && text.contains("accepted"))
        let (unknown, message) = try await run(["replay", "no-such-target", corpus])
        #expect(unknown == 2)
        #expect(message.contains("unknown target"))
    }
}
