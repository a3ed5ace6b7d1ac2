import DeviceTrust
import EmbeddedRemote
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel

// The code of the article "Pull and open secrets in an iOS app", as written there.

func pullAndOpen(store: DeviceStore, remote: any SyncRemote, sessionID: UUID) async throws -> SessionSecret {
    _ = try await SyncEngine(local: store, remote: remote).sync()
    let opened = try await store.openReceived(sessionID: sessionID)
    return opened.secret
}

func openSharedStore(appGroupContainer: URL, keys: any DeviceKeyStore) async throws -> DeviceStore {
    try await DeviceStore.opened(directory: appGroupContainer.appendingPathComponent("session-sync"), keyStore: keys)
}

// Around it: a desktop and the phone, paired on an embedded remote; the desktop starts a session
// and pushes; the phone (the app and its extension on one App Group directory) pulls and opens.

let container = FileManager.default.temporaryDirectory.appendingPathComponent("app-check-\(UUID().uuidString)")
defer { try? FileManager.default.removeItem(at: container) }
let user = UUID()
let remotePath = container.appendingPathComponent("remote.sqlite").path
try FileManager.default.createDirectory(at: container, withIntermediateDirectories: true)

let desktop = try await DeviceStore.opened(directory: container.appendingPathComponent("desktop"))
try await desktop.createIdentity(name: "laptop", deviceType: .macDesktop, role: .desktop)
try await desktop.setUserID(user)
let keys = FileKeyStore(directory: container.appendingPathComponent("group/session-sync"))
let phone = try await openSharedStore(appGroupContainer: container.appendingPathComponent("group"), keys: keys)
try await phone.createIdentity(name: "phone", deviceType: .iosPhone, role: .mobile)
try await phone.setUserID(user)

let desktopRemote = try EmbeddedRemoteStore(path: remotePath, userID: user, signedInAt: Date())
let phoneRemote = try EmbeddedRemoteStore(path: remotePath, userID: user)
_ = try await SyncEngine(local: phone, remote: phoneRemote).sync()
let desktopTrust = DeviceTrustManager(local: desktop, remote: desktopRemote)
_ = try await desktopTrust.initialize()
let invite = try await desktopTrust.invite(deviceType: .iosPhone)
_ = try await DeviceTrustManager(local: phone, remote: phoneRemote).join(
    code: try PairingCode(parsing: invite.code.revealText()))
_ = try await desktopTrust.approve()

let desktopID = try await desktop.requireIdentity().id
let repository = RepositoryRecord(userID: user, deviceID: desktopID, name: "app", localPath: "/src/app")
try await desktop.upsertRepositories([repository])
let session = try await desktop.createSession(
    SessionRecord(userID: user, deviceID: desktopID, repositoryID: repository.id, title: "check"))
_ = try await SyncEngine(local: desktop, remote: desktopRemote).sync()

let secret = try await pullAndOpen(store: phone, remote: phoneRemote, sessionID: session.id)
guard secret == (try await desktop.openOwnSecret(sessionID: session.id)) else {
    print("app-check: the phone opened another secret than the desktop sealed")
    exit(1)
}
let backends = CryptoBackend.available.map(\.rawValue).joined(separator: ", ")
print(
    "app-check: pulled and opened session \(session.id.uuidString.lowercased()) on \(CryptoBackend.current) (compiled: \(backends))"
)
if CryptoBackend.available.contains(.libsodium) {
    print("app-check: libsodium is compiled in; build with SESSION_SYNC_CRYPTO=swift-crypto")
    exit(1)
}
