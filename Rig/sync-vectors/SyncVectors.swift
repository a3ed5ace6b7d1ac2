import ArgumentParser
import Foundation
import SyncModel
import VectorGeneration

/// The project's vector files, written reproducibly: a tool of the test rig (`make vectors`),
/// never part of what an app links or `sync-cli` ships.
@main
struct SyncVectors: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync-vectors",
        abstract: "Write the project's conformance vector files.",
        subcommands: [Generate.self, Bench.self]
    )
}

extension SyncVectors {
    struct Generate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Write the project's vectors (session-secret envelopes v1 or v2, device certificates, approvals, the lock-screen sanitiser, identity backups), reproducibly.",
            discussion: """
                Every key, nonce, id and secret is derived from a fixed seed, so the output is the \
                same on every run and every machine: testvectors/session-secret-v1.json, \
                testvectors/session-secret-v2.json (--version 2) and \
                testvectors/device-certificate-v1.json (--kind certificate) and \
                testvectors/approval-v1.json (--kind approval), \
                testvectors/question-v1.json (--kind question), \
                testvectors/lockscreen-sanitiser-v2.json (--kind lockscreen), \
                testvectors/identity-backup-v1.json (--kind backup) and \
                testvectors/pairing-v1.json (--kind pairing) and \
                testvectors/trust-log-v1.json (--kind trustlog), \
                testvectors/question-choices-v1.json (--kind choices), \
                testvectors/agent-session-v1.json (--kind agentsession) and \
                testvectors/remote-rules-v1.json (--kind remoterules) are this command's output.
                """
        )

        enum Kind: String, ExpressibleByArgument, CaseIterable {
            case envelope, certificate, approval, question, lockscreen, backup, pairing, trustlog
            case choices, agentsession, remoterules
        }

        @Option(
            help:
                "What to generate: envelope (session-secret envelopes), certificate (device certificates), approval (approval requests and decisions), question (an agent's sealed questions), lockscreen (the lock-screen sanitiser), backup (identity backups and recovery keys) pairing (revocations, pairing codes and MACs, fingerprints) trustlog (trust logs, append rules, backups, grants, witnesses), choices (multiple-choice questions and their signed answers) agentsession (the session ids agents' sessions get) or remoterules (the server's notification rules)."
        )
        var kind: Kind = .envelope

        @Option(help: "The envelope version: 1 or 2.")
        var version = 1

        @Option(name: .shortAndLong, help: "Write to this file instead of standard output.")
        var output: String?

        func validate() throws {
            guard version == 1 || version == 2 else { throw ValidationError("--version must be 1 or 2") }
        }

        func run() async throws {
            let data: Data
            switch kind {
            case .certificate: data = try DeviceCertificateVectorGenerator.generate()
            case .approval: data = try ApprovalVectorGenerator.generate()
            case .question: data = try QuestionVectorGenerator.generate()
            case .lockscreen: data = try LockScreenVectorGenerator.generate()
            case .backup: data = try IdentityBackupVectorGenerator.generate()
            case .pairing: data = try PairingVectorGenerator.generate()
            case .trustlog: data = try TrustLogVectorGenerator.generate()
            case .choices: data = try QuestionChoicesVectorGenerator.generate()
            case .agentsession: data = try AgentSessionVectorGenerator.generate()
            case .remoterules: data = try RemoteRulesVectorGenerator.generate()
            case .envelope:
                data =
                    version == 1
                    ? try SessionSecretVectorGenerator.generate() : try SessionSecretV2VectorGenerator.generate()
            }
            if let output {
                try data.write(to: URL(fileURLWithPath: output), options: .atomic)
            } else {
                FileHandle.standardOutput.write(data)
            }
        }
    }
}

extension SyncVectors {
    /// The lock-screen sanitiser's time on long text (notifications.md, "Why the window is safe"):
    /// a figure printed, never asserted. Meaningful in a release build.
    struct Bench: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Time the lock-screen sanitiser on 100,000 scalars (median of --runs).",
            discussion: """
                Run the release build: `swift build -c release --product sync-vectors && \
                .build/release/sync-vectors bench`. Each input is a piece repeated to --scalars \
                scalars: AKIA and xoxb- (quadratic before the window), a status sentence, a hidden character and U+FDFA (NFKC makes 18 scalars of it).
                """
        )

        @Option(help: "How many scalars each input has.")
        var scalars = 100_000

        @Option(help: "How many times each input is sanitised; the median is printed.")
        var runs = 5

        func run() async throws {
            let pieces = ["AKIA", "xoxb-", "Running tests with token=abc123 in Sources/App ", "\u{200B}", "\u{FDFA}"]
            let clock = ContinuousClock()
            for piece in pieces {
                let text = String(repeating: piece, count: max(1, scalars / piece.unicodeScalars.count))
                var times: [Duration] = []
                for _ in 0..<max(1, runs) {
                    times.append(clock.measure { _ = LockScreenText.sanitised(text) })
                }
                let median = times.sorted()[times.count / 2]
                let ms = Double(median.components.attoseconds) / 1e15 + Double(median.components.seconds) * 1000
                let name =
                    piece.unicodeScalars.count > 8
                    ? "a sentence" : "\"" + piece.unicodeScalars.map { $0.escaped(asASCII: true) }.joined() + "\""
                print(
                    "sanitiser \(text.unicodeScalars.count) scalars of \(name) repeated: "
                        + String(format: "%.2f ms (median of %d)", ms, times.count))
            }
        }
    }
}
