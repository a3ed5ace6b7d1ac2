import Foundation
import SecretCrypto
import Testing

@Suite("SessionSecret")
struct SessionSecretTests {
    @Test("the text form is sess_ + 43 base64url characters and parses back")
    func textForm() throws {
        let secret = SessionSecret()
        let text = secret.revealTextForm()
        #expect(text.count == 48)
        #expect(text.hasPrefix("sess_"))
        #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
        #expect(try SessionSecret(textForm: text) == secret)
    }

    @Test("fresh secrets differ")
    func fresh() {
        #expect(SessionSecret() != SessionSecret())
    }

    static var malformed: [String] {
        let good = SessionSecret().revealTextForm()
        let body = String(good.dropFirst(5))
        return [
            "", "sess_", "hello", "SESS_" + body, "sss_" + body + "A", "sess-" + body,
            String(good.dropLast()), good + "A", good + "=",
            "sess_" + String(body.dropLast()) + "B", // non-canonical last character
            "sess_" + String(body.dropLast()) + "=", // padding character
            "sess_" + String(repeating: "+", count: 43), // standard alphabet
            "sess_" + String(repeating: "A", count: 42) + " ",
            "sess_" + String(repeating: "\u{e9}", count: 21) + "A", // 48 UTF-8 bytes, none base64
            "sess_" + String(repeating: "\u{ff}", count: 21) + "A",
        ]
    }

    @Test("malformed text forms are a typed error", arguments: malformed)
    func malformedText(text: String) {
        #expect(throws: CryptoError.malformedSessionSecret) { try SessionSecret(textForm: text) }
    }

    @Test("wrong raw length is a typed error")
    func rawLength() {
        #expect(throws: CryptoError.invalidKeyLength(expected: 32, actual: 31)) {
            try SessionSecret(rawRepresentation: SecureBytes(randomCount: 31))
        }
    }

    @Test("never prints")
    func redacted() {
        let secret = SessionSecret()
        let text = secret.revealTextForm()
        var dumped = ""
        dump(secret, to: &dumped)
        #expect(!"\(secret)".contains(text.dropFirst(5)))
        #expect(!dumped.contains(text.dropFirst(5)))
    }
}

@Suite("SessionID")
struct SessionIDTests {
    @Test("any case becomes canonical lowercase")
    func canonical() throws {
        let upper = "3F2504E0-4F89-41D3-9A0C-0305E82C3301"
        #expect(try SessionID(upper).canonical == upper.lowercased())
        #expect(try SessionID(upper) == SessionID(upper.lowercased()))
        #expect(SessionID(UUID(uuidString: upper)!).canonical == upper.lowercased())
    }

    @Test(
        "non-UUIDs are a typed error",
        arguments: ["", "not-a-uuid", "3F2504E04F8941D39A0C0305E82C3301", "{3F2504E0-4F89-41D3-9A0C-0305E82C3301}"])
    func invalid(text: String) {
        #expect(throws: CryptoError.invalidSessionID) { try SessionID(text) }
    }
}

@Suite("SecretEnvelope v1")
struct SecretEnvelopeTests {
    let recipient = X25519PrivateKey()
    let sessionID = SessionID(UUID())
    let secret = SessionSecret()

    @Test("seal then open gives the secret back")
    func roundTrip() throws {
        let envelope = try SecretEnvelope.seal(secret, for: recipient.publicKey, sessionID: sessionID)
        #expect(try envelope.open(sessionID: sessionID, using: recipient) == secret)
        #expect(envelope.ephemeralPublicKey.count == 44)
        #expect(try SecretEnvelope.decodeEncryptedSecret(envelope.encryptedSecret).count == 76)
    }

    @Test("every seal uses a fresh ephemeral key and nonce")
    func fresh() throws {
        let a = try SecretEnvelope.seal(secret, for: recipient.publicKey, sessionID: sessionID)
        let b = try SecretEnvelope.seal(secret, for: recipient.publicKey, sessionID: sessionID)
        #expect(a.ephemeralPublicKey != b.ephemeralPublicKey)
        let nonceA = try SecretEnvelope.decodeEncryptedSecret(a.encryptedSecret).prefix(12)
        let nonceB = try SecretEnvelope.decodeEncryptedSecret(b.encryptedSecret).prefix(12)
        #expect(nonceA != nonceB)
    }

    @Test("an uppercase session id salts like the lowercase one")
    func uppercase() throws {
        let upper = try SessionID(sessionID.canonical.uppercased())
        let envelope = try SecretEnvelope.seal(secret, for: recipient.publicKey, sessionID: upper)
        #expect(try envelope.open(sessionID: sessionID, using: recipient) == secret)
    }

    @Test("all three bytea forms of encrypted_secret open")
    func byteaForms() throws {
        let envelope = try SecretEnvelope.seal(secret, for: recipient.publicKey, sessionID: sessionID)
        let raw = try SecretEnvelope.decodeEncryptedSecret(envelope.encryptedSecret)
        let forms = [
            envelope.encryptedSecret,
            "\\x" + ByteEncoding.hex(Array(envelope.encryptedSecret.utf8)),
            "\\x" + ByteEncoding.hex(raw),
        ]
        for form in forms {
            let received = SecretEnvelope(ephemeralPublicKey: envelope.ephemeralPublicKey, encryptedSecret: form)
            #expect(try received.open(sessionID: sessionID, using: recipient) == secret)
            #expect(try received.canonicalEncryptedSecret() == envelope.encryptedSecret)
        }
    }

    @Test("the wrong key, the wrong session, tampering and truncation all fail the same way")
    func failures() throws {
        let envelope = try SecretEnvelope.seal(secret, for: recipient.publicKey, sessionID: sessionID)
        let raw = try SecretEnvelope.decodeEncryptedSecret(envelope.encryptedSecret)
        var cases: [(SecretEnvelope, SessionID, X25519PrivateKey)] = [
            (envelope, sessionID, X25519PrivateKey()),
            (envelope, SessionID(UUID()), recipient),
        ]
        for index in [0, 11, 12, 59, 60, 75] {
            var modified = raw
            modified[index] ^= 1
            cases.append(
                (
                    SecretEnvelope(
                        ephemeralPublicKey: envelope.ephemeralPublicKey, encryptedSecret: ByteEncoding.base64(modified)),
                    sessionID, recipient
                ))
        }
        for count in [0, 12, 27, 28, 75] {
            cases.append(
                (
                    SecretEnvelope(
                        ephemeralPublicKey: envelope.ephemeralPublicKey,
                        encryptedSecret: ByteEncoding.base64(Array(raw.prefix(count)))), sessionID, recipient
                ))
        }
        for ephemeral in [
            "", "AAAA", String(envelope.ephemeralPublicKey.dropLast()),
            ByteEncoding.base64([UInt8](repeating: 0, count: 32)),
        ] {
            cases.append(
                (
                    SecretEnvelope(ephemeralPublicKey: ephemeral, encryptedSecret: envelope.encryptedSecret), sessionID,
                    recipient
                ))
        }
        cases.append(
            (
                SecretEnvelope(ephemeralPublicKey: envelope.ephemeralPublicKey, encryptedSecret: "not base64"),
                sessionID, recipient
            ))
        cases.append(
            (
                SecretEnvelope(ephemeralPublicKey: envelope.ephemeralPublicKey, encryptedSecret: "\\xzz"), sessionID,
                recipient
            ))
        for (envelope, sessionID, key) in cases {
            #expect(throws: CryptoError.authenticationFailure) { try envelope.open(sessionID: sessionID, using: key) }
        }
    }

    @Test("sealing to a low-order key is refused", arguments: X25519Tests.lowOrder)
    func lowOrderRecipient(hex: String) throws {
        let bad = try X25519PublicKey(rawRepresentation: ByteEncoding.bytes(hex: hex))
        #expect(throws: CryptoError.lowOrderPoint) { try SecretEnvelope.seal(secret, for: bad, sessionID: sessionID) }
    }

    @Test("no error description carries key material")
    func descriptions() throws {
        let envelope = try SecretEnvelope.seal(secret, for: recipient.publicKey, sessionID: sessionID)
        let privateBase64 = recipient.rawRepresentation.withUnsafeBytes { ByteEncoding.base64(Array($0)) }
        do {
            _ = try envelope.open(sessionID: SessionID(UUID()), using: recipient)
            Issue.record("opened under the wrong session")
        } catch {
            let text = "\(error) \(String(reflecting: error))"
            #expect(!text.contains(secret.revealTextForm()))
            #expect(!text.contains(privateBase64))
        }
    }
}
