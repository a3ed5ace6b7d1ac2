import EmbeddedRemote
import Foundation
import LocalStore
import RemoteSelection
import RemoteStore
import SyncModel
import Testing

/// `RemoteConfiguration`: the CLI's remote selection as an app calls it, without the CLI.
@Suite("RemoteConfiguration: which remote a store talks to")
struct RemoteConfigurationTests {
    /// A fresh store with an identity, signed in as `user` when one is given.
    static func store(user: UUID? = UUID()) async throws -> DeviceStore {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("remote-config-\(UUID())")
        let store = try await DeviceStore.opened(directory: directory.appendingPathComponent("store"))
        try await store.createIdentity(name: "mac", deviceType: .macDesktop, role: .desktop)
        if let user { try await store.setUserID(user) }
        return store
    }

    @Test("an address parses to its location; a near miss of embedded: is named, anything else refused")
    func addresses() throws {
        #expect(
            try RemoteConfiguration(address: "https://p.supabase.co").location
                == .supabase(URL(string: "https://p.supabase.co")!))
        #expect(try RemoteConfiguration(address: "embedded:/tmp/r.sqlite").location == .embedded(path: "/tmp/r.sqlite"))
        for (address, fragment) in [
            ("embeded:/x/r.sqlite", "did you mean embedded:/x/r.sqlite?"),
            ("ftp://host", "http(s) Supabase project URL"),
            ("embedded:", "needs a file path"), ("p.supabase.co", "http(s) Supabase project URL"),
        ] {
            let error = #expect(throws: RemoteConfigurationError.self) { try RemoteConfiguration(address: address) }
            #expect(error?.code == .invalidAddress && error?.isUsageError == true)
            #expect(error?.message.contains(fragment) == true, "\(address): \(error?.message ?? "")")
        }
    }

    @Test("plain http:// is cleartext only off this machine, and refused unless allowed")
    func cleartext() throws {
        for loopback in ["http://127.0.0.1:8000", "http://localhost", "http://[::1]:54321", "https://example.com"] {
            let configuration = try RemoteConfiguration(address: loopback)
            #expect(!configuration.isCleartext, "\(loopback)")
            try configuration.checkTransport(allowCleartext: false)
        }
        let lab = try RemoteConfiguration(address: "http://192.0.2.1:8000")
        #expect(lab.isCleartext)
        let error = #expect(throws: RemoteConfigurationError.self) { try lab.checkTransport(allowCleartext: false) }
        #expect(error?.code == .cleartextRefused && error?.isUsageError == true)
        try lab.checkTransport(allowCleartext: true)
    }

    @Test("the address: explicit, else $SYNC_REMOTE, else what login saved, else the embedded remote beside the store")
    func precedence() async throws {
        let store = try await Self.store()
        let beside = store.directory.deletingLastPathComponent().appendingPathComponent("embedded-remote.sqlite").path
        #expect(
            try await RemoteConfiguration.address(for: store, explicit: nil, environment: [:]) == "embedded:" + beside)
        try await store.setSetting(.remoteAddress, "https://saved.example")
        #expect(
            try await RemoteConfiguration.address(for: store, explicit: nil, environment: [:])
                == "https://saved.example")
        let environment = ["SYNC_REMOTE": "https://env.example"]
        #expect(
            try await RemoteConfiguration.address(for: store, explicit: nil, environment: environment)
                == "https://env.example")
        #expect(
            try await RemoteConfiguration.address(for: store, explicit: "embedded:/x", environment: environment)
                == "embedded:/x")
    }

    @Test("open refuses what is not ready, each with its code: no user, no session, no key, no embedded file")
    func refusals() async throws {
        let supabase = try RemoteConfiguration(address: "https://p.supabase.co")
        let anonymous = try await Self.store(user: nil)
        let noUser = await #expect(throws: RemoteConfigurationError.self) {
            try await supabase.open(for: anonymous, apiKey: "anon")
        }
        #expect(noUser?.code == .notSignedIn && noUser?.isUsageError == false)

        let store = try await Self.store()
        let noKey = await #expect(throws: RemoteConfigurationError.self) {
            try await supabase.open(for: store, apiKey: nil)
        }
        #expect(noKey?.code == .apiKeyMissing)
        let noSession = await #expect(throws: RemoteConfigurationError.self) {
            try await supabase.open(for: store, apiKey: "anon")
        }
        #expect(noSession?.code == .notSignedIn && noSession?.message.contains("no saved session") == true)
        let cleartext = try RemoteConfiguration(address: "http://192.0.2.1:8000")
        let refused = await #expect(throws: RemoteConfigurationError.self) {
            try await cleartext.open(for: store, apiKey: "anon", accessToken: "t")
        }
        #expect(refused?.code == .cleartextRefused)

        let missing = store.directory.deletingLastPathComponent().appendingPathComponent("none/remote.sqlite").path
        let embedded = try RemoteConfiguration(address: "embedded:" + missing)
        let noFile = await #expect(throws: RemoteConfigurationError.self) {
            try await embedded.open(for: store, apiKey: nil)
        }
        #expect(noFile?.code == .embeddedRemoteMissing)
    }

    @Test("open gives PostgREST for a project and the embedded remote for a file made 0600 by a sign-in")
    func opens() async throws {
        let store = try await Self.store()
        let supabase = try RemoteConfiguration(address: "https://p.supabase.co")
        #expect(try await supabase.open(for: store, apiKey: "anon", accessToken: "token") is PostgRESTRemoteStore)

        let path = store.directory.deletingLastPathComponent().appendingPathComponent("remote.sqlite").path
        let embedded = try RemoteConfiguration(address: "embedded:" + path)
        let notYet = await #expect(throws: RemoteConfigurationError.self) {
            try await embedded.open(for: store, apiKey: nil)
        }
        #expect(notYet?.message.contains("there is no embedded remote at") == true)
        _ = try RemoteConfiguration.embedded(path: path, userID: UUID(), create: true)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try await embedded.open(for: store, apiKey: nil) is EmbeddedRemoteStore)
    }
}
