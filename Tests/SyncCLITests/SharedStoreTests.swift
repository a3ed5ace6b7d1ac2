import Foundation
import TestStack
import Testing

/// An iOS app and its notification service extension open one store directory (an App Group
/// container) from two processes. The rule (docs/ios-app.md): any number of processes may open a
/// store; pushes and pulls take the store's sync lease and wait for each other; reading, opening
/// secrets and answering approvals need no lease (SQLite's WAL lets them run beside a sync).
@Suite("One store, two processes")
struct SharedStoreTests {
    @Test("one process pulls while another opens a secret and answers an approval; nothing is lost")
    func pullWhileOpeningAndAnswering() async throws {
        let cli = try CLI()
        let first = try await ApprovalCLITests.paired(cli)
        let phone = cli.store("p")
        // The request stands ten minutes: its expiry is not under test, and on a loaded machine the
        // twelve processes before the answer took longer than the default minute.
        let asked = ApprovalCLITests.ask(
            cli,
            [
                "approval", "request", "--store", cli.store("d"), first, "--from-file", "-", "--json", "--timeout",
                "600",
            ],
            stdin: #"{"tool": "Bash", "summary": "npm test"}"#)
        // Asked before the rest begins: what runs at once below is the phone's, not the desktop's.
        let request = try await ApprovalCLITests.pending(cli, asking: asked)
        // Sessions the phone has not pulled yet.
        let repo = cli.directory.appendingPathComponent("project").path
        var sessions = [first]
        for _ in 0..<4 {
            let started = try await cli.run(["session", "start", "--store", cli.store("d"), "--repo", repo])
            sessions.append(started.out.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        #expect(try await cli.run(["sync", "--store", cli.store("d")]).status == 0)

        // The app: pulls, one after another. The extension, at the same time: opens the first
        // session's secret again and again, then answers the approval.
        async let app: [Int32] = {
            var statuses: [Int32] = []
            for _ in 0..<6 { statuses.append(try await cli.run(["pull", "--store", phone]).status) }
            return statuses
        }()
        async let appExtension: (opened: Int, answered: Int32) = {
            var opened = 0
            for _ in 0..<6 {
                let shown = try await cli.run(["secrets", "show", "--store", phone, first, "--json"])
                if shown.status == 0 && shown.out.contains("\"opens\" : true") { opened += 1 }
            }
            let answer = try await cli.run(["approval", "answer", "--store", phone, request, "approve", "--json"])
            return (opened, answer.status)
        }()
        let (pulls, work) = try await (app, appExtension)
        #expect(pulls.allSatisfy { $0 == 0 }, "\(pulls)")
        #expect(work.opened == 6 && work.answered == 0)
        let outcome = try await asked.value
        #expect(outcome.status == 0 && outcome.out.contains("\"approved\""), "\(outcome.out) \(outcome.err)")

        // Nothing lost: every session the desktop pushed opens on the phone.
        for session in sessions {
            let shown = try await cli.run(["secrets", "show", "--store", phone, session, "--json"])
            #expect(shown.status == 0 && shown.out.contains("\"opens\" : true"), "\(session): \(shown.err)")
        }
        let audit = try await cli.run(["approval", "list", "--store", phone, "--json"])
        let rows = try #require(JSONSerialization.jsonObject(with: Data(audit.out.utf8)) as? [[String: Any]])
        #expect(rows.count == 1 && rows.first?["decidedByDeviceId"] is String)
    }
}

@Suite("sync-cli vectors verify --backend")
struct VectorsBackendCLITests {
    static let files: [String] = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("testvectors")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        return names.filter { $0.hasSuffix(".json") }.sorted().map { root.appendingPathComponent($0).path }
    }()

    @Test("both backends print the same lines; an unknown backend is a usage error")
    func sameOnBoth() async throws {
        let cli = try CLI()
        let sodium = try await cli.run(["vectors", "verify"] + Self.files + ["--backend", "libsodium"])
        let swift = try await cli.run(["vectors", "verify"] + Self.files + ["--backend", "swift-crypto"])
        #expect(sodium.status == 0 && swift.status == 0)
        #expect(sodium.out == swift.out && sodium.out.hasSuffix(" passed, 0 failed\n"))
        let unknown = try await cli.run(["vectors", "verify"] + Self.files + ["--backend", "openssl"])
        #expect(unknown.status == 64 && unknown.err.contains("Unknown crypto backend 'openssl'"))
    }
}
