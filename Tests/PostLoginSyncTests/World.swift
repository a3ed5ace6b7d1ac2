import EmbeddedRemote
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel
import SyncTestSupport
import Synchronization

/// Which remote a scenario runs on.
enum Backend: String, CaseIterable, CustomStringConvertible, Sendable {
    case embedded
    case postgrest

    var description: String { rawValue }

    static var available: [Backend] { StackEnvironment.skipped ? [.embedded] : allCases }

    /// Every remote with its schema variants: the embedded file, and on the stack the project's
    /// schema (`false`) and the deployed one (`true`).
    static var variants: [(Backend, Bool)] {
        available.flatMap { backend in backend == .embedded ? [(backend, false)] : [(backend, false), (backend, true)] }
    }
}

/// One user's devices on one remote, each with its own store in a temporary directory.
final class World: Sendable {
    let backend: Backend
    let user = UUID()
    let directory: URL
    /// On the stack: the deployed-schema variant (no column checks) instead of the project's.
    let deployedSchema: Bool

    init(_ backend: Backend, deployedSchema: Bool = false) throws {
        self.backend = backend
        self.deployedSchema = deployedSchema
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("world-\(UUID().canonical)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if backend == .postgrest { _ = try StackEnvironment.require() }
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// The credential of the world's first device: the device a remote acts for when a test
    /// names none (most such calls only read what a device would see).
    let firstCredential = Mutex<DeviceCredential?>(nil)

    /// A remote signed in as this world's user (or `user`), who signed in at `signedIn` (just
    /// now by default; `nil`: not recently), acting for the device of `credential` (by default
    /// the world's first device; `.some(nil)`: none, a login alone, what a token holder has).
    func remote(
        as user: UUID? = nil, signedIn: Date? = Date(), credential: DeviceCredential?? = .none
    ) throws -> any CompleteRemote {
        // Another user's remote acts, by default, for a fresh device of that user's.
        let credential =
            credential
            ?? (user.map { $0 != self.user } == true
                ? .random(for: UUID()) : firstCredential.withLock { $0 })
        let user = user ?? self.user
        switch backend {
        case .embedded:
            return try EmbeddedRemoteStore(
                path: directory.appendingPathComponent("remote.sqlite").path, userID: user, signedInAt: signedIn,
                credential: credential)
        case .postgrest:
            let stack = try StackEnvironment.require()
            var configuration = PostgRESTConfiguration(
                projectURL: deployedSchema ? stack.deployedURL : stack.url, apiKey: stack.anonKey,
                userID: user
            ) { _ in stack.token(for: user, signedIn: signedIn) }
            configuration.baseBackoff = .milliseconds(10)
            configuration.deviceCredential = credential
            return PostgRESTRemoteStore(configuration: configuration)
        }
    }

    /// A remote acting for `device` (its credential), signed in as `user`.
    func remote(for device: Device, as user: UUID? = nil, signedIn: Date? = Date()) throws -> any CompleteRemote {
        try remote(as: user, signedIn: signedIn, credential: device.credential)
    }

    /// The operator's hand (the project's service role): the user's rows written without the
    /// device rules, as a hostile server can. It acts for no device.
    func operatorRemote() throws -> any CompleteRemote {
        switch backend {
        case .embedded:
            return try EmbeddedRemoteStore.serviceRole(
                path: directory.appendingPathComponent("remote.sqlite").path, userID: user)
        case .postgrest:
            let stack = try StackEnvironment.require()
            var configuration = PostgRESTConfiguration(
                projectURL: deployedSchema ? stack.deployedURL : stack.url, apiKey: stack.serviceKey, userID: user
            ) { _ in stack.serviceKey }
            configuration.baseBackoff = .milliseconds(10)
            return PostgRESTRemoteStore(configuration: configuration)
        }
    }

    /// Every envelope pair addressed to `device`, as the operator sees the table (whatever its
    /// device's own credential may read).
    func addressed(to device: UUID) async throws -> [EnvelopePair] {
        try await operatorRemote().listEnvelopePairs().filter { $0.deviceID == device }
    }

    /// Writes `row` as its own device would, through a fresh credential of `row.id`: what a token
    /// holder (or a device from before the test's devices) can do.
    func plantDevice(_ row: OwnDeviceRow) async throws {
        try await remote(credential: .some(.random(for: row.id))).upsertOwnDevice(row)
    }

    /// Sets device columns as the trust flow would.
    func setDevice(_ id: UUID, isActive: Bool? = nil, publicKey: String? = nil) async throws {
        switch backend {
        case .embedded:
            let store = try EmbeddedRemoteStore(
                path: directory.appendingPathComponent("remote.sqlite").path, userID: user)
            try await store.setTrust(deviceID: id, isActive: isActive, publicKey: publicKey.map { .some($0) })
        case .postgrest:
            var fields: [String] = []
            if let isActive { fields.append(#""is_active":\#(isActive)"#) }
            if let publicKey { fields.append(#""public_key":"\#(publicKey)""#) }
            let stack = try StackEnvironment.require()
            try await stack.setDevice(
                id, base: deployedSchema ? stack.deployedURL : stack.url,
                fields: "{" + fields.joined(separator: ",") + "}")
        }
    }

    /// Writes `devices.capabilities` as another client of the device would (service role on the stack).
    func setCapabilities(_ id: UUID, json: String) async throws {
        switch backend {
        case .embedded:
            let store = try EmbeddedRemoteStore(
                path: directory.appendingPathComponent("remote.sqlite").path, userID: user)
            try await store.setCapabilities(deviceID: id, json: json)
        case .postgrest:
            let stack = try StackEnvironment.require()
            try await stack.setDevice(
                id, base: deployedSchema ? stack.deployedURL : stack.url, fields: #"{"capabilities":\#(json)}"#)
        }
    }

    /// `devices.capabilities` as stored, JSON text.
    func capabilities(_ id: UUID) async throws -> String? {
        switch backend {
        case .embedded:
            let store = try EmbeddedRemoteStore(
                path: directory.appendingPathComponent("remote.sqlite").path, userID: user)
            return try await store.capabilities(deviceID: id)
        case .postgrest:
            let stack = try StackEnvironment.require()
            let r = try await stack.request(
                "GET", "/rest/v1/devices?select=capabilities&id=eq.\(id.canonical)",
                base: deployedSchema ? stack.deployedURL : stack.url,
                token: stack.token(for: user), credential: firstCredential.withLock { $0 })
            guard let row = (try JSONSerialization.jsonObject(with: Data(r.body.utf8)) as? [[String: Any]])?.first,
                let value = row["capabilities"] as? [String: Any]
            else { return nil }
            return String(decoding: try JSONSerialization.data(withJSONObject: value), as: UTF8.self)
        }
    }

    /// A device: its store, identity and sync engine.
    struct Device: Sendable {
        let store: DeviceStore
        let identity: DeviceIdentity
        let engine: SyncEngine
        /// What proves to the remote that a call is this device's.
        let credential: DeviceCredential
    }

    func device(
        _ name: String, role: SyncRole, type: DeviceType? = nil, id: UUID = UUID(),
        options: SyncOptions = SyncOptions(),
        remote: (@Sendable (DeviceCredential) throws -> any CompleteRemote)? = nil
    ) async throws -> Device {
        let store = try await DeviceStore.opened(directory: directory.appendingPathComponent(name))
        let identity: DeviceIdentity
        if let existing = try await store.identity() {
            identity = existing
        } else {
            identity = try await store.createIdentity(
                name: name, deviceType: type ?? (role == .desktop ? .linuxDesktop : .iosPhone),
                hostname: nil, role: role, id: id)
            try await store.setUserID(user)
        }
        let credential = try await store.deviceCredential()
        firstCredential.withLock { if $0 == nil { $0 = credential } }
        return Device(
            store: store, identity: identity,
            engine: SyncEngine(
                local: store, remote: try remote?(credential) ?? self.remote(credential: credential), options: options),
            credential: credential)
    }

    /// A desktop with `repositories` repositories and `sessions` sessions spread over them.
    func desktop(
        _ name: String = "desktop", repositories: Int = 2, sessions: Int = 5, options: SyncOptions = SyncOptions(),
        remote: (@Sendable (DeviceCredential) throws -> any CompleteRemote)? = nil
    ) async throws -> Device {
        let desktop = try await device(name, role: .desktop, options: options, remote: remote)
        let repos = (0..<repositories).map { i in
            RepositoryRecord(
                userID: user, deviceID: desktop.identity.id, name: "repo-\(i)", localPath: "/src/repo-\(i)",
                remoteURL: "git@example.com:team/repo-\(i).git", defaultBranch: "main")
        }
        try await desktop.store.upsertRepositories(repos)
        for i in 0..<sessions {
            let repository = repos[i % repos.count]
            try await desktop.store.createSession(
                SessionRecord(
                    userID: user, deviceID: desktop.identity.id, repositoryID: repository.id,
                    title: "session \(i)", sessionPID: 100 + i, workingDirectory: repository.localPath))
        }
        return desktop
    }

    /// Every session's secret as the desktop holds it.
    func secrets(of desktop: Device) async throws -> [UUID: SessionSecret] {
        var result: [UUID: SessionSecret] = [:]
        let key = try await desktop.store.deviceKey()
        for session in try await desktop.store.sessions() {
            result[session.id] = try await desktop.store.openOwnSecret(sessionID: session.id, using: key)
        }
        return result
    }

    /// Every secret a phone can open, by session.
    func opened(by phone: Device) async throws -> [UUID: SessionSecret] {
        var result: [UUID: SessionSecret] = [:]
        let key = try await phone.store.deviceKey()
        for envelope in try await phone.store.receivedEnvelopes() {
            result[envelope.sessionID] = try await phone.store.openReceivedSecret(
                sessionID: envelope.sessionID, using: key)
        }
        return result
    }
}
