import Foundation
import LocalStore
import SecretCrypto
import SyncModel
import Synchronization
import Testing

/// A key store an app could write (here in memory; an app's is the Keychain).
final class MemoryKeyStore: DeviceKeyStore {
    let keys = Mutex<[DeviceKeyName: SecureBytes]>([:])

    func key(_ name: DeviceKeyName) throws -> SecureBytes? { keys.withLock { $0[name] } }

    func createKey(_ name: DeviceKeyName, _ bytes: SecureBytes) throws {
        try keys.withLock { keys in
            guard keys[name] == nil else { throw LocalStoreError(.identityExists, "\(name) exists") }
            keys[name] = bytes
        }
    }

    func moveKey(_ source: DeviceKeyName, to target: DeviceKeyName) throws {
        try keys.withLock { keys in
            guard let moved = keys.removeValue(forKey: source) else {
                throw LocalStoreError(.io, "no \(source) to move")
            }
            keys[target] = moved
        }
    }

    func removeKey(_ name: DeviceKeyName) throws { _ = keys.withLock { $0.removeValue(forKey: name) } }

    func resetEpochs() throws -> [UInt32] {
        keys.withLock { keys in
            keys.keys.compactMap { if case .resetIdentity(let epoch) = $0 { epoch } else { nil } }.sorted()
        }
    }

    func location(of name: DeviceKeyName) -> String { "memory:\(name)" }
}

@Suite("Keys through the store an app gives")
struct KeyStoreTests {
    static func keyFiles(in directory: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasSuffix(".key") }
    }

    @Test("every key goes through the given key store, and no key file is written")
    func customStore() async throws {
        let temporary = TemporaryDirectory()
        let keys = MemoryKeyStore()
        let store = try await DeviceStore.opened(directory: temporary.store, keyStore: keys)
        let identity = try await store.createIdentity(name: "phone", deviceType: .iosPhone, role: .mobile)
        #expect(try await store.deviceKey().publicKey == identity.publicKey)
        let signing = try await store.signingKey()
        #expect(try await store.signingKey().publicKey == signing.publicKey)
        let root = try await store.createIdentityKey()
        let next = Ed25519PrivateKey()
        try store.writeIdentitySeed(next, to: .nextIdentity)
        try store.writeIdentitySeed(Ed25519PrivateKey(), to: .resetIdentity(epoch: 3))
        #expect(store.resetIdentitySeedEpochs() == [3])
        #expect(try await store.identityKey()?.publicKey == root.publicKey)
        try store.promoteIdentitySeed(from: .nextIdentity)
        #expect(try await store.identityKey()?.publicKey == next.publicKey)
        #expect(try store.identitySeed(at: .nextIdentity) == nil)
        store.removeIdentitySeed(at: .resetIdentity(epoch: 3))
        #expect(Set(keys.keys.withLock { Array($0.keys) }) == [.encryption, .signing, .identity])
        #expect(Self.keyFiles(in: temporary.store).isEmpty)

        // Another process (an app's extension) opening the same directory with the same key store
        // reads the same keys.
        let again = try await DeviceStore.opened(directory: temporary.store, keyStore: keys)
        #expect(try await again.deviceKey().publicKey == identity.publicKey)
    }

    @Test("the default is 0600 files in the store directory, named after the key")
    func defaultFiles() async throws {
        let temporary = TemporaryDirectory()
        let store = try await DeviceStore.opened(directory: temporary.store)
        _ = try await store.createIdentity(name: "laptop", deviceType: .linuxDesktop, role: .desktop)
        _ = try await store.signingKey()
        #expect(store.keys is FileKeyStore)
        #expect(Set(Self.keyFiles(in: temporary.store)) == ["device.key", "signing.key"])
        for name in ["device.key", "signing.key"] {
            let path = temporary.store.appendingPathComponent(name).path
            #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
        }
    }
}
