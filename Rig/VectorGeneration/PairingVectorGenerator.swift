import ConformanceVectors
import DeviceTrust
import Foundation
import SecretCrypto

/// Produces `testvectors/pairing-v1.json` reproducibly (trust.md): revocation statements,
/// pairing codes, pairing-request MACs and identity fingerprints, the trust formats that had no
/// vectors beside the certificates.
///
/// Every key, id and secret is HKDF-SHA256 of a fixed seed and a label. Each valid case's
/// `expected` is what a verifier must find: the revoked X25519 key (hex), the code's 40 bytes
/// (hex), the MAC (hex), the fingerprint as shown.
public enum PairingVectorGenerator {
    struct OutputTest: Encodable {
        var tcId = 0
        var comment = ""
        var flags: [String] = []
        var identityPublicKey: String?
        var identityPrivateKey: String?
        var userId: String?
        var deviceId: String?
        var body: String?
        var signature: String?
        var revokedAt: UInt64?
        var code: String?
        var secret: String?
        var inviteId: String?
        var x25519PublicKey: String?
        var ed25519PublicKey: String?
        var mac: String?
        var expected: String?
        var result = "valid"
    }

    static let seed = VectorSeed("unbound-pairing-v1 test vectors, seed 1")

    static func bytes(_ label: String, _ count: Int = 32) throws -> [UInt8] { try seed.bytes(label, count) }

    static func uuid(_ label: String) throws -> UUID { try seed.uuid(label) }

    static func hex(_ bytes: some Collection<UInt8>) -> String { ByteEncoding.hex(Array(bytes)) }

    /// The code's characters with the one at `index` replaced by the next base32 character.
    static func substitute(_ letters: [Character], at index: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        var typo = letters
        typo[index] = alphabet[(alphabet.firstIndex(of: letters[index])! + 1) % 32]
        return String(typo)
    }

    /// The code's characters with the first two different neighbours from `from` on swapped.
    static func swapNeighbours(_ letters: [Character], from: Int) -> String {
        var swapped = letters
        let index = (from..<(letters.count - 1)).first { letters[$0] != letters[$0 + 1] }!
        swapped.swapAt(index, index + 1)
        return String(swapped)
    }

    /// The code's characters with a bit of the last character's four unused ones set.
    static func unusedBitSet(_ letters: [Character]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        var typo = letters
        typo[letters.count - 1] = alphabet[alphabet.firstIndex(of: letters[letters.count - 1])! | 1]
        return String(typo)
    }

    /// The JSON text of the vector file, ending in a newline.
    public static func generate() throws -> Data {
        var groups: [String: [OutputTest]] = [:]
        var count = 0
        func add(_ group: String, _ test: OutputTest, _ comment: String, _ flags: [String], valid: Bool) {
            var test = test
            count += 1
            test.tcId = count
            test.comment = comment
            test.flags = flags
            test.result = valid ? "valid" : "invalid"
            groups[group, default: []].append(test)
        }

        // MARK: Revocations
        let identity = try Ed25519PrivateKey(seed: SecureBytes(copying: bytes("identity")))
        let other = try Ed25519PrivateKey(seed: SecureBytes(copying: bytes("other identity")))
        let user = try uuid("user"), device = try uuid("device")
        let x25519 = try X25519PublicKey(
            rawRepresentation: X25519PrivateKey(
                rawRepresentation: SecureBytes(copying: bytes("device x25519"))
            ).publicKey.rawRepresentation)
        func revocation(_ revokedAt: UInt64, user: UUID = user, device: UUID = device) -> DeviceRevocation {
            DeviceRevocation(userID: user, deviceID: device, x25519PublicKey: x25519, revokedAt: revokedAt)
        }
        func revocationTest(_ body: [UInt8], signature: [UInt8], signer: Ed25519PrivateKey = identity) -> OutputTest {
            OutputTest(
                identityPublicKey: identity.publicKey.base64, userId: user.uuidString.lowercased(),
                deviceId: device.uuidString.lowercased(), body: ByteEncoding.base64(body),
                signature: ByteEncoding.base64(signature))
        }
        for (revokedAt, comment) in [
            (UInt64(1_795_000_100), "a revocation"), (0, "revoked at 0"), (UInt64.max, "revoked at 2^64-1"),
        ] {
            let body = revocation(revokedAt).body()
            var test = revocationTest(body, signature: identity.signature(for: body))
            test.identityPrivateKey = identity.seedRepresentation.withUnsafeBytes { hex($0) }
            test.revokedAt = revokedAt
            test.expected = hex(x25519.rawRepresentation)
            add("DeviceRevocationVerify", test, comment, ["Normal"], valid: true)
        }
        let body = revocation(1_795_000_100).body()
        let signature = identity.signature(for: body)
        func invalidRevocation(_ comment: String, _ flags: [String], _ test: OutputTest) {
            add("DeviceRevocationVerify", test, comment, flags, valid: false)
        }
        invalidRevocation(
            "signed by another identity", ["OtherSigner"], revocationTest(body, signature: other.signature(for: body)))
        var flipped = signature
        flipped[10] ^= 0x01
        invalidRevocation("a modified signature", ["ModifiedSignature"], revocationTest(body, signature: flipped))
        invalidRevocation(
            "a short signature", ["ModifiedSignature"], revocationTest(body, signature: Array(signature.prefix(63))))
        let otherUserBody = revocation(1_795_000_100, user: try uuid("other user")).body()
        invalidRevocation(
            "a genuine revocation for another user", ["WrongUser"],
            revocationTest(otherUserBody, signature: identity.signature(for: otherUserBody)))
        let otherDeviceBody = revocation(1_795_000_100, device: try uuid("other device")).body()
        invalidRevocation(
            "a genuine revocation for another device", ["WrongDevice"],
            revocationTest(otherDeviceBody, signature: identity.signature(for: otherDeviceBody)))
        for (bytes, comment, flag) in [
            (Array(body.dropLast()), "truncated by one byte", "Truncated"),
            (body + [0], "a trailing byte", "TrailingBytes"),
            (
                Array("unbound-device-certificate-v1".utf8) + Array(body.dropFirst(DeviceRevocation.prefix.utf8.count)),
                "the certificate's prefix", "WrongPrefix"
            ),
        ] {
            invalidRevocation(comment, [flag], revocationTest(bytes, signature: identity.signature(for: bytes)))
        }
        var unpadded = revocationTest(body, signature: signature)
        unpadded.signature = String(ByteEncoding.base64(signature).dropLast(2))
        invalidRevocation("unpadded base64 signature", ["Encoding"], unpadded)

        // MARK: Pairing codes
        let inviteID = try bytes("invite", 8)
        let secret = try bytes("pairing secret", 16)
        let fingerprint = IdentityFingerprint(identity.publicKey)
        let code = try PairingCode(inviteID: inviteID, secret: SecureBytes(copying: secret), fingerprint: fingerprint)
        let shown = code.revealText()
        let raw = hex(inviteID + secret + fingerprint.bytes)
        for (text, comment) in [
            (shown, "as shown: 17 groups of 4, hyphens"),
            (shown.replacingOccurrences(of: "-", with: ""), "without separators"),
            (shown.lowercased(), "lowercase"), (shown.replacingOccurrences(of: "-", with: " "), "spaces"),
        ] {
            add("PairingCodeParse", OutputTest(code: text, expected: raw), comment, ["Normal"], valid: true)
        }
        let letters = Array(shown.replacingOccurrences(of: "-", with: ""))
        let refusedCodes: [(String, String, String)] = [
            (String(letters.dropLast()), "67 characters", "Length"),
            (String(letters) + "A", "69 characters", "Length"),
            (String(letters.prefix(64)), "64 characters: a code without its checksum", "Length"),
            (String(letters.prefix(10)) + "1" + String(letters.dropFirst(11)), "a one, outside base32", "Alphabet"),
            (String(letters.prefix(10)) + "=" + String(letters.dropFirst(11)), "padding", "Alphabet"),
            ("", "empty", "Length"),
            (Self.substitute(letters, at: 20), "one character mistyped", "Mistyped"),
            (Self.swapNeighbours(letters, from: 30), "two neighbouring characters swapped", "Swapped"),
            (Self.substitute(letters, at: 67), "the last character mistyped", "Mistyped"),
            (Self.unusedBitSet(letters), "the last character's unused bits not zero", "UnusedBits"),
        ]
        for (text, comment, flag) in refusedCodes {
            add("PairingCodeParse", OutputTest(code: text), comment, [flag], valid: false)
        }

        // MARK: Pairing-request MACs
        let deviceX25519 = x25519
        let deviceEd25519 = try Ed25519PrivateKey(seed: SecureBytes(copying: bytes("device ed25519"))).publicKey
        let mac = PairingMAC.mac(
            secret: SecureBytes(copying: secret), inviteID: inviteID, userID: user, deviceID: device,
            x25519PublicKey: deviceX25519, ed25519PublicKey: deviceEd25519)
        func macTest(
            _ tag: [UInt8], secret: [UInt8] = secret, inviteID: [UInt8] = inviteID, user: UUID = user,
            device: UUID = device
        ) -> OutputTest {
            OutputTest(
                userId: user.uuidString.lowercased(), deviceId: device.uuidString.lowercased(), secret: hex(secret),
                inviteId: hex(inviteID), x25519PublicKey: deviceX25519.base64, ed25519PublicKey: deviceEd25519.base64,
                mac: hex(tag))
        }
        var valid = macTest(mac)
        valid.expected = hex(mac)
        add("PairingMAC", valid, "a pairing request's MAC", ["Normal"], valid: true)
        var modified = mac
        modified[31] ^= 0x01
        add("PairingMAC", macTest(modified), "a modified MAC", ["ModifiedMAC"], valid: false)
        add("PairingMAC", macTest(Array(mac.prefix(31))), "a short MAC", ["ModifiedMAC"], valid: false)
        add(
            "PairingMAC", macTest(mac, secret: try bytes("other secret", 16)), "another pairing secret",
            ["WrongSecret"], valid: false)
        add(
            "PairingMAC", macTest(mac, inviteID: try bytes("other invite", 8)), "another invite", ["WrongInvite"],
            valid: false)
        add("PairingMAC", macTest(mac, user: try uuid("other user")), "another user", ["WrongUser"], valid: false)
        add(
            "PairingMAC", macTest(mac, device: try uuid("other device")), "another device", ["WrongDevice"],
            valid: false)

        // MARK: Fingerprints
        for (key, comment) in [(identity, "an identity key"), (other, "another identity key")] {
            add(
                "IdentityFingerprint",
                OutputTest(
                    identityPublicKey: key.publicKey.base64, expected: IdentityFingerprint(key.publicKey).description),
                comment, ["Normal"], valid: true)
        }

        return try GeneratedVectorFile.encode(
            algorithm: .pairingV1,
            header: [
                "Revocation statements, pairing codes, pairing-request MACs and identity fingerprints of docs/trust.md.",
                "Generated by `sync-vectors generate --kind pairing`; every key, id and secret is HKDF-SHA256(seed, label).",
                "DeviceRevocationVerify: verify body/signature (base64 as stored) under identityPublicKey for userId and",
                "  deviceId; valid: the revoked X25519 key is `expected` (hex) and revokedAt matches (and re-signs).",
                "PairingCodeParse: parse `code` (68 base32 characters: invite id || secret || fingerprint || CRC-16/XMODEM",
                "  of the 40 bytes, big-endian); valid: invite id || secret || fingerprint is `expected` (hex).",
                "PairingMAC: the MAC of the request under secret and inviteId; valid: equals `expected`; invalid: `mac` refused.",
                "IdentityFingerprint: the fingerprint of identityPublicKey as shown is `expected`.",
            ],
            groups: ["DeviceRevocationVerify", "PairingCodeParse", "PairingMAC", "IdentityFingerprint"].map {
                ($0, groups[$0] ?? [])
            })
    }
}
