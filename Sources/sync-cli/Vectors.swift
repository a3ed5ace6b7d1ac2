import ArgumentParser
import ConformanceVectors
import Foundation

extension SyncCLI {
    struct Vectors: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify or generate conformance test vectors.",
            subcommands: [Verify.self, Generate.self]
        )
    }
}

extension SyncCLI.Vectors {
    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run every test of Wycheproof-layout vector files.",
            discussion: """
                Algorithms: \(VectorAlgorithm.allCases.map(\.rawValue).joined(separator: ", ")).
                Prints one line per file (<file>: <algorithm>: N passed, N failed), the tcId and \
                comment of each failure, and a closing total line "N passed, N failed".

                Exit status: 0 when every test passed; 1 when a test failed; 2 when a file was \
                unreadable, malformed or named an unknown algorithm (the other files still run).
                """
        )

        @Argument(help: "Vector files (JSON, Wycheproof layout).", completion: .file(extensions: ["json"]))
        var files: [String]

        func validate() throws {
            guard !files.isEmpty else { throw ValidationError("Give at least one vector file.") }
        }

        func run() async throws {
            var passed = 0
            var failed = 0
            var fileErrors = 0
            for path in files {
                do {
                    let report = try VectorVerifier.verify(path: path)
                    passed += report.passed
                    failed += report.failures.count
                    output("\(path): \(report.algorithm.rawValue): \(report.passed) passed, \(report.failures.count) failed")
                    for failure in report.failures {
                        output("  tcId \(failure.tcId) (\(failure.comment)): \(failure.reason)")
                    }
                    if let declared = report.declaredCountMismatch {
                        printError("\(path): warning: numberOfTests says \(declared), found \(report.passed + report.failures.count)")
                    }
                } catch {
                    fileErrors += 1
                    printError("error: \(error)")
                }
            }
            output("\(passed) passed, \(failed) failed")
            if fileErrors > 0 { throw ExitCode(2) }
            if failed > 0 { throw ExitCode(1) }
        }
    }

    struct Generate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write the project's vectors (session-secret envelopes v1 or v2, device certificates), reproducibly.",
            discussion: """
                Every key, nonce, id and secret is derived from a fixed seed, so the output is the \
                same on every run and every machine: testvectors/session-secret-v1.json, \
                testvectors/session-secret-v2.json (--version 2) and \
                testvectors/device-certificate-v1.json (--kind certificate) are this command's output.
                """
        )

        enum Kind: String, ExpressibleByArgument, CaseIterable {
            case envelope, certificate
        }

        @Option(help: "What to generate: envelope (session-secret envelopes) or certificate (device certificates).")
        var kind: Kind = .envelope

        @Option(help: "The envelope version: 1 or 2.")
        var version = 1

        @Option(name: .shortAndLong, help: "Write to this file instead of standard output.")
        var output: String?

        func validate() throws {
            guard version == 1 || version == 2 else { throw ValidationError("--version must be 1 or 2") }
        }

        func run() async throws {
            let data = kind == .certificate ? try DeviceCertificateVectorGenerator.generate()
                : version == 1 ? try SessionSecretVectorGenerator.generate() : try SessionSecretV2VectorGenerator.generate()
            if let output {
                try data.write(to: URL(fileURLWithPath: output), options: .atomic)
            } else {
                FileHandle.standardOutput.write(data)
            }
        }
    }
}
