import EnvelopeDigest
import Foundation
import GRDB
import SecretCrypto
import SyncModel
import TestStack
import Testing

@testable import LocalStore

@Suite("DeviceStore: refusing bad files")
struct BadFileTests {
    @Test(
        "a key file readable by group or others is refused, as ssh does",
        arguments: [0o640, 0o604, 0o644, 0o660, 0o666, 0o700])
    func tooOpen(mode: Int) async throws {
        let fixture = try await Fixture()
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: fixture.store.keyPath)
        let allowed = mode & 0o077 == 0
        if allowed {
            _ = try await fixture.store.deviceKey()
        } else {
            await #expect {
                try await fixture.store.deviceKey()
            } throws: { error in
                let error = error as? LocalStoreError
                return error?.code == .keyFileTooOpen && error!.description.contains("too open")
            }
        }
    }

    @Test("a malformed key file is refused", arguments: [0, 31, 33, 64])
    func malformedKey(size: Int) async throws {
        let fixture = try await Fixture()
        try Data(repeating: 7, count: size).write(to: URL(fileURLWithPath: fixture.store.keyPath))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: fixture.store.keyPath)
        await #expect {
            try await fixture.store.deviceKey()
        } throws: { ($0 as? LocalStoreError)?.code == .keyFileMalformed }
    }

    @Test("a key that is not this identity's, a missing key and a symlinked key are refused")
    func wrongKey() async throws {
        let fixture = try await Fixture()
        let path = fixture.store.keyPath
        try FileManager.default.removeItem(atPath: path)
        await #expect { try await fixture.store.deviceKey() } throws: {
            ($0 as? LocalStoreError)?.code == .keyFileMissing
        }
        try DeviceKeyFile.create(X25519PrivateKey(), at: path)
        await #expect { try await fixture.store.deviceKey() } throws: { ($0 as? LocalStoreError)?.code == .keyMismatch }
        let elsewhere = fixture.temporary.url.appendingPathComponent("other.key").path
        try FileManager.default.moveItem(atPath: path, toPath: elsewhere)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: elsewhere)
        await #expect { try await fixture.store.deviceKey() } throws: {
            ($0 as? LocalStoreError)?.code == .keyFileMalformed
        }
    }

    @Test("a file that is not a SQLite database is refused and left byte-for-byte intact")
    func notADatabase() throws {
        let temporary = TemporaryDirectory()
        try FileManager.default.createDirectory(at: temporary.store, withIntermediateDirectories: true)
        let path = temporary.store.appendingPathComponent("store.sqlite")
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try garbage.write(to: path)
        #expect { try DeviceStore(directory: temporary.store) } throws: {
            ($0 as? LocalStoreError)?.code == .notADatabase
        }
        #expect(try Data(contentsOf: path) == garbage)
    }

    @Test("a database with a corrupted page fails clearly")
    func corruptedPage() async throws {
        let fixture = try await Fixture()
        let repositories = (0..<300).map { _ in fixture.repository() }
        try await fixture.store.upsertRepositories(repositories)
        let path = fixture.store.databasePath
        // Checkpoint the WAL into the main file, then overwrite pages after the header.
        try await DatabaseQueue(path: path).writeWithoutTransaction {
            try $0.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try handle.seek(toOffset: 4096)
        handle.write(Data(repeating: 0xA5, count: 4096 * 8))
        try handle.close()
        await #expect(throws: LocalStoreError.self) {
            let store = try await DeviceStore.opened(directory: fixture.temporary.store)
            _ = try await store.repositories()
        }
    }

    @Test("a store written by a newer schema is refused and not modified")
    func newerSchema() async throws {
        let fixture = try await Fixture()
        let path = fixture.store.databasePath
        try await DatabaseQueue(path: path).write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99: from the future')")
        }
        let before = try await DatabaseQueue(path: path).read {
            try String.fetchAll($0, sql: "SELECT identifier FROM grdb_migrations")
        }
        await #expect {
            try await DeviceStore.opened(directory: fixture.temporary.store)
        } throws: { error in
            let error = error as? LocalStoreError
            return error?.code == .schemaTooNew && error!.description.contains("newer version")
        }
        let after = try await DatabaseQueue(path: path).read {
            try String.fetchAll($0, sql: "SELECT identifier FROM grdb_migrations")
        }
        #expect(before == after)
    }

    @Test("the default directory follows XDG_DATA_HOME, else ~/.local/share")
    func defaultDirectory() {
        #expect(
            DeviceStore.defaultDirectory(environment: ["XDG_DATA_HOME": "/x/data", "HOME": "/h"]).path
                == "/x/data/session-sync")
        #expect(DeviceStore.defaultDirectory(environment: ["HOME": "/h"]).path == "/h/.local/share/session-sync")
        #expect(
            DeviceStore.defaultDirectory(environment: ["XDG_DATA_HOME": "relative", "HOME": "/h"]).path
                == "/h/.local/share/session-sync")
    }
}
