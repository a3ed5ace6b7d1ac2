import ConformanceVectors
import DeviceTrust
import Foundation
import SecretCrypto

/// Produces `testvectors/identity-backup-v1.json` reproducibly (recovery.md): identity backups
/// to open with a recovery key, and recovery-key texts to parse.
///
/// Every key, id, seed and nonce is HKDF-SHA256 of a fixed seed and a label. Valid backups carry
/// `K`, the AAD and the nonce, so a verifier also re-seals them byte for byte.
public enum IdentityBackupVectorGenerator {
    struct OutputTest: Encodable {
        var tcId = 0
        var comment = ""
        var flags: [String] = []
        var recoveryKey: String
        var userId: String?
        var identityPublicKey: String?
        var body: String?
        var expected: String?
        var key: String?
        var aad: String?
        var nonce: String?
        var result = "valid"
    }

    static let seed = VectorSeed("unbound-identity-backup-v1 test vectors, seed 1")

    static func bytes(_ label: String, _ count: Int = 32) throws -> [UInt8] { try seed.bytes(label, count) }

    static func uuid(_ label: String) throws -> UUID { try seed.uuid(label) }

    static func identity(_ label: String) throws -> Ed25519PrivateKey {
        try Ed25519PrivateKey(seed: SecureBytes(copying: bytes("identity:" + label)))
    }

    static func recoveryKey(_ label: String) throws -> RecoveryKey {
        try RecoveryKey(bytes: SecureBytes(copying: bytes("recovery:" + label)))
    }

    static func hex(_ bytes: some Collection<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// The JSON text of the vector file, ending in a newline.
    public static func generate() throws -> Data {
        var backups: [OutputTest] = []
        var keys: [OutputTest] = []
        var count = 0
        func add(_ test: OutputTest, _ comment: String, _ flags: [String], valid: Bool, to list: inout [OutputTest]) {
            var test = test
            count += 1
            test.tcId = count
            test.comment = comment
            test.flags = flags
            test.result = valid ? "valid" : "invalid"
            list.append(test)
        }

        // MARK: Backups
        let user = try uuid("user"), otherUser = try uuid("other user")
        let identity = try Self.identity("a"), otherIdentity = try Self.identity("b")
        let recovery = try Self.recoveryKey("a"), otherRecovery = try Self.recoveryKey("b")
        let nonce = try bytes("nonce:a", 12)
        func backupTest(
            _ body: String, key: RecoveryKey = recovery, user: UUID = user, publicKey: Ed25519PublicKey? = nil
        ) -> OutputTest {
            OutputTest(
                recoveryKey: key.revealText(), userId: user.uuidString.lowercased(),
                identityPublicKey: (publicKey ?? identity.publicKey).base64, body: body)
        }
        func validBackup(
            _ comment: String, identity: Ed25519PrivateKey, user: UUID, key: RecoveryKey, nonce: [UInt8]
        )
            throws
        {
            let body = try IdentityBackup.seal(identity, userID: user, recoveryKey: key, nonce: nonce)
            var test = backupTest(body, key: key, user: user, publicKey: identity.publicKey)
            test.expected = identity.seedRepresentation.withUnsafeBytes { hex($0) }
            test.key = try IdentityBackup.key(recoveryKey: key, userID: user).withUnsafeBytes { hex($0) }
            test.aad = hex(IdentityBackup.aad(userID: user, identityPublicKey: identity.publicKey))
            test.nonce = hex(nonce)
            add(test, comment, ["Normal"], valid: true, to: &backups)
        }
        try validBackup("a backup", identity: identity, user: user, key: recovery, nonce: nonce)
        try validBackup(
            "another user, identity and key", identity: otherIdentity, user: otherUser, key: otherRecovery,
            nonce: try bytes("nonce:b", 12))
        try validBackup(
            "an all-zero nonce", identity: identity, user: user, key: recovery, nonce: [UInt8](repeating: 0, count: 12))

        let good = try IdentityBackup.seal(identity, userID: user, recoveryKey: recovery, nonce: nonce)
        let raw = Array(Data(base64Encoded: good)!)
        func invalid(_ comment: String, _ flags: [String], _ test: OutputTest) {
            add(test, comment, flags, valid: false, to: &backups)
        }
        invalid("another recovery key", ["WrongKey"], backupTest(good, key: otherRecovery))
        invalid("another user", ["OtherUser"], backupTest(good, user: otherUser))
        invalid(
            "another identity public key in the AAD", ["OtherIdentity"],
            backupTest(good, publicKey: otherIdentity.publicKey))
        // Sealed under the right key and AAD, but the seed is another identity's: only the
        // public-key check refuses it.
        let swapped = try ChaCha20Poly1305.seal(
            otherIdentity.seedRepresentation, using: IdentityBackup.key(recoveryKey: recovery, userID: user),
            nonce: nonce, authenticating: IdentityBackup.aad(userID: user, identityPublicKey: identity.publicKey))
        invalid(
            "the seed of another identity, sealed for this one", ["OtherIdentity", "SeedMismatch"],
            backupTest(Data([1] + nonce + swapped).base64EncodedString()))
        for (index, name) in [(1, "nonce"), (20, "ciphertext"), (60, "tag")] {
            var tampered = raw
            tampered[index] ^= 0x01
            invalid("a flipped bit in the \(name)", ["Tampered"], backupTest(Data(tampered).base64EncodedString()))
        }
        invalid("truncated by one byte", ["Truncated"], backupTest(Data(raw.dropLast()).base64EncodedString()))
        invalid(
            "only the version byte and nonce", ["Truncated"], backupTest(Data(raw.prefix(13)).base64EncodedString()))
        invalid("a trailing byte", ["TrailingBytes"], backupTest(Data(raw + [0]).base64EncodedString()))
        for version: UInt8 in [0, 2] {
            var other = raw
            other[0] = version
            invalid("version byte \(version)", ["BadVersion"], backupTest(Data(other).base64EncodedString()))
        }
        invalid("unpadded base64", ["Encoding"], backupTest(String(good.dropLast())))
        invalid(
            "URL-safe base64", ["Encoding"],
            backupTest(good.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_") + "?"))
        invalid(
            "base64 with a line break", ["Encoding"], backupTest(String(good.prefix(40)) + "\n" + good.dropFirst(40)))
        invalid("empty", ["Truncated"], backupTest(""))

        // MARK: Recovery-key texts
        let keyBytes = recovery.bytes.withUnsafeBytes { hex($0) }
        let grouped = recovery.revealText()
        let compact = recovery.revealCompactText()
        func validText(_ comment: String, _ text: String) {
            add(OutputTest(recoveryKey: text, expected: keyBytes), comment, ["Normal"], valid: true, to: &keys)
        }
        func invalidText(_ comment: String, _ flags: [String], _ text: String) {
            add(OutputTest(recoveryKey: text), comment, flags, valid: false, to: &keys)
        }
        validText("as shown: groups of four", grouped)
        validText("without separators", compact)
        validText("lowercase", compact.lowercased())
        validText("dashes, tabs and line breaks", grouped.replacingOccurrences(of: " ", with: "-") + "\r\n")
        let zeros = try RecoveryKey(bytes: SecureBytes(copying: [UInt8](repeating: 0, count: 32)))
        add(
            OutputTest(recoveryKey: zeros.revealText(), expected: hex([UInt8](repeating: 0, count: 32))),
            "all-zero bytes", ["EdgeCase"], valid: true, to: &keys)
        let chars = Array(compact)
        for position in [0, 27, 51, 53] {
            var changed = chars
            changed[position] = changed[position] == "A" ? "B" : "A"
            invalidText("one character changed at \(position)", ["Mistyped"], String(changed))
        }
        var lastChanged = chars
        lastChanged[54] = lastChanged[54] == "A" ? "Q" : "A"
        invalidText("the last character changed", ["Mistyped"], String(lastChanged))
        for position in [0, 26, 52] where chars[position] != chars[position + 1] {
            var swapped = chars
            swapped.swapAt(position, position + 1)
            invalidText("neighbours swapped at \(position)", ["Swapped"], String(swapped))
        }
        invalidText("54 characters", ["Length"], String(compact.dropLast()))
        invalidText("56 characters", ["Length"], compact + "A")
        invalidText("padding", ["Alphabet"], compact + "=")
        for (char, name) in [("0", "zero"), ("1", "one"), ("8", "eight")] {
            var changed = chars
            changed[10] = Character(char)
            invalidText("a \(name), outside base32", ["Alphabet"], String(changed))
        }
        var fullwidth = chars
        fullwidth[5] = "\u{FF21}"
        invalidText("a fullwidth letter", ["Alphabet", "NonASCII"], String(fullwidth))
        // The last character carries one bit of the checksum and three that must be zero.
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        let lastValue = alphabet.firstIndex(of: chars[54])!
        var unused = chars
        unused[54] = alphabet[lastValue | 0x01]
        invalidText("an unused bit set in the last character", ["UnusedBits"], String(unused))
        invalidText("empty", ["Length"], "")

        return try GeneratedVectorFile.encode(
            algorithm: .identityBackupV1,
            header: [
                "Identity backups and recovery keys of docs/recovery.md.",
                "Generated by `sync-vectors generate --kind backup`; every key, id, seed and nonce is HKDF-SHA256(seed, label).",
                "IdentityBackupOpen: parse recoveryKey, open `body` (base64 as stored) for userId and identityPublicKey;",
                "  valid: yields `expected`, the seed (and K, the AAD and re-sealing with nonce match); invalid: refused.",
                "RecoveryKeyParse: parse recoveryKey; valid: yields `expected`, its 32 bytes; invalid: refused.",
            ],
            groups: [("IdentityBackupOpen", backups), ("RecoveryKeyParse", keys)])
    }
}
