import Foundation

/// What opening an envelope gives: the secret, and what the envelope says about where it came from.
public struct OpenedSecret: Sendable {
    /// The session secret.
    public let secret: SessionSecret
    /// The device that sealed it: known for version 2 (authenticated), `nil` for version 1.
    public let senderDeviceID: UUID?
    /// The secret's generation: from a version-2 header, 1 for version 1.
    public let generation: UInt32
    /// Whether the sender is authenticated (version 2 opened under the sender's key).
    public let authenticated: Bool
    /// The envelope's format version, 1 or 2.
    public let version: Int

    /// The same secret, recorded under `generation` (a store knows a version-1 envelope's
    /// generation better than the envelope, which carries none).
    public func withGeneration(_ generation: UInt32) -> OpenedSecret {
        OpenedSecret(
            secret: secret, senderDeviceID: senderDeviceID, generation: generation, authenticated: authenticated,
            version: version)
    }
}

/// Envelope version 2: RFC 9180 HPKE in auth mode, suite A.2, bound to its session, both device
/// ids and a generation.
///
/// ```text
/// info = "unbound-session-secret-v2" || 0x00 || session_id (36 ASCII)
///     || 0x00 || sender_device_id (36) || 0x00 || recipient_device_id (36) || 0x00 || generation (4, BE)
/// enc, ct = SealAuth(pkR, info, aad = "", pt = secret text form, skS)
///
/// ephemeral_public_key = "v2:" + base64(enc)                        3 + 44 characters
/// encrypted_secret     = base64(0x02 || sender_device_id (16 raw) || generation (4, BE) || ct)
///                        for a 48-character secret: 1 + 16 + 4 + 64 = 85 bytes
/// ```
///
/// Every UUID is its canonical lowercase hyphenated text in `info`. The three `encrypted_secret`
/// forms of the bytea trap are accepted on read, as in version 1.
extension SecretEnvelope {
    /// The prefix of a version-2 `ephemeral_public_key`.
    public static let version2Prefix = "v2:"
    /// The label at the start of a version-2 `info`.
    public static let infoV2: [UInt8] = Array("unbound-session-secret-v2".utf8)
    /// `version || sender id || generation`.
    static let headerByteCount = 1 + 16 + 4

    /// 1 or 2: an `ephemeral_public_key` starting with `v2:` is version 2, anything else version 1.
    public var version: Int { ephemeralPublicKey.hasPrefix(Self.version2Prefix) ? 2 : 1 }

    /// The `info` of a version-2 envelope.
    public static func infoV2(sessionID: SessionID, sender: UUID, recipient: UUID, generation: UInt32) -> [UInt8] {
        var info = infoV2
        info.reserveCapacity(infoV2.count + 3 * 37 + 5)
        info.append(0)
        info += sessionID.canonical.utf8
        info.append(0)
        appendLowercaseText(of: sender, to: &info)
        info.append(0)
        appendLowercaseText(of: recipient, to: &info)
        info.append(0)
        info += [
            UInt8(generation >> 24), UInt8((generation >> 16) & 0xFF), UInt8((generation >> 8) & 0xFF),
            UInt8(generation & 0xFF),
        ]
        return info
    }

    /// A UUID's canonical lowercase text (8-4-4-4-12 hex digits), appended as bytes: what
    /// `uuidString.lowercased()` gives, without the two strings.
    static func appendLowercaseText(of uuid: UUID, to bytes: inout [UInt8]) {
        let digits: StaticString = "0123456789abcdef"
        digits.withUTF8Buffer { hex in
            withUnsafeBytes(of: uuid.uuid) { raw in
                for (index, byte) in raw.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 { bytes.append(UInt8(ascii: "-")) }
                    bytes.append(hex[Int(byte >> 4)])
                    bytes.append(hex[Int(byte & 0x0F)])
                }
            }
        }
    }

    /// Seals `secret` as version 2, authenticated by the sealing device's X25519 key.
    ///
    /// - Parameters:
    ///   - secret: The session secret.
    ///   - recipient: The recipient device's public key (`pkR`).
    ///   - recipientDeviceID: The recipient device's id.
    ///   - sessionID: The session.
    ///   - sender: The sealing device's long-term X25519 key (`skS`).
    ///   - senderDeviceID: The sealing device's id.
    ///   - generation: The secret's generation, 1 or more.
    /// - Returns: The envelope, `encrypted_secret` in plain base64.
    /// - Throws: ``CryptoError/lowOrderPoint`` for a low-order recipient key;
    ///   ``CryptoError/invalidHPKEInput`` for generation 0.
    public static func sealV2(
        _ secret: SessionSecret, for recipient: X25519PublicKey, recipientDeviceID: UUID, sessionID: SessionID,
        sender: X25519PrivateKey, senderDeviceID: UUID, generation: UInt32
    ) throws -> SecretEnvelope {
        try secret.withTextFormBytes { plaintext in
            try sealV2(
                plaintext: plaintext, recipient: recipient, recipientDeviceID: recipientDeviceID, sessionID: sessionID,
                sender: sender, senderDeviceID: senderDeviceID, generation: generation, ephemeral: X25519PrivateKey())
        }
    }

    /// ``sealV2(_:for:recipientDeviceID:sessionID:sender:senderDeviceID:generation:)`` for one
    /// of many envelopes sealed with the same sender key: `exchanges` keeps the static exchange
    /// `DH(skS, pkR)` of each recipient, computed at its first envelope, so the others cost two
    /// X25519 operations (the ephemeral key and its exchange) instead of three, as a version-1
    /// seal does. The envelope is the same as without it.
    public static func sealV2(
        _ secret: SessionSecret, for recipient: X25519PublicKey, recipientDeviceID: UUID, sessionID: SessionID,
        sender: X25519PrivateKey, senderDeviceID: UUID, generation: UInt32, exchanges: inout RecipientExchanges
    ) throws -> SecretEnvelope {
        let exchange = try exchanges.exchange(of: sender, with: recipient)
        return try secret.withTextFormBytes { plaintext in
            try sealV2(
                plaintext: plaintext, recipient: recipient, recipientDeviceID: recipientDeviceID, sessionID: sessionID,
                sender: sender, senderDeviceID: senderDeviceID, generation: generation, ephemeral: X25519PrivateKey(),
                staticExchange: exchange)
        }
    }

    /// Seals any plaintext with a given ephemeral key: only for producing test vectors.
    package static func sealV2Deterministically(
        plaintext: [UInt8], for recipient: X25519PublicKey, recipientDeviceID: UUID, sessionID: SessionID,
        sender: X25519PrivateKey, senderDeviceID: UUID, generation: UInt32, ephemeral: X25519PrivateKey
    ) throws -> SecretEnvelope {
        try plaintext.withUnsafeBytes {
            try sealV2(
                plaintext: $0, recipient: recipient, recipientDeviceID: recipientDeviceID, sessionID: sessionID,
                sender: sender, senderDeviceID: senderDeviceID, generation: generation, ephemeral: ephemeral)
        }
    }

    static func sealV2(
        plaintext: UnsafeRawBufferPointer, recipient: X25519PublicKey, recipientDeviceID: UUID, sessionID: SessionID,
        sender: X25519PrivateKey, senderDeviceID: UUID, generation: UInt32, ephemeral: X25519PrivateKey,
        staticExchange: SecureBytes? = nil
    ) throws -> SecretEnvelope {
        guard generation > 0 else { throw CryptoError.invalidHPKEInput }
        let info = infoV2(
            sessionID: sessionID, sender: senderDeviceID, recipient: recipientDeviceID, generation: generation)
        var context = try HPKE.SenderContext(
            mode: .auth, recipient: recipient, info: info, sender: sender, psk: nil, pskID: [],
            ephemeral: ephemeral, withExporter: false, staticExchange: staticExchange)
        let ciphertext = try context.seal(plaintext)
        var field: [UInt8] = [0x02]
        field.reserveCapacity(headerByteCount + ciphertext.count)
        withUnsafeBytes(of: senderDeviceID.uuid) { field += $0 }
        field += [
            UInt8(generation >> 24), UInt8((generation >> 16) & 0xFF), UInt8((generation >> 8) & 0xFF),
            UInt8(generation & 0xFF),
        ]
        field += ciphertext
        return SecretEnvelope(
            ephemeralPublicKey: version2Prefix + ByteEncoding.base64(context.encapsulatedKey),
            encryptedSecret: ByteEncoding.base64(field))
    }

    /// The sender id and generation a version-2 envelope claims, read without opening it (to
    /// look up the sender's key, or to report). `nil` for version 1 or a malformed header.
    public var headerV2: (senderDeviceID: UUID, generation: UInt32)? {
        guard version == 2, let field = try? Self.decodeEncryptedSecret(encryptedSecret),
            field.count >= Self.headerByteCount,
            field[0] == 0x02
        else { return nil }
        let sender = UUID(
            uuid: (
                field[1], field[2], field[3], field[4], field[5], field[6], field[7], field[8],
                field[9], field[10], field[11], field[12], field[13], field[14], field[15], field[16]
            ))
        let generation = UInt32(field[17]) << 24 | UInt32(field[18]) << 16 | UInt32(field[19]) << 8 | UInt32(field[20])
        return generation == 0 ? nil : (sender, generation)
    }

    /// Opens an envelope of either version.
    ///
    /// Version 1 opens with the device key alone and comes back unauthenticated, generation 1.
    /// Version 2 names its sender; `senderKey` resolves that device's X25519 key (its certified
    /// key when the reader has a pinned identity, else its `devices` row), and the envelope
    /// opens only if that key sealed it, for this session, this recipient and this generation.
    ///
    /// - Parameters:
    ///   - sessionID: The session the row is filed under.
    ///   - recipientDeviceID: This device's id.
    ///   - privateKey: This device's X25519 key.
    ///   - senderKey: Resolves a sender device id to its key; `nil` when unknown.
    /// - Returns: The secret with its sender, generation and whether it is authenticated.
    /// - Throws: ``CryptoError/unknownSender`` when `senderKey` knows no key for a well-formed
    ///   version-2 header; ``CryptoError/authenticationFailure`` for every other failure.
    public func open(
        sessionID: SessionID, recipientDeviceID: UUID, using privateKey: X25519PrivateKey,
        senderKey: (UUID) throws -> X25519PublicKey?
    ) throws -> OpenedSecret {
        var exchanges = SenderExchanges()
        return try open(
            sessionID: sessionID, recipientDeviceID: recipientDeviceID, using: privateKey, senderKey: senderKey,
            exchanges: &exchanges)
    }

    /// ``open(sessionID:recipientDeviceID:using:senderKey:)`` for one of many envelopes opened
    /// with the same key: `exchanges` keeps each sender's static exchange, computed at its first
    /// envelope, so the others cost one X25519 instead of two. The result is the same.
    public func open(
        sessionID: SessionID, recipientDeviceID: UUID, using privateKey: X25519PrivateKey,
        senderKey: (UUID) throws -> X25519PublicKey?, exchanges: inout SenderExchanges
    ) throws -> OpenedSecret {
        guard version == 2 else {
            let secret = try open(sessionID: sessionID, using: privateKey)
            return OpenedSecret(secret: secret, senderDeviceID: nil, generation: 1, authenticated: false, version: 1)
        }
        let enc: [UInt8]
        let field: [UInt8]
        do {
            enc = try ByteEncoding.bytes(base64: String(ephemeralPublicKey.dropFirst(Self.version2Prefix.count)))
            field = try Self.decodeEncryptedSecret(encryptedSecret)
        } catch {
            throw CryptoError.authenticationFailure
        }
        guard enc.count == HPKE.encapsulatedKeyByteCount,
            field.count >= Self.headerByteCount + ChaCha20Poly1305.tagByteCount,
            field[0] == 0x02, let (sender, generation) = headerV2
        else {
            throw CryptoError.authenticationFailure
        }
        let resolved: X25519PublicKey?
        do { resolved = try senderKey(sender) } catch { throw CryptoError.unknownSender }
        guard let senderPublicKey = resolved else { throw CryptoError.unknownSender }
        let info = Self.infoV2(
            sessionID: sessionID, sender: sender, recipient: recipientDeviceID, generation: generation)
        do {
            let exchange = try exchanges.exchange(of: privateKey, with: senderPublicKey)
            let plaintext = try HPKE.open(
                mode: .auth, encapsulatedKey: enc, ciphertext: field[Self.headerByteCount...],
                recipient: privateKey, info: info, sender: senderPublicKey, senderExchange: exchange)
            let secret = try plaintext.withUnsafeBytes { try SessionSecret(textFormBytes: $0) }
            return OpenedSecret(
                secret: secret, senderDeviceID: sender, generation: generation, authenticated: true, version: 2)
        } catch {
            throw CryptoError.authenticationFailure
        }
    }
}

/// The static X25519 exchanges `DH(skR, pkS)` of one recipient key with the senders' keys, for
/// opening many version-2 envelopes: `AuthDecap` needs it for every envelope, and it is the same
/// for all envelopes one sender sealed to this key. Secret material, held in self-wiping memory;
/// keep one for a batch of opens by one task, not longer.
public struct SenderExchanges: Sendable {
    private var recipient: X25519PublicKey?
    private var bySender: [X25519PublicKey: SecureBytes] = [:]

    /// An empty set: each sender's exchange is computed at its first envelope.
    public init() {}

    /// `DH(skR, pkS)`, computed once per sender (and again if the recipient key changes).
    mutating func exchange(of recipientKey: X25519PrivateKey, with sender: X25519PublicKey) throws -> SecureBytes {
        if recipient != recipientKey.publicKey {
            recipient = recipientKey.publicKey
            bySender = [:]
        }
        if let known = bySender[sender] { return known }
        let computed = try HPKE.staticExchange(recipient: recipientKey, sender: sender)
        bySender[sender] = computed
        return computed
    }
}

/// The static X25519 exchanges `DH(skS, pkR)` of one sender key with the recipients' keys, for
/// sealing many version-2 envelopes: `AuthEncap` needs it for every envelope, and it is the same
/// for all envelopes one sender seals to one recipient. Secret material, held in self-wiping
/// memory (wiped when the value goes away) and never stored; keep one for a batch of seals by one
/// task, such as one push, not longer.
public struct RecipientExchanges: Sendable {
    private var sender: X25519PublicKey?
    private var byRecipient: [X25519PublicKey: SecureBytes] = [:]

    /// An empty set: each recipient's exchange is computed at its first envelope.
    public init() {}

    /// How many recipients' exchanges are held.
    public var count: Int { byRecipient.count }

    /// `DH(skS, pkR)`, computed once per recipient (and again if the sender key changes).
    ///
    /// - Throws: ``CryptoError/lowOrderPoint`` for a low-order recipient key (nothing is kept).
    mutating func exchange(of senderKey: X25519PrivateKey, with recipient: X25519PublicKey) throws -> SecureBytes {
        if sender != senderKey.publicKey {
            sender = senderKey.publicKey
            byRecipient = [:]
        }
        if let known = byRecipient[recipient] { return known }
        let computed = try HPKE.staticExchange(sender: senderKey, recipient: recipient)
        byRecipient[recipient] = computed
        return computed
    }
}
