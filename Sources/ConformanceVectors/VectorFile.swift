import Foundation
import SecretCrypto

/// What a test expects, in Wycheproof's words.
public enum ExpectedResult: String, Sendable, Codable {
    /// Must succeed and match.
    case valid
    /// Must be rejected, or must not match.
    case invalid
    /// Either outcome passes, but a success must still match.
    case acceptable
}

/// The errors of reading a vector file. A malformed file or an unknown algorithm is an error,
/// never a silent skip.
public struct VectorFileError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: Sendable, Equatable {
        /// The file could not be read.
        case unreadable
        /// The JSON did not have the Wycheproof layout the algorithm needs.
        case malformed
        /// The `algorithm` is not one this verifier knows.
        case unknownAlgorithm(String)
    }

    /// The kind of failure.
    public let code: Code
    /// The file's path as given.
    public let path: String
    /// A short, secret-free explanation.
    public let detail: String

    public var description: String {
        switch code {
        case .unreadable: return "\(path): cannot read file: \(detail)"
        case .malformed: return "\(path): malformed vector file: \(detail)"
        case let .unknownAlgorithm(name): return "\(path): unknown algorithm \"\(name)\""
        }
    }
}

/// A Wycheproof-layout file: `{ "algorithm", "numberOfTests", "testGroups": [{ ..., "tests": [...] }] }`.
public struct VectorFile<Group: Decodable & Sendable>: Decodable, Sendable {
    /// The `algorithm` field.
    public let algorithm: String
    /// The declared number of tests, when present.
    public let numberOfTests: Int?
    /// The groups.
    public let testGroups: [Group]
}

/// The fields every test carries.
public protocol VectorTest: Decodable, Sendable {
    /// The test id.
    var tcId: Int { get }
    /// A human comment.
    var comment: String { get }
    /// The expected result.
    var result: ExpectedResult { get }
}

/// A group of tests sharing parameters.
public protocol VectorGroup: Decodable, Sendable {
    associatedtype Test: VectorTest
    /// The tests.
    var tests: [Test] { get }
}

/// Bytes given as lowercase hex in the JSON.
public struct HexBytes: Decodable, Sendable, Hashable {
    /// The decoded bytes.
    public let bytes: [UInt8]

    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do {
            bytes = try ByteEncoding.bytes(hex: text)
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not hex"))
        }
    }
}

// MARK: - Algorithms

/// `XDH` over curve25519.
public struct XDHGroup: VectorGroup {
    public let curve: String
    public let tests: [Test]

    public struct Test: VectorTest {
        public let tcId: Int
        public let comment: String
        public let result: ExpectedResult
        public let `public`: HexBytes
        public let `private`: HexBytes
        public let shared: HexBytes
    }
}

/// `CHACHA20-POLY1305`.
public struct AEADGroup: VectorGroup {
    public let ivSize: Int
    public let keySize: Int
    public let tagSize: Int
    public let tests: [Test]

    public struct Test: VectorTest {
        public let tcId: Int
        public let comment: String
        public let result: ExpectedResult
        public let key: HexBytes
        public let iv: HexBytes
        public let aad: HexBytes
        public let msg: HexBytes
        public let ct: HexBytes
        public let tag: HexBytes
    }
}

/// `HKDF-SHA-256`.
public struct HKDFGroup: VectorGroup {
    public let keySize: Int
    public let tests: [Test]

    public struct Test: VectorTest {
        public let tcId: Int
        public let comment: String
        public let result: ExpectedResult
        public let ikm: HexBytes
        public let salt: HexBytes
        public let info: HexBytes
        public let size: Int
        public let okm: HexBytes
    }
}

/// `HMACSHA256`.
public struct HMACGroup: VectorGroup {
    public let keySize: Int
    public let tagSize: Int
    public let tests: [Test]

    public struct Test: VectorTest {
        public let tcId: Int
        public let comment: String
        public let result: ExpectedResult
        public let key: HexBytes
        public let msg: HexBytes
        public let tag: HexBytes
    }
}

/// `UNBOUND-SESSION-SECRET-V1`: envelope-v1.md.
public struct EnvelopeGroup: VectorGroup {
    public let tests: [Test]

    public struct Test: VectorTest {
        public let tcId: Int
        public let comment: String
        public let result: ExpectedResult
        public let recipientPrivateKey: HexBytes
        /// UUID text in any case.
        public let sessionId: String
        /// The secret's text form.
        public let plaintext: String
        /// As stored remotely (base64).
        public let ephemeralPublicKey: String
        /// As stored remotely: base64 or a `\x` bytea form.
        public let encryptedSecret: String
        public let ephemeralPrivateKey: HexBytes?
        public let nonce: HexBytes?
    }
}

/// `EDDSA` (Ed25519): the group's `publicKey.pk`, each test's `msg` and `sig`.
public struct EdDSAGroup: VectorGroup {
    public struct PublicKey: Decodable, Sendable {
        public let pk: HexBytes
    }

    public let publicKey: PublicKey
    public let tests: [Test]

    public struct Test: VectorTest {
        public let tcId: Int
        public let comment: String
        public let result: ExpectedResult
        public let msg: HexBytes
        public let sig: HexBytes
    }
}

/// `UNBOUND-SESSION-SECRET-V2`: envelope-v2.md.
public struct EnvelopeV2Group: VectorGroup {
    public let tests: [Test]

    public struct Test: VectorTest {
        public let tcId: Int
        public let comment: String
        public let result: ExpectedResult
        public let recipientPrivateKey: HexBytes
        /// UUID text in any case.
        public let recipientDeviceId: String
        /// Base64 of the 32-byte key the reader resolved for the header's sender.
        public let senderPublicKey: String
        /// UUID text in any case.
        public let sessionId: String
        /// As stored: `v2:` + base64.
        public let ephemeralPublicKey: String
        /// As stored: base64 or a `\x` bytea form.
        public let encryptedSecret: String
        /// The secret's text form (or, for some invalid cases, what was sealed instead).
        public let plaintext: String
        /// When present with `ephemeralPrivateKey`: re-seal and compare both fields.
        public let senderPrivateKey: HexBytes?
        public let ephemeralPrivateKey: HexBytes?
        /// Optional expectations of a valid case (otherwise the header's values are reported).
        public let senderDeviceId: String?
        public let generation: UInt32?
    }
}

/// `UNBOUND-DEVICE-CERTIFICATE-V1` (trust.md): a stored certificate, the identity key it must
/// verify under, and the fields it must yield.
public struct DeviceCertificateGroup: VectorGroup {
    public let tests: [Test]

    public struct Test: VectorTest {
        public let tcId: Int
        public let comment: String
        public let result: ExpectedResult
        /// Base64 of the 32-byte identity public key.
        public let identityPublicKey: String
        /// As stored: standard base64.
        public let body: String
        public let signature: String
        public let userId: String
        public let deviceId: String
        /// Base64 (or hex) of the expected keys.
        public let x25519PublicKey: String
        public let ed25519PublicKey: String
        public let deviceType: String
        public let deviceRole: String
        public let issuedAt: UInt64
        /// When present: the identity's seed (hex), to re-sign a valid case.
        public let identityPrivateKey: HexBytes?

        enum CodingKeys: String, CodingKey {
            case tcId, comment, result, identityPublicKey, body, signature, userId, deviceId, x25519PublicKey,
                ed25519PublicKey
            case deviceType, deviceRole, issuedAt, identityPrivateKey
        }

        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            tcId = try c.decode(Int.self, forKey: .tcId)
            comment = try c.decode(String.self, forKey: .comment)
            result = try c.decode(ExpectedResult.self, forKey: .result)
            identityPublicKey = try c.decode(String.self, forKey: .identityPublicKey)
            body = try c.decode(String.self, forKey: .body)
            signature = try c.decode(String.self, forKey: .signature)
            userId = try c.decode(String.self, forKey: .userId)
            deviceId = try c.decode(String.self, forKey: .deviceId)
            x25519PublicKey = try c.decode(String.self, forKey: .x25519PublicKey)
            ed25519PublicKey = try c.decode(String.self, forKey: .ed25519PublicKey)
            deviceType = try c.decode(String.self, forKey: .deviceType)
            deviceRole = try c.decode(String.self, forKey: .deviceRole)
            // A JSON number, or its decimal text (2^64-1 does not fit a double).
            if let number = try? c.decode(UInt64.self, forKey: .issuedAt) {
                issuedAt = number
            } else if let number = UInt64(try c.decode(String.self, forKey: .issuedAt)) {
                issuedAt = number
            } else {
                throw DecodingError.dataCorruptedError(
                    forKey: .issuedAt, in: c, debugDescription: "issuedAt is not an unsigned 64-bit integer")
            }
            identityPrivateKey = try c.decodeIfPresent(HexBytes.self, forKey: .identityPrivateKey)
        }
    }
}

/// The algorithms `sync-cli vectors verify` knows, by their `algorithm` field (`HPKE` files
/// are a top-level array without one).
public enum VectorAlgorithm: String, CaseIterable, Sendable {
    case xdh = "XDH"
    case chacha20Poly1305 = "CHACHA20-POLY1305"
    case hkdfSHA256 = "HKDF-SHA-256"
    case hmacSHA256 = "HMACSHA256"
    case sessionSecretV1 = "UNBOUND-SESSION-SECRET-V1"
    case sessionSecretV2 = "UNBOUND-SESSION-SECRET-V2"
    case eddsa = "EDDSA"
    case hpke = "HPKE"
    case deviceCertificateV1 = "UNBOUND-DEVICE-CERTIFICATE-V1"
    case approvalV1 = "UNBOUND-APPROVAL-V1"
    case questionV1 = "UNBOUND-QUESTION-V1"
    case lockScreenSanitiserV2 = "UNBOUND-LOCKSCREEN-SANITISER-V2"
    case identityBackupV1 = "UNBOUND-IDENTITY-BACKUP-V1"
    case pairingV1 = "UNBOUND-PAIRING-V1"
    case trustLogV1 = "UNBOUND-TRUST-LOG-V1"
    case questionChoicesV1 = "UNBOUND-QUESTION-CHOICES-V1"
    case agentSessionV1 = "UNBOUND-AGENT-SESSION-V1"
    case remoteRulesV1 = "UNBOUND-REMOTE-RULES-V1"
}

/// Loads vector files; the one loader the CLI and the tests share.
public enum VectorLoader {
    private struct Header: Decodable { let algorithm: String }

    /// Reads `path` and returns its bytes and algorithm.
    ///
    /// - Throws: ``VectorFileError``.
    public static func read(path: String) throws -> (data: Data, algorithm: VectorAlgorithm) {
        let data: Data
        guard FileManager.default.fileExists(atPath: path) else {
            throw VectorFileError(code: .unreadable, path: path, detail: "no such file")
        }
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw VectorFileError(code: .unreadable, path: path, detail: (error as NSError).localizedDescription)
        }
        return (data, try algorithm(of: data, path: path))
    }

    /// The algorithm named in `data`.
    ///
    /// - Throws: ``VectorFileError`` when the JSON has no `algorithm` or names an unknown one.
    public static func algorithm(of data: Data, path: String) throws -> VectorAlgorithm {
        // RFC 9180's layout: a top-level array of suites, no `algorithm` field.
        if let first = data.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }), first == UInt8(ascii: "[") {
            return .hpke
        }
        let header: Header
        do {
            header = try JSONDecoder().decode(Header.self, from: data)
        } catch {
            throw VectorFileError(code: .malformed, path: path, detail: describe(error))
        }
        guard let algorithm = VectorAlgorithm(rawValue: header.algorithm) else {
            throw VectorFileError(code: .unknownAlgorithm(header.algorithm), path: path, detail: "")
        }
        return algorithm
    }

    /// Decodes `data` as a file of `Group`s.
    ///
    /// - Throws: ``VectorFileError`` with code `.malformed`.
    public static func decode<Group: VectorGroup>(
        _ type: Group.Type, from data: Data, path: String
    ) throws -> VectorFile<Group> {
        do {
            return try JSONDecoder().decode(VectorFile<Group>.self, from: data)
        } catch {
            throw VectorFileError(code: .malformed, path: path, detail: describe(error))
        }
    }

    /// A secret-free description of a decoding error: where, not what value.
    static func describe(_ error: Error) -> String {
        guard let error = error as? DecodingError else { return "not valid JSON" }
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        }
        switch error {
        case let .keyNotFound(key, context): return "missing field \"\(key.stringValue)\" at \(path(context))"
        case let .typeMismatch(_, context): return "wrong type at \(path(context))"
        case let .valueNotFound(_, context): return "null value at \(path(context))"
        case let .dataCorrupted(context):
            return context.codingPath.isEmpty ? "not valid JSON" : "\(context.debugDescription) at \(path(context))"
        @unknown default: return "undecodable"
        }
    }
}
