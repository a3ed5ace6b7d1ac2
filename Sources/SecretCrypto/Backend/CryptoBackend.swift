import Foundation

/// The implementation that computes this module's primitives: X25519, HKDF and HMAC-SHA256,
/// ChaCha20-Poly1305-IETF, SHA-256, Ed25519, random bytes, wiping and the key encodings.
///
/// Everything built on the primitives (envelopes v1 and v2, HPKE, certificates, the trust log,
/// approvals, backups, pairing) is one implementation whichever backend computes them, and the
/// two backends give the same bytes and refuse the same inputs. One exception, on Apple
/// platforms only: CryptoKit randomizes Ed25519 signatures (``signsDeterministically``), which
/// verify under the same rules but are not the bytes libsodium would write.
///
/// - ``libsodium``: the system's libsodium, compiled on Linux only. The default there.
/// - ``swiftCrypto``: swift-crypto, which is CryptoKit on Apple platforms and BoringSSL
///   elsewhere, with libsodium's extra rules written out (an all-zero X25519 result refused;
///   Ed25519 signatures with S ≥ L, a small-order R or A, or a non-canonical A refused). The
///   only backend compiled on Apple platforms, so an app links no C library. On Linux it is
///   compiled only when the package graph asks for it (Package.swift: the test rig,
///   `SESSION_SYNC_CRYPTO=swift-crypto`, or `SESSION_SYNC_SWIFT_CRYPTO=1`), so that a plain build
///   of `sync-cli` does not compile BoringSSL.
///
/// The process's backend is the platform's default, or the one named by the environment
/// variable `SESSION_SYNC_CRYPTO_BACKEND` (`libsodium` or `swift-crypto`); a value naming
/// nothing compiled here stops the process rather than run on a backend nobody asked for.
/// ``with(_:_:)`` runs a closure on another backend (tests and `sync-cli vectors verify
/// --backend`).
public enum CryptoBackend: String, Sendable, CaseIterable, CustomStringConvertible {
    /// libsodium, through the `CSodium` system-library module (Linux).
    case libsodium = "libsodium"
    /// swift-crypto (CryptoKit on Apple platforms), with libsodium's strictness added.
    case swiftCrypto = "swift-crypto"

    /// The name used on the command line and in the environment.
    public var description: String { rawValue }

    /// Whether this backend is compiled into this build.
    public var isAvailable: Bool {
        switch self {
        case .libsodium: Self.sodiumCompiled
        case .swiftCrypto: Self.swiftCryptoCompiled
        }
    }

    /// The backends compiled into this build: libsodium first where it is compiled.
    public static var available: [CryptoBackend] { allCases.filter(\.isAvailable) }

    /// Whether an Ed25519 signature's bytes depend only on the key and the message (RFC 8032):
    /// true for libsodium and for swift-crypto over BoringSSL; false for CryptoKit, which adds
    /// randomness to each signature on Apple platforms. Either way a signature verifies under
    /// the same rules; only a check that signs again and compares bytes needs to know.
    public var signsDeterministically: Bool {
        switch self {
        case .libsodium: return true
        case .swiftCrypto:
            #if canImport(CryptoKit)
            return false
            #else
            return true
            #endif
        }
    }

    /// The backend of this process: the environment's choice, else libsodium where it is
    /// compiled, else swift-crypto.
    public static let processDefault: CryptoBackend = {
        let variable = "SESSION_SYNC_CRYPTO_BACKEND"
        guard let named = ProcessInfo.processInfo.environment[variable], !named.isEmpty else {
            return sodiumCompiled ? .libsodium : .swiftCrypto
        }
        guard let backend = CryptoBackend(rawValue: named), backend.isAvailable else {
            let choices = available.map(\.rawValue).joined(separator: ", ")
            fatalError("\(variable)=\(named) names no crypto backend of this build (\(choices))")
        }
        return backend
    }()

    /// The backend computing primitives in the current task: the one ``with(_:_:)`` chose, or
    /// ``processDefault``.
    public static var current: CryptoBackend { override ?? processDefault }

    @TaskLocal static var override: CryptoBackend?

    /// Runs `body` with every primitive it calls, in this task and the child tasks it creates,
    /// computed by `backend`.
    ///
    /// - Throws: ``CryptoError/backendUnavailable(_:)`` when `backend` is not compiled here;
    ///   whatever `body` throws.
    public static func with<Result>(_ backend: CryptoBackend, _ body: () throws -> Result) throws -> Result {
        guard backend.isAvailable else { throw CryptoError.backendUnavailable(backend.rawValue) }
        return try $override.withValue(backend, operation: body)
    }

    /// The asynchronous form of ``with(_:_:)``.
    public static func with<Result>(
        _ backend: CryptoBackend, isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> Result
    ) async throws -> Result {
        guard backend.isAvailable else { throw CryptoError.backendUnavailable(backend.rawValue) }
        return try await $override.withValue(backend, operation: body, isolation: isolation)
    }

    #if canImport(CSodium)
    static let sodiumCompiled = true
    #else
    static let sodiumCompiled = false
    #endif

    #if SESSION_SYNC_SWIFT_CRYPTO
    static let swiftCryptoCompiled = true
    #else
    static let swiftCryptoCompiled = false
    #endif
}
