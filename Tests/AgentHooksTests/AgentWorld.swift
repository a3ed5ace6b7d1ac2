import AgentHooks
import AgentImitation
import DeviceTrust
import EmbeddedRemote
import Foundation
import GRDB
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import TestStack
import Testing

/// Which remote a scenario runs on.
enum Backend: String, CaseIterable, CustomStringConvertible, Sendable {
    case embedded, postgrest

    var description: String { rawValue }

    static var available: [Backend] { StackEnvironment.skipped ? [.embedded] : allCases }
}

/// A person's desktop (the trust root, where the agent runs) and phone, paired, on one remote,
/// with a home directory and a project for the agent; the real `sync-cli` runs the hooks.
final class AgentWorld: Sendable {
    let backend: Backend
    let user = UUID()
    let directory: URL
    let desktop: DeviceStore
    let phone: DeviceStore
    let desktopID: UUID
    let phoneID: UUID
    /// What each device's requests carry: the remote acts for the device whose credential calls.
    let desktopCredential: DeviceCredential
    let phoneCredential: DeviceCredential

    var home: URL { directory.appendingPathComponent("home") }
    /// A git checkout (made by hand: `.git` with HEAD and config) the agent works in.
    var project: URL { directory.appendingPathComponent("project") }

    private init(
        backend: Backend, directory: URL, desktop: DeviceStore, phone: DeviceStore, ids: (UUID, UUID),
        credentials: (DeviceCredential, DeviceCredential)
    ) {
        self.backend = backend
        desktopCredential = credentials.0
        phoneCredential = credentials.1
        self.directory = directory
        self.desktop = desktop
        self.phone = phone
        desktopID = ids.0
        phoneID = ids.1
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// A world with the desktop and the phone paired, the phone holding a push token.
    static func make(_ backend: Backend) async throws -> AgentWorld {
        if backend == .postgrest { _ = try StackEnvironment.require() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("agent-\(UUID().canonical)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let desktop = try await DeviceStore.opened(directory: directory.appendingPathComponent("desktop"))
        let desktopIdentity = try await desktop.createIdentity(
            name: "laptop", deviceType: .linuxDesktop, hostname: nil, role: .desktop)
        let phone = try await DeviceStore.opened(directory: directory.appendingPathComponent("phone"))
        let phoneIdentity = try await phone.createIdentity(
            name: "phone", deviceType: .iosPhone, hostname: nil, role: .mobile)
        let world = AgentWorld(
            backend: backend, directory: directory, desktop: desktop, phone: phone,
            ids: (desktopIdentity.id, phoneIdentity.id),
            credentials: (try await desktop.deviceCredential(), try await phone.deviceCredential()))
        // `user` is the world's own; both stores belong to it.
        try await desktop.setUserID(world.user)
        try await phone.setUserID(world.user)
        try world.makeProject()
        let root = DeviceTrustManager(local: desktop, remote: try world.remote(for: desktop))
        try await root.initialize()
        root.recoveryKeyShown()
        _ = try await SyncEngine(local: phone, remote: try world.remote(for: phone)).pull()
        let (code, _) = try await root.invite(deviceType: .iosPhone)
        try await DeviceTrustManager(local: phone, remote: try world.remote(for: phone)).join(
            code: PairingCode(parsing: code.revealText()))
        _ = try await root.approve()
        _ = try await SyncEngine(local: desktop, remote: try world.remote(for: desktop)).push()
        _ = try await SyncEngine(local: phone, remote: try world.remote(for: phone)).pull()
        let token = SecureBytes(randomCount: 32).withUnsafeBytes { ByteEncoding.hex($0) }
        try await world.remote(for: phone).registerPushToken(
            PushTokenRegistration(deviceID: phoneIdentity.id, token: token))
        return world
    }

    /// The project: a `.git` directory with a HEAD on `main`, and an origin URL holding a token.
    func makeProject() throws {
        let git = project.appendingPathComponent(".git")
        try FileManager.default.createDirectory(
            at: git.appendingPathComponent("refs/remotes/origin"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        try "ref: refs/heads/main\n".write(to: git.appendingPathComponent("HEAD"), atomically: true, encoding: .utf8)
        try "ref: refs/remotes/origin/main\n".write(
            to: git.appendingPathComponent("refs/remotes/origin/HEAD"), atomically: true, encoding: .utf8)
        try """
        [core]
        \tfsmonitor = touch \(directory.appendingPathComponent("fsmonitor-ran").path)
        [remote "origin"]
        \turl = https://agent:s3cr3t-token@example.com/team/app.git
        """.write(to: git.appendingPathComponent("config"), atomically: true, encoding: .utf8)
    }

    /// A remote signed in as this world's user, acting for the phone (what reads and answers).
    func remote() throws -> any CompleteRemote { try remote(phoneCredential) }

    /// A remote acting for the device of `store` (the desktop or the phone).
    func remote(for store: DeviceStore) throws -> any CompleteRemote {
        try remote(store === desktop ? desktopCredential : phoneCredential)
    }

    /// A remote signed in as this world's user, acting for the device of `credential`.
    func remote(_ credential: DeviceCredential) throws -> any CompleteRemote {
        switch backend {
        case .embedded:
            // Signed in just now: starting a trust log wants a recent sign-in.
            return try EmbeddedRemoteStore(
                path: directory.appendingPathComponent("remote.sqlite").path, userID: user, signedInAt: Date(),
                credential: credential)
        case .postgrest:
            let stack = try StackEnvironment.require()
            let user = self.user
            var configuration = PostgRESTConfiguration(projectURL: stack.url, apiKey: stack.anonKey, userID: user) {
                _ in stack.token(for: user)
            }
            configuration.baseBackoff = .milliseconds(10)
            configuration.deviceCredential = credential
            return PostgRESTRemoteStore(configuration: configuration)
        }
    }

    /// The environment the agent gives its hooks: this world's home and remote.
    var environment: [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["HOME"] = home.path
        env.removeValue(forKey: "CLAUDE_CONFIG_DIR")
        env.removeValue(forKey: "SYNC_STORE_DIR")
        switch backend {
        case .embedded:
            env["SYNC_REMOTE"] = "embedded:" + directory.appendingPathComponent("remote.sqlite").path
        case .postgrest:
            if let stack = try? StackEnvironment.require() {
                env["SYNC_REMOTE"] = stack.url.absoluteString
                env["SUPABASE_ANON_KEY"] = stack.anonKey
                env["SYNC_ACCESS_TOKEN"] = stack.token(for: user, expiresIn: 7_200)
            }
        }
        return env
    }

    /// Runs `sync-cli` with this world's environment.
    @discardableResult
    func cli(_ arguments: [String], stdin: String? = nil) async throws -> (status: Int32, out: String, err: String) {
        let environment = self.environment
        return try await ChildProcesses.slots.run {
            try await offThePool {
                let child = try SpawnedChild(
                    CLIPath.path, arguments, environment: environment, workingDirectory: self.project, stdin: stdin)
                let status = SpawnedChild.exitCode(try child.wait())
                return (status, child.output, child.errors)
            }
        }
    }

    /// Installs the Claude Code hooks for the desktop's store, with `options` (`--away always`...).
    func install(_ options: [String] = []) async throws {
        let result = try await cli(
            ["agent", "install", "claude-code", "--store", desktop.directory.path] + options)
        #expect(result.status == 0, "\(result.err)")
    }

    /// Claude Code running those hooks. SessionEnd's shared budget (1.5 s in Claude Code) is
    /// the hang ceiling here unless a test sets its own: how fast a cold hook answers is a
    /// benchmark's figure (docs/agent-hooks.md), and on one loaded core the real budget ran out
    /// before the handler had written the session's end, so a test failed on the clock.
    func agent(timeouts: [String: Duration] = [:]) -> ClaudeCodeImitation {
        ClaudeCodeImitation(
            home: home, project: project, environment: environment,
            timeouts: ["SessionEnd": Waiting.ceiling].merging(timeouts) { $1 })
    }

    /// The phone's alerts even while the desktop holds the session (the desktop claims it at each
    /// prompt, and a test's turn lasts less than the minute quiet-while-active waits).
    func phoneHearsEverything() async throws {
        let change = NotificationSettings.Change([.quietWhileActive: false])
        try await Coordinator(store: phone, remote: try remote(for: phone)).setNotificationSettings(change)
    }

    /// The session an agent session id gets on the desktop.
    func session(_ agentSession: String) -> UUID {
        AgentSessionName.sessionID(desktop: desktopID, agent: .claudeCode, agentSession: agentSession)
    }

    /// Waits (a ceiling that only catches a hang) until `condition` holds.
    func eventually(
        _ what: String, within ceiling: Duration = Waiting.ceiling, _ condition: () async throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + ceiling
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(25))
        }
        Issue.record("hang: \(what) did not happen within \(ceiling)")
    }
}

/// The built `sync-cli`.
enum CLIPath {
    static var path: String {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent(".build/debug"),
        ].map { $0.appendingPathComponent("sync-cli").path }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates[0]
    }
}
