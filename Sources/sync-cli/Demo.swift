import ArgumentParser
import DeviceTrust
import EmbeddedRemote
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel

extension SyncCLI {
    struct Demo: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "demo",
            abstract: "Run the whole flow on throwaway stores and an embedded remote, step by step.",
            discussion: """
                In a fresh temporary directory: a phone registers, a desktop adds two repositories and \
                five sessions, becomes the trust root and shows a pairing code (text and QR), the phone \
                joins with it and the desktop certifies it; the desktop pushes to verified devices only, \
                the phone pulls and opens every secret (authenticated, envelope v2), both sides compare \
                them, and a second push seals nothing. No secret is printed (the pairing code is shown \
                because pairing is what is shown); the directory is removed afterwards unless --keep is given.
                """
        )

        @Flag(help: "Keep the temporary directory and print where it is.") var keep = false

        func run() async throws {
            let root = FileManager.default.temporaryDirectory.appendingPathComponent(
                "sync-demo-\(UUID().canonical.prefix(8))")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            defer { if !keep { try? FileManager.default.removeItem(at: root) } }
            let world = DemoWorld(root: root)
            let (phone, desktop) = try await world.devices()
            try await world.pair(phone: phone, desktop: desktop)
            let ok = try await world.syncAndCompare(phone: phone, desktop: desktop)
            if keep { output("Files kept in \(root.path)") }
            if !ok { throw ExitCode.failure }
        }
    }

    /// The demo's throwaway world: one user, an embedded remote, numbered steps.
    final class DemoWorld {
        let root: URL
        let user = UUID()
        let remotePath: String
        /// Signed in just now: the trust log's start asks for a recent sign-in.
        let signedIn = Date()
        var step = 0

        init(root: URL) {
            self.root = root
            remotePath = root.appendingPathComponent("embedded-remote.sqlite").path
        }

        /// The remote as `store`'s device sees it: every call carries that device's credential.
        func remote(_ store: DeviceStore) async throws -> any CompleteRemote {
            try await EmbeddedRemoteStore.opened(
                path: remotePath, userID: user, signedInAt: signedIn, credential: try await store.deviceCredential())
        }

        func say(_ text: String) {
            step += 1
            output("\(step). \(text)")
        }

        /// A phone that registers, and a desktop with two repositories and five sessions.
        func devices() async throws -> (phone: DeviceStore, desktop: DeviceStore) {
            say("A phone creates its store and X25519 key pair and registers with the remote")
            let phoneStore = try await DeviceStore.opened(directory: root.appendingPathComponent("phone"))
            let phone = try await phoneStore.createIdentity(
                name: "Quinn's iPhone", deviceType: .iosPhone, role: .mobile)
            try await phoneStore.setUserID(user)
            _ = try await SyncEngine(local: phoneStore, remote: try await remote(phoneStore)).pull()
            output("   phone \(phone.id.canonical.prefix(8)), public key \(phone.publicKey.base64)")

            say("A desktop creates its store and key pair")
            let desktopStore = try await DeviceStore.opened(directory: root.appendingPathComponent("desktop"))
            let desktop = try await desktopStore.createIdentity(
                name: "Quinn's workstation", deviceType: .linuxDesktop, role: .desktop)
            try await desktopStore.setUserID(user)

            say("The desktop adds two repositories and starts five sessions, each with a fresh secret")
            let repositories = ["api-server", "mobile-app"].map { name in
                RepositoryRecord(
                    userID: user, deviceID: desktop.id, name: name,
                    localPath: root.appendingPathComponent("src/\(name)").path,
                    remoteURL: "git@example.com:quinn/\(name).git", defaultBranch: "main")
            }
            try await desktopStore.upsertRepositories(repositories)
            for index in 0..<5 {
                let repository = repositories[index % 2]
                let session = try await desktopStore.createSession(
                    SessionRecord(
                        userID: user, deviceID: desktop.id, repositoryID: repository.id, title: "task \(index + 1)",
                        sessionPID: 4000 + index, currentBranch: "main", workingDirectory: repository.localPath))
                output(
                    "   session \(session.id.canonical.prefix(8)) in \(repository.name) (secret sealed to the desktop's own key at rest)"
                )
            }
            return (phoneStore, desktopStore)
        }

        /// The desktop starts the trust log, invites the phone, the phone joins, the desktop
        /// certifies it.
        func pair(phone phoneStore: DeviceStore, desktop desktopStore: DeviceStore) async throws {
            say(
                "The desktop starts the user's trust log and is its first root: a new identity key, its own certificate, a recovery key"
            )
            let trustRoot = DeviceTrustManager(local: desktopStore, remote: try await remote(desktopStore))
            let started = try await trustRoot.initialize()
            output("   identity fingerprint \(started.fingerprint), trust log head \(started.head)")

            say("The desktop shows a pairing code for a phone (valid 10 minutes, single use) as text and as a QR code")
            let (code, _) = try await trustRoot.invite(deviceType: .iosPhone)
            output("   \(code.revealText())")
            print(
                try TerminalQRCode.render(code.revealText()).split(separator: "\n").map { "   " + $0 }.joined(
                    separator: "\n"))

            say(
                "The phone joins with the code: it verifies the trust log, checks its key in force against the code's fingerprint, and asks for a certificate"
            )
            let joined = try await DeviceTrustManager(local: phoneStore, remote: try await remote(phoneStore)).join(
                code: PairingCode(parsing: code.revealText()))
            output("   pinned identity \(joined)")

            say(
                "The desktop approves: it checks the request's MAC against the code's secret and appends the phone's certificate (an ios-phone) to the log"
            )
            let approval = try await trustRoot.approve()
            output(
                "   certified \(approval.approved.map { $0.name }.joined(separator: ", ")); refused \(approval.refused.count)"
            )
        }

        /// The desktop pushes, the phone pulls, both open every secret and compare them, and a
        /// second push seals nothing. Returns whether everything matched.
        func syncAndCompare(phone phoneStore: DeviceStore, desktop desktopStore: DeviceStore) async throws -> Bool {
            say(
                "The desktop pushes (trust mode verified): device, repositories, sessions, and one envelope per session and certified recipient"
            )
            let desktopSync = SyncEngine(local: desktopStore, remote: try await remote(desktopStore))
            let push = try await desktopSync.push()
            describe(push)

            say("The phone pulls: repositories, sessions and the envelopes addressed to it")
            let pull = try await SyncEngine(local: phoneStore, remote: try await remote(phoneStore)).pull()
            describe(pull)

            say(
                "The phone opens every secret with its private key; the desktop opens its own copies; they are compared"
            )
            let desktopKey = try await desktopStore.deviceKey()
            let phoneKey = try await phoneStore.deviceKey()
            var matched = 0
            let sessions = try await desktopStore.sessions()
            for session in sessions {
                let mine = try await desktopStore.openOwnSecret(sessionID: session.id, using: desktopKey)
                let theirs = try await phoneStore.openReceivedSecret(sessionID: session.id, using: phoneKey)
                let same = mine == theirs
                if same { matched += 1 }
                output("   session \(session.id.canonical.prefix(8)): \(same ? "match" : "MISMATCH")")
            }

            say("The desktop pushes again with nothing changed")
            let again = try await desktopSync.push()
            describe(again)

            let authenticated = try await phoneStore.receivedEnvelopes().allSatisfy(\.authenticated)
            let ok =
                matched == sessions.count && again.envelopesSealed == 0 && push.outcome == .success
                && pull.outcome == .success
                && authenticated && push.trust?.mode == .verified
            output("")
            output(
                "Summary: \(sessions.count) sessions, \(push.envelopesSealed) envelopes sealed on the first push "
                    + "(\(push.recipients.filter(\.receives).count) recipients each), \(pull.envelopesOpened) opened by the phone, "
                    + "\(matched)/\(sessions.count) secrets matched, \(again.envelopesSealed) sealed on the second push; "
                    + (authenticated
                        ? "every envelope authenticated (sealed by the certified desktop)."
                        : "UNAUTHENTICATED envelopes."))
            output(ok ? "Every secret matched." : "FAILED")
            return ok
        }

        func describe(_ report: SyncReport) {
            let phases = report.phases.map { "\($0.phase.rawValue) \($0.applied)" }.joined(separator: ", ")
            output(
                "   \(report.outcome.rawValue): \(phases); \(report.envelopesSealed) sealed, \(report.envelopesOpened) opened, "
                    + "\(report.requests) remote operations, \(String(format: "%.0f", report.durationSeconds * 1000)) ms"
            )
        }
    }
}
