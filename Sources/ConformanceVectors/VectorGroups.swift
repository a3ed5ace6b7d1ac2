import Foundation
import SecretCrypto

// The layouts of RFC 9180's HPKE file and of the project's approval, sanitiser, backup and
// pairing files.

/// One suite entry of RFC 9180's test-vectors.json (the CFRG layout).
public struct HPKEVector: Decodable, Sendable {
    public let mode: UInt8
    public let kem_id: UInt16
    public let kdf_id: UInt16
    public let aead_id: UInt16
    public let info: HexBytes
    public let ikmR: HexBytes
    public let ikmS: HexBytes?
    public let ikmE: HexBytes
    public let skRm: HexBytes
    public let skSm: HexBytes?
    public let skEm: HexBytes
    public let pkRm: HexBytes
    public let pkSm: HexBytes?
    public let pkEm: HexBytes
    public let psk: HexBytes?
    public let psk_id: HexBytes?
    public let enc: HexBytes
    public let shared_secret: HexBytes
    public let key_schedule_context: HexBytes
    public let secret: HexBytes
    public let key: HexBytes
    public let base_nonce: HexBytes
    public let exporter_secret: HexBytes
    public let encryptions: [Encryption]
    public let exports: [Export]

    public struct Encryption: Decodable, Sendable {
        public let aad: HexBytes
        public let ct: HexBytes
        public let nonce: HexBytes
        public let pt: HexBytes
    }

    public struct Export: Decodable, Sendable {
        public let exporter_context: HexBytes
        public let L: Int
        public let exported_value: HexBytes
    }
}

/// `UNBOUND-APPROVAL-V1` (approvals.md): groups of `type` `ApprovalRequestOpen` (open a request
/// body) or `ApprovalDecisionVerify` (accept a signed decision as the asking desktop does).
public struct ApprovalGroup: VectorGroup {
    /// Which of the two checks the group's tests take.
    public enum Kind: String, Decodable, Sendable {
        case requestOpen = "ApprovalRequestOpen"
        case decisionVerify = "ApprovalDecisionVerify"
    }

    public let type: Kind
    public let tests: [Test]

    /// A request and, for a decision test, the decision.
    public struct Test: VectorTest {
        public let tcId: Int
        public let comment: String
        public let result: ExpectedResult
        /// The session secret's text form (`sess_...`).
        public let sessionSecret: String
        public let userId: String
        public let sessionId: String
        public let requestId: String
        public let requesterDeviceId: String
        public let expiresAt: UInt64
        public let generation: UInt32
        /// The request body, standard base64 as stored.
        public let body: String
        /// Expected plaintext (request tests).
        public let tool: String?
        public let summary: String?
        public let detail: String?
        /// Intermediate values of a valid case (hex): `K`, the AAD, the nonce (to re-seal).
        public let key: HexBytes?
        public let aad: HexBytes?
        public let nonce: HexBytes?
        /// Decision tests: the answering device, its Ed25519 key (base64), the decision as
        /// stored (base64), and what a valid one says.
        public let deviceId: String?
        public let signingPublicKey: String?
        public let decisionBody: String?
        public let decisionSignature: String?
        public let verdict: String?
        public let decidedAt: UInt64?
        /// The expected `read` (hex), and the signing seed (hex) to re-sign a valid case.
        public let read: HexBytes?
        public let signingPrivateKey: HexBytes?
    }
}

/// `UNBOUND-QUESTION-V1` (notifications-2.md, "Questions, sealed"): groups of `type`
/// `QuestionOpen`: open an agent's question body with the session secret for the question's
/// fields; valid: exactly `text` (and re-seals with `nonce` to the same body), invalid: refused.
public struct QuestionGroup: VectorGroup {
    public let tests: [Test]

    /// A question body and what must open from it.
    public struct Test: VectorTest {
        public let tcId: Int
        public let comment: String
        public let result: ExpectedResult
        /// The session secret's text form (`sess_...`).
        public let sessionSecret: String
        public let userId: String
        public let sessionId: String
        public let questionId: String
        public let requesterDeviceId: String
        public let expiresAt: UInt64
        public let generation: UInt32
        /// The question body, standard base64 as stored.
        public let body: String
        /// The expected text (valid cases).
        public let text: String?
        /// Intermediate values of a valid case (hex): `K`, the AAD, the nonce (to re-seal).
        public let key: HexBytes?
        public let aad: HexBytes?
        public let nonce: HexBytes?
    }
}

/// `UNBOUND-LOCKSCREEN-SANITISER-V2` (notifications.md): text in, lock-screen text out. Every
/// test is `valid`: ``LockScreenText/sanitised(_:)`` of `input` is exactly `output`.
public struct LockScreenSanitiserGroup: VectorGroup {
    public let tests: [Test]

    /// One input and what must come out.
    public struct Test: VectorTest {
        public let tcId: Int
        public let comment: String
        public let result: ExpectedResult
        public let input: String
        public let output: String
    }
}

/// `UNBOUND-IDENTITY-BACKUP-V1` (recovery.md): groups of `type` `IdentityBackupOpen` (open a
/// stored backup with a recovery key) or `RecoveryKeyParse` (parse a recovery key as typed).
public struct IdentityBackupGroup: VectorGroup {
    /// Which of the two checks the group's tests take.
    public enum Kind: String, Decodable, Sendable {
        case open = "IdentityBackupOpen"
        case parse = "RecoveryKeyParse"
    }

    public let type: Kind
    public let tests: [Test]

    /// A recovery key and, for an open test, a backup and what it is for.
    public struct Test: VectorTest {
        public let tcId: Int
        public let comment: String
        public let result: ExpectedResult
        /// The recovery key's text, as typed.
        public let recoveryKey: String
        public let userId: String?
        /// Standard base64 of the identity's Ed25519 public key.
        public let identityPublicKey: String?
        /// The backup as stored (standard base64).
        public let body: String?
        /// Expected (valid tests): the identity seed (open) or the key's 32 bytes (parse).
        public let expected: HexBytes?
        /// Intermediate values of a valid backup: `K`, the AAD, the nonce (to re-seal).
        public let key: HexBytes?
        public let aad: HexBytes?
        public let nonce: HexBytes?
    }
}

/// `UNBOUND-PAIRING-V1` (trust.md): groups of `type` `DeviceRevocationVerify`,
/// `PairingCodeParse`, `PairingMAC` or `IdentityFingerprint`; each valid test's `expected` is
/// what a verifier must find.
public struct PairingGroup: VectorGroup {
    /// Which check the group's tests take.
    public enum Kind: String, Decodable, Sendable {
        case revocation = "DeviceRevocationVerify"
        case code = "PairingCodeParse"
        case mac = "PairingMAC"
        case fingerprint = "IdentityFingerprint"
    }

    public let type: Kind
    public let tests: [Test]

    /// One case; which fields it has depends on the group.
    public struct Test: VectorTest {
        public let tcId: Int
        public let comment: String
        public let result: ExpectedResult
        public let identityPublicKey: String?
        public let identityPrivateKey: HexBytes?
        public let userId: String?
        public let deviceId: String?
        public let body: String?
        public let signature: String?
        public let revokedAt: UInt64?
        public let code: String?
        public let secret: HexBytes?
        public let inviteId: HexBytes?
        public let x25519PublicKey: String?
        public let ed25519PublicKey: String?
        public let mac: HexBytes?
        public let expected: String?
    }
}
