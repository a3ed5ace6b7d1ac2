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
        case .lockScreenSanitiserV1:
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

    /// Applies Wycheproof's result semantics to an operation's outcome.
    ///
    /// - Parameters:
    ///   - result: The expectation.
    ///   - outcome: `nil` when the operation was rejected, else whether its output matched.
    /// Whether a statement signed again here matches the vector's: the same signature where
    /// Ed25519 signing is deterministic (libsodium, BoringSSL); where it is not (CryptoKit
    /// randomizes), the same body and a signature that verifies under `key`.
    static func sameSigning(_ signed: SignedStatement, as expected: SignedStatement, key: Ed25519PublicKey) -> Bool {
        guard signed.body == expected.body else { return false }
        if CryptoBackend.current.signsDeterministically { return signed.signature == expected.signature }
        guard let body = try? ByteEncoding.bytes(base64: signed.body),
            let signature = try? ByteEncoding.bytes(base64: signed.signature)
        else { return false }
        return key.isValidSignature(signature, for: body)
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

    /// A 32-byte key given as base64 or as hex.
    static func keyBytes(_ text: String) -> [UInt8]? {
        if let bytes = try? ByteEncoding.bytes(base64: text), bytes.count == 32 { return bytes }
        if let bytes = try? ByteEncoding.bytes(hex: text), bytes.count == 32 { return bytes }
        return nil
    }

    static func check(_ test: DeviceCertificateGroup.Test) -> String? {
        let expected: DeviceCertificate? = {
            guard let user = UUID(uuidString: test.userId), let device = UUID(uuidString: test.deviceId),
                let x = keyBytes(test.x25519PublicKey).flatMap({ try? X25519PublicKey(rawRepresentation: $0) }),
                let ed = keyBytes(test.ed25519PublicKey).flatMap({ try? Ed25519PublicKey(rawRepresentation: $0) })
            else { return nil }
            return DeviceCertificate(
                userID: user, deviceID: device, x25519PublicKey: x, ed25519PublicKey: ed,
                deviceType: test.deviceType, deviceRole: test.deviceRole, issuedAt: test.issuedAt)
        }()
        let outcome: Bool? = {
            guard let expected,
                let identity = keyBytes(test.identityPublicKey).flatMap({ try? Ed25519PublicKey(rawRepresentation: $0) }
                ),
                let certificate = try? DeviceCertificate.verify(
                    SignedStatement(body: test.body, signature: test.signature), identityKey: identity,
                    userID: expected.userID, deviceID: expected.deviceID,
                    x25519PublicKey: expected.x25519PublicKey)
            else { return nil }
            return certificate == expected
        }()
        if let reason = judge(test.result, outcome) { return "verify: " + reason }
        guard test.result == .valid, let seed = test.identityPrivateKey, let expected else { return nil }
        guard let key = try? Ed25519PrivateKey(seed: SecureBytes(copying: seed.bytes)),
            let signed = try? expected.signed(by: key)
        else {
            return "re-sign: rejected"
        }
        guard signed.body == test.body else { return "re-sign: body differs" }
        guard sameSigning(signed, as: SignedStatement(body: test.body, signature: test.signature), key: key.publicKey)
        else { return "re-sign: signature differs" }
        return nil
    }

    /// The request's context and secret, or `nil` when a field does not parse.
    static func approvalContext(_ test: ApprovalGroup.Test) -> (ApprovalRequestContext, SessionSecret)? {
        guard let user = UUID(uuidString: test.userId), let session = UUID(uuidString: test.sessionId),
            let request = UUID(uuidString: test.requestId), let requester = UUID(uuidString: test.requesterDeviceId),
            let secret = try? SessionSecret(textForm: test.sessionSecret)
        else { return nil }
        return (
            ApprovalRequestContext(
                userID: user, sessionID: session, requestID: request, requesterDeviceID: requester,
                expiresAt: test.expiresAt, generation: test.generation), secret
        )
    }

    static func checkPairing(_ kind: PairingGroup.Kind, _ test: PairingGroup.Test) -> String? {
        let user = test.userId.flatMap(UUID.init(uuidString:))
        let device = test.deviceId.flatMap(UUID.init(uuidString:))
        switch kind {
        case .revocation:
            guard let publicText = test.identityPublicKey, let identity = try? Ed25519PublicKey(base64: publicText),
                let user, let device, let body = test.body, let signature = test.signature
            else { return judge(test.result, nil) }
            let statement = SignedStatement(body: body, signature: signature)
            let verified = try? DeviceRevocation.verify(
                statement, identityKey: identity, userID: user, deviceID: device)
            let outcome = verified.map {
                ByteEncoding.hex($0.x25519PublicKey.rawRepresentation) == test.expected
                    && $0.revokedAt == test.revokedAt
            }
            if let reason = judge(test.result, outcome) { return reason }
            if test.result == .valid, let seed = test.identityPrivateKey, let verified,
                (try? Ed25519PrivateKey(seed: SecureBytes(copying: seed.bytes))).map({
                    sameSigning(verified.signed(by: $0), as: statement, key: $0.publicKey)
                }) != true
            {
                return "signing again does not give the statement"
            }
            return nil
        case .code:
            let parsed = try? PairingCode(parsing: test.code ?? "")
            let outcome = parsed.map { code in
                code.secret.withUnsafeBytes { ByteEncoding.hex(code.inviteID + Array($0) + code.fingerprint.bytes) }
                    == test.expected
            }
            return judge(test.result, outcome)
        case .mac:
            guard let secret = test.secret, let invite = test.inviteId, let user, let device,
                let x25519 = test.x25519PublicKey.flatMap({ try? X25519PublicKey(base64: $0) }),
                let ed25519 = test.ed25519PublicKey.flatMap({ try? Ed25519PublicKey(base64: $0) }), let mac = test.mac
            else { return judge(test.result, nil) }
            let key = SecureBytes(copying: secret.bytes)
            let accepted = PairingMAC.isValid(
                mac.bytes, secret: key, inviteID: invite.bytes, userID: user, deviceID: device,
                x25519PublicKey: x25519, ed25519PublicKey: ed25519)
            let computed = ByteEncoding.hex(
                PairingMAC.mac(
                    secret: key, inviteID: invite.bytes, userID: user, deviceID: device, x25519PublicKey: x25519,
                    ed25519PublicKey: ed25519))
            return judge(test.result, accepted ? computed == test.expected : nil)
        case .fingerprint:
            let key = test.identityPublicKey.flatMap { try? Ed25519PublicKey(base64: $0) }
            return judge(test.result, key.map { IdentityFingerprint($0).description == test.expected })
        }
    }

    static func checkBackup(_ test: IdentityBackupGroup.Test) -> String? {
        guard let recoveryKey = try? RecoveryKey(text: test.recoveryKey), let userText = test.userId,
            let user = UUID(uuidString: userText), let publicText = test.identityPublicKey,
            let publicKey = try? Ed25519PublicKey(base64: publicText), let body = test.body
        else { return judge(test.result, nil) }
        let opened = try? IdentityBackup.open(
            body, userID: user, identityPublicKey: publicKey, recoveryKey: recoveryKey)
        let outcome = opened.map { key in
            key.seedRepresentation.withUnsafeBytes { Array($0) } == test.expected?.bytes
        }
        if let reason = judge(test.result, outcome) { return reason }
        guard test.result == .valid else { return nil }
        if let expected = test.key,
            (try? IdentityBackup.key(recoveryKey: recoveryKey, userID: user))?.withUnsafeBytes({ Array($0) })
                != expected.bytes
        {
            return "K does not match"
        }
        if let expected = test.aad, IdentityBackup.aad(userID: user, identityPublicKey: publicKey) != expected.bytes {
            return "the AAD does not match"
        }
        if let nonce = test.nonce, let opened,
            (try? IdentityBackup.seal(opened, userID: user, recoveryKey: recoveryKey, nonce: nonce.bytes)) != body
        {
            return "sealing again does not give the body"
        }
        return nil
    }

    static func checkRecoveryKey(_ test: IdentityBackupGroup.Test) -> String? {
        let parsed = try? RecoveryKey(text: test.recoveryKey)
        let outcome = parsed.map { $0.bytes.withUnsafeBytes { Array($0) } == test.expected?.bytes }
        if let reason = judge(test.result, outcome) { return reason }
        if test.result == .valid, let parsed, (try? RecoveryKey(text: parsed.revealText()))?.bytes != parsed.bytes {
            return "the key's own text does not parse back"
        }
        return nil
    }

    static func checkRequest(_ test: ApprovalGroup.Test) -> String? {
        let parsed = approvalContext(test)
        let opened = parsed.flatMap { try? ApprovalCrypto.open(body: test.body, context: $0.0, secret: $0.1) }
        let outcome: Bool? = opened.map {
            $0.tool == test.tool && $0.summary == test.summary && $0.detail == (test.detail ?? "")
        }
        if let reason = judge(test.result, outcome) { return "open: " + reason }
        guard test.result == .valid, let (context, secret) = parsed, let content = opened else { return nil }
        if let key = test.key,
            (try? ApprovalCrypto.key(secret: secret, requestID: context.requestID, generation: context.generation))?
                .withUnsafeBytes({ Array($0) }) != key.bytes
        {
            return "key: differs"
        }
        if let aad = test.aad, context.aad != aad.bytes { return "aad: differs" }
        if let nonce = test.nonce {
            guard let sealed = try? ApprovalCrypto.seal(content, context: context, secret: secret, nonce: nonce.bytes)
            else {
                return "re-seal: rejected"
            }
            guard ByteEncoding.base64(sealed) == test.body else { return "re-seal: body differs" }
        }
        return nil
    }

    static func checkDecision(_ test: ApprovalGroup.Test) -> String? {
        let parsed = approvalContext(test)
        let decision: ApprovalDecision? = {
            guard let (context, secret) = parsed, let device = test.deviceId.flatMap(UUID.init(uuidString:)),
                let key = test.signingPublicKey.flatMap(keyBytes).flatMap({
                    try? Ed25519PublicKey(rawRepresentation: $0)
                }),
                let body = test.decisionBody, let signature = test.decisionSignature,
                let requestBody = try? ByteEncoding.bytes(base64: test.body),
                let read = try? ApprovalCrypto.readProof(
                    secret: secret, requestID: context.requestID, generation: context.generation)
            else { return nil }
            let expected = ApprovalDecision.Expectation(
                userID: context.userID, sessionID: context.sessionID, requestID: context.requestID,
                requesterDeviceID: context.requesterDeviceID, expiresAt: context.expiresAt, body: requestBody,
                read: read)
            return try? ApprovalDecision.accept(
                SignedStatement(body: body, signature: signature), deviceID: device, signingKey: key,
                expecting: expected)
        }()
        let outcome: Bool? = decision.map {
            ($0.verdict == .approve ? "approve" : "deny") == test.verdict && $0.decidedAt == test.decidedAt
        }
        if let reason = judge(test.result, outcome) { return "accept: " + reason }
        guard test.result == .valid, let decision else { return nil }
        if let read = test.read, decision.read != read.bytes { return "read: differs" }
        if let seed = test.signingPrivateKey {
            guard let key = try? Ed25519PrivateKey(seed: SecureBytes(copying: seed.bytes)) else {
                return "re-sign: rejected"
            }
            let expected = SignedStatement(body: test.decisionBody ?? "", signature: test.decisionSignature ?? "")
            guard sameSigning(decision.signed(by: key), as: expected, key: key.publicKey) else {
                return "re-sign: differs"
            }
        }
        return nil
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
