import DeviceTrust
import EmbeddedRemote
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel
import Testing

// The code of the DocC articles (Sources/PostLoginSync/PostLoginSync.docc), as written there:
// a test below checks that every ```swift block of every article appears in this file verbatim,
// and the others run it against real stores and an embedded remote.

func syncAtLogin(store: DeviceStore, remote: any SyncRemote) async throws -> SyncReport {
    let engine = SyncEngine(local: store, remote: remote)
    let report = try await engine.sync { progress in
        print(progress.message)
    }
    for issue in report.errors {
        print("\(issue.phase.rawValue): \(issue.message)")
    }
    return report
}

func supabaseRemote(projectURL: URL, anonKey: String, userID: UUID, accessToken: String) -> PostgRESTRemoteStore {
    PostgRESTRemoteStore(
        configuration: PostgRESTConfiguration(
            projectURL: projectURL, apiKey: anonKey, userID: userID, accessToken: { _ in accessToken }))
}

func pullAndOpen(store: DeviceStore, remote: any SyncRemote, sessionID: UUID) async throws -> SessionSecret {
    _ = try await SyncEngine(local: store, remote: remote).sync()
    let opened = try await store.openReceived(sessionID: sessionID)
    return opened.secret
}

func runAgent(store: DeviceStore, remote: any SyncRemote) async {
    var options = WatchOptions()
    options.interval = .seconds(5)
    for await tick in SyncEngine(local: store, remote: remote).watch(options) {
        if tick.action == .sync || tick.action == .full {
            print(tick.json())
        }
    }
}

func pair(desktop: DeviceTrustManager, phone: DeviceTrustManager) async throws {
    _ = try await desktop.initialize()
    let invite = try await desktop.invite(deviceType: .iosPhone)
    // The person carries the code: shown (and as a QR code) on the desktop, typed on the phone.
    let typed = try PairingCode(parsing: invite.code.revealText())
    _ = try await phone.join(code: typed)
    _ = try await desktop.approve()
}

func answerFromNotification(payload: Data, store: DeviceStore, remote: any SyncRemote) async throws {
    // In the notification service extension: what the question says, for the notification.
    let content = try await ApprovalCenter.openNotification(payload, store: store)
    print(content.tool, content.summary)
    // In the app, when the person taps Approve:
    let approvals = ApprovalCenter(local: store, remote: remote)
    for request in try await approvals.pending() {
        let opened = try await approvals.open(request)
        _ = try await approvals.answer(opened, verdict: .approve)
    }
}

@Suite struct DocCArticleTests {
    static let catalogue = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/PostLoginSync/PostLoginSync.docc")

    @Test func everyArticleSnippetIsInThisFile() throws {
        let here = try String(contentsOfFile: #filePath, encoding: .utf8)
        let articles = try FileManager.default.contentsOfDirectory(atPath: Self.catalogue.path).filter {
            $0.hasSuffix(".md")
        }
        var blocks = 0
        for article in articles {
            let text = try String(contentsOf: Self.catalogue.appendingPathComponent(article), encoding: .utf8)
            for block in text.components(separatedBy: "```swift\n").dropFirst() {
                let code = block.components(separatedBy: "```").first ?? ""
                blocks += 1
                #expect(here.contains(code), "\(article): a snippet that is not compiled here")
            }
        }
        #expect(blocks >= 5)
    }

    @Test func theArticlesCodeRuns() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("docc-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let user = UUID()
        let remotePath = directory.appendingPathComponent("remote.sqlite").path
        func store(_ name: String, role: SyncRole, type: DeviceType) async throws -> DeviceStore {
            let store = try DeviceStore(directory: directory.appendingPathComponent(name))
            try await store.createIdentity(name: name, deviceType: type, role: role)
            try await store.setUserID(user)
            return store
        }
        let desktop = try await store("desktop", role: .desktop, type: .macDesktop)
        let phone = try await store("phone", role: .mobile, type: .iosPhone)
        // Signed in just now: starting the trust log asks for a recent sign-in.
        let desktopRemote = try EmbeddedRemoteStore(path: remotePath, userID: user, signedInAt: Date())
        let phoneRemote = try EmbeddedRemoteStore(path: remotePath, userID: user)
        _ = try await SyncEngine(local: phone, remote: phoneRemote).sync()

        try await pair(
            desktop: DeviceTrustManager(local: desktop, remote: desktopRemote),
            phone: DeviceTrustManager(local: phone, remote: phoneRemote))
        #expect(try await DeviceTrustManager(local: phone, remote: phoneRemote).status().devices.count == 2)

        let desktopID = try await desktop.requireIdentity().id
        let repository = RepositoryRecord(userID: user, deviceID: desktopID, name: "r", localPath: "/r")
        try await desktop.upsertRepositories([repository])
        let session = try await desktop.createSession(
            SessionRecord(userID: user, deviceID: desktopID, repositoryID: repository.id, title: "t"))
        #expect(try await syncAtLogin(store: desktop, remote: desktopRemote).outcome == .success)
        let secret = try await pullAndOpen(store: phone, remote: phoneRemote, sessionID: session.id)
        #expect(secret == (try await desktop.openOwnSecret(sessionID: session.id)))

        let agent = Task { await runAgent(store: desktop, remote: desktopRemote) }
        try await Task.sleep(for: .milliseconds(300))
        agent.cancel()
        await agent.value

        let remote = supabaseRemote(
            projectURL: URL(string: "https://project.supabase.co")!, anonKey: "anon", userID: user, accessToken: "token"
        )
        #expect(remote.userID == user)
    }
}
