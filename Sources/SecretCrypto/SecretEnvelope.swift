/// A session secret encrypted to one recipient device: envelope format version 1.
///
/// Wire-compatible with deployed desktop daemons and iOS apps. Sealing for a recipient public
/// key `R` and session id `sid` (canonical lowercase UUID text):
///
/// ```text
/// e, E     = fresh X25519 key pair                    (per envelope)
/// shared   = X25519(e, R)                             (all-zero result -> error)
/// key      = HKDF-SHA256(ikm: shared, salt: UTF-8(sid),
///                        info: "unbound-session-secret-v1", L: 32)
/// nonce    = 12 random bytes
/// sealed   = ChaCha20-Poly1305-IETF(key, nonce, UTF-8(secret text form), aad: empty)
///
/// ephemeral_public_key = base64(E)                               44 characters
/// encrypted_secret     = base64(nonce(12) || ciphertext(48) || tag(16))  76 bytes -> 104 characters
/// ```
///
/// Reading accepts `encrypted_secret` in the three forms the remote's bytea column produces:
/// plain base64; `\x` + hex of the ASCII of that base64; `\x` + hex of the raw bytes.
///
/// Every way opening can fail (bad encoding, wrong length, low-order ephemeral key, truncation,
/// wrong key, wrong session, bad tag, a plaintext that is not a session secret) throws the same
/// ``CryptoError/authenticationFailure``, so a caller cannot be used as an oracle.
public struct SecretEnvelope: Sendable, Hashable {
    /// The HKDF `info` string of version 1.
    public static let info: [UInt8] = Array("unbound-session-secret-v1".utf8)
    /// Bytes of `nonce || tag` around the ciphertext.
    static let overhead = ChaCha20Poly1305.nonceByteCount + ChaCha20Poly1305.tagByteCount

    /// Standard base64 of the 32-byte ephemeral public key, as stored remotely.
    public let ephemeralPublicKey: String
    /// `encrypted_secret` exactly as stored or received (any of the three bytea-trap forms).
    public let encryptedSecret: String

    /// Wraps the two remote fields as received; nothing is checked until ``open(sessionID:using:)``.
    ///
    /// - Parameters:
    ///   - ephemeralPublicKey: The `ephemeral_public_key` column.
    ///   - encryptedSecret: The `encrypted_secret` column, in any of the bytea-trap forms.
    public init(ephemeralPublicKey: String, encryptedSecret: String) {
        self.ephemeralPublicKey = ephemeralPublicKey
        self.encryptedSecret = encryptedSecret
    }

    /// Seals `secret` for `recipient` with a fresh ephemeral key and nonce.
    ///
    /// - Parameters:
    ///   - secret: The session secret.
    ///   - recipient: The recipient device's long-term public key.
    ///   - sessionID: The session the secret belongs to (salted in canonical lowercase form).
    /// - Returns: The envelope, with `encryptedSecret` in plain base64 (what every reader accepts).
    /// - Throws: ``CryptoError/lowOrderPoint`` when `recipient` is of low order.
    public static func seal(
        _ secret: SessionSecret, for recipient: X25519PublicKey, sessionID: SessionID
    ) throws -> SecretEnvelope {
        try withUnsafeTemporaryAllocation(byteCount: 32 + ChaCha20Poly1305.nonceByteCount, alignment: 16) { scratch in
            defer { Primitives.wipe(scratch) }
            let ephemeral = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<32])
            let nonce = UnsafeMutableRawBufferPointer(rebasing: scratch[32...])
            Primitives.backend.randomBytes(ephemeral)
            Primitives.backend.randomBytes(nonce)
            let plaintext = secret.textFormBytes()
            return try plaintext.withUnsafeBytes { plaintext in
                try seal(
                    plaintext: plaintext, recipient: recipient, sessionID: sessionID,
                    ephemeralPrivateKey: UnsafeRawBufferPointer(ephemeral), nonce: UnsafeRawBufferPointer(nonce))
            }
        }
    }

    /// Seals deterministically with a given ephemeral private key and nonce, and any plaintext.
    ///
    /// Only for producing test vectors: reusing an ephemeral key or nonce breaks the scheme.
    package static func sealDeterministically(
        plaintext: [UInt8],
        for recipient: X25519PublicKey,
        sessionID: SessionID,
        ephemeralPrivateKey: X25519PrivateKey,
        nonce: [UInt8]
    ) throws -> SecretEnvelope {
        guard nonce.count == ChaCha20Poly1305.nonceByteCount else {
            throw CryptoError.invalidNonceLength(actual: nonce.count)
        }
        return try plaintext.withUnsafeBytes { plaintext in
            try ephemeralPrivateKey.rawRepresentation.withUnsafeBytes { ephemeral in
                try nonce.withUnsafeBytes { nonce in
                    try seal(
                        plaintext: plaintext, recipient: recipient, sessionID: sessionID,
                        ephemeralPrivateKey: ephemeral, nonce: nonce)
                }
            }
        }
    }

    /// The sealing core: every buffer holding a key is wiped before returning.
    static func seal(
        plaintext: UnsafeRawBufferPointer,
        recipient: X25519PublicKey,
        sessionID: SessionID,
        ephemeralPrivateKey: UnsafeRawBufferPointer,
        nonce: UnsafeRawBufferPointer
    ) throws -> SecretEnvelope {
        // 0..<32 ephemeral public, 32..<64 shared, 64..<96 derived key.
        return try withUnsafeTemporaryAllocation(byteCount: 96, alignment: 16) { scratch in
            defer { Primitives.wipe(scratch) }
            let base = scratch.baseAddress!
            Primitives.backend.x25519Base(into: base, scalar: ephemeralPrivateKey.baseAddress!)
            try X25519.exchange(
                into: base + 32, privateKey: ephemeralPrivateKey.baseAddress!, publicKey: recipient.rawRepresentation)
            var salt = sessionID.canonical
            salt.withUTF8 { salt in
                info.withUnsafeBytes { info in
                    HKDFSHA256.derive(
                        ikm: UnsafeRawBufferPointer(rebasing: scratch[32..<64]), salt: UnsafeRawBufferPointer(salt),
                        info: info,
                        into: UnsafeMutableRawBufferPointer(rebasing: scratch[64..<96])
                    )
                }
            }
            let sealedCount = overhead + plaintext.count
            let encrypted = withUnsafeTemporaryAllocation(byteCount: sealedCount, alignment: 16) { sealed in
                sealed.baseAddress!.copyMemory(from: nonce.baseAddress!, byteCount: nonce.count)
                ChaCha20Poly1305.encrypt(
                    message: plaintext, aad: UnsafeRawBufferPointer(start: nil, count: 0),
                    nonce: nonce.baseAddress!, key: base + 64,
                    into: sealed.baseAddress! + nonce.count)
                return ByteEncoding.base64(raw: UnsafeRawBufferPointer(sealed))
            }
            let ephemeralText = ByteEncoding.base64(
                raw: UnsafeRawBufferPointer(rebasing: scratch[0..<32]))
            return SecretEnvelope(ephemeralPublicKey: ephemeralText, encryptedSecret: encrypted)
        }
    }

    /// Opens the envelope with the recipient's private key.
    ///
    /// - Parameters:
    ///   - sessionID: The session this envelope is filed under (its salt).
    ///   - privateKey: The recipient device's long-term private key.
    /// - Returns: The session secret.
    /// - Throws: ``CryptoError/authenticationFailure`` whatever the reason.
    public func open(sessionID: SessionID, using privateKey: X25519PrivateKey) throws -> SessionSecret {
        do {
            return try openOrThrowReason(sessionID: sessionID, privateKey: privateKey)
        } catch {
            throw CryptoError.authenticationFailure
        }
    }

    private func openOrThrowReason(sessionID: SessionID, privateKey: X25519PrivateKey) throws -> SessionSecret {
        let ephemeral = try X25519PublicKey(base64: ephemeralPublicKey)
        let sealed = try Self.decodeEncryptedSecret(encryptedSecret)
        guard sealed.count >= Self.overhead else { throw CryptoError.authenticationFailure }
        return try withUnsafeTemporaryAllocation(byteCount: 64, alignment: 16) { scratch in
            defer { Primitives.wipe(scratch) }
            let base = scratch.baseAddress!
            try privateKey.key.withUnsafeBytes { secretKey in
                try X25519.exchange(
                    into: base, privateKey: secretKey.baseAddress!, publicKey: ephemeral.rawRepresentation)
            }
            var salt = sessionID.canonical
            salt.withUTF8 { salt in
                Self.info.withUnsafeBytes { info in
                    HKDFSHA256.derive(
                        ikm: UnsafeRawBufferPointer(rebasing: scratch[0..<32]), salt: UnsafeRawBufferPointer(salt),
                        info: info,
                        into: UnsafeMutableRawBufferPointer(rebasing: scratch[32..<64])
                    )
                }
            }
            return try sealed.withUnsafeBytes { sealed in
                let nonce = sealed.baseAddress!
                let body = UnsafeRawBufferPointer(rebasing: sealed[ChaCha20Poly1305.nonceByteCount...])
                let plaintext = try SecureBytes(count: body.count - ChaCha20Poly1305.tagByteCount) { out in
                    try ChaCha20Poly1305.decrypt(
                        sealed: body, aad: UnsafeRawBufferPointer(start: nil, count: 0),
                        nonce: nonce, key: base + 32, into: out.baseAddress)
                }
                return try plaintext.withUnsafeBytes { try SessionSecret(textFormBytes: $0) }
            }
        }
    }

    /// Decodes `encrypted_secret` from any of the three forms into `nonce || ciphertext || tag`.
    ///
    /// - Parameter text: Plain base64, `\x` + hex of base64 ASCII, or `\x` + hex of raw bytes.
    /// - Returns: The raw sealed bytes.
    /// - Throws: ``CryptoError/invalidEncoding`` when it is none of them.
    public static func decodeEncryptedSecret(_ text: String) throws -> [UInt8] {
        guard text.hasPrefix("\\x") else { return try ByteEncoding.bytes(base64: text) }
        let bytes = try ByteEncoding.bytes(hex: String(text.dropFirst(2)))
        // The common deployed case: the column holds the ASCII of base64 text. Raw sealed
        // bytes are essentially never all valid base64 of the right shape.
        if let decoded = try? bytes.withUnsafeBytes({
            try ByteEncoding.decodeBase64(utf8: $0)
        }),
            !bytes.isEmpty
        {
            return decoded
        }
        return bytes
    }

    /// `encrypted_secret` in plain base64, whatever form it arrived in.
    ///
    /// - Throws: ``CryptoError/invalidEncoding`` when it is none of the three forms.
    public func canonicalEncryptedSecret() throws -> String {
        ByteEncoding.base64(try Self.decodeEncryptedSecret(encryptedSecret))
    }
}
