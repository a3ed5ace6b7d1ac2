// swift-tools-version:6.1
import Foundation
import PackageDescription

// The product: what an app links (the libraries) and the command-line tool; its tests come with
// the rig (below).
//
// The test rig (the PostgREST-compatible server over PostgreSQL, the benchmarks and their floor,
// the fuzz targets, the vector generator) is declared only when SESSION_SYNC_RIG=1, as
// hummingbird declares its benchmarks only with ENABLE_HB_BENCHMARKS: an app that depends on
// this package never resolves or builds a web server or a PostgreSQL driver. `make test`,
// `make bench`, `make fuzz`, `make stack` and `make vectors` set it.
let rig = ProcessInfo.processInfo.environment["SESSION_SYNC_RIG"] == "1"
// The backend: the push worker that delivers `push_outbox` to APNs (docs/push-worker.md). A
// server's executable, never linked into an app or `sync-cli`, so it is declared only with
// SESSION_SYNC_BACKEND=1 (`make push-worker`) or with the rig, whose tests exercise it.
let backend = rig || ProcessInfo.processInfo.environment["SESSION_SYNC_BACKEND"] == "1"
// The crypto backends (SecretCrypto's CryptoBackend): libsodium is compiled on Linux only, and
// swift-crypto (CryptoKit on Apple platforms) everywhere. SESSION_SYNC_CRYPTO=swift-crypto builds
// Linux as an app builds for iOS, with no libsodium at all (`make app-check`).
let sodium = ProcessInfo.processInfo.environment["SESSION_SYNC_CRYPTO"] != "swift-crypto"
let sodiumOnLinux: [Target.Dependency] = sodium ? [.target(name: "CSodium", condition: .when(platforms: [.linux]))] : []
// swift-crypto in SecretCrypto: always on Apple platforms (it is CryptoKit there); on Linux only
// when something asks for the second backend (the rig, whose tests run both; an iOS-like build;
// SESSION_SYNC_SWIFT_CRYPTO=1), so that `make demo` and `make install` do not compile BoringSSL.
let swiftCryptoOnLinux =
    rig || !sodium || ProcessInfo.processInfo.environment["SESSION_SYNC_SWIFT_CRYPTO"] == "1"
let applePlatforms: [Platform] = [.macOS, .iOS, .macCatalyst, .tvOS, .watchOS, .visionOS]
// A manifest is read on the machine that builds: on a Mac (an app's build, for any Apple
// platform) swift-crypto is always a dependency; on Linux only when a build above asks for it,
// so that a plain `make demo` does not even fetch it.
#if os(Linux)
let appleHost = false
#else
let appleHost = true
#endif
let declaresSwiftCrypto = swiftCryptoOnLinux || appleHost
let swiftCrypto: [Target.Dependency] =
    declaresSwiftCrypto
    ? [
        .product(
            name: "Crypto", package: "swift-crypto",
            condition: swiftCryptoOnLinux ? nil : .when(platforms: applePlatforms))
    ] : []
// The tests, and the packages only they use (SwiftNIO for the fault-injecting proxy), come with
// the rig: `make test` sets it; an app or `make demo` resolves neither.
let tests = rig
// `make docs` (swift-docc-plugin, a command plugin; nothing is linked) sets this.
let docs = rig || appleHost || ProcessInfo.processInfo.environment["SESSION_SYNC_DOCS"] == "1"
// Said to the code by a condition of its own, not by `canImport(Crypto)`: a rig build leaves the
// Crypto module in .build, where a later plain build would find it and not link it.
let swiftCryptoCondition: SwiftSetting = .define(
    "SESSION_SYNC_SWIFT_CRYPTO", swiftCryptoOnLinux ? nil : .when(platforms: applePlatforms))

let package = Package(
    name: "SessionSecretSync",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "SecretCrypto", targets: ["SecretCrypto"]),
        .library(name: "SyncModel", targets: ["SyncModel"]),
        .library(name: "DeviceTrust", targets: ["DeviceTrust"]),
        .library(name: "LocalStore", targets: ["LocalStore"]),
        .library(name: "RemoteContract", targets: ["RemoteContract"]),
        .library(name: "RemoteRules", targets: ["RemoteRules"]),
        .library(name: "RemoteStore", targets: ["RemoteStore"]),
        .library(name: "EmbeddedRemote", targets: ["EmbeddedRemote"]),
        .library(name: "RemoteSelection", targets: ["RemoteSelection"]),
        .library(name: "PostLoginSync", targets: ["PostLoginSync"]),
        .library(name: "AgentHooks", targets: ["AgentHooks"]),
        .executable(name: "sync-cli", targets: ["sync-cli"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // The C libraries, from the system (pkg-config), on Linux only: an app links none.
        .systemLibrary(
            name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"]), .brew(["libsodium"])]),
        // The HTTP transport on Linux (CurlTransport); Apple platforms use URLSession.
        .systemLibrary(
            name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"]), .brew(["curl"])]),
        // The terminal QR code of the pairing code: sync-cli only.
        .systemLibrary(
            name: "CQREncode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"]), .brew(["qrencode"])]),

        // Keys, KDF, AEAD, HPKE, Ed25519, envelopes v1 and v2, on either crypto backend. No I/O.
        .target(
            name: "SecretCrypto", dependencies: sodiumOnLinux + swiftCrypto, swiftSettings: [swiftCryptoCondition]),
        // The domain records both stores and the engine speak. No I/O.
        .target(name: "SyncModel"),
        // The envelope digest (sync.md), in Swift and as the SQLite triggers that keep it.
        .target(name: "EnvelopeDigest", dependencies: ["SyncModel"]),
        // Device trust's signed statements, pairing codes and MACs (trust.md). No I/O.
        .target(name: "DeviceTrust", dependencies: ["SecretCrypto"]),
        // This device's SQLite store.
        .target(
            name: "LocalStore",
            dependencies: [
                "SecretCrypto", "SyncModel", "EnvelopeDigest", .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // The remote's contract: its protocols, records and errors, in domain words, without HTTP.
        .target(name: "RemoteContract", dependencies: ["SyncModel"]),
        // The server's decisions as pure values: the embedded remote runs them, the SQL states
        // them again, and testvectors/remote-rules-v1.json holds the two to the same answers; the
        // engine reads its request windows from them.
        .target(name: "RemoteRules", dependencies: ["RemoteContract", "SyncModel"]),
        // The PostgREST client with its transports and auth; re-exports the contract.
        .target(
            name: "RemoteStore",
            dependencies: [
                "RemoteContract", "SyncModel",
                .target(name: "CCurl", condition: .when(platforms: [.linux])),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // A remote in one SQLite file, with the rules of the project's database.
        .target(
            name: "EmbeddedRemote",
            dependencies: [
                "RemoteContract", "RemoteRules", "SyncModel", "EnvelopeDigest", "DeviceTrust", "SecretCrypto",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // Which remote a store talks to (`RemoteConfiguration`): the CLI's `--remote`, reusable by an app.
        .target(
            name: "RemoteSelection",
            dependencies: ["RemoteStore", "EmbeddedRemote", "LocalStore", "SyncModel"]
        ),
        // The engine: push, pull, watch, pairing, revocation, coordination.
        .target(
            name: "PostLoginSync",
            dependencies: [
                "SecretCrypto", "SyncModel", "EnvelopeDigest", "LocalStore", "RemoteStore", "RemoteRules",
                "DeviceTrust",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Coding agents' hooks (Claude Code, Codex) driving the engine: events in, engine calls and
        // a decision out; their settings files merged and written.
        .target(
            name: "AgentHooks",
            dependencies: [
                "PostLoginSync", "LocalStore", "RemoteStore", "SecretCrypto", "SyncModel",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Loading and verifying Wycheproof-layout vector files (`sync-cli vectors verify`).
        .target(
            name: "ConformanceVectors",
            dependencies: ["SecretCrypto", "DeviceTrust", "SyncModel", "RemoteContract", "RemoteRules"]),
        .executableTarget(
            name: "sync-cli",
            dependencies: [
                "PostLoginSync", "LocalStore", "RemoteStore", "EmbeddedRemote", "RemoteSelection", "SecretCrypto",
                "SyncModel", "ConformanceVectors", "AgentHooks",
                "DeviceTrust", "CQREncode",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// The swift-crypto backend (CryptoKit on Apple platforms, BoringSSL elsewhere); the push worker
// signs its provider tokens with it.
if declaresSwiftCrypto || backend {
    package.dependencies.append(.package(url: "https://github.com/apple/swift-crypto", exact: "3.12.3"))
}
if tests || backend {
    package.dependencies.append(.package(url: "https://github.com/apple/swift-nio", from: "2.101.2"))
}
if docs {
    // `make docs`: the DocC catalogues (a command plugin; nothing is linked).
    package.dependencies.append(.package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"))
}

// The product's tests.
if tests {
    package.targets += [
        // Test support: the stack's environment and tokens; a hostile loopback server and a
        // fault-injecting proxy; a child process for the local store's tests.
        .target(
            name: "TestStack",
            dependencies: [
                "SecretCrypto", "SyncModel", "RemoteStore", .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Tests/TestStack"
        ),
        .target(
            name: "SyncTestSupport",
            dependencies: [
                "TestStack", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Tests/SyncTestSupport"
        ),
        .executableTarget(
            name: "localstore-test-helper",
            dependencies: ["LocalStore", "SyncModel"],
            path: "Tests/Helpers/localstore-test-helper"
        ),
        .testTarget(
            name: "SecretCryptoTests",
            dependencies: ["SecretCrypto", .product(name: "Crypto", package: "swift-crypto")] + sodiumOnLinux),
        .testTarget(name: "DeviceTrustTests", dependencies: ["DeviceTrust", "SecretCrypto"] + sodiumOnLinux),
        .testTarget(
            name: "ConformanceVectorsTests",
            dependencies: [
                "ConformanceVectors", "DeviceTrust", "RemoteRules", "SecretCrypto",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "LocalStoreTests",
            dependencies: [
                "LocalStore", "SyncModel", "SecretCrypto", "localstore-test-helper", "TestStack",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "RemoteStoreTests",
            dependencies: [
                "RemoteStore", "EmbeddedRemote", "SyncModel", "SecretCrypto", "DeviceTrust", "SyncTestSupport",
                "TestStack", .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .testTarget(
            name: "PostLoginSyncTests",
            dependencies: [
                "PostLoginSync", "LocalStore", "RemoteStore", "RemoteRules", "EmbeddedRemote", "EnvelopeDigest",
                "SyncModel", "SecretCrypto", "SyncTestSupport", "TestStack",
                "DeviceTrust",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // Read by path: the reports' golden bytes.
            exclude: ["Golden"]
        ),
        .testTarget(
            name: "SyncCLITests",
            dependencies: [
                "sync-cli", "LocalStore", "RemoteStore", "EmbeddedRemote", "RemoteSelection", "PostLoginSync",
                "SyncModel", "SecretCrypto", "DeviceTrust", "TestStack",
                "SyncTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
    ]
}

if backend {
    package.dependencies += [
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        // The worker's metrics endpoint (notifications round 2).
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ]
    package.products += [.executable(name: "push-worker", targets: ["push-worker"])]
    package.targets += [
        // Delivery of the outbox to APNs: configuration, provider tokens, requests and answers,
        // claims and completions on PostgreSQL, the worker's loop.
        .target(
            name: "PushDelivery",
            dependencies: [
                "SyncModel",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ],
            path: "Backend/PushDelivery"
        ),
        .executableTarget(
            name: "push-worker",
            dependencies: [
                "PushDelivery",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "Backend/push-worker"
        ),
    ]
}

if rig {
    package.dependencies += [
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
    ]
    package.targets += [
        // The test server's request grammar, SQL builder and JWT check, without I/O: the server
        // and the fuzz targets share it. (The client's own PostgREST code is in RemoteStore.)
        .target(name: "PostgRESTServerCore", dependencies: ["SecretCrypto"], path: "Rig/PostgRESTServerCore"),
        // A PostgREST-compatible server over a real PostgreSQL, for the tests and the benchmarks.
        .executableTarget(
            name: "postgrest-server",
            dependencies: [
                "SecretCrypto", "PostgRESTServerCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Rig/postgrest-server"
        ),
        // The benchmarks, and their floor: the envelope's libsodium calls in plain C.
        .target(name: "CSodiumFloor", dependencies: ["CSodium"], path: "Rig/CSodiumFloor"),
        .executableTarget(
            name: "sync-bench",
            dependencies: [
                "SecretCrypto", "CSodiumFloor", "LocalStore", "RemoteStore", "EmbeddedRemote", "PostLoginSync",
                "SyncModel", "TestStack", "DeviceTrust", "AgentHooks",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Rig/sync-bench"
        ),
        // One fuzz target per parser that takes outside bytes (`make fuzz`); the corpus replay
        // runs in `make test`.
        .target(
            name: "FuzzTargets",
            dependencies: [
                "SecretCrypto", "DeviceTrust", "LocalStore", "RemoteStore", "ConformanceVectors", "PostgRESTServerCore",
                "SyncModel", "AgentHooks",
            ],
            path: "Rig/FuzzTargets"
        ),
        .executableTarget(name: "sync-fuzz", dependencies: ["FuzzTargets"], path: "Rig/sync-fuzz"),
        // The project's vector files, written reproducibly (`make vectors`).
        .target(
            name: "VectorGeneration",
            dependencies: [
                "ConformanceVectors", "SecretCrypto", "DeviceTrust", "SyncModel", "RemoteContract", "RemoteRules",
            ],
            path: "Rig/VectorGeneration"),
        .executableTarget(
            name: "sync-vectors",
            dependencies: [
                "VectorGeneration", "SyncModel", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Rig/sync-vectors"
        ),
        .testTarget(name: "FuzzTargetsTests", dependencies: ["FuzzTargets", "sync-fuzz", "TestStack"]),
        // An imitation of Claude Code running the hooks its settings hold, as its hooks reference
        // describes (exec form, stdin, parallel and async handlers, timeouts, exit codes, stdout).
        .target(name: "AgentImitation", dependencies: ["AgentHooks", "TestStack"], path: "Rig/AgentImitation"),
        .testTarget(
            name: "AgentHooksTests",
            dependencies: [
                "AgentHooks", "AgentImitation", "sync-cli", "PostLoginSync", "LocalStore", "RemoteStore",
                "EmbeddedRemote", "SecretCrypto", "DeviceTrust", "SyncModel", "SyncTestSupport", "TestStack",
                "ConformanceVectors", .product(name: "GRDB", package: "GRDB.swift"),
            ],
            // Read by path: the recorded event sequences.
            exclude: ["Sequences"]
        ),
        .testTarget(name: "VectorGenerationTests", dependencies: ["VectorGeneration"]),
        // An imitation of APNs: HTTP/2 over TLS on loopback, with APNs' checks and faults.
        .target(
            name: "APNsImitation",
            dependencies: [
                "TestStack",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Rig/APNsImitation"
        ),
        .executableTarget(
            name: "apns-imitation",
            dependencies: [
                "APNsImitation", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Rig/apns-imitation"
        ),
        // The push worker's figures beside h2load against the same imitation (`make bench-push`).
        .executableTarget(
            name: "push-bench",
            dependencies: [
                "APNsImitation", "PushDelivery", "SyncModel", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Rig/push-bench"
        ),
        .testTarget(
            name: "PushDeliveryTests",
            dependencies: [
                "PushDelivery", "push-worker", "APNsImitation", "TestStack", "SyncModel", "RemoteStore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ]
}

// With the rig on (`make test`, CI, the benchmarks), a warning in any of this package's own
// targets fails the build, so none lands; an app depending on the package never sets the rig.
if rig {
    for target in package.targets where target.type != .system {
        target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-warnings-as-errors"])]
        target.cSettings = (target.cSettings ?? []) + [.unsafeFlags(["-Werror"])]
    }
}
