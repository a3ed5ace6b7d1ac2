import EmbeddedRemote
import Foundation
import LocalStore
import PostLoginSync
import SyncModel
import Testing

/// The README's Swift example, as written there, run against a real store and remote.
@Suite struct ReadmeSnippetTests {
    @Test func theReadmesSwiftExampleSyncs() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("readme-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let storeDirectory = directory.appendingPathComponent("store")
        let remotePath = directory.appendingPathComponent("remote.sqlite").path
        try FileManager.default.createDirectory(at: storeDirectory, withIntermediateDirectories: true)
        let userID = UUID()

        // From README.md, "In Swift":
        let store = try await DeviceStore.opened(directory: storeDirectory)
        try await store.createIdentity(name: "My laptop", deviceType: .linuxDesktop, role: .desktop)
        try await store.setUserID(userID)
        let repository = try await store.addRepository(name: "api", localPath: "/src/api")
        let session = try await store.startSession(repositoryID: repository.id, title: "Fix the login bug")
        let credential = try await store.deviceCredential()
        let remote = try EmbeddedRemoteStore(path: remotePath, userID: userID, credential: credential)
        let report = try await SyncEngine(local: store, remote: remote).sync()

        #expect(report.outcome == .success, "\(report.errors)")
        #expect(try await remote.listIDs(.sessions, deviceID: nil) == [session.id])
        #expect(try await remote.listIDs(.repositories, deviceID: nil) == [repository.id])
        let readme = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("README.md"), encoding: .utf8)
        let block = readme.components(separatedBy: "```swift\n")[1].components(separatedBy: "```")[0]
        let here = try String(contentsOfFile: #filePath, encoding: .utf8)
        for line in block.split(separator: "\n") where !line.hasPrefix("import") && !line.hasPrefix("//") {
            #expect(here.contains(line.trimmingCharacters(in: .whitespaces)), "README line not run here: \(line)")
        }
        #expect(readme.contains("let report = try await SyncEngine(local: store, remote: remote).sync()"))
        #expect(
            readme.contains(
                "try await store.createIdentity(name: \"My laptop\", deviceType: .linuxDesktop, role: .desktop)"))
    }
}
