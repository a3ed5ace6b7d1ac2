import Foundation
@_spi(TestVectors) import SecretCrypto

/// The outcome of verifying one file.
public struct VectorFileReport: Sendable {
    /// One failed test.
    public struct Failure: Sendable, Equatable {
        /// The test id.
        public let tcId: Int
        /// The test's comment.
        public let comment: String
        /// Why it failed (never a key or a secret).
        public let reason: String
    }

    /// The file's path as given.
    public let path: String
    /// The algorithm.
    public let algorithm: VectorAlgorithm
    /// Number of tests that passed.
    public let passed: Int
    /// The failures, in file order.
    public let failures: [Failure]
    /// The declared `numberOfTests` when it disagrees with the tests found.
    public let declaredCountMismatch: Int?
}

/// Runs vector files as testvectors.md says.
public enum VectorVerifier {
    /// Verifies the file at `path`.
    ///
    /// - Parameter path: A Wycheproof-layout JSON file.
    /// - Returns: The file's report.
    /// - Throws: ``VectorFileError`` for an unreadable or malformed file or an unknown algorithm.
    public static func verify(path: String) throws -> VectorFileReport {
        let (data, algorithm) = try VectorLoader.read(path: path)
        return try verify(data: data, algorithm: algorithm, path: path)
    }

    /// Verifies vector JSON already in memory.
    ///
    /// - Throws: ``VectorFileError``.
    public static func verify(data: Data, path: String) throws -> VectorFileReport {
        try verify(data: data, algorithm: VectorLoader.algorithm(of: data, path: path), path: path)
    }

    static func verify(data: Data, algorithm: VectorAlgorithm, path: String) throws -> VectorFileReport {
        switch algorithm {
        case .xdh: return try run(XDHGroup.self, data, algorithm, path) { _, test in check(test) }
        case .chacha20Poly1305: return try run(AEADGroup.self, data, algorithm, path) { _, test in check(test) }
        case .hkdfSHA256: return try run(HKDFGroup.self, data, algorithm, path) { _, test in check(test) }
        case .hmacSHA256: return try run(HMACGroup.self, data, algorithm, path) { group, test in check(test, tagSize: group.tagSize) }
        case .sessionSecretV1: return try run(EnvelopeGroup.self, data, algorithm, path) { _, test in check(test) }
        }
    }

    /// `nil` means the test passed; otherwise why it failed.
    typealias Check<Group: VectorGroup> = (Group, Group.Test) -> String?

    private static func run<Group: VectorGroup>(
        _ type: Group.Type, _ data: Data, _ algorithm: VectorAlgorithm, _ path: String, _ check: Check<Group>
    ) throws -> VectorFileReport {
        let file = try VectorLoader.decode(type, from: data, path: path)
        var passed = 0
        var failures: [VectorFileReport.Failure] = []
        var count = 0
        for group in file.testGroups {
            for test in group.tests {
                count += 1
                if let reason = check(group, test) {
                    failures.append(.init(tcId: test.tcId, comment: test.comment, reason: reason))
                } else {
                    passed += 1
                }
            }
        }
        let mismatch = file.numberOfTests.flatMap { $0 == count ? nil : $0 }
        return VectorFileReport(path: path, algorithm: algorithm, passed: passed, failures: failures, declaredCountMismatch: mismatch)
    }

    /// Applies Wycheproof's result semantics to an operation's outcome.
    ///
    /// - Parameters:
    ///   - result: The expectation.
    ///   - outcome: `nil` when the operation was rejected, else whether its output matched.
    static func judge(_ result: ExpectedResult, _ outcome: Bool?) -> String? {
        switch (result, outcome) {
        case (.valid, nil): return "rejected, expected success"
        case (.valid, false?): return "output does not match"
        case (.valid, true?): return nil
        case (.invalid, true?): return "accepted and matched, expected rejection"
        case (.invalid, _): return nil
        case (.acceptable, false?): return "accepted with a different output"
        case (.acceptable, _): return nil
        }
    }

    // MARK: - Checks

    static func check(_ test: XDHGroup.Test) -> String? {
        let outcome: Bool? = {
            guard let key = try? X25519PrivateKey(rawRepresentation: SecureBytes(copying: test.private.bytes)),
                  let peer = try? X25519PublicKey(rawRepresentation: test.public.bytes),
                  let shared = try? key.sharedSecret(with: peer)
            else { return nil }
            return shared == SecureBytes(copying: test.shared.bytes)
        }()
        return judge(test.result, outcome)
    }

    static func check(_ test: AEADGroup.Test) -> String? {
        let key = SecureBytes(copying: test.key.bytes)
        let expected = test.ct.bytes + test.tag.bytes
        let sealMatches: Bool? = (try? ChaCha20Poly1305.seal(test.msg.bytes, using: key, nonce: test.iv.bytes, authenticating: test.aad.bytes))
            .map { $0 == expected }
        let openMatches: Bool? = (try? ChaCha20Poly1305.open(expected, using: key, nonce: test.iv.bytes, authenticating: test.aad.bytes))
            .map { $0 == test.msg.bytes }
        if let reason = judge(test.result, sealMatches) { return "seal: " + reason }
        if let reason = judge(test.result, openMatches) { return "open: " + reason }
        return nil
    }

    static func check(_ test: HKDFGroup.Test) -> String? {
        let outcome = (try? HKDFSHA256.deriveKey(
            inputKeyMaterial: SecureBytes(copying: test.ikm.bytes), salt: test.salt.bytes,
            info: test.info.bytes, outputByteCount: test.size
        )).map { $0 == SecureBytes(copying: test.okm.bytes) }
        return judge(test.result, outcome)
    }

    static func check(_ test: HMACGroup.Test, tagSize: Int) -> String? {
        let tagBytes = tagSize / 8
        let outcome: Bool? = {
            guard tagBytes > 0, tagBytes <= HMACSHA256.byteCount, test.tag.bytes.count == tagBytes else { return nil }
            return HMACSHA256.isValidAuthenticationCode(test.tag.bytes, for: test.msg.bytes, using: SecureBytes(copying: test.key.bytes))
        }()
        return judge(test.result, outcome)
    }

    static func check(_ test: EnvelopeGroup.Test) -> String? {
        let envelope = SecretEnvelope(ephemeralPublicKey: test.ephemeralPublicKey, encryptedSecret: test.encryptedSecret)
        let opened: Bool? = {
            guard let sessionID = try? SessionID(test.sessionId),
                  let key = try? X25519PrivateKey(rawRepresentation: SecureBytes(copying: test.recipientPrivateKey.bytes)),
                  let secret = try? envelope.open(sessionID: sessionID, using: key)
            else { return nil }
            return secret.withTextFormBytes { $0.elementsEqual(test.plaintext.utf8) }
        }()
        if let reason = judge(test.result, opened) { return "open: " + reason }
        guard test.result == .valid, let ephemeral = test.ephemeralPrivateKey, let nonce = test.nonce else { return nil }
        // Deterministic re-encryption must reproduce both stored fields byte for byte.
        do {
            let resealed = try SecretEnvelope.sealDeterministically(
                plaintext: Array(test.plaintext.utf8),
                for: X25519PrivateKey(rawRepresentation: SecureBytes(copying: test.recipientPrivateKey.bytes)).publicKey,
                sessionID: SessionID(test.sessionId),
                ephemeralPrivateKey: X25519PrivateKey(rawRepresentation: SecureBytes(copying: ephemeral.bytes)),
                nonce: nonce.bytes
            )
            guard resealed.ephemeralPublicKey == test.ephemeralPublicKey else { return "reseal: ephemeralPublicKey differs" }
            guard try resealed.encryptedSecret == envelope.canonicalEncryptedSecret() else { return "reseal: encryptedSecret differs" }
            return nil
        } catch {
            return "reseal: rejected (\(error))"
        }
    }
}
