import ArgumentParser
import ConformanceVectors
import Foundation
import SecretCrypto

extension SyncCLI {
    struct Vectors: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "vectors", abstract: "Verify conformance test vectors.",
            discussion:
                "The project's own vector files are written by `sync-vectors generate` (make vectors), a tool of the test rig.",
            subcommands: [Verify.self]
        )
    }
}

extension SyncCLI.Vectors {
    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "verify", abstract: "Run every test of Wycheproof-layout vector files.",
            discussion: """
                Algorithms: \(VectorAlgorithm.allCases.map(\.rawValue).joined(separator: ", ")).
                Prints one line per file (<file>: <algorithm>: N passed, N failed), the tcId and \
                comment of each failure, and a closing total line "N passed, N failed".

                --backend runs every file on the named crypto backend: \(CryptoBackend.available.map(\.rawValue).joined(separator: " or ")) \
                (default: \(CryptoBackend.processDefault.rawValue)). The two give the same results on every file.

                Exit status: 0 when every test passed; 1 when a test failed; 2 when a file was \
                unreadable, malformed or named an unknown algorithm (the other files still run).
                """
        )

        @Argument(help: "Vector files (JSON, Wycheproof layout).", completion: .file(extensions: ["json"]))
        var files: [String]

        @Option(help: "The crypto backend that computes the primitives.")
        var backend: String?

        func validate() throws {
            guard !files.isEmpty else { throw ValidationError("Give at least one vector file.") }
            if let backend, CryptoBackend(rawValue: backend)?.isAvailable != true {
                let choices = CryptoBackend.available.map(\.rawValue).joined(separator: ", ")
                if backend == CryptoBackend.swiftCrypto.rawValue {
                    throw ValidationError(
                        "\(CryptoError.backendUnavailable(backend)); this build has \(choices).")
                }
                throw ValidationError("Unknown crypto backend '\(backend)': this build has \(choices).")
            }
        }

        func run() async throws {
            var passed = 0
            var failed = 0
            var fileErrors = 0
            for path in files {
                do {
                    let chosen = backend.flatMap(CryptoBackend.init(rawValue:)) ?? .processDefault
                    let report = try CryptoBackend.with(chosen) { try VectorVerifier.verify(path: path) }
                    passed += report.passed
                    failed += report.failures.count
                    output(
                        "\(path): \(report.algorithm.rawValue): \(report.passed) passed, \(report.failures.count) failed"
                    )
                    for failure in report.failures {
                        output("  tcId \(failure.tcId) (\(failure.comment)): \(failure.reason)")
                    }
                    if let declared = report.declaredCountMismatch {
                        printError(
                            "\(path): warning: numberOfTests says \(declared), found \(report.passed + report.failures.count)"
                        )
                    }
                } catch {
                    fileErrors += 1
                    printError("error: \(error)")
                }
            }
            let unread = fileErrors == 0 ? "" : "; \(fileErrors) of \(files.count) files not verified (see above)"
            output("\(passed) passed, \(failed) failed\(unread)")
            if fileErrors > 0 { throw ExitCode(2) }
            if failed > 0 { throw ExitCode(1) }
        }
    }
}
