import ConformanceVectors
import DeviceTrust
import Foundation
import LocalStore
import PostgRESTServerCore
import RemoteStore
import SecretCrypto
import SyncModel

/// What one input did to a parser: accepted it, or refused it with the parser's own typed error.
/// Anything else (a crash, an untyped error, a broken invariant) stops the process.
public enum FuzzOutcome: Sendable, Equatable {
    case accepted
    case rejected
}

/// One parser that takes bytes from outside, with the invariants that must hold for every input.
///
/// Each target decodes its input, calls exactly the code the engine (or the test server) runs on
/// such bytes, and checks what must always hold: only the parser's documented error type is
/// thrown, and what is accepted round-trips to the same bytes. A violation calls `fatalError`,
/// which libFuzzer reports as a crash and a corpus replay reports as a failed test.
///
/// Multi-field inputs are lines of text (`\n`), each field in the encoding the engine reads it
/// in (base64, hex, UUID text), so libFuzzer's mutations stay meaningful.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// Envelope v1 open: recipient key (hex), session id, `ephemeral_public_key`,
    /// `encrypted_secret` in any of its wire encodings.
    case envelopeV1 = "envelope-v1"
    /// Envelope v2 open: recipient key (hex), recipient id, session id, `ephemeral_public_key`,
    /// `encrypted_secret`, sender id, sender public key (base64).
    case envelopeV2 = "envelope-v2"
    /// A session secret's text form.
    case secretText = "secret-text"
    /// A device key file's bytes.
    case deviceKeyFile = "device-key-file"
    /// A signing key file's bytes.
    case signingKeyFile = "signing-key-file"
    /// A device certificate body.
    case certificate
    /// A device revocation body.
    case revocation
    /// A stored statement checked under an identity key: identity key (base64), user id,
    /// device id, body (base64), signature (base64), `certificate` or `revocation`.
    case statementVerify = "statement-verify"
    /// A pairing code as typed.
    case pairingCode = "pairing-code"
    /// A PostgREST response body: the first byte picks the shape, the rest is the body.
    case postgrestResponse = "postgrest-response"
    /// A conformance vector file, loaded and verified.
    case vectorFile = "vector-file"
    /// The test server's query grammar: filters, `or`/`and`/`not`, `select`, `order`,
    /// `on_conflict`, `columns`, as one query string.
    case postgrestQuery = "postgrest-query"
    /// The test server's JWT check: the first byte picks a raw token (odd) or a claims set
    /// signed with the server's secret (even).
    case jwt
    /// An approval request's plaintext (approvals.md): the strict JSON reader.
    case approvalContent = "approval-content"
    /// An approval decision statement's bytes.
    case approvalDecision = "approval-decision"
    /// Text on its way to a lock screen (notifications.md): the sanitiser.
    case lockScreenText = "lockscreen-text"
    /// A recovery key as typed (recovery.md).
    case recoveryKey = "recovery-key"
    /// An identity backup: recovery key text, user id, identity public key (base64), body.
    case identityBackup = "identity-backup"
    /// An epoch of the trust log: user id, epoch, then one stored entry per line.
    case trustLog = "trust-log"
    /// A trust-log witness body as stored (base64).
    case trustLogWitness = "trust-log-witness"
    /// A question's plaintext (a text or multiple choices): the strict readers.
    case questionContent = "question-content"
    /// A question answer's signed plaintext (statement and signature).
    case questionAnswer = "question-answer"
    /// An agent's hook input (Claude Code's JSON on stdin).
    case hookInput = "hook-input"

    /// Runs one input through the target.
    ///
    /// - Returns: Whether the parser accepted it.
    public func run(_ data: [UInt8]) -> FuzzOutcome {
        switch self {
        case .envelopeV1: return Self.envelopeV1(Self.lines(data))
        case .envelopeV2: return Self.envelopeV2(Self.lines(data))
        case .secretText: return Self.secretText(String(decoding: data, as: UTF8.self))
        case .deviceKeyFile: return Self.keyFile(data, signing: false)
        case .signingKeyFile: return Self.keyFile(data, signing: true)
        case .certificate: return Self.certificate(data)
        case .revocation: return Self.revocation(data)
        case .statementVerify: return Self.statementVerify(Self.lines(data))
        case .pairingCode: return Self.pairingCode(String(decoding: data, as: UTF8.self))
        case .postgrestResponse: return Self.postgrestResponse(data)
        case .vectorFile: return Self.vectorFile(data)
        case .postgrestQuery: return Self.postgrestQuery(String(decoding: data, as: UTF8.self))
        case .jwt: return Self.jwt(data)
        case .approvalContent: return Self.approvalContent(data)
        case .approvalDecision: return Self.approvalDecision(data)
        case .lockScreenText: return Self.lockScreenText(String(decoding: data, as: UTF8.self))
        case .recoveryKey: return Self.recoveryKey(String(decoding: data, as: UTF8.self))
        case .identityBackup: return Self.identityBackup(Self.lines(data))
        case .trustLog: return Self.trustLog(Self.lines(data))
        case .trustLogWitness: return Self.trustLogWitness(String(decoding: data, as: UTF8.self))
        case .questionContent: return Self.questionContent(data)
        case .questionAnswer: return Self.questionAnswer(data)
        case .hookInput: return Self.hookInput(data)
        }
    }

    // MARK: - Helpers

    static func lines(_ data: [UInt8]) -> [String] {
        data.split(separator: 0x0A, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    }

    static func field(_ fields: [String], _ index: Int) -> String { index < fields.count ? fields[index] : "" }

    /// Stops the process: an invariant broke. The message names the target and the invariant,
    /// never the input (libFuzzer saves that to a file).
    static func violated(_ target: FuzzTarget, _ invariant: String) -> Never {
        fatalError("fuzz target \(target.rawValue): \(invariant)")
    }

    static func privateKey(hex: String) -> X25519PrivateKey {
        let bytes =
            (try? ByteEncoding.bytes(hex: hex)).flatMap { $0.count == 32 ? $0 : nil } ?? Array(repeating: 1, count: 32)
        return (try? X25519PrivateKey(rawRepresentation: SecureBytes(copying: bytes)))!
    }

    // MARK: - Envelopes

    static func envelopeV1(_ fields: [String]) -> FuzzOutcome {
        let key = privateKey(hex: field(fields, 0))
        guard let sessionID = try? SessionID(field(fields, 1)) else { return .rejected }
        let envelope = SecretEnvelope(ephemeralPublicKey: field(fields, 2), encryptedSecret: field(fields, 3))
        // The encoding check alone must also only ever refuse with CryptoError.
        do { _ = try envelope.canonicalEncryptedSecret() } catch {
            if !(error is CryptoError) { violated(.envelopeV1, "canonical form threw \(type(of: error))") }
        }
        do {
            let secret = try envelope.open(sessionID: sessionID, using: key)
            guard (try? SessionSecret(textForm: secret.revealTextForm())) == secret else {
                violated(.envelopeV1, "an opened secret does not round-trip its text form")
            }
            return .accepted
        } catch {
            guard let error = error as? CryptoError, error == .authenticationFailure else {
                violated(.envelopeV1, "open threw something other than authenticationFailure")
            }
            return .rejected
        }
    }

    static func envelopeV2(_ fields: [String]) -> FuzzOutcome {
        let key = privateKey(hex: field(fields, 0))
        guard let recipient = UUID(uuidString: field(fields, 1)), let sessionID = try? SessionID(field(fields, 2))
        else { return .rejected }
        let envelope = SecretEnvelope(ephemeralPublicKey: field(fields, 3), encryptedSecret: field(fields, 4))
        let sender = UUID(uuidString: field(fields, 5))
        let senderKey = try? X25519PublicKey(base64: field(fields, 6))
        do {
            let opened = try envelope.open(sessionID: sessionID, recipientDeviceID: recipient, using: key) { id in
                id == sender ? senderKey : nil
            }
            let isV2 = envelope.ephemeralPublicKey.hasPrefix(SecretEnvelope.version2Prefix)
            guard opened.version == (isV2 ? 2 : 1), opened.authenticated == isV2 else {
                violated(.envelopeV2, "the opened version or authentication does not match the envelope's form")
            }
            if isV2, opened.senderDeviceID != sender || sender == nil {
                violated(.envelopeV2, "a v2 envelope opened under a sender other than the one resolved")
            }
            guard (try? SessionSecret(textForm: opened.secret.revealTextForm())) == opened.secret else {
                violated(.envelopeV2, "an opened secret does not round-trip its text form")
            }
            return .accepted
        } catch {
            guard let error = error as? CryptoError, error == .authenticationFailure || error == .unknownSender else {
                violated(.envelopeV2, "open threw something other than authenticationFailure or unknownSender")
            }
            return .rejected
        }
    }

    static func secretText(_ text: String) -> FuzzOutcome {
        do {
            let secret = try SessionSecret(textForm: text)
            guard secret.revealTextForm() == text else {
                violated(.secretText, "an accepted text form is not canonical")
            }
            return .accepted
        } catch {
            guard let error = error as? CryptoError, error == .malformedSessionSecret else {
                violated(.secretText, "parse threw something other than malformedSessionSecret")
            }
            return .rejected
        }
    }

    // MARK: - Key files

    /// Writes `data` to a scratch key file of its own (`mkstemps`: a fresh name, 0600), loads it,
    /// and removes it. One file per input, not per process: the corpus tests run the two key-file
    /// targets at once, and a path they shared let one target load the other's bytes.
    static func keyFile(_ data: [UInt8], signing: Bool) -> FuzzOutcome {
        let target: FuzzTarget = signing ? .signingKeyFile : .deviceKeyFile
        var template = Array((NSTemporaryDirectory() + "sync-fuzz-XXXXXX.key").utf8CString)
        let descriptor = mkstemps(&template, 4)
        guard descriptor >= 0 else { violated(target, "cannot create the scratch key file") }
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        defer { unlink(path) }
        let written = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        guard written == data.count else { violated(target, "cannot write the scratch key file") }
        do {
            if signing {
                _ = try DeviceKeyFile.loadSigningKey(from: path)
            } else {
                _ = try DeviceKeyFile.load(from: path)
            }
            guard data.count == 32 else { violated(target, "a key file of \(data.count) bytes loaded") }
            return .accepted
        } catch {
            guard let error = error as? LocalStoreError, error.code == .keyFileMalformed else {
                violated(target, "load threw something other than keyFileMalformed")
            }
            return .rejected
        }
    }

    // MARK: - Trust statements

    static func certificate(_ data: [UInt8]) -> FuzzOutcome {
        do {
            let certificate = try DeviceCertificate.parse(data)
            guard (try? certificate.body()) == data else {
                violated(.certificate, "an accepted body does not re-encode to the same bytes")
            }
            return .accepted
        } catch {
            return .rejected
        }
    }

    /// What leaves the sanitiser is at most 200 scalars, holds no hidden character, and no run of
    /// 40 base64 characters survives in it but a commit id (40 hex digits) or a path (a `/`, no
    /// `+`, not all of upper, lower and digits). `.accepted`: the text passed unchanged.
    static func lockScreenText(_ text: String) -> FuzzOutcome {
        let out = LockScreenText.sanitised(text)
        let scalars = Array(out.unicodeScalars)
        guard scalars.count <= LockScreenText.maxLength else { violated(.lockScreenText, "longer than 200 scalars") }
        guard !scalars.contains(where: LockScreenText.isHidden) else {
            violated(.lockScreenText, "a hidden character (Cc, Cf, U+2028, U+2029) left")
        }
        let classes: [ClosedRange<Unicode.Scalar>] = ["A"..."Z", "a"..."z", "0"..."9", "+"..."+", "/"..."/"]
        for run in scalars.split(whereSeparator: { s in !classes.contains { $0.contains(s) } }) where run.count >= 40 {
            let mixed = classes.prefix(3).allSatisfy { range in run.contains(where: range.contains) }
            let kept = run.count == 40 && run.allSatisfy(\.properties.isASCIIHexDigit)
            guard kept || (run.contains("/") && !run.contains("+") && !mixed) else {
                violated(.lockScreenText, "a run of 40 base64 characters survived")
            }
        }
        return out == text ? .accepted : .rejected
    }

    /// An accepted key prints as text that parses back to the same bytes.
    static func recoveryKey(_ text: String) -> FuzzOutcome {
        do {
            let key = try RecoveryKey(text: text)
            guard (try? RecoveryKey(text: key.revealText()))?.bytes == key.bytes,
                (try? RecoveryKey(text: key.revealCompactText()))?.bytes == key.bytes
            else { violated(.recoveryKey, "an accepted key does not round-trip through its text") }
            return .accepted
        } catch RecoveryError.mistyped {
            return .rejected
        } catch {
            violated(.recoveryKey, "an untyped error")
        }
    }

    /// An opened backup's seed has the public key it was opened for, and sealing it again with
    /// the body's nonce gives the same body.
    static func identityBackup(_ fields: [String]) -> FuzzOutcome {
        guard let key = try? RecoveryKey(text: field(fields, 0)), let user = UUID(uuidString: field(fields, 1)),
            let publicKey = try? Ed25519PublicKey(base64: field(fields, 2))
        else { return .rejected }
        let body = field(fields, 3)
        do {
            let identity = try IdentityBackup.open(body, userID: user, identityPublicKey: publicKey, recoveryKey: key)
            let nonce = Array(Data(base64Encoded: body)!)[1..<13]
            guard identity.publicKey == publicKey,
                (try? IdentityBackup.seal(identity, userID: user, recoveryKey: key, nonce: Array(nonce))) == body
            else { violated(.identityBackup, "an opened backup does not seal back to itself") }
            return .accepted
        } catch RecoveryError.doesNotOpen {
            return .rejected
        } catch {
            violated(.identityBackup, "an untyped error")
        }
    }

    static func approvalContent(_ data: [UInt8]) -> FuzzOutcome {
        do {
            let content = try ApprovalContent.decode(data)
            // What is accepted is within the limits, and its canonical form reads back the same.
            guard
                (try? ApprovalContent(tool: content.tool, summary: content.summary, detail: content.detail)) == content,
                (try? ApprovalContent.decode(ApprovalContent.encode(content))) == content
            else { violated(.approvalContent, "an accepted plaintext does not round-trip through its canonical form") }
            return .accepted
        } catch CryptoError.authenticationFailure {
            return .rejected
        } catch {
            violated(.approvalContent, "an untyped error")
        }
    }

    static func approvalDecision(_ data: [UInt8]) -> FuzzOutcome {
        do {
            let decision = try ApprovalDecision.parse(data)
            guard decision.body() == data else {
                violated(.approvalDecision, "an accepted body does not re-encode to the same bytes")
            }
            return .accepted
        } catch {
            return .rejected
        }
    }

    static func revocation(_ data: [UInt8]) -> FuzzOutcome {
        do {
            let revocation = try DeviceRevocation.parse(data)
            guard revocation.body() == data else {
                violated(.revocation, "an accepted body does not re-encode to the same bytes")
            }
            return .accepted
        } catch {
            return .rejected
        }
    }

    static func statementVerify(_ fields: [String]) -> FuzzOutcome {
        guard let identity = try? Ed25519PublicKey(base64: field(fields, 0)),
            let user = UUID(uuidString: field(fields, 1)), let device = UUID(uuidString: field(fields, 2))
        else { return .rejected }
        let statement = SignedStatement(body: field(fields, 3), signature: field(fields, 4))
        do {
            if field(fields, 5) == "revocation" {
                let revocation = try DeviceRevocation.verify(
                    statement, identityKey: identity, userID: user, deviceID: device)
                guard revocation.userID == user, revocation.deviceID == device,
                    ByteEncoding.base64(revocation.body()) == statement.body
                else {
                    violated(.statementVerify, "a verified revocation is not the one filed")
                }
            } else {
                let certificate = try DeviceCertificate.verify(
                    statement, identityKey: identity, userID: user, deviceID: device)
                guard certificate.userID == user, certificate.deviceID == device,
                    (try? certificate.body()).map(ByteEncoding.base64) == statement.body
                else {
                    violated(.statementVerify, "a verified certificate is not the one filed")
                }
            }
            return .accepted
        } catch {
            return .rejected
        }
    }

    static func pairingCode(_ text: String) -> FuzzOutcome {
        do {
            let code = try PairingCode(parsing: text)
            let again = try PairingCode(parsing: code.revealText())
            guard again.inviteID == code.inviteID, again.fingerprint == code.fingerprint,
                again.secret.withUnsafeBytes({ Array($0) }) == code.secret.withUnsafeBytes({ Array($0) })
            else {
                violated(.pairingCode, "a parsed code does not round-trip its text")
            }
            return .accepted
        } catch {
            return .rejected
        }
    }
}
