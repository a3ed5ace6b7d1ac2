// swift-tools-version:6.1
import PackageDescription

// An app's package, as an iOS or macOS app would declare it: this repository by path and the
// libraries it links, nothing else. `make app-check` builds it on Linux with libsodium left out of
// the build (SESSION_SYNC_CRYPTO=swift-crypto), as on Apple platforms, and runs it. The path is a
// link `make app-check` makes, so the dependency's identity is `session-secret-sync` whatever the
// checkout's folder is called (SwiftPM names a path dependency after its last path component).
let package = Package(
    name: "AppPackage",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [.package(path: "../session-secret-sync")],
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
