import EmbeddedRemote
import Foundation
import LocalStore
import RemoteStore
import SyncModel

/// Which remote a store talks to, and how it signs in there: a Supabase project over PostgREST,
/// or an embedded remote in one SQLite file.
///
/// The selection `sync-cli` makes from `--remote`, `$SYNC_REMOTE` and what `login` saved, as a
/// value an app can make and open the same way:
///
/// ```swift
/// let configuration = try RemoteConfiguration(address: "https://PROJECT.supabase.co")
/// let remote = try await configuration.open(for: store, apiKey: anonKey)
/// ```
public struct RemoteConfiguration: Sendable, Hashable, CustomStringConvertible {
    /// Where the remote is.
    public enum Location: Sendable, Hashable {
        /// A Supabase project: PostgREST at `<url>/rest/v1`, Supabase Auth at `<url>/auth/v1`.
        case supabase(URL)
        /// An embedded remote: the SQLite file at `path`.
        case embedded(path: String)
    }

    /// Where the remote is.
    public let location: Location
    /// The address as written: `https://PROJECT.supabase.co` or `embedded:PATH`.
    public let address: String

    /// Parses an address: an http(s) Supabase project URL or `embedded:PATH`.
    ///
    /// - Throws: ``RemoteConfigurationError`` `.invalidAddress`, naming a near miss of `embedded:`.
    public init(address: String) throws {
        self.address = address
        if address.hasPrefix("embedded:") {
            let path = String(address.dropFirst("embedded:".count))
            guard !path.isEmpty else {
                throw RemoteConfigurationError(
                    .invalidAddress, "embedded: needs a file path, for example embedded:/path/to/remote.sqlite")
            }
            location = .embedded(path: path)
            return
        }
        guard let url = URL(string: address), url.scheme == "https" || url.scheme == "http" else {
            throw RemoteConfigurationError(.invalidAddress, Self.invalidAddressMessage(address))
        }
        location = .supabase(url)
    }

    /// The address as written.
    public var description: String { address }

    /// The address a store's remote has: `explicit` (a `--remote`), else `$SYNC_REMOTE` in
    /// `environment`, else the one `login` saved in the store, else the embedded remote beside
    /// the store (`<store>/../embedded-remote.sqlite`). Not parsed: a status can show it as it is.
    public static func address(
        for store: DeviceStore, explicit: String?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) async throws -> String {
        if let explicit { return explicit }
        if let remote = environment["SYNC_REMOTE"], !remote.isEmpty { return remote }
        if let saved = try await store.setting(.remoteAddress) { return saved }
        return "embedded:"
            + store.directory.deletingLastPathComponent().appendingPathComponent("embedded-remote.sqlite").path
    }

    /// Whether the password, the tokens and every row would cross the network in the clear:
    /// plain `http://` to a host that is not this machine.
    public var isCleartext: Bool {
        guard case .supabase(let url) = location, url.scheme == "http" else { return false }
        return !Self.isLoopback(url.host ?? "")
    }

    /// Refuses a cleartext remote (``isCleartext``) unless `allowed` (a lab).
    ///
    /// - Throws: ``RemoteConfigurationError`` `.cleartextRefused`.
    public func checkTransport(allowCleartext allowed: Bool) throws {
        guard isCleartext, !allowed else { return }
        throw RemoteConfigurationError(
            .cleartextRefused,
            "--remote \(address): plain http:// is refused for a host other than this machine "
                + "(the password and tokens would travel in the clear); use https://, or --insecure-http for a lab")
    }

    /// Opens the remote for a signed-in store.
    ///
    /// A Supabase remote signs in with the store's saved session (`auth.json`, refreshed and saved
    /// back by `AccessTokens`), or with `accessToken` as it is when one is given (no refresh).
    ///
    /// - Parameters:
    ///   - store: The signed-in store.
    ///   - apiKey: The project's anon (publishable) key; Supabase only.
    ///   - accessToken: A token to use instead of the saved session.
    ///   - allowCleartext: Allow plain `http://` to another host (``checkTransport(allowCleartext:)``).
    /// - Throws: ``RemoteConfigurationError``; `LocalStoreError` when the store cannot be read or
    ///   its saved session is unsafe; `AuthSessionFile.Failure` when that file is not a session;
    ///   `RemoteStoreError` when an embedded remote's file is not one.
    public func open(
        for store: DeviceStore, apiKey: String?, accessToken: String? = nil, allowCleartext: Bool = false
    ) async throws -> any CompleteRemote {
        let identity = try await store.requireIdentity()
        guard let user = identity.userID else {
            throw RemoteConfigurationError(.notSignedIn, "this store is not logged in; run `sync-cli login` first")
        }
        // Every request proves which device makes it (docs/trust.md, "Device credentials").
        let credential = try await store.deviceCredential()
        switch location {
        case .embedded(let path):
            let signedIn = try await store.setting(.embeddedSignedInAt).map {
                Date(timeIntervalSince1970: TimeInterval($0))
            }
            // Opening migrates the file, which may wait for another process: off the pool.
            return try await Blocking.run {
                try Self.embedded(path: path, userID: user, signedInAt: signedIn, credential: credential)
            }
        case .supabase(let url):
            try checkTransport(allowCleartext: allowCleartext)
            guard let apiKey, !apiKey.isEmpty else {
                throw RemoteConfigurationError(
                    .apiKeyMissing, "set SUPABASE_ANON_KEY to the project's anon (publishable) key")
            }
            let provider: AccessTokenProvider
            if let accessToken, !accessToken.isEmpty {
                provider = { _ in accessToken }
            } else {
                guard let session = try store.authSessionFile.load() else {
                    throw RemoteConfigurationError(
                        .notSignedIn,
                        "no saved session for \(url.absoluteString); run `sync-cli login --remote \(url.absoluteString)`"
                    )
                }
                let auth = SupabaseAuth(projectURL: url, apiKey: apiKey)
                provider = AccessTokens(file: store.authSessionFile, session: session, auth: auth).provider
            }
            var configuration = PostgRESTConfiguration(
                projectURL: url, apiKey: apiKey, userID: user, accessToken: provider)
            configuration.deviceCredential = credential
            // Registered once per store and project (by the first request that needs it): later
            // runs, every agent hook among them, skip the request.
            let project = url.absoluteString
            configuration.deviceCredentialRegistered = try await store.setting(.credentialRegisteredWith) == project
            configuration.onDeviceCredentialRegistered = {
                try? await store.setSetting(.credentialRegisteredWith, project)
            }
            return PostgRESTRemoteStore(configuration: configuration)
        }
    }

    /// The embedded remote at `path`: its directory must exist (a typo must not create a new,
    /// empty remote somewhere), and a file it creates is readable by its owner only. Only a
    /// sign-in creates one (`create`); anything else names a missing file, since a new, empty
    /// remote would then say the identity changed and advise re-pairing against the wrong remote.
    ///
    /// - Throws: ``RemoteConfigurationError`` `.invalidAddress` for an empty path,
    ///   `.embeddedRemoteMissing`; `RemoteStoreError` when the file is not an embedded remote.
    public static func embedded(
        path: String, userID: UUID, signedInAt: Date? = nil, credential: DeviceCredential? = nil, create: Bool = false
    ) throws -> EmbeddedRemoteStore {
        guard !path.isEmpty else {
            throw RemoteConfigurationError(
                .invalidAddress, "embedded: needs a file path, for example embedded:/path/to/remote.sqlite")
        }
        let url = URL(fileURLWithPath: path)
        var isDirectory: ObjCBool = false
        let parent = url.deletingLastPathComponent().path
        guard FileManager.default.fileExists(atPath: parent, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw RemoteConfigurationError(
                .embeddedRemoteMissing,
                "the embedded remote's directory \(parent) does not exist: create it, or check --remote and $SYNC_REMOTE"
            )
        }
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw RemoteConfigurationError(
                .embeddedRemoteMissing,
                "the embedded remote \(path) is a directory; name a file, for example \(path)/remote.sqlite")
        }
        // Made 0600 before SQLite opens it: its journal files take the database file's mode.
        if !FileManager.default.fileExists(atPath: path) {
            guard create else {
                throw RemoteConfigurationError(
                    .embeddedRemoteMissing,
                    "there is no embedded remote at \(path): check --remote and $SYNC_REMOTE (`sync-cli status` "
                        + "shows the one login saved); `sync-cli login --remote embedded:\(path)` creates a new one")
            }
            _ = FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
        }
        return try EmbeddedRemoteStore(path: path, userID: userID, signedInAt: signedInAt, credential: credential)
    }

    /// `localhost`, `127.0.0.0/8` and `::1`.
    static func isLoopback(_ host: String) -> Bool {
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")).lowercased()
        if bare == "localhost" || bare == "::1" { return true }
        let parts = bare.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// An address that is neither: a near miss of `embedded:` is named.
    static func invalidAddressMessage(_ address: String) -> String {
        let scheme = address.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
        if scheme != "embedded", editDistance(scheme.lowercased(), "embedded") <= 2 {
            return "--remote \(address): did you mean embedded:\(address.dropFirst(scheme.count + 1))?"
        }
        return "--remote must be an http(s) Supabase project URL or embedded:PATH"
    }
}

/// Why a remote cannot be selected or opened. Messages are secret-free.
public struct RemoteConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case invalidAddress, cleartextRefused, notSignedIn, apiKeyMissing, embeddedRemoteMissing
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }
        public var description: String { base.rawValue }

        /// The address is neither an http(s) URL nor `embedded:PATH`: a usage error.
        public static let invalidAddress = Code(.invalidAddress)
        /// Plain `http://` to another host, not allowed: a usage error.
        public static let cleartextRefused = Code(.cleartextRefused)
        /// The store has no user, or no saved session for this remote: sign in first.
        public static let notSignedIn = Code(.notSignedIn)
        /// A Supabase remote without its anon key.
        public static let apiKeyMissing = Code(.apiKeyMissing)
        /// The embedded remote's file, or its directory, is not there (or is a directory).
        public static let embeddedRemoteMissing = Code(.embeddedRemoteMissing)
    }

    /// What went wrong.
    public let code: Code
    /// What to do next; secret-free.
    public let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// Whether the address or the options were given wrongly (rather than the store or the
    /// remote not being ready): `sync-cli` exits 64 for these.
    public var isUsageError: Bool { code == .invalidAddress || code == .cleartextRefused }

    /// The message.
    public var description: String { message }
}

extension StoreSetting where Value == String {
    /// The project this store's device credential was registered with.
    public static var credentialRegisteredWith: Self { StoreSetting("device.credential_registered_with") }
}

extension StoreSetting where Value == Int64 {
    /// When this store last signed in to an embedded remote (it has no passwords: the sign-in
    /// is the recent one the trust log's first start and a reset ask for).
    public static var embeddedSignedInAt: Self { StoreSetting("embedded.signed_in_at") }
}
