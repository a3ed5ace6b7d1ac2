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

func syncAtLogin(store: DeviceStore, remote: any CompleteRemote) async throws -> SyncReport {
    let engine = SyncEngine(local: store, remote: remote)
    let report = try await engine.sync { progress in
        print(progress.message)
    }
    for issue in report.errors {
        print("\(issue.phase.rawValue): \(issue.message)")
    }
    return report
}

func supabaseRemote(
    projectURL: URL, anonKey: String, userID: UUID, accessToken: String, store: DeviceStore
) async throws -> PostgRESTRemoteStore {
    var configuration = PostgRESTConfiguration(
        projectURL: projectURL, apiKey: anonKey, userID: userID, accessToken: { _ in accessToken })
    // Every request proves which device makes it: the credential the store drew for this device.
    configuration.deviceCredential = try await store.deviceCredential()
    return PostgRESTRemoteStore(configuration: configuration)
}

func openDesktopStore(directory: URL, signedIn: AuthSession) async throws -> DeviceStore {
    let store = try await DeviceStore.opened(directory: directory)
    if try await store.identity() == nil {
        try await store.createIdentity(name: "My Mac", deviceType: .macDesktop, role: .desktop)
    }
    try await store.setUserID(signedIn.userID)
    return store
}

func startAgentSession(
    store: DeviceStore, remote: any CompleteRemote, checkout: URL, task: String
) async throws -> SessionRecord {
    let repository = try await store.addRepository(
        name: checkout.lastPathComponent, localPath: checkout.path, defaultBranch: "main")
    let session = try await store.startSession(repositoryID: repository.id, title: task)
    let report = try await SyncEngine(local: store, remote: remote).push()
    if report.outcome != .success {
        print("will retry at the next sync: \(report.errors)")
    }
    return session
}

func finishAgentSession(store: DeviceStore, remote: any CompleteRemote, session: SessionRecord) async throws {
    try await store.endSession(session.id)
    _ = try await SyncEngine(local: store, remote: remote).push()
}

func notificationContent(
    userInfo: [AnyHashable: Any], store: DeviceStore, remote: any CompleteRemote, showDetails: Bool
) async -> (category: String, subtitle: String?, body: String?) {
    guard let payload = try? AlertPayload(userInfo: userInfo) else { return ("APPROVAL_REQUEST_VIEW", nil, nil) }
    let display = await ApprovalCenter.notificationDisplay(
        payload, store: store, showDetails: showDetails, remote: remote)
    switch payload.kind {
    case .approval:
        let body = display.tool.map { tool in "\(tool): \(display.summary ?? "")" }
        return (display.canAnswer ? "APPROVAL_REQUEST" : "APPROVAL_REQUEST_VIEW", display.sessionLabel, body)
    case .question:
        return ("AGENT_QUESTION", display.sessionLabel, display.text)
    case .taskComplete, .taskFailed, .taskPaused:
        return ("SESSION_STATUS", display.sessionLabel, nil)
    }
}

func answerAction(
    actionIdentifier: String, userInfo: [AnyHashable: Any], store: DeviceStore, remote: any CompleteRemote
) async -> Bool {
    guard let payload = try? AlertPayload(userInfo: userInfo),
        actionIdentifier == "APPROVE" || actionIdentifier == "DENY"
    else { return false }
    do {
        let answered = try await ApprovalCenter.answerNotification(
            payload, verdict: actionIdentifier == "APPROVE" ? .approve : .deny, store: store, remote: remote,
            deadline: .seconds(20))
        return answered.accepted
    } catch {
        // Expired, not an approval, past the deadline, or a body that does not open: the app
        // shows the request when it is opened.
        return false
    }
}

func pullAndOpen(store: DeviceStore, remote: any CompleteRemote, sessionID: UUID) async throws -> SessionSecret {
    _ = try await SyncEngine(local: store, remote: remote).sync()
    let opened = try await store.openReceived(sessionID: sessionID)
    return opened.secret
}

func runAgent(store: DeviceStore, remote: any CompleteRemote) async {
    var options = WatchOptions()
    options.interval = .seconds(5)
    for await tick in SyncEngine(local: store, remote: remote).watch(options) {
        if tick.action == .sync || tick.action == .full {
            print(tick.json())
        }
    }
}

func pair(desktop: DeviceTrustManager, phone: DeviceTrustManager) async throws {
    let started = try await desktop.initialize()
    // Show started.recoveryKey to the person (once), then say so: until then it is kept, 0600,
    // and every sync warns that a bound recovery key was never shown.
    _ = started.recoveryKey
    desktop.recoveryKeyShown()
    let invite = try await desktop.invite(deviceType: .iosPhone)
    // The person carries the code: shown (and as a QR code) on the desktop, typed on the phone.
    let typed = try PairingCode(parsing: invite.code.revealText())
    _ = try await phone.join(code: typed)
    _ = try await desktop.approve()
}

func answerFromNotification(payload: Data, store: DeviceStore, remote: any CompleteRemote) async throws {
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

func answerAgentQuestion(questionID: UUID, store: DeviceStore, remote: any CompleteRemote) async throws {
    // The question id comes with the alert (`requestId` of a `question` push) or its deep link.
    let alerts = SessionAlerts(local: store, remote: remote)
    let opened = try await alerts.open(question: questionID)
    guard let questions = opened.content.choices else { return } // a text question: answered in the session
    for question in questions {
        print(question.header, question.question, question.options, question.multiSelect)
    }
    // The person picked the second option of the first question, and so on: one list per question.
    let choices = questions.map { $0.multiSelect ? [0, 1] : [1] }
    let answered = try await alerts.answer(opened, choices: choices)
    print(answered.accepted ? "sent; the desktop verifies it" : "already \(answered.status)")
}

func openSharedStore(appGroupContainer: URL, keys: any DeviceKeyStore) async throws -> DeviceStore {
    // `sharedContainer: true`: iOS kills a suspended app that holds a SQLite lock in an App Group
    // container; with it, the store lets go of its locks while the app is suspended.
    try await DeviceStore.opened(
        directory: appGroupContainer.appendingPathComponent("session-sync"), keyStore: keys, sharedContainer: true)
}

#if canImport(Security)
import Security

/// The device's keys as generic-password items of an access group the app and its
/// notification service extension share; readable after the first unlock.
struct KeychainKeyStore: DeviceKeyStore {
    let service = "com.example.session-sync.keys"
    let accessGroup: String // "TEAMID.com.example.shared"

    struct Failure: Error { let status: OSStatus }

    private func query(_ name: DeviceKeyName) -> [String: Any] {
        [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
            kSecAttrAccount as String: name.fileName, kSecAttrAccessGroup as String: accessGroup,
            kSecUseDataProtectionKeychain as String: true,
        ]
    }

    func key(_ name: DeviceKeyName) throws -> SecureBytes? {
        var query = query(name)
        query[kSecReturnData as String] = true
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess, let data = item as? Data else { throw Failure(status: status) }
        return SecureBytes(copying: data)
    }

    func createKey(_ name: DeviceKeyName, _ bytes: SecureBytes) throws {
        var item = query(name)
        item[kSecValueData as String] = bytes.withUnsafeBytes { Data($0) }
        item[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        let status = SecItemAdd(item as CFDictionary, nil)
        if status == errSecDuplicateItem { throw LocalStoreError(.identityExists, "\(name) exists") }
        guard status == errSecSuccess else { throw Failure(status: status) }
    }

    func moveKey(_ source: DeviceKeyName, to target: DeviceKeyName) throws {
        guard let bytes = try key(source) else { throw Failure(status: errSecItemNotFound) }
        let update = [kSecValueData as String: bytes.withUnsafeBytes { Data($0) }]
        let status = SecItemUpdate(query(target) as CFDictionary, update as CFDictionary)
        if status == errSecItemNotFound {
            try createKey(target, bytes)
        } else if status != errSecSuccess {
            throw Failure(status: status)
        }
        try removeKey(source)
    }

    func removeKey(_ name: DeviceKeyName) throws {
        let status = SecItemDelete(query(name) as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else { throw Failure(status: status) }
    }

    func resetEpochs() throws -> [UInt32] {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
            kSecAttrAccessGroup as String: accessGroup, kSecUseDataProtectionKeychain as String: true,
            kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true,
        ]
        var items: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &items)
        if status == errSecItemNotFound { return [] }
        guard status == errSecSuccess, let found = items as? [[String: Any]] else { throw Failure(status: status) }
        return found.compactMap { item in
            guard let account = item[kSecAttrAccount as String] as? String, account.hasPrefix("identity.reset."),
                account.hasSuffix(".key")
            else { return nil }
            return UInt32(account.dropFirst("identity.reset.".count).dropLast(".key".count))
        }.sorted()
    }

    func location(of name: DeviceKeyName) -> String { "the Keychain item \(service)/\(name.fileName)" }
}
#endif

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

    @Test func theSharedStoreOpensInTheAppAndItsExtension() async throws {
        let container = FileManager.default.temporaryDirectory.appendingPathComponent("group-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: container) }
        let keys = FileKeyStore(directory: container.appendingPathComponent("session-sync"))
        let app = try await openSharedStore(appGroupContainer: container, keys: keys)
        let identity = try await app.createIdentity(name: "phone", deviceType: .iosPhone, role: .mobile)
        let appExtension = try await openSharedStore(appGroupContainer: container, keys: keys)
        #expect(try await appExtension.deviceKey().publicKey == identity.publicKey)
    }

    @Test func theDesktopArticlesCodeRuns() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("docc-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let signedIn = AuthSession(
            accessToken: "token", refreshToken: "refresh", expiresAt: Date().addingTimeInterval(3600), userID: UUID(),
            email: nil)
        let store = try await openDesktopStore(directory: directory.appendingPathComponent("mac"), signedIn: signedIn)
        let again = try await openDesktopStore(directory: directory.appendingPathComponent("mac"), signedIn: signedIn)
        #expect(try await again.requireIdentity().id == store.requireIdentity().id, "created once")
        let remote = try EmbeddedRemoteStore(
            path: directory.appendingPathComponent("remote.sqlite").path, userID: signedIn.userID,
            credential: try await store.deviceCredential())
        let checkout = directory.appendingPathComponent("api")
        let session = try await startAgentSession(store: store, remote: remote, checkout: checkout, task: "Fix login")
        let second = try await startAgentSession(store: store, remote: remote, checkout: checkout, task: "Add tests")
        #expect(try await store.repositories().count == 1, "the same checkout is one repository")
        #expect(try await remote.listIDs(.sessions, deviceID: nil) == [session.id, second.id])
        try await finishAgentSession(store: store, remote: remote, session: session)
        let pulled = try await remote.fetchSessions(after: nil).map(\.record)
        #expect(pulled.first { $0.id == session.id }?.status == .ended)
        #expect(pulled.first { $0.id == second.id }?.status == .active)
    }

    @Test func theLockScreenArticlesCodeRuns() async throws {
        let w = try await ApprovalWorld.make(.embedded)
        let (task, row) = try await w.ask(tool: "Bash", summary: "npm test")
        let alert = try #require(try await w.outbox(row.id).alerts.first { $0.deviceID == w.phone.identity.id })
        let userInfo = try #require(
            try JSONSerialization.jsonObject(with: Data(alert.payload.utf8)) as? [AnyHashable: Any])
        let remote = try w.world.remote()
        let shown = await notificationContent(
            userInfo: userInfo, store: w.phone.store, remote: remote, showDetails: true)
        #expect(shown.category == "APPROVAL_REQUEST" && shown.body == "Bash: npm test")
        #expect(shown.subtitle?.hasPrefix("repo-") == true)
        let quiet = await notificationContent(
            userInfo: userInfo, store: w.phone.store, remote: remote, showDetails: false)
        #expect(quiet.category == "APPROVAL_REQUEST" && quiet.body == nil)
        #expect(
            await answerAction(actionIdentifier: "OPEN", userInfo: userInfo, store: w.phone.store, remote: remote)
                == false)
        #expect(await answerAction(actionIdentifier: "DENY", userInfo: userInfo, store: w.phone.store, remote: remote))
        #expect(try await task.value == .denied(by: w.phone.identity.id))
    }

    @Test func theArticlesCodeRuns() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("docc-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let user = UUID()
        let remotePath = directory.appendingPathComponent("remote.sqlite").path
        func store(_ name: String, role: SyncRole, type: DeviceType) async throws -> DeviceStore {
            let store = try await DeviceStore.opened(directory: directory.appendingPathComponent(name))
            try await store.createIdentity(name: name, deviceType: type, role: role)
            try await store.setUserID(user)
            return store
        }
        let desktop = try await store("desktop", role: .desktop, type: .macDesktop)
        let phone = try await store("phone", role: .mobile, type: .iosPhone)
        // Signed in just now: starting the trust log asks for a recent sign-in.
        let desktopRemote = try EmbeddedRemoteStore(
            path: remotePath, userID: user, signedInAt: Date(), credential: try await desktop.deviceCredential())
        let phoneRemote = try EmbeddedRemoteStore(
            path: remotePath, userID: user, credential: try await phone.deviceCredential())
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

        // The agent runs until cancelled: once its first tick has reached the remote.
        let before = desktopRemote.metrics().requests
        let agent = Task { await runAgent(store: desktop, remote: desktopRemote) }
        for _ in 0..<6_000 where desktopRemote.metrics().requests == before {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(desktopRemote.metrics().requests > before, "the agent's watch never ticked")
        agent.cancel()
        await agent.value

        let remote = try await supabaseRemote(
            projectURL: URL(string: "https://project.supabase.co")!, anonKey: "anon", userID: user,
            accessToken: "token",
            store: desktop)
        #expect(remote.userID == user)
    }
}
