import Foundation
import Testing

@testable import SecretCrypto

@Suite("Envelope v2 and Ed25519")
struct EnvelopeV2Tests {
    struct Parties {
        let recipient = X25519PrivateKey(), sender = X25519PrivateKey()
        let recipientID = UUID(), senderID = UUID(), sessionID = SessionID(UUID())
        func resolve(_ id: UUID) -> X25519PublicKey? { id == senderID ? sender.publicKey : nil }
    }

    @Test("a v2 envelope opens with its sender, generation and authenticated flag; its wire form is exact")
    func roundTrip() throws {
        let p = Parties()
        let secret = SessionSecret()
        let envelope = try SecretEnvelope.sealV2(
            secret, for: p.recipient.publicKey, recipientDeviceID: p.recipientID, sessionID: p.sessionID,
            sender: p.sender, senderDeviceID: p.senderID, generation: 3)
        #expect(
            envelope.version == 2 && envelope.ephemeralPublicKey.hasPrefix("v2:")
                && envelope.ephemeralPublicKey.count == 47)
        #expect(try SecretEnvelope.decodeEncryptedSecret(envelope.encryptedSecret).count == 85)
        let opened = try envelope.open(
            sessionID: p.sessionID, recipientDeviceID: p.recipientID, using: p.recipient, senderKey: p.resolve)
        #expect(
            opened.secret == secret && opened.senderDeviceID == p.senderID && opened.generation == 3
                && opened.authenticated && opened.version == 2)
    }

    @Test("an unknown sender is its own typed error; every other failure is authenticationFailure")
    func failures() throws {
        let p = Parties()
        let envelope = try SecretEnvelope.sealV2(
            SessionSecret(), for: p.recipient.publicKey, recipientDeviceID: p.recipientID,
            sessionID: p.sessionID, sender: p.sender, senderDeviceID: p.senderID, generation: 1)
        #expect(throws: CryptoError.unknownSender) {
            try envelope.open(sessionID: p.sessionID, recipientDeviceID: p.recipientID, using: p.recipient) { _ in nil }
        }
        #expect(throws: CryptoError.authenticationFailure) {
            try envelope.open(
                sessionID: p.sessionID, recipientDeviceID: UUID(), using: p.recipient, senderKey: p.resolve)
        }
        #expect(throws: CryptoError.authenticationFailure) {
            try envelope.open(
                sessionID: SessionID(UUID()), recipientDeviceID: p.recipientID, using: p.recipient, senderKey: p.resolve
            )
        }
        #expect(throws: CryptoError.authenticationFailure) {
            try envelope.open(sessionID: p.sessionID, recipientDeviceID: p.recipientID, using: p.recipient) { _ in
                X25519PrivateKey().publicKey
            }
        }
        #expect(throws: CryptoError.invalidHPKEInput) {
            _ = try SecretEnvelope.sealV2(
                SessionSecret(), for: p.recipient.publicKey, recipientDeviceID: p.recipientID,
                sessionID: p.sessionID, sender: p.sender, senderDeviceID: p.senderID, generation: 0)
        }
    }

    @Test(
        "envelopes sealed with kept recipient exchanges are byte for byte those sealed one by one; a new sender key starts over"
    )
    func keptRecipientExchanges() throws {
        let p = Parties()
        let second = X25519PrivateKey()
        let recipients = [p.recipient, X25519PrivateKey()]
        var exchanges = RecipientExchanges()
        for index in 0..<8 {
            let sender = index < 4 ? p.sender : second
            let recipient = recipients[index % 2]
            // With the same ephemeral key, the kept exchange gives exactly the envelope computed alone.
            let ephemeral = X25519PrivateKey()
            let plaintext = Array(SessionSecret().revealTextForm().utf8)
            let exchange = try exchanges.exchange(of: sender, with: recipient.publicKey)
            let kept = try plaintext.withUnsafeBytes {
                try SecretEnvelope.sealV2(
                    plaintext: $0, recipient: recipient.publicKey, recipientDeviceID: p.recipientID,
                    sessionID: p.sessionID, sender: sender, senderDeviceID: p.senderID, generation: 2,
                    ephemeral: ephemeral, staticExchange: exchange)
            }
            let alone = try SecretEnvelope.sealV2Deterministically(
                plaintext: plaintext, for: recipient.publicKey, recipientDeviceID: p.recipientID,
                sessionID: p.sessionID, sender: sender, senderDeviceID: p.senderID, generation: 2,
                ephemeral: ephemeral)
            #expect(kept == alone)
            // The public call opens under the sender that sealed it, and under no other.
            let secret = SessionSecret()
            let sealed = try SecretEnvelope.sealV2(
                secret, for: recipient.publicKey, recipientDeviceID: p.recipientID, sessionID: p.sessionID,
                sender: sender, senderDeviceID: p.senderID, generation: 2, exchanges: &exchanges)
            let opened = try sealed.open(sessionID: p.sessionID, recipientDeviceID: p.recipientID, using: recipient) {
                _ in sender.publicKey
            }
            #expect(opened.secret == secret && opened.authenticated)
            let other = sender.publicKey == p.sender.publicKey ? second.publicKey : p.sender.publicKey
            #expect(throws: CryptoError.authenticationFailure) {
                try sealed.open(sessionID: p.sessionID, recipientDeviceID: p.recipientID, using: recipient) { _ in
                    other
                }
            }
        }
        // One exchange per recipient of the current sender: the first sender's were dropped.
        #expect(exchanges.count == 2)
    }

    @Test("the info's ids are the canonical lowercase text, byte for byte")
    func infoText() throws {
        for uuid in [UUID(), UUID(), UUID(uuidString: "00000000-0000-0000-0000-000000000000")!] {
            var bytes: [UInt8] = []
            SecretEnvelope.appendLowercaseText(of: uuid, to: &bytes)
            #expect(bytes == Array(uuid.uuidString.lowercased().utf8))
        }
    }

    @Test(
        "sealing v2 to a low-order key with kept exchanges is refused and keeps nothing",
        arguments: X25519Tests.lowOrder)
    func keptExchangesRefuseLowOrder(hex: String) throws {
        let p = Parties()
        let bad = try X25519PublicKey(rawRepresentation: ByteEncoding.bytes(hex: hex))
        var exchanges = RecipientExchanges()
        #expect(throws: CryptoError.lowOrderPoint) {
            try SecretEnvelope.sealV2(
                SessionSecret(), for: bad, recipientDeviceID: p.recipientID, sessionID: p.sessionID, sender: p.sender,
                senderDeviceID: p.senderID, generation: 1, exchanges: &exchanges)
        }
        #expect(exchanges.count == 0)
    }

    @Test(
        "envelopes opened with kept sender exchanges open exactly as one by one: two senders, a forged one, a wrong key, another recipient"
    )
    func keptExchanges() throws {
        let p = Parties()
        let second = X25519PrivateKey(), secondID = UUID()
        let keys = [p.senderID: p.sender.publicKey, secondID: second.publicKey]
        var exchanges = SenderExchanges()
        for index in 0..<6 {
            let (sender, senderID) = index.isMultiple(of: 2) ? (p.sender, p.senderID) : (second, secondID)
            let secret = SessionSecret()
            let envelope = try SecretEnvelope.sealV2(
                secret, for: p.recipient.publicKey, recipientDeviceID: p.recipientID, sessionID: p.sessionID,
                sender: sender, senderDeviceID: senderID, generation: UInt32(index + 1))
            let kept = try envelope.open(
                sessionID: p.sessionID, recipientDeviceID: p.recipientID, using: p.recipient,
                senderKey: { keys[$0] }, exchanges: &exchanges)
            let alone = try envelope.open(sessionID: p.sessionID, recipientDeviceID: p.recipientID, using: p.recipient)
            { keys[$0] }
            #expect(
                kept.secret == alone.secret && kept.generation == alone.generation
                    && kept.senderDeviceID == alone.senderDeviceID
                    && kept.authenticated == alone.authenticated)
            #expect(kept.secret == secret && kept.senderDeviceID == senderID && kept.generation == UInt32(index + 1))
            // A key the sender did not seal with fails, though the other's exchange is kept.
            #expect(throws: CryptoError.authenticationFailure) {
                try envelope.open(
                    sessionID: p.sessionID, recipientDeviceID: p.recipientID, using: p.recipient,
                    senderKey: { keys[$0] == p.sender.publicKey ? second.publicKey : p.sender.publicKey },
                    exchanges: &exchanges)
            }
        }
        // An envelope a third device sealed, claiming the first sender's id: the kept exchange is
        // the first sender's, so it fails.
        let forged = try SecretEnvelope.sealV2(
            SessionSecret(), for: p.recipient.publicKey, recipientDeviceID: p.recipientID,
            sessionID: p.sessionID, sender: X25519PrivateKey(), senderDeviceID: p.senderID, generation: 1)
        #expect(throws: CryptoError.authenticationFailure) {
            try forged.open(
                sessionID: p.sessionID, recipientDeviceID: p.recipientID, using: p.recipient, senderKey: { keys[$0] },
                exchanges: &exchanges)
        }
        // The same exchanges used with another recipient key start over instead of reusing the first's.
        let other = X25519PrivateKey()
        let toOther = try SecretEnvelope.sealV2(
            SessionSecret(), for: other.publicKey, recipientDeviceID: p.recipientID, sessionID: p.sessionID,
            sender: p.sender, senderDeviceID: p.senderID, generation: 1)
        #expect(
            try toOther.open(
                sessionID: p.sessionID, recipientDeviceID: p.recipientID, using: other, senderKey: { keys[$0] },
                exchanges: &exchanges
            ).authenticated)
        // A low-order sender key is refused, kept exchanges or not.
        let lowOrder = try X25519PublicKey(rawRepresentation: [UInt8](repeating: 0, count: 32))
        #expect(throws: CryptoError.authenticationFailure) {
            try toOther.open(
                sessionID: p.sessionID, recipientDeviceID: p.recipientID, using: other, senderKey: { _ in lowOrder },
                exchanges: &exchanges)
        }
    }

    @Test("a v1 envelope opened through the same call is unauthenticated, generation 1")
    func version1() throws {
        let p = Parties()
        let secret = SessionSecret()
        let envelope = try SecretEnvelope.seal(secret, for: p.recipient.publicKey, sessionID: p.sessionID)
        let opened = try envelope.open(sessionID: p.sessionID, recipientDeviceID: p.recipientID, using: p.recipient) {
            _ in nil
        }
        #expect(
            opened.secret == secret && !opened.authenticated && opened.generation == 1 && opened.senderDeviceID == nil)
    }

    @Test("HPKE modes refuse inputs that do not fit them")
    func hpkeInputs() throws {
        let r = X25519PrivateKey(), s = X25519PrivateKey()
        #expect(throws: CryptoError.invalidHPKEInput) {
            _ = try HPKE.seal(mode: .auth, to: r.publicKey, info: [UInt8](), plaintext: [UInt8]())
        }
        #expect(throws: CryptoError.invalidHPKEInput) {
            _ = try HPKE.seal(mode: .base, to: r.publicKey, info: [UInt8](), plaintext: [UInt8](), sender: s)
        }
        #expect(throws: CryptoError.invalidHPKEInput) {
            _ = try HPKE.seal(
                mode: .psk, to: r.publicKey, info: [UInt8](), plaintext: [UInt8](), psk: SecureBytes(randomCount: 32))
        }
        let (enc, ct) = try HPKE.seal(
            mode: .authPSK, to: r.publicKey, info: [1, 2], aad: [3], plaintext: [4, 5, 6], sender: s,
            psk: SecureBytes(copying: [UInt8](repeating: 9, count: 32)), pskID: [7])
        let pt = try HPKE.open(
            mode: .authPSK, encapsulatedKey: enc, ciphertext: ct, recipient: r, info: [1, 2], aad: [3],
            sender: s.publicKey,
            psk: SecureBytes(copying: [UInt8](repeating: 9, count: 32)), pskID: [7])
        #expect(pt.withUnsafeBytes { Array($0) } == [4, 5, 6])
        #expect(throws: CryptoError.authenticationFailure) {
            _ = try HPKE.open(
                mode: .authPSK, encapsulatedKey: enc, ciphertext: ct, recipient: r, info: [1, 2], aad: [3],
                sender: s.publicKey,
                psk: SecureBytes(copying: [UInt8](repeating: 8, count: 32)), pskID: [7])
        }
    }

    @Test("Ed25519 signs, verifies, refuses wrong lengths and modified messages, and never prints its seed")
    func ed25519() throws {
        let key = Ed25519PrivateKey()
        let message = Array("statement".utf8)
        let signature = key.signature(for: message)
        #expect(signature.count == 64 && key.publicKey.isValidSignature(signature, for: message))
        #expect(!key.publicKey.isValidSignature(signature, for: Array("statemenT".utf8)))
        #expect(!key.publicKey.isValidSignature(Array(signature.prefix(63)), for: message))
        #expect(!key.publicKey.isValidSignature(signature + [0], for: message))
        #expect(throws: CryptoError.invalidKeyLength(expected: 32, actual: 31)) {
            _ = try Ed25519PublicKey(rawRepresentation: [UInt8](repeating: 1, count: 31))
        }
        #expect(throws: CryptoError.invalidKeyLength(expected: 32, actual: 33)) {
            _ = try Ed25519PrivateKey(seed: SecureBytes(randomCount: 33))
        }
        let again = try Ed25519PrivateKey(seed: key.seedRepresentation)
        #expect(again.publicKey == key.publicKey && again.signature(for: message) == signature)
        #expect("\(key)".contains("redacted") && !String(reflecting: key).contains(key.publicKey.base64.prefix(8)))
    }
}
