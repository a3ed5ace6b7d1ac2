// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "SessionSecretSync",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "SecretCrypto", targets: ["SecretCrypto"]),
        .library(name: "LocalStore", targets: ["LocalStore"]),
        .library(name: "RemoteStore", targets: ["RemoteStore"]),
        .library(name: "PostLoginSync", targets: ["PostLoginSync"]),
        .executable(name: "sync-cli", targets: ["sync-cli"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // Test-only: an independent, CryptoKit-compatible implementation to cross-check envelopes.
        .package(url: "https://github.com/apple/swift-crypto", exact: "3.12.3"),
    ],
    targets: [
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"]), .brew(["libsodium"])]
        ),
        .target(name: "SecretCrypto", dependencies: ["CSodium"]),
        .target(name: "ConformanceVectors", dependencies: ["SecretCrypto"]),
        .target(name: "LocalStore", dependencies: ["SecretCrypto"]),
        .target(name: "RemoteStore", dependencies: ["SecretCrypto"]),
        .target(name: "PostLoginSync", dependencies: ["SecretCrypto", "LocalStore", "RemoteStore"]),
        .executableTarget(
            name: "sync-cli",
            dependencies: [
                "PostLoginSync",
                "ConformanceVectors",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The benchmark's floor: the envelope's libsodium calls in plain C, no Swift around them.
        .target(name: "CSodiumFloor", dependencies: ["CSodium"]),
        .executableTarget(name: "sync-bench", dependencies: ["SecretCrypto", "CSodiumFloor"]),
        .testTarget(
            name: "SecretCryptoTests",
            dependencies: [
                "SecretCrypto",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "ConformanceVectorsTests",
            dependencies: [
                "ConformanceVectors",
                "SecretCrypto",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            resources: []
        ),
    ],
    swiftLanguageModes: [.v6]
)
