// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "SessionSecretSync",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "SecretCrypto", targets: ["SecretCrypto"]),
        .library(name: "LocalStore", targets: ["LocalStore"]),
        .library(name: "RemoteStore", targets: ["RemoteStore"]),
        .library(name: "DeviceTrust", targets: ["DeviceTrust"]),
        .library(name: "PostLoginSync", targets: ["PostLoginSync"]),
        .executable(name: "sync-cli", targets: ["sync-cli"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // The PostgREST-compatible test server only (never linked into sync-cli).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        // Test-only: an independent, CryptoKit-compatible implementation to cross-check envelopes.
        .package(url: "https://github.com/apple/swift-crypto", exact: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"]), .brew(["libsodium"])]
        ),
        .systemLibrary(
            name: "CQREncode",
            pkgConfig: "libqrencode",
            providers: [.apt(["libqrencode-dev"]), .brew(["qrencode"])]
        ),
        // The HTTP transport of the PostgREST client (CurlTransport).
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"]), .brew(["curl"])]
        ),
        .target(name: "SecretCrypto", dependencies: ["CSodium"]),
        // Device trust's signed statements, pairing codes and their QR codes (trust.md).
        .target(name: "DeviceTrust", dependencies: ["SecretCrypto", "CQREncode"]),
        .target(name: "ConformanceVectors", dependencies: ["SecretCrypto", "DeviceTrust"]),
        // Domain records shared by both stores (no I/O).
        .target(name: "SyncModel"),
        .target(
            name: "LocalStore",
            dependencies: ["SecretCrypto", "SyncModel", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .target(
            name: "RemoteStore",
            dependencies: ["SyncModel", "CCurl", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "HTTPTypes", package: "swift-http-types")]
        ),
        .target(
            name: "PostLoginSync",
            dependencies: ["SecretCrypto", "SyncModel", "LocalStore", "RemoteStore", "DeviceTrust", .product(name: "Logging", package: "swift-log")]
        ),
        .executableTarget(
            name: "sync-cli",
            dependencies: [
                "PostLoginSync", "LocalStore", "RemoteStore", "SecretCrypto", "SyncModel", "ConformanceVectors", "DeviceTrust",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The test server's request grammar and token check, without I/O: the server and the
        // fuzz targets share it.
        .target(name: "PostgRESTCore", dependencies: ["SecretCrypto"]),
        // A PostgREST-compatible server over a real PostgreSQL, for tests and benchmarks.
        .executableTarget(
            name: "postgrest-server",
            dependencies: [
                "SecretCrypto", "PostgRESTCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The benchmark's floor: the envelope's libsodium calls in plain C, no Swift around them.
        .target(name: "CSodiumFloor", dependencies: ["CSodium"]),
        // The PostgreSQL test stack's environment and tokens: for the tests and for sync-bench.
        .target(name: "TestStack", dependencies: ["SecretCrypto", "SyncModel"]),
        .executableTarget(
            name: "sync-bench",
            dependencies: [
                "SecretCrypto", "CSodiumFloor", "LocalStore", "RemoteStore", "PostLoginSync", "SyncModel", "TestStack",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // One fuzz target per parser that takes outside bytes, and their seed corpora
        // (`make fuzz`); the corpus replay runs in `make test`.
        .target(
            name: "FuzzTargets",
            dependencies: ["SecretCrypto", "DeviceTrust", "LocalStore", "RemoteStore", "ConformanceVectors", "PostgRESTCore"]
        ),
        .executableTarget(name: "sync-fuzz", dependencies: ["FuzzTargets"]),
        // A child process for LocalStore's tests: holds the lease, or is killed mid-write.
        .executableTarget(
            name: "localstore-test-helper",
            dependencies: ["LocalStore", "SyncModel"],
            path: "Tests/Helpers/localstore-test-helper"
        ),
        // Test-only helpers: a hostile loopback HTTP server; re-exports TestStack;
        // and a fault-injecting proxy on SwiftNIO.
        .target(
            name: "SyncTestSupport",
            dependencies: ["TestStack", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")],
            path: "Tests/SyncTestSupport"
        ),
        .testTarget(name: "FuzzTargetsTests", dependencies: ["FuzzTargets", "sync-fuzz"]),
        .testTarget(
            name: "RemoteStoreTests",
            dependencies: ["RemoteStore", "SyncModel", "SecretCrypto", "SyncTestSupport", .product(name: "HTTPTypes", package: "swift-http-types")]
        ),
        .testTarget(
            name: "SyncCLITests",
            dependencies: ["sync-cli", "LocalStore", "RemoteStore", "SyncModel", "SecretCrypto", "TestStack", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(
            name: "PostLoginSyncTests",
            dependencies: [
                "PostLoginSync", "LocalStore", "RemoteStore", "SyncModel", "SecretCrypto", "SyncTestSupport", "DeviceTrust",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "LocalStoreTests",
            dependencies: [
                "LocalStore", "SyncModel", "SecretCrypto", "localstore-test-helper",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(name: "DeviceTrustTests", dependencies: ["DeviceTrust", "SecretCrypto"]),
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
                "DeviceTrust",
                "SecretCrypto",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
