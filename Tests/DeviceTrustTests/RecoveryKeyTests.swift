import DeviceTrust
import Foundation
import SecretCrypto
import Testing

@Suite("Recovery key and identity backup")
struct RecoveryKeyTests {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")

    @Test("the text is 55 base32 characters in groups of four, and parses back in any accepted form")
    func textForm() throws {
        for _ in 0..<50 {
            let key = RecoveryKey()
            let compact = key.revealCompactText()
            #expect(compact.count == 55 && compact.allSatisfy { Self.alphabet.contains($0) })
            let grouped = key.revealText()
            #expect(grouped.split(separator: " ").map(\.count) == Array(repeating: 4, count: 13) + [3])
            for text in [
                compact, grouped, compact.lowercased(), grouped.replacingOccurrences(of: " ", with: "-") + "\n",
            ] {
                #expect(try RecoveryKey(text: text).bytes == key.bytes)
            }
        }
        #expect("\(RecoveryKey())" == "RecoveryKey(<redacted>)")
    }

    @Test("every single mistyped character and every swap of neighbours is refused offline")
    func everyTypoRefused() throws {
        for _ in 0..<3 {
            let chars = Array(RecoveryKey().revealCompactText())
            var refused = 0
            for position in chars.indices {
                for replacement in Self.alphabet where replacement != chars[position] {
                    var typo = chars
                    typo[position] = replacement
                    #expect(throws: RecoveryError.mistyped) { try RecoveryKey(text: String(typo)) }
                    refused += 1
                }
                if position + 1 < chars.count, chars[position] != chars[position + 1] {
                    var swapped = chars
                    swapped.swapAt(position, position + 1)
                    #expect(throws: RecoveryError.mistyped) { try RecoveryKey(text: String(swapped)) }
                }
            }
            #expect(refused == 55 * 31)
        }
    }

    @Test("CRC-16/XMODEM matches its check value")
    func crcCheckValue() {
        #expect(RecoveryKey.crc16(Array("123456789".utf8)) == 0x31C3)
    }

    @Test("a backup opens only with its key, for its user and identity, untampered")
    func backup() throws {
        let identity = Ed25519PrivateKey(), other = Ed25519PrivateKey()
        let user = UUID(), key = RecoveryKey()
        let body = try IdentityBackup.seal(identity, userID: user, recoveryKey: key)
        #expect(Data(base64Encoded: body)?.count == 61 && body.count == 84)
        let opened = try IdentityBackup.open(
            body, userID: user, identityPublicKey: identity.publicKey, recoveryKey: key)
        #expect(opened.publicKey == identity.publicKey)
        #expect(throws: RecoveryError.doesNotOpen) {
            try IdentityBackup.open(
                body, userID: user, identityPublicKey: identity.publicKey, recoveryKey: RecoveryKey())
        }
        #expect(throws: RecoveryError.doesNotOpen) {
            try IdentityBackup.open(body, userID: UUID(), identityPublicKey: identity.publicKey, recoveryKey: key)
        }
        #expect(throws: RecoveryError.doesNotOpen) {
            try IdentityBackup.open(body, userID: user, identityPublicKey: other.publicKey, recoveryKey: key)
        }
        // Another identity's backup under the same key and user: refused for this identity.
        let swapped = try IdentityBackup.seal(other, userID: user, recoveryKey: key)
        #expect(throws: RecoveryError.doesNotOpen) {
            try IdentityBackup.open(swapped, userID: user, identityPublicKey: identity.publicKey, recoveryKey: key)
        }
        #expect("\(RecoveryError.doesNotOpen)" == "the recovery key does not open this account's backup")
    }
}
