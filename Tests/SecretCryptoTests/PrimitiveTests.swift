import Foundation
import SecretCrypto
import Testing

@Suite("SecureBytes")
struct SecureBytesTests {
    @Test("never prints its bytes")
    func redacted() {
        let key = SecureBytes(copying: Array("super-secret-key-material-0123456".utf8))
        #expect("\(key)" == "<redacted>")
        #expect(String(reflecting: key).contains("redacted"))
        var dumped = ""
        dump(key, to: &dumped)
        #expect(!dumped.contains("super-secret"))
        #expect(Mirror(reflecting: key).children.isEmpty)
    }

    @Test("compares by content, lengths first")
    func equality() {
        let a = SecureBytes(copying: [1, 2, 3])
        #expect(a == SecureBytes(copying: [1, 2, 3]))
        #expect(a != SecureBytes(copying: [1, 2, 4]))
        #expect(a != SecureBytes(copying: [1, 2]))
        #expect(SecureBytes(copying: []) == SecureBytes(copying: []))
        #expect(SecureBytes(randomCount: 32) != SecureBytes(randomCount: 32))
    }
}

@Suite("ByteEncoding")
struct ByteEncodingTests {
    @Test("base64 round-trips", arguments: [0, 1, 2, 3, 31, 32, 33, 76])
    func base64RoundTrip(count: Int) throws {
        let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37) }
        #expect(try ByteEncoding.bytes(base64: ByteEncoding.base64(bytes)) == bytes)
    }

    @Test(
        "strict base64 rejects near misses",
        arguments: [
            "AAAA=", "AA=", "AA", "AB==", "A===", " AAAA", "AAAA\n", "AA-_", "AAA*", "====", "AAAA====", "QQ==QQ==",
        ])
    func base64Strict(text: String) {
        #expect(throws: CryptoError.invalidEncoding) { try ByteEncoding.bytes(base64: text) }
    }

    @Test(
        "bytes above 0x7f are not base64 digits (libsodium 1.0.18 accepts them)",
        arguments: ["\u{e9}\u{e9}", "QQ\u{e9}", "QUJ\u{80}", "QUJDRA\u{e9}="])
    func nonASCII(text: String) {
        #expect(throws: CryptoError.invalidEncoding) { try ByteEncoding.bytes(base64: text) }
        #expect(throws: CryptoError.self) { try X25519PublicKey(base64: text) }
    }

    @Test("hex accepts both cases and rejects the rest")
    func hex() throws {
        #expect(try ByteEncoding.bytes(hex: "00ffAB") == [0, 255, 171])
        #expect(ByteEncoding.hex([0, 255, 171]) == "00ffab")
        #expect(try ByteEncoding.bytes(hex: "") == [])
        for bad in ["0", "0g", "00 ", "x0"] {
            #expect(throws: CryptoError.invalidEncoding) { try ByteEncoding.bytes(hex: bad) }
        }
    }
}

@Suite("X25519")
struct X25519Tests {
    @Test("both sides derive the same secret")
    func agreement() throws {
        let a = X25519PrivateKey()
        let b = X25519PrivateKey()
        #expect(try a.sharedSecret(with: b.publicKey) == b.sharedSecret(with: a.publicKey))
    }

    @Test("keys round-trip through raw bytes and base64")
    func roundTrip() throws {
        let key = X25519PrivateKey()
        let restored = try X25519PrivateKey(rawRepresentation: key.rawRepresentation)
        #expect(restored == key)
        #expect(restored.publicKey == key.publicKey)
        #expect(try X25519PublicKey(base64: key.publicKey.base64) == key.publicKey)
        #expect(key.publicKey.base64.count == 44)
        let privateBase64 = key.rawRepresentation.withUnsafeBytes { ByteEncoding.base64(Array($0)) }
        #expect(try X25519PrivateKey(base64: privateBase64) == key)
    }

    @Test("wrong-length keys are rejected", arguments: [0, 1, 31, 33, 64])
    func wrongLength(count: Int) {
        let bytes = [UInt8](repeating: 7, count: count)
        #expect(throws: CryptoError.invalidKeyLength(expected: 32, actual: count)) {
            try X25519PublicKey(rawRepresentation: bytes)
        }
        #expect(throws: CryptoError.invalidKeyLength(expected: 32, actual: count)) {
            try X25519PrivateKey(rawRepresentation: SecureBytes(copying: bytes))
        }
        #expect(throws: CryptoError.invalidKeyLength(expected: 32, actual: count)) {
            try X25519PublicKey(base64: ByteEncoding.base64(bytes))
        }
    }

    @Test(
        "bad base64 is rejected",
        arguments: [
            "", "not base64!", "AAAA", "QUJD\n", "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a",
        ])
    func badBase64(text: String) {
        #expect(throws: CryptoError.self) { try X25519PublicKey(base64: text) }
        #expect(throws: CryptoError.self) { try X25519PrivateKey(base64: text) }
    }

    static let lowOrder = [
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0100000000000000000000000000000000000000000000000000000000000000",
        "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
        "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    ]

    @Test("an exchange with a low-order point is refused", arguments: lowOrder)
    func lowOrderPoint(hex: String) throws {
        let peer = try X25519PublicKey(rawRepresentation: ByteEncoding.bytes(hex: hex))
        #expect(peer.isLowOrder)
        #expect(throws: CryptoError.lowOrderPoint) { try X25519PrivateKey().sharedSecret(with: peer) }
    }

    @Test("a generated key is not low order")
    func notLowOrder() {
        #expect(!X25519PrivateKey().publicKey.isLowOrder)
    }

    @Test("the private key never prints")
    func redacted() {
        let key = X25519PrivateKey()
        let base64 = key.rawRepresentation.withUnsafeBytes { ByteEncoding.base64(Array($0)) }
        var dumped = ""
        dump(key, to: &dumped)
        #expect(!"\(key)".contains(base64))
        #expect(!dumped.contains(base64))
    }
}

@Suite("HKDF-SHA256 and HMAC-SHA256")
struct KDFTests {
    @Test("an empty salt equals 32 zero bytes (RFC 5869 section 2.2)")
    func emptySalt() throws {
        let ikm = SecureBytes(copying: [UInt8](repeating: 0x0b, count: 22))
        let a = try HKDFSHA256.deriveKey(inputKeyMaterial: ikm, salt: [UInt8](), info: [UInt8](), outputByteCount: 42)
        let b = try HKDFSHA256.deriveKey(
            inputKeyMaterial: ikm, salt: [UInt8](repeating: 0, count: 32), info: [UInt8](), outputByteCount: 42)
        #expect(a == b)
    }

    @Test("output is limited to 255 blocks")
    func limit() throws {
        let ikm = SecureBytes(randomCount: 32)
        #expect(
            try HKDFSHA256.deriveKey(inputKeyMaterial: ikm, salt: [UInt8](), info: [UInt8](), outputByteCount: 8160)
                .count == 8160)
        #expect(throws: CryptoError.outputLengthTooLarge(requested: 8161, maximum: 8160)) {
            try HKDFSHA256.deriveKey(inputKeyMaterial: ikm, salt: [UInt8](), info: [UInt8](), outputByteCount: 8161)
        }
    }

    @Test("shorter outputs are prefixes of longer ones")
    func prefix() throws {
        let ikm = SecureBytes(randomCount: 32)
        let long = try HKDFSHA256.deriveKey(inputKeyMaterial: ikm, salt: [1, 2], info: [3], outputByteCount: 100)
        let short = try HKDFSHA256.deriveKey(inputKeyMaterial: ikm, salt: [1, 2], info: [3], outputByteCount: 33)
        #expect(long.withUnsafeBytes { Array($0.prefix(33)) } == short.withUnsafeBytes { Array($0) })
    }

    @Test("a truncated HMAC tag verifies against its prefix only")
    func truncatedTag() {
        let key = SecureBytes(randomCount: 40)
        let tag = HMACSHA256.authenticationCode(for: [UInt8](repeating: 1, count: 100), using: key)
        #expect(
            HMACSHA256.isValidAuthenticationCode(
                Array(tag.prefix(16)), for: [UInt8](repeating: 1, count: 100), using: key))
        var wrong = Array(tag.prefix(16))
        wrong[15] ^= 1
        #expect(!HMACSHA256.isValidAuthenticationCode(wrong, for: [UInt8](repeating: 1, count: 100), using: key))
        #expect(!HMACSHA256.isValidAuthenticationCode([UInt8](), for: [UInt8](), using: key))
    }
}

@Suite("ChaCha20-Poly1305")
struct AEADTests {
    let key = SecureBytes(randomCount: 32)
    let nonce = [UInt8](repeating: 9, count: 12)

    @Test("seal then open round-trips, with and without associated data", arguments: [0, 1, 48, 1000])
    func roundTrip(count: Int) throws {
        let message = [UInt8](repeating: 0x61, count: count)
        let sealed = try ChaCha20Poly1305.seal(message, using: key, nonce: nonce, authenticating: [1, 2, 3])
        #expect(sealed.count == count + 16)
        #expect(try ChaCha20Poly1305.open(sealed, using: key, nonce: nonce, authenticating: [1, 2, 3]) == message)
        #expect(throws: CryptoError.authenticationFailure) {
            try ChaCha20Poly1305.open(sealed, using: key, nonce: nonce, authenticating: [1, 2, 4])
        }
    }

    @Test("a nonce that is not 12 bytes is rejected", arguments: [0, 8, 11, 13, 24])
    func nonceLength(count: Int) {
        let nonce = [UInt8](repeating: 0, count: count)
        #expect(throws: CryptoError.invalidNonceLength(actual: count)) {
            try ChaCha20Poly1305.seal([1], using: key, nonce: nonce)
        }
        #expect(throws: CryptoError.invalidNonceLength(actual: count)) {
            try ChaCha20Poly1305.open([UInt8](repeating: 0, count: 17), using: key, nonce: nonce)
        }
    }

    @Test("a key that is not 32 bytes is rejected")
    func keyLength() {
        #expect(throws: CryptoError.invalidKeyLength(expected: 32, actual: 16)) {
            try ChaCha20Poly1305.seal([1], using: SecureBytes(randomCount: 16), nonce: nonce)
        }
    }

    @Test("tampering and truncation fail authentication")
    func tamper() throws {
        let sealed = try ChaCha20Poly1305.seal([UInt8](repeating: 1, count: 32), using: key, nonce: nonce)
        for index in [0, 31, 32, 47] {
            var modified = sealed
            modified[index] ^= 0x40
            #expect(throws: CryptoError.authenticationFailure) {
                try ChaCha20Poly1305.open(modified, using: key, nonce: nonce)
            }
        }
        for count in [0, 15, 16, 47] {
            #expect(throws: CryptoError.authenticationFailure) {
                try ChaCha20Poly1305.open(Array(sealed.prefix(count)), using: key, nonce: nonce)
            }
        }
    }
}
