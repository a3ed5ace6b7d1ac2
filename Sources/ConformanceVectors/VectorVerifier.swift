import DeviceTrust
import Foundation
import SecretCrypto
import SyncModel

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
        case .hmacSHA256:
            return try run(HMACGroup.self, data, algorithm, path) { group, test in check(test, tagSize: group.tagSize) }
        case .sessionSecretV1: return try run(EnvelopeGroup.self, data, algorithm, path) { _, test in check(test) }
        case .sessionSecretV2: return try run(EnvelopeV2Group.self, data, algorithm, path) { _, test in check(test) }
        case .eddsa:
            return try run(EdDSAGroup.self, data, algorithm, path) { group, test in
                check(test, publicKey: group.publicKey.pk.bytes)
            }
        case .deviceCertificateV1:
            return try run(DeviceCertificateGroup.self, data, algorithm, path) { _, test in check(test) }
        case .hpke: return try verifyHPKE(data: data, path: path)
        case .approvalV1:
            return try run(ApprovalGroup.self, data, algorithm, path) { group, test in
                group.type == .requestOpen ? checkRequest(test) : checkDecision(test)
            }
        case .questionV1:
            return try run(QuestionGroup.self, data, algorithm, path) { _, test in checkQuestion(test) }
        case .pairingV1:
            return try run(PairingGroup.self, data, algorithm, path) { group, test in checkPairing(group.type, test) }
        case .identityBackupV1:
            return try run(IdentityBackupGroup.self, data, algorithm, path) { group, test in
                group.type == .open ? checkBackup(test) : checkRecoveryKey(test)
            }
        case .trustLogV1:
            return try run(TrustLogGroup.self, data, algorithm, path) { group, test in
                TrustLogVectorCheck.check(group.type, test)
            }
        case .questionChoicesV1:
            return try run(QuestionChoicesGroup.self, data, algorithm, path) { group, test in
                checkChoices(group.type, test)
            }
        case .agentSessionV1:
            return try run(AgentSessionGroup.self, data, algorithm, path) { group, test in
                AgentSessionGroup.check(group.type, test)
            }
        case .remoteRulesV1:
            return try run(RemoteRulesGroup.self, data, algorithm, path) { group, test in
                RemoteRulesGroup.check(group.type, test)
            }
        case .lockScreenSanitiserV2:
            return try run(LockScreenSanitiserGroup.self, data, algorithm, path) { _, test in
                judge(test.result, LockScreenText.sanitised(test.input) == test.output)
            }
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
        return VectorFileReport(
            path: path, algorithm: algorithm, passed: passed, failures: failures, declaredCountMismatch: mismatch)
    }

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
        let sealMatches: Bool? =
            (try? ChaCha20Poly1305.seal(
                test.msg.bytes, using: key, nonce: test.iv.bytes, authenticating: test.aad.bytes))
            .map { $0 == expected }
        let openMatches: Bool? =
            (try? ChaCha20Poly1305.open(expected, using: key, nonce: test.iv.bytes, authenticating: test.aad.bytes))
            .map { $0 == test.msg.bytes }
        if let reason = judge(test.result, sealMatches) { return "seal: " + reason }
        if let reason = judge(test.result, openMatches) { return "open: " + reason }
        return nil
    }

    static func check(_ test: HKDFGroup.Test) -> String? {
        let outcome =
            (try? HKDFSHA256.deriveKey(
                inputKeyMaterial: SecureBytes(copying: test.ikm.bytes), salt: test.salt.bytes,
                info: test.info.bytes, outputByteCount: test.size
            )).map { $0 == SecureBytes(copying: test.okm.bytes) }
        return judge(test.result, outcome)
    }

    static func check(_ test: HMACGroup.Test, tagSize: Int) -> String? {
        let tagBytes = tagSize / 8
        let outcome: Bool? = {
            guard tagBytes > 0, tagBytes <= HMACSHA256.byteCount, test.tag.bytes.count == tagBytes else { return nil }
            return HMACSHA256.isValidAuthenticationCode(
                test.tag.bytes, for: test.msg.bytes, using: SecureBytes(copying: test.key.bytes))
        }()
        return judge(test.result, outcome)
    }

    static func check(_ test: EnvelopeGroup.Test) -> String? {
        let envelope = SecretEnvelope(
            ephemeralPublicKey: test.ephemeralPublicKey, encryptedSecret: test.encryptedSecret)
        let opened: Bool? = {
            guard let sessionID = try? SessionID(test.sessionId),
                let key = try? X25519PrivateKey(
                    rawRepresentation: SecureBytes(copying: test.recipientPrivateKey.bytes)),
                let secret = try? envelope.open(sessionID: sessionID, using: key)
            else { return nil }
            return secret.withTextFormBytes { $0.elementsEqual(test.plaintext.utf8) }
        }()
        if let reason = judge(test.result, opened) { return "open: " + reason }
        guard test.result == .valid, let ephemeral = test.ephemeralPrivateKey, let nonce = test.nonce else {
            return nil
        }
        // Deterministic re-encryption must reproduce both stored fields byte for byte.
        do {
            let resealed = try SecretEnvelope.sealDeterministically(
                plaintext: Array(test.plaintext.utf8),
                for: X25519PrivateKey(rawRepresentation: SecureBytes(copying: test.recipientPrivateKey.bytes))
                    .publicKey,
                sessionID: SessionID(test.sessionId),
                ephemeralPrivateKey: X25519PrivateKey(rawRepresentation: SecureBytes(copying: ephemeral.bytes)),
                nonce: nonce.bytes
            )
            guard resealed.ephemeralPublicKey == test.ephemeralPublicKey else {
                return "reseal: ephemeralPublicKey differs"
            }
            guard try resealed.encryptedSecret == envelope.canonicalEncryptedSecret() else {
                return "reseal: encryptedSecret differs"
            }
            return nil
        } catch {
            return "reseal: rejected (\(error))"
        }
    }

    static func check(_ test: EdDSAGroup.Test, publicKey: [UInt8]) -> String? {
        let outcome: Bool? = {
            guard let key = try? Ed25519PublicKey(rawRepresentation: publicKey),
                key.isValidSignature(test.sig.bytes, for: test.msg.bytes)
            else { return nil }
            return true
        }()
        return judge(test.result, outcome)
    }

    static func check(_ test: EnvelopeV2Group.Test) -> String? {
        let envelope = SecretEnvelope(
            ephemeralPublicKey: test.ephemeralPublicKey, encryptedSecret: test.encryptedSecret)
        guard envelope.version == 2 else {
            return judge(test.result, nil).map { "open: not a version-2 envelope; " + $0 }
        }
        let opened: Bool? = {
            guard let sessionID = try? SessionID(test.sessionId),
                let recipientID = UUID(uuidString: test.recipientDeviceId),
                let key = try? X25519PrivateKey(
                    rawRepresentation: SecureBytes(copying: test.recipientPrivateKey.bytes)),
                let senderKey = try? X25519PublicKey(base64: test.senderPublicKey),
                let result = try? envelope.open(
                    sessionID: sessionID, recipientDeviceID: recipientID, using: key, senderKey: { _ in senderKey })
            else { return nil }
            guard result.secret.withTextFormBytes({ $0.elementsEqual(test.plaintext.utf8) }), result.authenticated
            else { return false }
            if let sender = test.senderDeviceId, UUID(uuidString: sender) != result.senderDeviceID { return false }
            if let generation = test.generation, generation != result.generation { return false }
            return true
        }()
        if let reason = judge(test.result, opened) { return "open: " + reason }
        guard test.result == .valid, let senderPrivate = test.senderPrivateKey, let ephemeral = test.ephemeralPrivateKey
        else { return nil }
        do {
            guard let (sender, generation) = envelope.headerV2 else { return "reseal: no header" }
            let resealed = try SecretEnvelope.sealV2Deterministically(
                plaintext: Array(test.plaintext.utf8),
                for: X25519PrivateKey(rawRepresentation: SecureBytes(copying: test.recipientPrivateKey.bytes))
                    .publicKey,
                recipientDeviceID: UUID(uuidString: test.recipientDeviceId)!, sessionID: SessionID(test.sessionId),
                sender: X25519PrivateKey(rawRepresentation: SecureBytes(copying: senderPrivate.bytes)),
                senderDeviceID: sender,
                generation: generation,
                ephemeral: X25519PrivateKey(rawRepresentation: SecureBytes(copying: ephemeral.bytes)))
            guard resealed.ephemeralPublicKey == test.ephemeralPublicKey else {
                return "reseal: ephemeralPublicKey differs"
            }
            guard try resealed.encryptedSecret == envelope.canonicalEncryptedSecret() else {
                return "reseal: encryptedSecret differs"
            }
            return nil
        } catch {
            return "reseal: rejected (\(error))"
        }
    }

    /// RFC 9180's layout: every suite entry is one test (its key derivation, key schedule,
    /// every encryption and every export); suites other than A.2 are unsupported, a failure.
    static func verifyHPKE(data: Data, path: String) throws -> VectorFileReport {
        let suites: [HPKEVector]
        do {
            suites = try JSONDecoder().decode([HPKEVector].self, from: data)
        } catch {
            throw VectorFileError(code: .malformed, path: path, detail: VectorLoader.describe(error))
        }
        guard !suites.isEmpty else { throw VectorFileError(code: .malformed, path: path, detail: "no suites") }
        var passed = 0
        var failures: [VectorFileReport.Failure] = []
        for (index, suite) in suites.enumerated() {
            let name =
                "mode \(suite.mode), kem 0x\(String(suite.kem_id, radix: 16)), kdf 0x\(String(suite.kdf_id, radix: 16)), aead 0x\(String(suite.aead_id, radix: 16))"
            let reasons = check(suite)
            passed += suite.encryptions.count + suite.exports.count + 1 - reasons.count
            for reason in reasons { failures.append(.init(tcId: index + 1, comment: name, reason: reason)) }
        }
        return VectorFileReport(
            path: path, algorithm: .hpke, passed: passed, failures: failures, declaredCountMismatch: nil)
    }

    /// Every problem with one suite entry: one for the setup, one per failing encryption or export.
    static func check(_ v: HPKEVector) -> [String] {
        // A setup failure fails the entry's every encryption and export as well.
        func all(_ reason: String) -> [String] {
            Array(repeating: reason, count: v.encryptions.count + v.exports.count + 1)
        }
        guard v.kem_id == HPKE.kemID, v.kdf_id == HPKE.kdfID, v.aead_id == HPKE.aeadID else {
            return all("unsupported suite")
        }
        guard let mode = HPKE.Mode(rawValue: v.mode) else { return all("unknown mode") }
        func bytes(_ key: SecureBytes?) -> [UInt8]? { key?.withUnsafeBytes { Array($0) } }
        do {
            let recipient = try HPKE.deriveKeyPair(ikm: v.ikmR.bytes)
            let ephemeral = try HPKE.deriveKeyPair(ikm: v.ikmE.bytes)
            var sender: X25519PrivateKey?
            if let ikmS = v.ikmS { sender = try HPKE.deriveKeyPair(ikm: ikmS.bytes) }
            guard bytes(recipient.rawRepresentation) == v.skRm.bytes,
                recipient.publicKey.rawRepresentation == v.pkRm.bytes,
                bytes(ephemeral.rawRepresentation) == v.skEm.bytes,
                ephemeral.publicKey.rawRepresentation == v.pkEm.bytes,
                bytes(sender?.rawRepresentation) == v.skSm?.bytes, sender?.publicKey.rawRepresentation == v.pkSm?.bytes
            else {
                return all("DeriveKeyPair does not reproduce the keys")
            }
            let psk = v.psk.map { SecureBytes(copying: $0.bytes) }
            var context = try HPKE.deterministicSender(
                mode: mode, to: recipient.publicKey, info: v.info.bytes, sender: sender,
                psk: psk, pskID: v.psk_id?.bytes ?? [], ephemeral: ephemeral)
            let schedule = context.scheduleForTesting
            guard context.encapsulatedKey == v.enc.bytes else { return all("enc differs") }
            guard bytes(schedule.key) == v.key.bytes, bytes(schedule.baseNonce) == v.base_nonce.bytes,
                bytes(schedule.exporterSecret) == v.exporter_secret.bytes
            else { return all("key schedule differs") }
            var receiver = try HPKE.RecipientContext(
                mode: mode, encapsulatedKey: v.enc.bytes, recipient: recipient, info: v.info.bytes,
                sender: sender?.publicKey, psk: psk, pskID: v.psk_id?.bytes ?? [])
            var reasons: [String] = []
            for (index, encryption) in v.encryptions.enumerated() {
                let ct = try context.seal(encryption.pt.bytes, aad: encryption.aad.bytes)
                let pt = try? receiver.open(encryption.ct.bytes, aad: encryption.aad.bytes)
                if ct != encryption.ct.bytes || bytes(pt) != encryption.pt.bytes {
                    reasons.append("encryption \(index) differs")
                }
            }
            for (index, export) in v.exports.enumerated() {
                let value = try context.exportSecret(context: export.exporter_context.bytes, outputByteCount: export.L)
                let other = try receiver.exportSecret(context: export.exporter_context.bytes, outputByteCount: export.L)
                if bytes(value) != export.exported_value.bytes || bytes(other) != export.exported_value.bytes {
                    reasons.append("export \(index) differs")
                }
            }
            return reasons
        } catch {
            return all("rejected (\(error))")
        }
    }
}
