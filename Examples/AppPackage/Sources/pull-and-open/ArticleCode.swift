import Foundation
import LocalStore
import PostLoginSync
import RemoteStore
import SecretCrypto

// The code of the DocC articles (Sources/PostLoginSync/PostLoginSync.docc) that an app's package
// compiles, as written there. Each block between `// snippet NAME: ARTICLE...` and
// `// snippet end` is the ```swift block after `<!-- snippet: NAME -->` in every article it names,
// character for character: scripts/check-snippets.sh (run by `make app-check`) fails otherwise.

// snippet pull-and-open: PullAndOpenSecrets.md
func pullAndOpen(store: DeviceStore, remote: any CompleteRemote, sessionID: UUID) async throws -> SessionSecret {
    _ = try await SyncEngine(local: store, remote: remote).sync()
    let opened = try await store.openReceived(sessionID: sessionID)
    return opened.secret
}
// snippet end

// snippet open-shared-store: PullAndOpenSecrets.md AnsweringFromTheLockScreen.md
func openSharedStore(appGroupContainer: URL, keys: any DeviceKeyStore) async throws -> DeviceStore {
    // `sharedContainer: true`: iOS kills a suspended app that holds a SQLite lock in an App Group
    // container; with it, the store lets go of its locks while the app is suspended.
    try await DeviceStore.opened(
        directory: appGroupContainer.appendingPathComponent("session-sync"), keyStore: keys, sharedContainer: true)
}
// snippet end
