import DeviceTrust
import Foundation
import SecretCrypto
import Testing

@Suite("Pairing codes, MACs, fingerprints and QR codes")
struct PairingTests {
    @Test("base32 is RFC 4648's (test vectors of section 10, without padding)")
    func base32() {
        let cases = [
            "": "", "f": "MY", "fo": "MZXQ", "foo": "MZXW6", "foob": "MZXW6YQ", "fooba": "MZXW6YTB",
            "foobar": "MZXW6YTBOI",
        ]
        for (plain, encoded) in cases {
            #expect(Base32.encode(Array(plain.utf8)) == encoded)
            #expect(Base32.decode(encoded) == Array(plain.utf8))
        }
        #expect(Base32.decode("MZXW6YTBO1") == nil) // '1' is not in the alphabet
        #expect(Base32.decode("MZXW6YTBOJ") == nil) // non-zero leftover bits
    }

    @Test(
        "a code round-trips through its text in any case, with spaces or hyphens, and never shows P in its description")
    func codeText() throws {
        let key = Ed25519PrivateKey()
        let code = try PairingCode(
            inviteID: Array(0..<8), secret: SecureBytes(randomCount: 16),
            fingerprint: IdentityFingerprint(key.publicKey))
        let text = code.revealText()
        #expect(text.count == 68 + 16 && text.split(separator: "-").count == 17)
        #expect(text.split(separator: "-").allSatisfy { $0.count == 4 })
        for typed in [
            text, text.lowercased(), text.replacingOccurrences(of: "-", with: " "),
            text.replacingOccurrences(of: "-", with: ""),
        ] {
            let parsed = try PairingCode(parsing: typed)
            #expect(
                parsed.inviteID == code.inviteID && parsed.secret == code.secret
                    && parsed.fingerprint == code.fingerprint)
        }
        #expect(!code.description.contains(String(text.prefix(20)).replacingOccurrences(of: "-", with: "")))
        #expect(code.inviteIDText == "0001020304050607")
    }

    @Test(
        "malformed codes are refused with a typed error",
        arguments: [
            "", "ABCD", String(repeating: "A", count: 67), String(repeating: "A", count: 69),
            String(repeating: "A", count: 67) + "1", String(repeating: "A", count: 67) + "!",
            String(repeating: "A", count: 64), String(repeating: "A", count: 67) + "\u{0130}",
        ])
    func malformedCode(text: String) {
        #expect { try PairingCode(parsing: text) } throws: { ($0 as? DeviceTrustError)?.code == .malformedCode }
    }

    @Test("every single mistyped character and every swap of two neighbours is refused offline, as mistyped")
    func everyTypoIsRefused() throws {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        for _ in 0..<4 {
            let code = try PairingCode(
                inviteID: (0..<8).map { _ in UInt8.random(in: 0...255) }, secret: SecureBytes(randomCount: 16),
                fingerprint: IdentityFingerprint(Ed25519PrivateKey().publicKey))
            let letters = Array(code.revealText().filter { $0 != "-" })
            #expect(letters.count == PairingCode.textLength)
            var refused = 0
            for index in letters.indices {
                for replacement in alphabet where replacement != letters[index] {
                    var typo = letters
                    typo[index] = replacement
                    #expect {
                        try PairingCode(parsing: String(typo))
                    } throws: { [.mistypedCode, .malformedCode].contains(($0 as? DeviceTrustError)?.code) }
                    refused += 1
                }
                guard index + 1 < letters.count, letters[index] != letters[index + 1] else { continue }
                var swapped = letters
                swapped.swapAt(index, index + 1)
                #expect { try PairingCode(parsing: String(swapped)) } throws: {
                    ($0 as? DeviceTrustError)?.code == .mistypedCode
                }
            }
            #expect(refused == 68 * 31)
        }
    }

    @Test("the MAC binds every field: another secret, invite, user, device or key does not verify")
    func mac() throws {
        let secret = SecureBytes(randomCount: 16), invite: [UInt8] = Array(repeating: 9, count: 8)
        let user = UUID(), device = UUID(), x = X25519PrivateKey().publicKey, ed = Ed25519PrivateKey().publicKey
        let tag = PairingMAC.mac(
            secret: secret, inviteID: invite, userID: user, deviceID: device, x25519PublicKey: x, ed25519PublicKey: ed)
        #expect(tag.count == 32)
        #expect(
            PairingMAC.isValid(
                tag, secret: secret, inviteID: invite, userID: user, deviceID: device, x25519PublicKey: x,
                ed25519PublicKey: ed))
        #expect(
            !PairingMAC.isValid(
                tag, secret: SecureBytes(randomCount: 16), inviteID: invite, userID: user, deviceID: device,
                x25519PublicKey: x, ed25519PublicKey: ed))
        #expect(
            !PairingMAC.isValid(
                tag, secret: secret, inviteID: Array(repeating: 8, count: 8), userID: user, deviceID: device,
                x25519PublicKey: x, ed25519PublicKey: ed))
        #expect(
            !PairingMAC.isValid(
                tag, secret: secret, inviteID: invite, userID: UUID(), deviceID: device, x25519PublicKey: x,
                ed25519PublicKey: ed))
        #expect(
            !PairingMAC.isValid(
                tag, secret: secret, inviteID: invite, userID: user, deviceID: UUID(), x25519PublicKey: x,
                ed25519PublicKey: ed))
        #expect(
            !PairingMAC.isValid(
                tag, secret: secret, inviteID: invite, userID: user, deviceID: device,
                x25519PublicKey: X25519PrivateKey().publicKey, ed25519PublicKey: ed))
        #expect(
            !PairingMAC.isValid(
                tag, secret: secret, inviteID: invite, userID: user, deviceID: device, x25519PublicKey: x,
                ed25519PublicKey: Ed25519PrivateKey().publicKey))
        #expect(
            !PairingMAC.isValid(
                Array(tag.prefix(16)), secret: secret, inviteID: invite, userID: user, deviceID: device,
                x25519PublicKey: x, ed25519PublicKey: ed))
    }

    @Test("the MAC is HMAC-SHA256 under HKDF-SHA256(P, invite_id, \"unbound-pairing-v1\") of the exact message")
    func macConstruction() throws {
        let secret = SecureBytes(copying: Array(0..<16)), invite: [UInt8] = Array(100..<108)
        let user = UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!,
            device = UUID(uuidString: "00000000-0000-4000-8000-000000000001")!
        let x = try X25519PublicKey(rawRepresentation: [UInt8](repeating: 9, count: 32)),
            ed = try Ed25519PublicKey(rawRepresentation: [UInt8](repeating: 7, count: 32))
        let key = try HKDFSHA256.deriveKey(
            inputKeyMaterial: secret, salt: invite, info: Array("unbound-pairing-v1".utf8), outputByteCount: 32)
        let message =
            Array("unbound-pairing-request-v1".utf8) + [0] + Array("6f9619ff-8b86-d011-b42d-00c04fc964ff".utf8) + [0]
            + Array("00000000-0000-4000-8000-000000000001".utf8) + [0] + [UInt8](repeating: 9, count: 32)
            + [UInt8](repeating: 7, count: 32)
        #expect(
            PairingMAC.mac(
                secret: secret, inviteID: invite, userID: user, deviceID: device, x25519PublicKey: x,
                ed25519PublicKey: ed)
                == HMACSHA256.authenticationCode(for: message, using: key))
    }

    @Test("the fingerprint is the first 16 bytes of SHA-256 of the key, as 8 groups of 4 hex digits")
    func fingerprint() throws {
        let key = try Ed25519PublicKey(rawRepresentation: [UInt8](repeating: 0, count: 32))
        // SHA-256 of 32 zero bytes is 66687aadf862bd776c8fc18b8e9f8e20...
        #expect(IdentityFingerprint(key).description == "6668 7aad f862 bd77 6c8f c18b 8e9f 8e20")
    }
}

@Suite("Signed statements")
struct StatementTests {
    static func certificate() throws -> DeviceCertificate {
        DeviceCertificate(
            userID: UUID(), deviceID: UUID(), x25519PublicKey: X25519PrivateKey().publicKey,
            ed25519PublicKey: Ed25519PrivateKey().publicKey,
            deviceType: "ios-phone", deviceRole: "trusted_executor", issuedAt: 1_800_000_000)
    }

    @Test("a certificate's body is trust.md's layout, byte for byte")
    func layout() throws {
        let c = try Self.certificate()
        let body = try c.body()
        var expected =
            Array("unbound-device-certificate-v1".utf8) + [0] + Array(c.userID.uuidString.lowercased().utf8) + [0]
        expected +=
            Array(c.deviceID.uuidString.lowercased().utf8) + [0] + c.x25519PublicKey.rawRepresentation
            + c.ed25519PublicKey.rawRepresentation
        expected +=
            [9] + Array("ios-phone".utf8) + [16] + Array("trusted_executor".utf8) + [
                0, 0, 0, 0, 0x6B, 0x49, 0xD2, 0x00,
            ]
        #expect(body == expected)
        #expect(try DeviceCertificate.parse(body) == c)
    }

    @Test("a revocation's body is trust.md's layout, and round-trips")
    func revocation() throws {
        let r = DeviceRevocation(
            userID: UUID(), deviceID: UUID(), x25519PublicKey: X25519PrivateKey().publicKey, revokedAt: 258)
        let expected =
            Array("unbound-device-revocation-v1".utf8) + [0] + Array(r.userID.uuidString.lowercased().utf8) + [0]
            + Array(r.deviceID.uuidString.lowercased().utf8) + [0] + r.x25519PublicKey.rawRepresentation + [
                0, 0, 0, 0, 0, 0, 1, 2,
            ]
        #expect(r.body() == expected)
        #expect(try DeviceRevocation.parse(expected) == r)
        let key = Ed25519PrivateKey()
        let signed = r.signed(by: key)
        #expect(
            try DeviceRevocation.verify(signed, identityKey: key.publicKey, userID: r.userID, deviceID: r.deviceID) == r
        )
        #expect {
            try DeviceRevocation.verify(
                signed, identityKey: Ed25519PrivateKey().publicKey, userID: r.userID, deviceID: r.deviceID)
        } throws: { ($0 as? DeviceTrustError)?.code == .badSignature }
        #expect {
            try DeviceRevocation.verify(signed, identityKey: key.publicKey, userID: UUID(), deviceID: r.deviceID)
        } throws: { ($0 as? DeviceTrustError)?.code == .wrongUser }
        #expect { try DeviceRevocation.parse(expected + [0]) } throws: {
            ($0 as? DeviceTrustError)?.code == .trailingBytes
        }
    }

    @Test("text fields that cannot be encoded are refused before signing")
    func unencodable() throws {
        var c = try Self.certificate()
        c.deviceType = String(repeating: "x", count: 256)
        #expect { try c.body() } throws: { ($0 as? DeviceTrustError)?.code == .textTooLong }
        c.deviceType = "iPhone de José"
        #expect { try c.body() } throws: { ($0 as? DeviceTrustError)?.code == .invalidText }
        c.deviceType = ""
        #expect { try c.body() } throws: { ($0 as? DeviceTrustError)?.code == .invalidText }
    }

    @Test("refusals never quote the statement")
    func messages() throws {
        let key = Ed25519PrivateKey()
        let signed = try Self.certificate().signed(by: key)
        for statement in [
            SignedStatement(body: signed.body, signature: "AAAA"),
            SignedStatement(body: "!!", signature: signed.signature),
        ] {
            do {
                _ = try DeviceCertificate.verify(
                    statement, identityKey: key.publicKey, userID: UUID(), deviceID: UUID())
                Issue.record("verified")
            } catch {
                #expect(
                    !error.description.contains(signed.body.prefix(12))
                        && !error.description.contains(signed.signature.prefix(12)))
            }
        }
    }
}
