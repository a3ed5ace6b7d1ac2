import DeviceTrust
import EmbeddedRemote
import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto
import SyncModel

// Around the articles' code (ArticleCode.swift): a desktop and the phone, paired on an embedded
// remote; the desktop starts a session and pushes; the phone's app pulls and opens, and its
// extension, a second store on the same App Group directory, opens the same secret.

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

// Each remote acts for the device whose credential it carries (docs/trust.md, "Device credentials").
let desktopRemote = try EmbeddedRemoteStore(
    path: remotePath, userID: user, signedInAt: Date(), credential: try await desktop.deviceCredential())
let phoneRemote = try EmbeddedRemoteStore(
    path: remotePath, userID: user, credential: try await phone.deviceCredential())
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
let appExtension = try await openSharedStore(appGroupContainer: container.appendingPathComponent("group"), keys: keys)
guard secret == (try await appExtension.openReceived(sessionID: session.id).secret) else {
    print("app-check: the extension's store opened another secret than the app's")
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
