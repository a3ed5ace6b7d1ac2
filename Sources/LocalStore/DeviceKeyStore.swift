import Foundation
import SecretCrypto

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The private keys a device keeps: each is 32 secret bytes under one of these names.
public enum DeviceKeyName: Hashable, Sendable, CustomStringConvertible {
    /// The device's X25519 key, which opens the envelopes sealed to it (`device.key`).
    case encryption
    /// The device's Ed25519 signing key, its seed (`signing.key`).
    case signing
    /// The device's credential, which proves to the remote which device calls
    /// (`credential.key`; `SyncModel`'s `DeviceCredential`).
    case credential
    /// The user's identity key, its seed, on a trust root (`identity.key`).
    case identity
    /// A succession's new identity seed, or one recovery opened, until the trust log accepts it
    /// (`identity.next.key`).
    case nextIdentity
    /// The identity seed of a reset this device asked for, until it takes effect
    /// (`identity.reset.<epoch>.key`).
    case resetIdentity(epoch: UInt32)
    /// A new recovery key, from before the append that binds it until the person has been
    /// shown it (`recovery.unshown.key`): a lost answer or a killed process loses no key that
    /// may be in force.
    case unshownRecoveryKey

    /// The file name ``FileKeyStore`` keeps it under.
    public var fileName: String {
        switch self {
        case .encryption: "device.key"
        case .signing: "signing.key"
        case .credential: "credential.key"
        case .identity: "identity.key"
        case .nextIdentity: "identity.next.key"
        case .resetIdentity(let epoch): "identity.reset.\(epoch).key"
        case .unshownRecoveryKey: "recovery.unshown.key"
        }
    }

    public var description: String { fileName }
}

/// Where a device's private keys live. The library writes key bytes nowhere but through the key
/// store the ``DeviceStore`` was given.
///
/// ``FileKeyStore`` (0600 files in the store directory) is the default on Linux and macOS. An app
/// supplies its own, for example one over the Keychain with an access group, so that its
/// notification service extension reads the same keys (the article "Pulling and opening secrets
/// in an iOS app" shows one).
///
/// Every requirement is synchronous and may be called from any thread; the two processes of an
/// app and its extension may call them at once, so ``createKey(_:_:)`` must be atomic (exactly
/// one of two concurrent creations wins).
public protocol DeviceKeyStore: Sendable {
    /// The key under `name`, or `nil` when there is none.
    ///
    /// - Throws: When a key is there but cannot be used (for files: too open, a symbolic link,
    ///   another user's, not 32 bytes).
    func key(_ name: DeviceKeyName) throws -> SecureBytes?

    /// Stores `bytes` under `name`, atomically: a reader sees no key or the whole key.
    ///
    /// - Throws: ``LocalStoreError`` `.identityExists` when a key is already there (it is never
    ///   replaced); others for a store that cannot be written.
    func createKey(_ name: DeviceKeyName, _ bytes: SecureBytes) throws

    /// Puts the key under `source` in place of the one under `target` and removes `source`
    /// (an accepted new identity key replacing the one in force).
    ///
    /// - Throws: When the store cannot be written; `source` is then still there.
    func moveKey(_ source: DeviceKeyName, to target: DeviceKeyName) throws

    /// Removes the key under `name`; no key is not an error.
    func removeKey(_ name: DeviceKeyName) throws

    /// The epochs of every ``DeviceKeyName/resetIdentity(epoch:)`` key held, ascending.
    func resetEpochs() throws -> [UInt32]

    /// Where the key under `name` is, for messages: a path, a Keychain service and account.
    func location(of name: DeviceKeyName) -> String
}

/// Private keys as files in a directory: exactly 32 raw bytes each, mode 0600, owned by the
/// user, written atomically (``DeviceKeyFile``) and read only while nobody else can read them.
public struct FileKeyStore: DeviceKeyStore {
    /// The directory holding the key files (the store directory).
    public let directory: URL

    /// A store over `directory`.
    public init(directory: URL) { self.directory = directory }

    /// The file of `name`.
    public func path(of name: DeviceKeyName) -> String { directory.appendingPathComponent(name.fileName).path }

    public func location(of name: DeviceKeyName) -> String { path(of: name) }

    public func key(_ name: DeviceKeyName) throws -> SecureBytes? {
        do {
            return try DeviceKeyFile.loadBytes(from: path(of: name))
        } catch let error as LocalStoreError where error.code == .keyFileMissing {
            return nil
        }
    }

    public func createKey(_ name: DeviceKeyName, _ bytes: SecureBytes) throws {
        try DeviceKeyFile.create(bytes: bytes, at: path(of: name))
    }

    public func moveKey(_ source: DeviceKeyName, to target: DeviceKeyName) throws {
        guard rename(path(of: source), path(of: target)) == 0 else {
            throw LocalStoreError(.io, "could not rename \(source) over \(target) (errno \(errno))")
        }
        AtomicFile.syncDirectory(directory.path)
    }

    public func removeKey(_ name: DeviceKeyName) throws {
        guard unlink(path(of: name)) == 0 || errno == ENOENT else {
            throw LocalStoreError.fromErrno(errno, "cannot remove \(path(of: name))")
        }
    }

    public func resetEpochs() throws -> [UInt32] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.compactMap { name in
            guard name.hasPrefix("identity.reset."), name.hasSuffix(".key") else { return nil }
            return UInt32(name.dropFirst("identity.reset.".count).dropLast(".key".count))
        }.sorted()
    }
}
