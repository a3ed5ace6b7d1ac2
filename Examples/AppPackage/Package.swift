// swift-tools-version:6.1
import PackageDescription

// Where session-secret-sync is: the one line to change when this package is copied out of the
// repository (Examples/AppPackage/README.md). Here it is the repository two folders up. A copy
// names the clone's path, absolute or relative to the copy, or the published package:
//     .package(url: "https://github.com/OWNER/session-secret-sync", from: "0.18.4")
// `name:` keeps the products' `package: "session-secret-sync"` below right whatever the clone's
// folder is called (a path dependency is otherwise named after the folder).
let sessionSecretSync: Package.Dependency = .package(name: "session-secret-sync", path: "../..")

// An app's package, as an iOS or macOS app would declare it: session-secret-sync and the
// libraries it links, nothing else. `make app-check` builds it on Linux with libsodium left out of
// the build (SESSION_SYNC_CRYPTO=swift-crypto), as on Apple platforms, and runs it: here, and as a
// copy elsewhere with only the line above changed.
let package = Package(
    name: "AppPackage",
    // The package's own floor: Mutex and the Swift 6.0 standard library (README, "Requirements").
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [sessionSecretSync],
    targets: [
        .executableTarget(
            name: "pull-and-open",
            dependencies: [
                .product(name: "PostLoginSync", package: "session-secret-sync"),
                .product(name: "LocalStore", package: "session-secret-sync"),
                .product(name: "RemoteStore", package: "session-secret-sync"),
                .product(name: "EmbeddedRemote", package: "session-secret-sync"),
                .product(name: "DeviceTrust", package: "session-secret-sync"),
                .product(name: "SecretCrypto", package: "session-secret-sync"),
                .product(name: "SyncModel", package: "session-secret-sync"),
            ]
        )
    ]
)
