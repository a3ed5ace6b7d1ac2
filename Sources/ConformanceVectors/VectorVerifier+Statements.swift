import DeviceTrust
import Foundation
import SecretCrypto
import SyncModel

// The checks of the project's signed-statement files: device certificates, pairing, identity
// backups and recovery keys, approval requests and decisions.
extension VectorVerifier {
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

    static func checkQuestion(_ test: QuestionGroup.Test) -> String? {
        let parsed: (QuestionContext, SessionSecret)? = {
            guard let user = UUID(uuidString: test.userId), let session = UUID(uuidString: test.sessionId),
                let question = UUID(uuidString: test.questionId),
                let requester = UUID(uuidString: test.requesterDeviceId),
                let secret = try? SessionSecret(textForm: test.sessionSecret)
            else { return nil }
            return (
                QuestionContext(
                    userID: user, sessionID: session, questionID: question, requesterDeviceID: requester,
                    expiresAt: test.expiresAt, generation: test.generation), secret
            )
        }()
        let opened = parsed.flatMap { try? QuestionCrypto.open(body: test.body, context: $0.0, secret: $0.1) }
        if let reason = judge(test.result, opened.map { $0.text == test.text }) { return "open: " + reason }
        guard test.result == .valid, let (context, secret) = parsed, let content = opened else { return nil }
        if let key = test.key,
            (try? QuestionCrypto.key(secret: secret, questionID: context.questionID, generation: context.generation))?
                .withUnsafeBytes({ Array($0) }) != key.bytes
        {
            return "key: differs"
        }
        if let aad = test.aad, context.aad != aad.bytes { return "aad: differs" }
        if let nonce = test.nonce {
            guard let sealed = try? QuestionCrypto.seal(content, context: context, secret: secret, nonce: nonce.bytes)
            else { return "re-seal: rejected" }
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
}
